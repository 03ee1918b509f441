package dissect_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// collect is a Sink that keeps everything.
type collect struct {
	msgs    []*record.Message
	conns   []*record.Connection
	updates []*record.ConnectionUpdate
	sum     *record.Summary
}

func (c *collect) Message(m *record.Message) error       { c.msgs = append(c.msgs, m); return nil }
func (c *collect) Connection(x *record.Connection) error { c.conns = append(c.conns, x); return nil }
func (c *collect) Summary(s *record.Summary) error       { c.sum = s; return nil }
func (*collect) RPC(*record.RPC) error                   { return nil }
func (c *collect) Update(u *record.ConnectionUpdate) error {
	c.updates = append(c.updates, u)
	return nil
}

// decodeFrames runs a Decoder over frames given as data.
func decodeFrames(t *testing.T, link uint16, frames ...[]byte) []*record.Message {
	t.Helper()
	var out []*record.Message
	d := newDecoder("test", decode.Config{}, func(m *record.Message) { out = append(out, m) })
	for i, b := range frames {
		d.Decode(&capture.Frame{Data: b, WireLen: len(b), LinkType: link, Index: i + 1, Time: craft.DefaultStart})
	}
	return out
}

func codes(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code.String())
	}
	return out
}

// hasFinding reports whether fs holds a finding of code c: only the tests
// ask it, so it lives here rather than in package finding.
func hasFinding(fs []finding.Finding, c finding.Code) bool {
	return slices.ContainsFunc(fs, func(f finding.Finding) bool { return f.Code == c })
}

// pd builds private data of n octets with chunks placed at offsets.
func pd(n int, at ...any) []byte {
	b := make([]byte, n)
	for i := 0; i+1 < len(at); i += 2 {
		copy(b[at[i].(int):], at[i+1].([]byte))
	}
	return b
}

func rpc(ver, rsvdR, send, recv byte) []byte {
	return []byte{0xf6, 0xab, 0x0e, 0x18, ver, rsvdR, send, recv}
}

func cmFrame(t *testing.T, c craft.CM) ([]byte, uint16) {
	t.Helper()
	if c.Transport == "" {
		c.Transport = craft.RoCEv2
	}
	if !c.Src.IP.IsValid() {
		c.Src, c.Dst = craft.Endpoints(0, false)
	}
	b, link, err := c.Frame()
	if err != nil {
		t.Fatal(err)
	}
	return b, link
}

func rep(pd []byte) *layers.CMRep {
	m := &layers.CMRep{LocalCommID: 2, RemoteCommID: 1}
	m.PrivateData = pd
	return m
}

func req(sid uint64, pd []byte) *layers.CMReq {
	m := &layers.CMReq{LocalCommID: 1, ServiceID: sid, PartitionKey: 0xffff}
	m.PrivateData = pd
	return m
}

