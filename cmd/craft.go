package cmd

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/craft"
)

type craftOptions struct {
	Transport string
	IPv6      bool
	Initiator craft.Peer
	Responder craft.Peer
	Reject    bool
	Write     string
	HexOnly   bool
	MPARev    int
	SplitAt   []int
}

func newCraftCmd(s *IOStreams) *cobra.Command {
	opts := &craftOptions{}
	c := &cobra.Command{
		Use:   "craft [flags] -w FILE",
		Short: "Write a capture of a connection setup with chosen RFC 8797 properties",
		Long: `Builds a complete connection setup (REQ, REP, RTU; or REQ, REJ with --reject)
whose frames carry RPC-over-RDMA version 1 private data with the properties
given, with correct ICRCs, and writes it as pcap (or pcapng, by the file's
extension). The initiator's REQ carries the IP CM header of an NFS/RDMA
connection (TCP port 20049), so its message sits at offset 36.

With --transport iwarp: the TCP handshake, an MPA Request and an MPA Reply
(revision 2 by default: the message sits at offset 4, after IRD/ORD).`,
		Example: `  rdmacm-pd craft --send-size 4096 --receive-size 4096 --remote-invalidate -w nfs.pcap
  rdmacm-pd craft --transport ib --reject -w rejected.pcapng
  rdmacm-pd craft --transport iwarp --mpa-rev 1 --split 7,30 -w split.pcap
  rdmacm-pd craft --send-size 8192 --hex`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runCraft(s, opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.Transport, "transport", "rocev2", "carrier: rocev2, rocev1, ib or iwarp")
	f.IntVar(&opts.MPARev, "mpa-rev", 2, "iwarp: MPA revision, 1 (RFC 5044) or 2 (RFC 6581, IRD/ORD before the data)")
	f.IntSliceVar(&opts.SplitAt, "split", nil, "iwarp: split the MPA Request into TCP segments at these octet offsets (repeatable or comma-separated)")
	f.BoolVar(&opts.IPv6, "ipv6", false, "RoCEv2 or iWARP over IPv6 (and IPv6 GIDs)")
	f.IntVar(&opts.Initiator.SendSize, "send-size", 4096, "initiator's Send Size in octets (multiple of 1024)")
	f.IntVar(&opts.Initiator.ReceiveSize, "receive-size", 4096, "initiator's Receive Size in octets")
	f.BoolVar(&opts.Initiator.RemoteInvalidate, "remote-invalidate", false, "initiator sets R")
	f.BoolVar(&opts.Initiator.Absent, "no-rpcrdma", false, "initiator sends no RFC 8797 message")
	f.IntVar(&opts.Responder.SendSize, "reply-send-size", 4096, "responder's Send Size in octets")
	f.IntVar(&opts.Responder.ReceiveSize, "reply-receive-size", 4096, "responder's Receive Size in octets")
	f.BoolVar(&opts.Responder.RemoteInvalidate, "reply-remote-invalidate", false, "responder sets R")
	f.BoolVar(&opts.Responder.Absent, "reply-no-rpcrdma", false, "responder sends no RFC 8797 message")
	f.BoolVar(&opts.Reject, "reject", false, "the responder rejects the connection (REJ with consumer reject, or an MPA Reply with R set), still with its private data")
	f.StringVarP(&opts.Write, "write", "w", "", "capture file to write: pcap, or pcapng for a .pcapng name; - for standard output")
	f.BoolVar(&opts.HexOnly, "hex", false, "print only the initiator's 8 octets, in hex")
	return c
}

func runCraft(s *IOStreams, opts *craftOptions) error {
	if opts.HexOnly {
		b, err := opts.Initiator.Message()
		if err != nil {
			return usageError("%v", err)
		}
		fmt.Fprintln(s.Out, hex.EncodeToString(b))
		return nil
	}
	if opts.Write == "" {
		return usageError("craft needs -w FILE (or --hex)")
	}
	var frames []craft.Frame
	var err error
	switch tr := craft.Transport(opts.Transport); tr {
	case craft.RoCEv2, craft.RoCEv1, craft.InfiniBand:
		if len(opts.SplitAt) > 0 {
			return usageError("--split applies to --transport iwarp only")
		}
		x := craft.Exchange{Transport: tr, IPv6: opts.IPv6, Initiator: opts.Initiator, Responder: opts.Responder, Reject: opts.Reject}
		frames, err = x.Frames()
	case craft.IWARP:
		if opts.MPARev != 1 && opts.MPARev != 2 {
			return usageError("--mpa-rev: %d (want 1 or 2)", opts.MPARev)
		}
		x := craft.IWARPExchange{IPv6: opts.IPv6, Rev: uint8(opts.MPARev), Initiator: opts.Initiator, Responder: opts.Responder,
			Reject: opts.Reject, SplitAt: opts.SplitAt}
		frames, err = x.Frames()
	default:
		return usageError("--transport: unknown transport %q (want rocev2, rocev1, ib or iwarp)", opts.Transport)
	}
	if err != nil {
		return usageError("%v", err)
	}
	if opts.Write == "-" {
		w := bufio.NewWriter(s.Out)
		if err := craft.Write(w, false, frames); err != nil {
			return failure(err)
		}
		return w.Flush()
	}
	f, err := os.Create(opts.Write)
	if err != nil {
		return failure(err)
	}
	w := bufio.NewWriter(f)
	if err := craft.Write(w, craft.IsPcapng(opts.Write), frames); err != nil {
		f.Close()
		return failure(fmt.Errorf("%s: %w", opts.Write, err))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return failure(fmt.Errorf("%s: %w", opts.Write, err))
	}
	if err := f.Close(); err != nil {
		return failure(fmt.Errorf("%s: %w", opts.Write, err))
	}
	return nil
}
