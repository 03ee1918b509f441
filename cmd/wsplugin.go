package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/internal/wsplugin"
)

// newWiresharkPluginCmd is `rdmacm-pd wireshark-plugin`: the Lua dissector
// for RFC 8797, written from the tool's own tables.
func newWiresharkPluginCmd(s *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "wireshark-plugin",
		Short: "Print a Wireshark Lua dissector for the RFC 8797 private data (protocol rpcrdma_cm)",
		Long: `Prints a Lua dissector for Wireshark 4.0 and later that decodes the
RPC-over-RDMA version 1 CM private data of RFC 8797, which Wireshark does not:
protocol rpcrdma_cm, with the fields rpcrdma_cm.format_identifier, .version,
.reserved, .remote_invalidate, .send_size and .receive_size (in octets),
.send_size_encoded and .receive_size_encoded. It finds the message at any
offset of the private data of InfiniBand CM messages (RoCEv2, RoCEv1, native
InfiniBand) and of MPA Requests and Replies (iWARP, split over TCP segments
or not), and raises expert info for an unknown Version, set Reserved bits and
an identifier too close to the end. It is written from the tables rdmacm-pd
decodes with, so the two agree. Save it in Wireshark's personal plugins
folder (Help > About Wireshark > Folders).`,
		Example: `  rdmacm-pd wireshark-plugin > rpcrdma_cm.lua   # then into ~/.local/lib/wireshark/plugins/
  tshark -X lua_script:rpcrdma_cm.lua -r capture.pcap -Y rpcrdma_cm -T fields -e rpcrdma_cm.send_size`,
		Args: noArgs("wireshark-plugin"),
		RunE: func(c *cobra.Command, args []string) error {
			_, err := fmt.Fprint(s.Out, wsplugin.Lua(ToolVersion()))
			return err
		},
	}
}