// TestFindings triggers every finding code of a message with a crafted frame
// and checks the exact set of findings and the decoded RFC 8797 message.
func TestFindings(t *testing.T) {
	a, b := craft.Endpoints(0, false)
	ipcm := craft.IPCMHeader(a, b, 40000)
	badIPCM := append([]byte(nil), ipcm...)
	badIPCM[1] = 0x50 // IP version 5

	std4096 := &record.RPCRDMA{FormatIdentifier: 0xf6ab0e18, Version: 1, SendSize: 4096, ReceiveSize: 4096,
		SendSizeEncoded: 3, ReceiveSizeEncoded: 3}
	at := func(off int) *record.RPCRDMA { r := *std4096; r.Offset = off; return &r }
	tests := []struct {
		name     string
		cm       craft.CM
		cut      int // keep only this many octets of the frame (0: all)
		want     []string
		wantRPC  *record.RPCRDMA
		contains string // a finding message must contain this
		noRPC    bool   // no usable RFC 8797 message (else wantRPC, or std4096 when nil)
		absent   string // what rpcrdma-absent would say, if the connection rules raise it
	}{
		{name: "clean REP", cm: craft.CM{Msg: rep(rpc(1, 1, 3, 7))},
			wantRPC: &record.RPCRDMA{Offset: 0, FormatIdentifier: 0xf6ab0e18, Version: 1, RemoteInvalidate: true,
				SendSize: 4096, ReceiveSize: 8192, SendSizeEncoded: 3, ReceiveSizeEncoded: 7}},
		{name: "clean REQ after IP CM header", cm: craft.CM{Msg: req(craft.NFSServiceID, append(ipcm, rpc(1, 0, 0xff, 0)...))},
			wantRPC: &record.RPCRDMA{Offset: 36, FormatIdentifier: 0xf6ab0e18, Version: 1,
				SendSize: 262144, ReceiveSize: 1024, SendSizeEncoded: 0xff}},
		{name: "absent on REQ", cm: craft.CM{Msg: req(0x1234, nil)}, noRPC: true,
			absent: "no usable RPC-over-RDMA private data in REQ"},
		{name: "absent not reported on RTU", cm: craft.CM{Msg: &layers.CMRtu{LocalCommID: 1, RemoteCommID: 2}}, noRPC: true},
		{name: "version unknown", cm: craft.CM{Msg: rep(rpc(2, 0, 3, 3))}, noRPC: true, absent: "no usable RPC-over-RDMA private data in REP",
			want: []string{"rpcrdma-version-unknown"}, contains: "Version 2 at offset 0"},
		{name: "version 2 then version 1", cm: craft.CM{Msg: rep(pd(196, 0, rpc(2, 0, 3, 3), 8, rpc(1, 0, 1, 1)))},
			want: []string{"rpcrdma-version-unknown", "rpcrdma-multiple", "rpcrdma-unexpected-offset"},
			wantRPC: &record.RPCRDMA{Offset: 8, FormatIdentifier: 0xf6ab0e18, Version: 1, SendSize: 2048,
				ReceiveSize: 2048, SendSizeEncoded: 1, ReceiveSizeEncoded: 1}},
		{name: "truncated at end of private data", cm: craft.CM{Msg: rep(pd(196, 190, []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0}))},
			want: []string{"rpcrdma-truncated"}, contains: "offset 190 (6 octets left)", noRPC: true,
			absent: "no usable RPC-over-RDMA private data in REP"},
		{name: "reserved bits", cm: craft.CM{Msg: rep(rpc(1, 0x83, 3, 3))}, want: []string{"rpcrdma-reserved-nonzero"},
			wantRPC: &record.RPCRDMA{FormatIdentifier: 0xf6ab0e18, Version: 1, Reserved: 0x41, RemoteInvalidate: true,
				SendSize: 4096, ReceiveSize: 4096, SendSizeEncoded: 3, ReceiveSizeEncoded: 3},
			contains: "Reserved bits are 0x41"},
		{name: "multiple", cm: craft.CM{Msg: rep(pd(196, 0, rpc(1, 0, 3, 3), 100, rpc(1, 1, 7, 7)))},
			want: []string{"rpcrdma-multiple"}, contains: "found 2 times (offsets 0, 100)",
			wantRPC: &record.RPCRDMA{FormatIdentifier: 0xf6ab0e18, Version: 1, SendSize: 4096, ReceiveSize: 4096,
				SendSizeEncoded: 3, ReceiveSizeEncoded: 3}},
		{name: "unexpected offset", cm: craft.CM{Msg: rep(pd(196, 12, rpc(1, 0, 3, 3)))},
			want: []string{"rpcrdma-unexpected-offset"}, contains: "offset 12, where the REP puts it at 0", wantRPC: at(12)},
		{name: "IP CM REQ with message at 0", cm: craft.CM{Msg: req(craft.NFSServiceID, append(rpc(1, 0, 3, 3), ipcm[8:]...))},
			want: []string{"cm-ip-header-invalid", "rpcrdma-unexpected-offset"}, contains: "where an IP CM header puts it at 36"},
		{name: "icrc mismatch", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3)), CorruptICRC: true}, want: []string{"icrc-mismatch"}},
		{name: "vcrc mismatch", cm: craft.CM{Transport: craft.InfiniBand, Msg: rep(rpc(1, 0, 3, 3)), CorruptVCRC: true},
			want: []string{"vcrc-mismatch"}},
		// craft computes the VCRC over the corrupt ICRC, so only the ICRC is wrong
		{name: "ICRC wrong, VCRC right on IB", cm: craft.CM{Transport: craft.InfiniBand, Msg: rep(rpc(1, 0, 3, 3)), CorruptICRC: true},
			want: []string{"icrc-mismatch"}},
		{name: "mad base version", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3)), BaseVersion: 2}, want: []string{"mad-unexpected-header"},
			contains: "Base Version 2 and Class Version 2"},
		{name: "mad class version", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3)), ClassVersion: 1}, want: []string{"mad-unexpected-header"}},
		{name: "not QP1", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3)), DestQP: 0x42}, want: []string{"cm-not-gsi"},
			contains: "sent to QP 0x000042, not QP1"},
		{name: "wrong Q_Key", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3)), QKey: 0x1234}, want: []string{"cm-not-gsi"},
			contains: "Q_Key 0x00001234"},
		{name: "IP CM header invalid", cm: craft.CM{Msg: req(craft.NFSServiceID, append(badIPCM, rpc(1, 0, 3, 3)...))},
			want: []string{"cm-ip-header-invalid"}, contains: "IP version is neither 4 nor 6", wantRPC: at(36)},
		// The REQ's private data starts at octet 226 of a RoCEv2/IPv4 frame, the MAD at 62.
		{name: "cut after the RFC 8797 message", cm: craft.CM{Msg: req(craft.NFSServiceID, append(ipcm, rpc(1, 0, 3, 3)...))},
			cut: 226 + 50, want: []string{"capture-truncated"}, contains: "holds 214 of the MAD's 256 octets", wantRPC: at(36)},
		{name: "cut inside the RFC 8797 message", cm: craft.CM{Msg: req(craft.NFSServiceID, append(ipcm, rpc(1, 0, 3, 3)...))},
			cut: 226 + 40, want: []string{"capture-truncated"}, noRPC: true},
		{name: "cut before the private data", cm: craft.CM{Msg: req(craft.NFSServiceID, append(ipcm, rpc(1, 0, 3, 3)...))},
			cut: 200, want: []string{"capture-truncated"}, contains: "holds 138 of the MAD's 256 octets", noRPC: true},
		{name: "cut inside the MAD header", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3))},
			cut: 62 + 10, want: []string{"capture-truncated"}, noRPC: true},
		{name: "cut only the ICRC", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3))}, cut: 42 + 12 + 8 + 256,
			want: []string{"capture-truncated"}, contains: "ends before the ICRC",
			wantRPC: &record.RPCRDMA{FormatIdentifier: 0xf6ab0e18, Version: 1, SendSize: 4096, ReceiveSize: 4096,
				SendSizeEncoded: 3, ReceiveSizeEncoded: 3}},
		{name: "RoCEv1 clean", cm: craft.CM{Transport: craft.RoCEv1, Msg: rep(rpc(1, 0, 3, 3))},
			wantRPC: &record.RPCRDMA{FormatIdentifier: 0xf6ab0e18, Version: 1, SendSize: 4096, ReceiveSize: 4096,
				SendSizeEncoded: 3, ReceiveSizeEncoded: 3}},
		{name: "IB with GRH clean", cm: craft.CM{Transport: craft.InfiniBand, GRH: true, Msg: rep(rpc(1, 0, 3, 3))},
			wantRPC: &record.RPCRDMA{FormatIdentifier: 0xf6ab0e18, Version: 1, SendSize: 4096, ReceiveSize: 4096,
				SendSizeEncoded: 3, ReceiveSizeEncoded: 3}},
		{name: "VLAN tagged", cm: craft.CM{Msg: rep(rpc(1, 0, 3, 3)), VLAN: 100},
			wantRPC: &record.RPCRDMA{FormatIdentifier: 0xf6ab0e18, Version: 1, SendSize: 4096, ReceiveSize: 4096,
				SendSizeEncoded: 3, ReceiveSizeEncoded: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantRPC == nil && !tc.noRPC {
				tc.wantRPC = std4096
			}
			frame, link := cmFrame(t, tc.cm)
			wire := len(frame)
			if tc.cut > 0 {
				frame = frame[:tc.cut]
			}
			var msgs []*record.Message
			d := newDecoder("test", decode.Config{}, func(m *record.Message) { msgs = append(msgs, m) })
			d.Decode(&capture.Frame{Data: frame, WireLen: wire, LinkType: link, Index: 1})
			if len(msgs) != 1 {
				t.Fatalf("got %d messages, want 1", len(msgs))
			}
			m := msgs[0]
			if got := codes(m.Findings); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings = %q, want %q\n%v", got, tc.want, m.Findings)
			}
			if !reflect.DeepEqual(m.RPCRDMA, tc.wantRPC) {
				t.Errorf("rpcrdma = %+v, want %+v", m.RPCRDMA, tc.wantRPC)
			}
			// The decoder says that the message counts as without RFC 8797
			// data; the connection rules decide on rpcrdma-absent.
			var held string
			if len(m.Held) == 1 && m.Held[0].Finding.Code == finding.RPCRDMAAbsent {
				held, _, _ = strings.Cut(m.Held[0].Finding.Message, ":")
			}
			if held != tc.absent || len(m.Held) > 1 {
				t.Errorf("held %v, want rpcrdma-absent %q", m.Held, tc.absent)
			}
			if tc.contains != "" {
				found := false
				for _, f := range m.Findings {
					found = found || strings.Contains(f.Message, tc.contains)
				}
				if !found {
					t.Errorf("no finding message contains %q: %v", tc.contains, m.Findings)
				}
			}
			for _, f := range m.Findings {
				c := f.Code.Check()
				ok := c.Name != ""
				if !ok || f.Severity != c.Severity || f.Reference != c.Reference || f.Reference == "" {
					t.Errorf("finding %+v does not match its catalogue entry %+v", f, c)
				}
			}
		})
	}
}

