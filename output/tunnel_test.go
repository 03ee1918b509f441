package output_test

import (
	"path/filepath"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/crafttest"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// tunnels writes a capture of REP frames in each encapsulation, and one in
// ERSPAN type III carrying VXLAN, for the golden files of the tunnel key
// and its -V tree.
func tunnels(t *testing.T) string {
	t.Helper()
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
	fs, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	var out []craft.Frame
	add := func(b []byte, es ...crafttest.Encap) {
		for _, e := range es {
			if b, err = crafttest.Wrap(b, e); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, craft.Frame{Data: b, Time: fs[1].Time.Add(1e6 * 1), LinkType: craft.LinkEthernet})
	}
	for _, k := range crafttest.EncapKinds {
		add(fs[1].Data, crafttest.Encap{Kind: k, VNI: 5001, Key: 7, Seq: 9, Checksum: k == crafttest.EncapGRE, Session: 33, VLAN: 100,
			Labels: []uint32{16, 17}, GeneveOptions: 4})
	}
	add(fs[1].Data, crafttest.Encap{Kind: crafttest.EncapVXLAN, VNI: 2, QinQ: 300}, crafttest.Encap{Kind: crafttest.EncapERSPAN3, Session: 1, Platform: true, OuterIPv6: true})
	p := filepath.Join(t.TempDir(), "tunnels.pcap")
	if err := craft.WriteFile(p, out); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGoldenTunnels(t *testing.T) {
	p := tunnels(t)
	golden(t, "tunnels.json", render(t, output.Options{Format: output.JSON}, p))
	golden(t, "tunnels-V.txt", render(t, output.Options{Format: output.Text, Verbose: true}, p))
}
