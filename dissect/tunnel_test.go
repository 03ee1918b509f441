package dissect_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/crafttest"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Captures the way real sites make them: a CM exchange (REQ, REP, RTU,
// with RFC 8797 data on both sides) among bulk RoCE traffic, in every
// encapsulation the classifier steps into, in every ERF record type that
// carries it, behind IPv6 extension header chains, in IP fragments. Each
// capture must give the three messages on their frames with valid ICRCs
// and one established connection, and, where tshark decodes the capture,
// the same CM frames and fields as tshark.

// exchangeFrames builds the CM exchange (IPv4 or IPv6 inner addresses).
func exchangeFrames(t *testing.T, v6 bool) []craft.Frame {
	t.Helper()
	x := craft.Exchange{Transport: craft.RoCEv2, IPv6: v6, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
		Responder: craft.Peer{SendSize: 8192, ReceiveSize: 8192}}
	fs, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// bulkFrame is a RoCEv2 RC data frame (not QP1): bulk traffic that must
// give nothing.
func bulkFrame(t *testing.T, v6 bool) []byte {
	t.Helper()
	a, b := craft.Endpoints(0, v6)
	m := &layers.CMRep{LocalCommID: 9, RemoteCommID: 9}
	c := craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b, Msg: m, DestQP: 0x123}
	f, _, err := c.Frame()
	if err != nil {
		t.Fatal(err)
	}
	f[14+map[bool]int{false: 20, true: 40}[v6]+8] = 0x0a // BTH opcode RC RDMA WRITE Only
	return f
}

// writeFrames writes frames to a capture file in a temporary folder.
func writeFrames(t *testing.T, name string, frames []craft.Frame) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := craft.WriteFile(p, frames); err != nil {
		t.Fatal(err)
	}
	return p
}

// runFile dissects one file and returns what it gave.
func runFile(t *testing.T, p string, cfg dissect.Config) *collect {
	t.Helper()
	var c collect
	if _, err := dissect.Run(context.Background(), []string{p}, nil, cfg, &c); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return &c
}

// checkExchange asserts the three messages of exchangeFrames on the given
// frames, their ICRCs, the findings (beyond the exchange's own, none unless
// listed in extra), the connection, and returns the messages.
func checkExchange(t *testing.T, c *collect, frames []int, extra ...string) []*record.Message {
	t.Helper()
	want := []record.Kind{record.KindREQ, record.KindREP, record.KindRTU}
	if len(c.msgs) != 3 {
		for _, m := range c.msgs {
			t.Logf("message %s frame %d %v", m.Name(), m.Frame, codes(m.Findings))
		}
		t.Fatalf("%d messages, want 3 (notes %v)", len(c.msgs), c.sum.Notes)
	}
	for i, m := range c.msgs {
		if m.Kind != want[i] || m.Frame != frames[i] {
			t.Errorf("message %d: %s on frame %d, want %s on frame %d", i, m.Name(), m.Frame, want[i], frames[i])
		}
		if m.IB == nil || m.IB.ICRC == nil || !m.IB.ICRC.Valid {
			t.Errorf("message %d (%s): ICRC %+v, want a valid one", i, m.Name(), m.IB)
		}
		var got []string
		for _, code := range codes(m.Findings) {
			if code != "remote-invalidation-one-sided" {
				got = append(got, code)
			}
		}
		var w []string
		for _, e := range extra {
			if e != "" {
				w = append(w, e)
			}
		}
		if !slices.Equal(got, w) {
			t.Errorf("message %d (%s): findings %v, want %v: %v", i, m.Name(), got, w, m.Findings)
		}
		if m.Kind != record.KindRTU && m.RPCRDMA == nil {
			t.Errorf("message %d (%s): no RFC 8797 message", i, m.Name())
		}
	}
	if len(c.conns) != 1 || c.conns[0].State != record.Established || c.conns[0].Inline == nil ||
		c.conns[0].Inline.InitiatorToResponder != 4096 || c.conns[0].Inline.ResponderToInitiator != 4096 {
		t.Errorf("connections %+v, want one established, 4096 both ways", c.conns)
	}
	return c.msgs
}

// tunnelSummary is a message's tunnel as "type key=value ..." per
// encapsulation, for comparisons.
func tunnelSummary(ts []record.Encapsulation, keys ...string) []string {
	var out []string
	for _, e := range ts {
		s := e.Type
		for _, f := range e.Fields {
			if slices.Contains(keys, f.Key) {
				s += fmt.Sprintf(" %s=%s", f.Key, f.Text())
			}
		}
		for _, l := range e.Labels {
			s += fmt.Sprintf(" label=%d", l.Label)
		}
		for _, v := range e.VLANs {
			s += fmt.Sprintf(" vlan=%d", v)
		}
		out = append(out, s)
	}
	return out
}

