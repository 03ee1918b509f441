package dissect_test

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestLengthFields: capture-truncated only when the capture cut the frame
// (captured length under the original length); a complete frame whose
// length fields disagree with it gets length-mismatch, one captured without
// its ICRC icrc-absent; a candidate whose headers do not decode as far as
// the MAD is no message at all. Offsets: a RoCEv2/IPv4 frame has its IPv4
// header at 14, UDP at 34, BTH at 42, MAD at 62; the REP frame is 322 octets.
func TestLengthFields(t *testing.T) {
	std, _ := cmFrame(t, craft.CM{Msg: rep(rpc(1, 0, 3, 3))})
	ib, _ := cmFrame(t, craft.CM{Transport: craft.InfiniBand, Msg: rep(rpc(1, 0, 3, 3))})
	v1, _ := cmFrame(t, craft.CM{Transport: craft.RoCEv1, Msg: rep(rpc(1, 0, 3, 3))})
	ibGRH, _ := cmFrame(t, craft.CM{Transport: craft.InfiniBand, GRH: true, Msg: rep(rpc(1, 0, 3, 3))})
	set16 := func(b []byte, off int, v uint16) []byte {
		c := slices.Clone(b)
		binary.BigEndian.PutUint16(c[off:], v)
		return c
	}
	type finding struct{ code, msg string }
	for _, tc := range []struct {
		name string
		link uint16
		data []byte
		wire int // 0: len(data)
		want []finding
	}{
		{name: "no ICRC, frame complete", link: 1, data: std[:len(std)-4], want: []finding{{"icrc-absent",
			"the frame is complete but ends where the ICRC would start (UDP Length 288): it was captured without its ICRC, which is not checked"}}},
		{name: "no ICRC, cut by the capture", link: 1, data: std[:len(std)-4], wire: len(std),
			want: []finding{{"capture-truncated", "the capture ends before the ICRC"}}},
		{name: "native IB without ICRC and VCRC", link: layers.LinkTypeIB, data: ib[:len(ib)-6], want: []finding{{"icrc-absent",
			"the frame is complete but ends where the ICRC would start (LRH PktLen 72 (4-octet words)): it was captured without its ICRC, which is not checked"}}},
		{name: "UDP Length 0", link: 1, data: set16(std, 38, 0), want: []finding{{"length-mismatch",
			"UDP Length 0 is too small for the packet's headers: the rest of the frame was decoded, without an ICRC check"}}},
		{name: "LRH PktLen 0", link: layers.LinkTypeIB, data: set16(ib, 4, 0), want: []finding{{"length-mismatch",
			"LRH PktLen 0 (4-octet words) is too small for the packet's headers: the rest of the frame was decoded, without an ICRC check"}}},
		{name: "UDP Length cuts the MAD", link: 1, data: set16(std, 38, 100), want: []finding{
			{"length-mismatch", "UDP Length 100 leaves room for 68 of the MAD's 256 octets: the message is cut short by its own headers"},
			{"icrc-mismatch", "ICRC is 0x00000000, the packet gives 0xd0226df4"}}},
		{name: "IPv4 Total Length cuts the MAD", link: 1, data: set16(std, 16, 100), want: []finding{
			{"length-mismatch", "IPv4 Total Length 100 leaves room for 48 of the MAD's 256 octets: the message is cut short by its own headers"},
			{"icrc-mismatch", "ICRC is 0x00000000, the packet gives 0x9c05aba5"}}},
		{name: "UDP Length and IPv4 Total Length beyond a complete frame", link: 1, data: set16(set16(std, 38, 300), 16, 320), want: []finding{{"length-mismatch",
			"UDP Length 300 puts the end of the packet 12 octets beyond the end of the frame, which the capture did not cut"}}},
		// One field beyond the frame while another agrees with it.
		{name: "UDP Length beyond a complete frame", link: 1, data: set16(std, 38, 400), want: []finding{{"length-mismatch",
			"UDP Length 400 puts the end of the packet 112 octets beyond the end of the frame, which the capture did not cut (IPv4 Total Length 308 ends it 112 octets earlier)"},
			{"icrc-mismatch", "ICRC is 0xb3a615b7, the packet gives 0xd98bffd5"}}},
		{name: "IPv4 Total Length beyond a complete frame", link: 1, data: set16(std, 16, 400), want: []finding{{"length-mismatch",
			"IPv4 Total Length 400 puts the end of the packet 92 octets beyond the end of the frame, which the capture did not cut (UDP Length 288 ends it 92 octets earlier)"},
			{"icrc-mismatch", "ICRC is 0xb3a615b7, the packet gives 0x1de9e160"}}},
		// The capture cut the frame, and a field claims more than the
		// wire carried (the record's original length): both are said.
		{name: "UDP Length beyond the frame on the wire, cut by the capture", link: 1, data: set16(std, 38, 400)[:200], wire: len(std), want: []finding{
			{"capture-truncated", "the capture holds 138 of the MAD's 256 octets"},
			{"length-mismatch", "UDP Length 400 puts the end of the packet 112 octets beyond the end of the frame, which was 322 octets on the wire (the capture kept 200) (IPv4 Total Length 308 ends it 112 octets earlier)"}}},
		{name: "GRH PayLen beyond a complete frame", link: layers.LinkTypeIB, data: set16(ibGRH, 8+4, 380), want: []finding{{"length-mismatch",
			"GRH PayLen 380 puts the end of the packet 98 octets beyond the end of the frame, which the capture did not cut (LRH PktLen 82 (4-octet words) ends it 100 octets earlier)"},
			{"icrc-mismatch", "ICRC is 0x90843c35, the packet gives 0xdc60d9ac"}, {"vcrc-mismatch", "VCRC is 0xb81f, the packet gives 0xcbc9"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire := tc.wire
			if wire == 0 {
				wire = len(tc.data)
			}
			var msgs []*record.Message
			newDecoder("t", decode.Config{}, func(m *record.Message) { msgs = append(msgs, m) }).
				Decode(&capture.Frame{Data: tc.data, WireLen: wire, LinkType: tc.link, Index: 1})
			if len(msgs) != 1 || msgs[0].Name() != "REP" {
				t.Fatalf("%d messages, want one REP", len(msgs))
			}
			var got []finding
			for _, f := range msgs[0].Findings {
				got = append(got, finding{f.Code.String(), f.Message})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	// Nothing decodes as far as the MAD: no message, counted with the reason.
	for _, tc := range []struct {
		name string
		data []byte
		why  string
	}{
		{"IPv4 Total Length 10", set16(std, 16, 10), "Invalid (too small) IP length (10 < 20)"},
		{"IPv4 Total Length 20", set16(std, 16, 20), "nothing decodes after the IP header"},
		{"UDP Length 4", set16(std, 38, 4), "UDP packet too small: 4 bytes"},
		{"GRH PayLen 0", set16(v1, 14+4, 0), "nothing decodes after the GRH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			d := newDecoder("t", decode.Config{}, func(*record.Message) { n++ })
			for i := 1; i <= 2; i++ {
				d.Decode(&capture.Frame{Data: tc.data, WireLen: len(tc.data), LinkType: 1, Index: i})
			}
			if got, first, why := d.Undecodable(); n != 0 || got != 2 || first != 1 || why != tc.why {
				t.Errorf("%d messages, undecodable %d, first %d, why %q; want 0, 2, 1, %q", n, got, first, why, tc.why)
			}
		})
	}
	// The capture cut inside the MAD header: still a message, named CM.
	cut := std[:62+10]
	var msgs []*record.Message
	newDecoder("t", decode.Config{}, func(m *record.Message) { msgs = append(msgs, m) }).
		Decode(&capture.Frame{Data: cut, WireLen: len(std), LinkType: 1, Index: 1})
	if len(msgs) != 1 || msgs[0].Name() != "CM" || !reflect.DeepEqual(codes(msgs[0].Findings), []string{"capture-truncated"}) {
		t.Errorf("cut inside the MAD header: %d messages %+v", len(msgs), msgs)
	}
}

// TestLegacyQinQ: the TPIDs 0x9100 and 0x9200, which the fast filter skips
// like 802.1Q tags, are decoded as tags too.
func TestLegacyQinQ(t *testing.T) {
	std, _ := cmFrame(t, craft.CM{Msg: rep(rpc(1, 0, 3, 3))})
	for _, tpid := range []uint16{0x9100, 0x9200} {
		// Outer legacy tag, inner 802.1Q tag, then IPv4.
		b := slices.Concat(std[:12], []byte{byte(tpid >> 8), byte(tpid), 0, 10, 0x81, 0x00, 0, 20}, std[12:])
		msgs := decodeFrames(t, 1, b)
		if len(msgs) != 1 || msgs[0].Name() != "REP" || msgs[0].Src.String() != "192.0.2.1" || msgs[0].Dst.String() != "192.0.2.2" ||
			msgs[0].IB.ICRC == nil || !msgs[0].IB.ICRC.Valid || len(msgs[0].Findings) != 0 {
			t.Errorf("TPID 0x%04x: %d messages", tpid, len(msgs))
			for _, m := range msgs {
				t.Errorf("%s %s→%s %+v %+v", m.Name(), m.Src, m.Dst, m.IB.ICRC, m.Findings)
			}
		}
	}
}

// TestERFHeaderLengths: an ERF record whose rlen or wlen disagrees with the
// record is decoded by the record's length, with length-mismatch naming the
// field; padding kept in the record is no mismatch.
func TestERFHeaderLengths(t *testing.T) {
	ib, _ := cmFrame(t, craft.CM{Transport: craft.InfiniBand, Msg: rep(rpc(1, 0, 3, 3))})
	erf := func(rlen, wlen uint16, pad int) []byte {
		h := make([]byte, 16)
		h[8] = layers.ERFTypeInfiniBand
		binary.BigEndian.PutUint16(h[10:], rlen)
		binary.BigEndian.PutUint16(h[14:], wlen)
		return slices.Concat(h, ib, make([]byte, pad))
	}
	n := len(ib) // 290
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"consistent", erf(uint16(16+n), uint16(n), 0), ""},
		{"padding kept", erf(uint16(16+n+6), uint16(n), 6), ""},
		{"rlen 0 wlen 0", erf(0, 0, 0), "ERF rlen 0 is less than its 16-octet header; ERF wlen 0 is less than the 290 octets of the packet it holds"},
		{"rlen huge", erf(65535, uint16(n), 0), "ERF rlen 65535 is more than the record's 306 octets and their padding"},
		{"rlen short", erf(100, uint16(n), 0), "ERF rlen 100 is less than the record's 306 octets"},
		{"wlen small", erf(uint16(16+n), 5, 0), "ERF wlen 5 is less than the 290 octets of the packet it holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := decodeFrames(t, layers.LinkTypeERF, tc.data)
			if len(msgs) != 1 || msgs[0].Name() != "REP" || msgs[0].RPCRDMA == nil {
				t.Fatalf("%+v", msgs)
			}
			var got string
			for _, f := range msgs[0].Findings {
				if f.Code.String() == "length-mismatch" {
					got = f.Message
				} else {
					t.Errorf("unexpected finding %+v", f)
				}
			}
			if got != tc.want {
				t.Errorf("length-mismatch %q, want %q", got, tc.want)
			}
		})
	}
	// wlen larger than the packet: the ERF record was cut at capture.
	b := erf(uint16(16+n), uint16(n+100), 0)
	msgs := decodeFrames(t, layers.LinkTypeERF, b[:len(b)-4])
	if len(msgs) != 1 || !reflect.DeepEqual(codes(msgs[0].Findings), []string{"capture-truncated"}) {
		t.Errorf("ERF cut at capture: %+v", msgs)
	}
}

// TestIPv6ExtensionHeaders: RoCEv2 behind IPv6 Hop-by-Hop, Routing or
// Destination Options headers decodes as without them.
func TestIPv6ExtensionHeaders(t *testing.T) {
	a, b := craft.Endpoints(0, true)
	plain, _ := cmFrame(t, craft.CM{Src: a, Dst: b, Msg: rep(rpc(1, 0, 3, 3))})
	for _, nh := range []byte{0, 43, 60} {
		// An 8-octet header after the 40-octet IPv6 header at 14: Next
		// Header UDP, Hdr Ext Len 0, then PadN (Routing: type 0, segments
		// left 0).
		ext := []byte{17, 0, 1, 4, 0, 0, 0, 0}
		f := slices.Concat(plain[:54], ext, plain[54:])
		f[20] = nh
		binary.BigEndian.PutUint16(f[18:], binary.BigEndian.Uint16(f[18:])+8)
		msgs := decodeFrames(t, 1, f)
		if len(msgs) != 1 || msgs[0].Name() != "REP" || msgs[0].RPCRDMA == nil || msgs[0].RPCRDMA.SendSize != 4096 {
			t.Errorf("next header %d: %d messages %+v", nh, len(msgs), msgs)
		}
	}
}