// TestCatalogueTriggered makes sure that the table above triggers every
// message-level code of the catalogue: a code nobody can trigger is dead.
func TestCatalogueCodes(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range finding.Catalogue() {
		if seen[c.Name] {
			t.Errorf("duplicate code %s", c.Name)
		}
		seen[c.Name] = true
		if c.Reference == "" || c.Summary == "" || c.Severity == 0 {
			t.Errorf("incomplete catalogue entry %+v", c)
		}
		for _, r := range c.Name {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Errorf("code %q is not kebab-case", c.Name)
				break
			}
		}
	}
}

// TestMessageIdentity checks the values used to pair messages and the
// decoded addresses for each transport.
func TestMessageIdentity(t *testing.T) {
	for _, tc := range []struct {
		tr       craft.Transport
		ipv6     bool
		src, dst string
	}{
		{craft.RoCEv2, false, "192.0.2.1", "192.0.2.2"},
		{craft.RoCEv2, true, "2001:db8::1", "2001:db8::2"},
		{craft.RoCEv1, false, "::ffff:192.0.2.1", "::ffff:192.0.2.2"},
		{craft.InfiniBand, false, "LID 1", "LID 2"},
	} {
		t.Run(fmt.Sprintf("%s-v6=%v", tc.tr, tc.ipv6), func(t *testing.T) {
			x := craft.Exchange{Transport: tc.tr, IPv6: tc.ipv6, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
			frames, err := x.Frames()
			if err != nil {
				t.Fatal(err)
			}
			var data [][]byte
			for _, f := range frames {
				data = append(data, f.Data)
			}
			msgs := decodeFrames(t, frames[0].LinkType, data...)
			if len(msgs) != 3 {
				t.Fatalf("got %d messages", len(msgs))
			}
			wantNames := []string{"REQ", "REP", "RTU"}
			for i, m := range msgs {
				if m.Name() != wantNames[i] || m.Frame != i+1 {
					t.Errorf("message %d: %s frame %d", i, m.Name(), m.Frame)
				}
				if m.IB == nil || m.IB.ICRC == nil || !m.IB.ICRC.Valid {
					t.Errorf("message %d: ICRC not checked valid: %+v", i, m.IB)
				}
				if tc.tr == craft.InfiniBand && (m.IB.VCRC == nil || !m.IB.VCRC.Valid) {
					t.Errorf("message %d: VCRC not checked valid", i)
				}
			}
			if msgs[0].Src.String() != tc.src || msgs[0].Dst.String() != tc.dst || msgs[1].Src.String() != tc.dst {
				t.Errorf("addresses %s → %s, %s → %s", msgs[0].Src, msgs[0].Dst, msgs[1].Src, msgs[1].Dst)
			}
			if msgs[0].LocalCommID != 0x0a000001 || msgs[1].RemoteCommID != 0x0a000001 || msgs[1].LocalCommID != 0x0b000001 {
				t.Errorf("comm IDs: REQ %x, REP %x/%x", msgs[0].LocalCommID, msgs[1].LocalCommID, msgs[1].RemoteCommID)
			}
			if !msgs[0].HasServiceID || msgs[0].ServiceID != craft.NFSServiceID || msgs[0].ExpectedOffset != 36 {
				t.Errorf("REQ service ID %x (has %v), expected offset %d", msgs[0].ServiceID, msgs[0].HasServiceID, msgs[0].ExpectedOffset)
			}
			if msgs[0].Layers().IPCM == nil || msgs[1].Layers().IPCM != nil {
				t.Errorf("IP CM header on REQ %v, on REP %v", msgs[0].Layers().IPCM != nil, msgs[1].Layers().IPCM != nil)
			}
			if len(msgs[0].PrivateData) != 92 || len(msgs[1].PrivateData) != 196 || len(msgs[2].PrivateData) != 224 {
				t.Errorf("private data lengths %d %d %d", len(msgs[0].PrivateData), len(msgs[1].PrivateData), len(msgs[2].PrivateData))
			}
		})
	}
}

// TestNonCandidates: frames that are not CM produce nothing.
func TestNonCandidates(t *testing.T) {
	frame, _ := cmFrame(t, craft.CM{Msg: rep(rpc(1, 0, 3, 3))})
	rc := append([]byte(nil), frame...)
	rc[42] = 0x04 // RC SEND Only instead of UD SEND Only
	port := append([]byte(nil), frame...)
	port[36], port[37] = 0x12, 0x34 // UDP destination port 4660
	class := append([]byte(nil), frame...)
	class[42+12+8+1] = 0x04 // management class 4 (performance)
	for name, b := range map[string][]byte{"rc": rc, "other port": port, "other class": class, "empty": {}, "short": frame[:30]} {
		if msgs := decodeFrames(t, 1, b); len(msgs) != 0 {
			t.Errorf("%s: got %d messages", name, len(msgs))
		}
	}
	// Unsupported link types never reach the decoder; on a supported one,
	// garbage gives nothing.
	if msgs := decodeFrames(t, 247, bytes.Repeat([]byte{0xff}, 300)); len(msgs) != 0 {
		t.Errorf("garbage IB frame decoded")
	}
}

// TestRoCEPort: an extra --roce-port is decoded like 4791.
func TestRoCEPort(t *testing.T) {
	frame, _ := cmFrame(t, craft.CM{Msg: rep(rpc(1, 0, 3, 3)), DstPort: 0x1234})
	if msgs := decodeFrames(t, 1, frame); len(msgs) != 0 {
		t.Fatalf("port 0x1234 decoded without --roce-port")
	}
	var got []*record.Message
	d := newDecoder("t", decode.Config{RoCEPorts: []uint16{0x1234}}, func(m *record.Message) { got = append(got, m) })
	d.Decode(&capture.Frame{Data: frame, WireLen: len(frame), LinkType: 1, Index: 1})
	if len(got) != 1 || got[0].RPCRDMA == nil || got[0].Name() != "REP" || got[0].IB.ICRC == nil || !got[0].IB.ICRC.Valid {
		t.Fatalf("extra port not decoded: %+v", got)
	}
}

// TestRunFiles reads the sample captures through the whole pipeline.
func TestRunFiles(t *testing.T) {
	want := map[string][]string{
		"infiniband.pcap":         {"REQ", "REP", "RTU"},
		"rocev1.pcap":             {"REQ", "REP", "RTU"},
		"rocev2-ipv6.pcapng":      {"REQ", "REP", "RTU"},
		"rocev2-nfs.pcap":         {"REQ", "REP", "RTU"},
		"rocev2-one-sided.pcap":   {"REQ", "REP", "RTU"},
		"rocev2-reject.pcap":      {"REQ", "REJ"},
		"iwarp-rev1.pcap":         {"MPA_REQ", "MPA_REP"},
		"iwarp-rev2.pcap":         {"MPA_REQ", "MPA_REP"},
		"iwarp-split-ipv6.pcapng": {"MPA_REQ", "MPA_REP"},
		"rocev2-nvme.pcap":        {"REQ", "REP", "RTU"},
		"rocev2-nvme-reject.pcap": {"REQ", "REJ"},
		"iwarp-iser.pcap":         {"MPA_REQ", "MPA_REP"},
		"rocev2-nfs-traffic.pcap": {"REQ", "REP", "RTU", "DREQ", "DREP"},
		"iwarp-nfs-traffic.pcap":  {"MPA_REQ", "MPA_REP"},
	}
	files, err := filepath.Glob("../pcaps/*.pcap*")
	if err != nil || len(files) != len(want) {
		t.Fatalf("sample captures: %v %v", files, err)
	}
	var c collect
	sum, err := dissect.Run(context.Background(), files, nil, dissect.Config{}, &c)
	if err != nil {
		t.Fatal(err)
	}
	inputs := sum.Inputs
	if len(inputs) != len(files) {
		t.Fatalf("%d inputs", len(inputs))
	}
	got := map[string][]string{}
	for _, m := range c.msgs {
		got[filepath.Base(m.File)] = append(got[filepath.Base(m.File)], m.Name())
		// Every message but an RTU, DREQ or DREP carries RFC 8797 data, or
		// another upper layer's (the NVMe-oF and iSER samples).
		if m.RPCRDMA == nil && m.ULP == nil && m.Name() != "RTU" && m.Name() != "DREQ" && m.Name() != "DREP" && m.File != "../pcaps/rocev2-one-sided.pcap" {
			t.Errorf("%s frame %d: no RFC 8797 message", m.File, m.Frame)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages %v, want %v", got, want)
	}
	for _, in := range inputs {
		if in.Err != nil || in.Format == "" || len(in.LinkTypes) != 1 || in.Frames == 0 {
			t.Errorf("%s: %+v", in.Name, in)
		}
	}
}

// TestRunDamaged: a file cut short yields its messages, then an error
// naming the file and the frame.
func TestRunDamaged(t *testing.T) {
	raw, err := os.ReadFile("../pcaps/rocev2-nfs.pcap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.pcap")
	if err := os.WriteFile(cut, raw[:len(raw)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	var c collect
	sum, err := dissect.Run(context.Background(), []string{cut, "../pcaps/rocev1.pcap"}, nil, dissect.Config{}, &c)
	inputs := sum.Inputs
	if err == nil || !strings.Contains(err.Error(), cut+": frame 3") {
		t.Fatalf("error %v, want one naming %s and frame 3", err, cut)
	}
	if len(c.msgs) != 5 || c.msgs[0].File != cut || c.msgs[2].File != "../pcaps/rocev1.pcap" {
		t.Errorf("messages: %d", len(c.msgs))
	}
	if inputs[0].Err == nil || inputs[1].Err != nil {
		t.Errorf("input errors: %v / %v", inputs[0].Err, inputs[1].Err)
	}
	_, err = dissect.Run(context.Background(), []string{filepath.Join(dir, "missing.pcap")}, nil, dissect.Config{}, &c)
	if err == nil || err.Error() != filepath.Join(dir, "missing.pcap")+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
}

// TestStdin reads a capture from standard input.
func TestStdin(t *testing.T) {
	raw, err := os.ReadFile("../pcaps/infiniband.pcap")
	if err != nil {
		t.Fatal(err)
	}
	var c collect
	if _, err := dissect.Run(context.Background(), []string{"-"}, bytes.NewReader(raw), dissect.Config{}, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.msgs) != 3 || c.msgs[0].File != "-" || c.msgs[0].Transport != record.InfiniBand {
		t.Fatalf("got %d messages", len(c.msgs))
	}
	if !c.msgs[0].Time.Equal(craft.DefaultStart) || !c.msgs[1].Time.Equal(craft.DefaultStart.Add(time.Millisecond)) {
		t.Errorf("times %v %v", c.msgs[0].Time, c.msgs[1].Time)
	}
}

// TestCheckPrivateData is the decode sub-command's check.
func TestCheckPrivateData(t *testing.T) {
	rp, fs := decode.CheckPrivateData(rpc(1, 1, 3, 3), 0)
	if rp == nil || rp.SendSize != 4096 || len(fs) != 0 {
		t.Errorf("clean: %+v %v", rp, fs)
	}
	rp, fs = decode.CheckPrivateData([]byte{1, 2, 3}, 0)
	if rp != nil || !reflect.DeepEqual(codes(fs), []string{"rpcrdma-absent"}) {
		t.Errorf("absent: %+v %v", rp, fs)
	}
	_, fs = decode.CheckPrivateData(pd(20, 4, rpc(1, 0, 3, 3)), 0)
	if !reflect.DeepEqual(codes(fs), []string{"rpcrdma-unexpected-offset"}) || !strings.Contains(fs[0].Message, "where its carrier puts it at 0") {
		t.Errorf("offset: %v", fs)
	}
}

// TestFindingsDocumented: docs/findings.md has a section for every code,
// with the program's severity and reference.
func TestFindingsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, c := range finding.Catalogue() {
		head := "### `" + c.Name + "`\n"
		i := strings.Index(doc, head)
		if i < 0 {
			t.Errorf("docs/findings.md has no section %q", strings.TrimSpace(head))
			continue
		}
		section := doc[i+len(head):]
		if j := strings.Index(section, "\n### "); j >= 0 {
			section = section[:j]
		}
		if !strings.Contains(section, "- Severity: "+c.Severity.String()+"\n") {
			t.Errorf("%s: severity %s not documented", c.Name, c.Severity)
		}
		if !strings.Contains(section, "- Reference: "+c.Reference+"\n") {
			t.Errorf("%s: reference %q not documented", c.Name, c.Reference)
		}
	}
}

// TestStateDropCounts: every TCP direction given up at a limit is counted
// once in the summary's StateDrops; the summary's warnings name the number
// of those no message shows, and the number of those messages show (also
// said on each message).
func TestStateDropCounts(t *testing.T) {
	cases := []struct {
		kind      string
		lim       reassembly.Options
		drops     int // StateDrops
		noted     int // the number in the summary's warning (0: no warning)
		onMessage int // messages with state-limit-reached
		keyless   int // KeylessEvictions: given up before any key octet, not a drop
	}{
		// Directions without an MPA key, at a tiny total buffer and per-stream
		// limit: nothing of an MPA frame is lost, nothing is counted.
		{"tcp-streams", reassembly.Options{StreamBytes: 20, TotalBytes: 100}, 0, 0, 0, 99},
		// Unfinished Requests over the per-stream limit: each reported.
		{"half-mpa", reassembly.Options{StreamBytes: 30}, 200, 0, 200, 0},
		{"half-mpa", reassembly.Options{Flows: 16}, 184, 0, 184, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %+v", tc.kind, tc.lim), func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := craft.Flood(&buf, tc.kind, 200); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "f.pcap")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			var c collect
			sum, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{TCP: tc.lim}, &c)
			if err != nil {
				t.Fatal(err)
			}
			noted, shown := 0, 0
			for _, n := range sum.Notes {
				into := &noted
				if strings.Contains(n.Message, "that showed an MPA key") {
					into = &shown
				}
				if _, err := fmt.Sscanf(n.Message[strings.Index(n.Message, ": ")+2:], "%d TCP directions", into); err != nil {
					t.Fatalf("note %q: %v", n.Message, err)
				}
			}
			onMessage := 0
			for _, m := range c.msgs {
				for _, f := range m.Findings {
					if f.Code.String() == "state-limit-reached" {
						onMessage++
					}
				}
			}
			if sum.StateDrops != tc.drops || noted != tc.noted || onMessage != tc.onMessage {
				t.Errorf("StateDrops %d, warning %d, on messages %d; want %d, %d, %d",
					sum.StateDrops, noted, onMessage, tc.drops, tc.noted, tc.onMessage)
			}
			if sum.KeylessEvictions != tc.keyless {
				t.Errorf("KeylessEvictions %d, want %d", sum.KeylessEvictions, tc.keyless)
			}
			if sum.StateDrops != noted+onMessage || shown != onMessage || sum.Drops[record.DropTCPDirections] != onMessage {
				t.Errorf("StateDrops %d is not the %d noted plus the %d on messages (noted %d, by holder %v)", sum.StateDrops, noted, onMessage, shown, sum.Drops)
			}
		})
	}
}