// tsharkOracle compares the file with tshark, when it is installed.
func tsharkOracle(t *testing.T, p string) {
	t.Helper()
	tshark, err := lookTshark()
	if err != nil {
		return
	}
	interopCompare(t, tshark, p)
}

func TestEncapsulations(t *testing.T) {
	keys := []string{"src", "dst", "vni", "key", "seq", "session", "erspan_type", "dst_port", "inner_ip_version"}
	tests := []struct {
		name   string
		encaps []crafttest.Encap // innermost first
		v6     bool              // inner addresses
		want   []string          // tunnelSummary, outermost first
		tshark bool              // tshark 4.0 decodes the CM inside
	}{
		{name: "VXLAN", encaps: []crafttest.Encap{{Kind: crafttest.EncapVXLAN, VNI: 5001}},
			want: []string{"vxlan src=198.51.100.1 dst=198.51.100.2 dst_port=4789 vni=5001"}, tshark: true},
		{name: "VXLAN with inner 802.1Q and 802.1ad tags", encaps: []crafttest.Encap{{Kind: crafttest.EncapVXLAN, VNI: 7, VLAN: 100, QinQ: 200}},
			want: []string{"vxlan src=198.51.100.1 dst=198.51.100.2 dst_port=4789 vni=7 vlan=200 vlan=100"}, tshark: true},
		{name: "VXLAN over IPv6, IPv6 inside", v6: true, encaps: []crafttest.Encap{{Kind: crafttest.EncapVXLAN, VNI: 1, OuterIPv6: true}},
			want: []string{"vxlan src=2001:db8:ffff::1 dst=2001:db8:ffff::2 dst_port=4789 vni=1"}, tshark: true},
		{name: "VXLAN-GPE", encaps: []crafttest.Encap{{Kind: crafttest.EncapVXLANGPE, VNI: 99}},
			want: []string{"vxlan-gpe src=198.51.100.1 dst=198.51.100.2 dst_port=4790 vni=99"}, tshark: true},
		{name: "Geneve with options", encaps: []crafttest.Encap{{Kind: crafttest.EncapGeneve, VNI: 0xabcdef, GeneveOptions: 8}},
			want: []string{"geneve src=198.51.100.1 dst=198.51.100.2 dst_port=6081 vni=11259375"}, tshark: true},
		{name: "GRE", encaps: []crafttest.Encap{{Kind: crafttest.EncapGRE}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2"}, tshark: true},
		{name: "GRE with checksum, key and sequence number", encaps: []crafttest.Encap{{Kind: crafttest.EncapGRE, Checksum: true, Key: 42, Seq: 9}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2 key=42 seq=9"}, tshark: true},
		{name: "GRE carrying Ethernet, over IPv6", encaps: []crafttest.Encap{{Kind: crafttest.EncapGREEthernet, Key: 3, OuterIPv6: true}},
			want: []string{"gre src=2001:db8:ffff::1 dst=2001:db8:ffff::2 key=3"}, tshark: true},
		{name: "ERSPAN type I", encaps: []crafttest.Encap{{Kind: crafttest.EncapERSPAN1}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2", "erspan erspan_type=1"}, tshark: true},
		{name: "ERSPAN type II", encaps: []crafttest.Encap{{Kind: crafttest.EncapERSPAN2, Session: 300, Seq: 5}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2 seq=5", "erspan erspan_type=2 session=300"}, tshark: true},
		{name: "ERSPAN type II of a tagged frame", encaps: []crafttest.Encap{{Kind: crafttest.EncapERSPAN2, Session: 1, VLAN: 42}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2 seq=1", "erspan erspan_type=2 session=1 vlan=42"}, tshark: true},
		{name: "ERSPAN type III", encaps: []crafttest.Encap{{Kind: crafttest.EncapERSPAN3, Session: 1023, Seq: 77}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2 seq=77", "erspan erspan_type=3 session=1023"}, tshark: true},
		{name: "ERSPAN type III with the platform subheader", encaps: []crafttest.Encap{{Kind: crafttest.EncapERSPAN3, Session: 2, Platform: true}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2 seq=1", "erspan erspan_type=3 session=2"}, tshark: true},
		{name: "MPLS", encaps: []crafttest.Encap{{Kind: crafttest.EncapMPLS, Labels: []uint32{100, 200, 300}}},
			want: []string{"mpls label=100 label=200 label=300"}, tshark: true},
		{name: "MPLS over IPv6 inside", v6: true, encaps: []crafttest.Encap{{Kind: crafttest.EncapMPLS, Labels: []uint32{16}}},
			want: []string{"mpls label=16"}, tshark: true},
		{name: "MPLS Ethernet pseudowire with control word", encaps: []crafttest.Encap{{Kind: crafttest.EncapMPLSEthernet, Labels: []uint32{1000, 2000}}},
			// tshark 4.0 takes an MPLS payload for an Ethernet pseudowire only
			// with a decode-as setting.
			want: []string{"mpls label=1000 label=2000"}},
		{name: "IP in IP", encaps: []crafttest.Encap{{Kind: crafttest.EncapIPinIP}},
			want: []string{"ip-in-ip src=198.51.100.1 dst=198.51.100.2 inner_ip_version=4"}, tshark: true},
		{name: "IPv6 in IPv4", v6: true, encaps: []crafttest.Encap{{Kind: crafttest.EncapIPinIP}},
			want: []string{"ip-in-ip src=198.51.100.1 dst=198.51.100.2 inner_ip_version=6"}, tshark: true},
		{name: "IPv4 in IPv6", encaps: []crafttest.Encap{{Kind: crafttest.EncapIPinIP, OuterIPv6: true}},
			want: []string{"ip-in-ip src=2001:db8:ffff::1 dst=2001:db8:ffff::2 inner_ip_version=4"}, tshark: true},
		{name: "VXLAN inside ERSPAN type II (a mirrored overlay)",
			encaps: []crafttest.Encap{{Kind: crafttest.EncapVXLAN, VNI: 10}, {Kind: crafttest.EncapERSPAN2, Session: 8}},
			want: []string{"gre src=198.51.100.1 dst=198.51.100.2 seq=1", "erspan erspan_type=2 session=8",
				"vxlan src=198.51.100.1 dst=198.51.100.2 dst_port=4789 vni=10"}, tshark: true},
		{name: "Geneve over MPLS", encaps: []crafttest.Encap{{Kind: crafttest.EncapGeneve, VNI: 3}, {Kind: crafttest.EncapMPLS, Labels: []uint32{50}}},
			want: []string{"mpls label=50", "geneve src=198.51.100.1 dst=198.51.100.2 dst_port=6081 vni=3"}, tshark: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			xs := exchangeFrames(t, tc.v6)
			var frames []craft.Frame
			bulk := bulkFrame(t, tc.v6)
			for i, f := range xs {
				for _, b := range [][]byte{bulk, f.Data} {
					for _, e := range tc.encaps {
						var err error
						if b, err = crafttest.Wrap(b, e); err != nil {
							t.Fatal(err)
						}
					}
					frames = append(frames, craft.Frame{Data: b, Time: f.Time, LinkType: craft.LinkEthernet})
				}
				_ = i
			}
			p := writeFrames(t, "tunnel.pcap", frames)
			c := runFile(t, p, dissect.Config{})
			for _, m := range checkExchange(t, c, []int{2, 4, 6}) {
				if got := tunnelSummary(m.Tunnel, keys...); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s frame %d: tunnel %q, want %q", m.Name(), m.Frame, got, tc.want)
				}
			}
			if len(c.sum.Notes) != 0 {
				t.Errorf("notes %v", c.sum.Notes)
			}
			if tc.tshark {
				tsharkOracle(t, p)
				tsharkTunnels(t, p, c.msgs)
			}
		})
	}
}

// tsharkTunnels compares the tunnel identifiers of our messages with
// tshark's fields of the same frames: VXLAN and Geneve VNIs, GRE keys and
// sequence numbers, ERSPAN session IDs, MPLS labels, all occurrences in
// order, outermost first.
func tsharkTunnels(t *testing.T, p string, msgs []*record.Message) {
	t.Helper()
	tshark, err := lookTshark()
	if err != nil {
		return
	}
	fields := []struct{ tshark, typ, key string }{
		{"vxlan.vni", "vxlan", "vni"}, {"geneve.vni", "geneve", "vni"}, {"gre.key", "gre", "key"},
		{"gre.sequence_number", "gre", "seq"}, {"erspan.spanid", "erspan", "session"}, {"mpls.label", "mpls", "label"},
	}
	args := []string{"-n", "-r", p, "-Y", "infiniband.mad.mgmtclass==7", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", "frame.number"}
	for _, f := range fields {
		args = append(args, "-e", f.tshark)
	}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	byFrame := map[string][]string{}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		cols := strings.Split(line, "\t")
		if len(cols) != len(fields)+1 {
			t.Fatalf("tshark printed %q", line)
		}
		byFrame[cols[0]] = cols[1:]
	}
	for _, m := range msgs {
		cols := byFrame[fmt.Sprint(m.Frame)]
		if cols == nil {
			t.Errorf("frame %d: tshark shows no CM frame", m.Frame)
			continue
		}
		for i, f := range fields {
			var ours []string
			for _, e := range m.Tunnel {
				if e.Type != f.typ && !(f.typ == "vxlan" && e.Type == "vxlan-gpe") { // tshark: vxlan.vni for both
					continue
				}
				if f.key == "label" {
					for _, l := range e.Labels {
						ours = append(ours, fmt.Sprint(l.Label))
					}
				}
				for _, x := range e.Fields {
					if x.Key == f.key {
						ours = append(ours, x.Text())
					}
				}
			}
			var tv []string
			for _, v := range strings.Split(cols[i], ",") {
				if v != "" {
					tv = append(tv, fmt.Sprint(mustNum(v)))
				}
			}
			if theirs, got := strings.Join(tv, ","), strings.Join(ours, ","); got != theirs {
				t.Errorf("frame %d %s: tshark %q, ours %q", m.Frame, f.tshark, theirs, got)
			}
		}
	}
}

// TestTunnelDepthLimit: a frame nested deeper than the classifier goes is
// counted on the run, with state-limit-reached, and gives no message.
func TestTunnelDepthLimit(t *testing.T) {
	xs := exchangeFrames(t, false)
	var frames []craft.Frame
	for _, depth := range []int{8, 9} {
		b := xs[1].Data
		for range depth {
			var err error
			if b, err = crafttest.Wrap(b, crafttest.Encap{Kind: crafttest.EncapIPinIP}); err != nil {
				t.Fatal(err)
			}
		}
		frames = append(frames, craft.Frame{Data: b, Time: xs[1].Time, LinkType: craft.LinkEthernet})
	}
	c := runFile(t, writeFrames(t, "deep.pcap", frames), dissect.Config{})
	if len(c.msgs) != 1 || c.msgs[0].Frame != 1 || len(c.msgs[0].Tunnel) != 8 {
		t.Fatalf("%d messages, want the REP 8 deep on frame 1", len(c.msgs))
	}
	if len(c.sum.Notes) != 1 || c.sum.Notes[0].Code != finding.StateLimitReached ||
		!strings.Contains(c.sum.Notes[0].Message, "1 frame is nested more than 8 encapsulations deep (first at frame 2)") ||
		c.sum.StateDrops != 1 {
		t.Errorf("notes %v, state drops %d", c.sum.Notes, c.sum.StateDrops)
	}
}

// TestIWARPInTunnel: iWARP connection setups inside VXLAN, the second on
// the same 4-tuple without a SYN (its handshake not captured): both MPA
// Requests and Replies are found, each with its tunnel.
func TestIWARPInTunnel(t *testing.T) {
	var frames []craft.Frame
	for i, start := range []time.Time{craft.DefaultStart, craft.DefaultStart.Add(10 * time.Second)} {
		x := craft.IWARPExchange{Rev: 2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
			Responder: craft.Peer{SendSize: 4096, ReceiveSize: 4096}, Start: start, SplitAt: []int{12}}
		fs, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			fs = fs[3:] // no handshake: the 4-tuple reused without a SYN
		}
		for _, f := range fs {
			b, err := crafttest.Wrap(f.Data, crafttest.Encap{Kind: crafttest.EncapVXLAN, VNI: 77})
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, craft.Frame{Data: b, Time: f.Time, LinkType: craft.LinkEthernet})
		}
	}
	c := runFile(t, writeFrames(t, "iwarp-vxlan.pcap", frames), dissect.Config{})
	var got []string
	for _, m := range c.msgs {
		got = append(got, fmt.Sprintf("%s@%d %v", m.Name(), m.Frame, tunnelSummary(m.Tunnel, "vni")))
		if m.RPCRDMA == nil || m.RPCRDMA.SendSize != 4096 {
			t.Errorf("%s frame %d: rpcrdma %+v", m.Name(), m.Frame, m.RPCRDMA)
		}
	}
	want := []string{"MPA_REQ@5 [vxlan vni=77]", "MPA_REP@6 [vxlan vni=77]", "MPA_REQ@8 [vxlan vni=77]", "MPA_REP@9 [vxlan vni=77]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
	if len(c.conns) != 2 || c.conns[0].State != record.Established || c.conns[1].State != record.Established {
		t.Errorf("connections %+v", c.conns)
	}
}
