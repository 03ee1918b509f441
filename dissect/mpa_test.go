package dissect_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// seg is a TCP segment of a test connection between the default endpoints:
// fromA is the initiator's direction; off is the offset in that direction's
// stream (the SYN is at -1).
type seg struct {
	fromA   bool
	off     int
	syn     bool
	fin     bool
	rst     bool
	payload []byte
	cut     int    // keep only this many octets of the frame's payload (snap length)
	isn     uint32 // the direction's initial sequence number, when not the default
}

func tcpFrames(t *testing.T, ipv6 bool, segs []seg) [][]byte {
	t.Helper()
	a, b := craft.Endpoints(0, ipv6)
	b.Port = 20049
	const isnA, isnB = 1000, 900000
	var out [][]byte
	for _, s := range segs {
		isn := uint32(isnA)
		if !s.fromA {
			isn = isnB
		}
		if s.isn != 0 {
			isn = s.isn
		}
		tc := craft.TCP{Src: a, Dst: b, Seq: isn + uint32(1+s.off), SYN: s.syn, FIN: s.fin, RST: s.rst, ACK: !s.syn, Payload: s.payload}
		if !s.fromA {
			tc.Src, tc.Dst = b, a
		}
		f, err := tc.Frame()
		if err != nil {
			t.Fatal(err)
		}
		if s.cut > 0 {
			f = f[:len(f)-len(s.payload)+s.cut]
		}
		out = append(out, f)
	}
	return out
}

// splitAt cuts an initiator's stream b into segments at the offsets given
// (increasing), without a handshake.
func splitAt(b []byte, at ...int) []seg {
	var out []seg
	lo := 0
	for _, hi := range append(at, len(b)) {
		out = append(out, seg{fromA: true, off: lo, payload: b[lo:hi]})
		lo = hi
	}
	return out
}

func reverse(s []seg) []seg {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// seq is lo, lo+1, ... hi.
func seq(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

func mpaBytes(m craft.MPA) []byte { return m.Bytes() }

// decodeTCP runs frames through a decoder with limits, wire length from the
// uncut frames.
func decodeTCP(t *testing.T, lim reassembly.Options, frames [][]byte, wire []int) ([]*record.Message, *decode.Decoder) {
	t.Helper()
	var out []*record.Message
	// The messages go through a tracker, as in the run loop: its rules
	// raise rpcrdma-absent.
	tr := conn.NewTracker(false, 0)
	d := newDecoder("test", decode.Config{TCP: lim}, func(m *record.Message) { tr.Message(m); out = append(out, m) })
	for i, b := range frames {
		w := len(b)
		if wire != nil && wire[i] > w {
			w = wire[i]
		}
		d.Decode(&capture.Frame{Data: b, WireLen: w, LinkType: 1, Index: i + 1, Time: frameTime(i + 1)})
	}
	d.Flush()
	return out, d.Decoder
}

// frameTime is the capture time decodeTCP gives frame i (from 1): one
// millisecond apart.
func frameTime(i int) time.Time { return craft.DefaultStart.Add(time.Duration(i) * time.Millisecond) }

func field(m *record.Message, key string) string {
	for _, f := range m.Layers().MPA {
		if f.Key == key {
			return f.Text()
		}
	}
	return "<none>"
}

func TestMPA(t *testing.T) {
	rpcIni := rpc(1, 1, 3, 3)
	rpcRes := rpc(1, 0, 7, 7)
	req1 := mpaBytes(craft.MPA{Request: true, Rev: 1, CRC: true, Data: rpcIni})
	rep1 := mpaBytes(craft.MPA{Rev: 1, CRC: true, Data: rpcRes})
	req2 := mpaBytes(craft.MPA{Request: true, Rev: 2, IRD: 8, ORD: 4, PeerToPeer: true, ZeroRead: true, Data: rpcIni})
	rep2 := mpaBytes(craft.MPA{Rev: 2, IRD: 4, ORD: 8, ZeroWrite: true, Data: rpcRes})
	reqLong := mpaBytes(craft.MPA{Request: true, Rev: 2, Data: append(rpcIni, make([]byte, 1000)...)})
	hs := []seg{{fromA: true, off: -1, syn: true}, {fromA: false, off: -1, syn: true}}
	login := []byte("\x43\x87\x00\x00iSCSI login request, streaming mode, before MPA")
	loginResp := []byte("\x23\x87\x00\x00iSCSI login response")
	// bulk is n octets of the initiator's stream from offset 0, in
	// 1460-octet segments.
	bulk := func(n int) []seg {
		var out []seg
		for off := 0; off < n; off += 1460 {
			out = append(out, seg{fromA: true, off: off, payload: make([]byte, min(1460, n-off))})
		}
		return out
	}
	with := func(s ...seg) []seg { return append(append([]seg(nil), hs...), s...) }
	type want struct {
		name   string
		frame  int
		frames []int
		rpcOff int // -1: no RFC 8797 message
		codes  []string
	}
	cases := []struct {
		name     string
		ipv6     bool
		segs     []seg
		lim      reassembly.Options
		dropped  int // directions given up at a limit
		silent   int // of which no message shows
		want     []want
		contains string
		check    func(t *testing.T, ms []*record.Message)
	}{
		{name: "v1", segs: with(seg{fromA: true, payload: req1}, seg{payload: rep1}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}, {"MPA_REP", 4, []int{4}, 0, nil}},
			check: func(t *testing.T, ms []*record.Message) {
				if ms[0].Src.String() != "192.0.2.1:49153" || ms[0].Dst.String() != "192.0.2.2:20049" || ms[1].Src.String() != "192.0.2.2:20049" {
					t.Errorf("endpoints %s → %s", ms[0].Src, ms[0].Dst)
				}
				if field(ms[0], "rev") != "1" || field(ms[0], "crc") != "true" || field(ms[0], "ird") != "<none>" ||
					field(ms[0], "key") != "MPA ID Req Frame" || field(ms[1], "key") != "MPA ID Rep Frame" {
					t.Errorf("fields %v", ms[0].Layers().MPA)
				}
				if ms[0].RPCRDMA.RemoteInvalidate != true || ms[1].RPCRDMA.SendSize != 8192 || ms[0].ExpectedOffset != 0 {
					t.Errorf("rpcrdma %+v %+v", ms[0].RPCRDMA, ms[1].RPCRDMA)
				}
			}},
		{name: "v2 IPv6", ipv6: true, segs: with(seg{fromA: true, payload: req2}, seg{payload: rep2}),
			want: []want{{"MPA_REQ", 3, []int{3}, 4, nil}, {"MPA_REP", 4, []int{4}, 4, nil}},
			check: func(t *testing.T, ms []*record.Message) {
				if ms[0].Src.String() != "[2001:db8::1]:49153" || ms[0].ExpectedOffset != 4 {
					t.Errorf("src %s, expected offset %d", ms[0].Src, ms[0].ExpectedOffset)
				}
				got := []string{field(ms[0], "ird"), field(ms[0], "ord"), field(ms[0], "peer_to_peer"), field(ms[0], "zero_length_read"),
					field(ms[1], "ird"), field(ms[1], "ord"), field(ms[1], "zero_length_write"), field(ms[1], "enhanced")}
				if !reflect.DeepEqual(got, []string{"8", "4", "true", "true", "4", "8", "true", "true"}) {
					t.Errorf("IRD/ORD fields %v", got)
				}
				if len(ms[0].PrivateData) != 12 || ms[0].PrivateDataSize != 12 {
					t.Errorf("private data %d/%d", len(ms[0].PrivateData), ms[0].PrivateDataSize)
				}
			}},
		{name: "split inside the key", segs: with(seg{fromA: true, payload: req2[:7]}, seg{fromA: true, off: 7, payload: req2[7:]}, seg{payload: rep2}),
			want: []want{{"MPA_REQ", 4, []int{3, 4}, 4, nil}, {"MPA_REP", 5, []int{5}, 4, nil}}},
		{name: "split in three, out of order", segs: with(seg{fromA: true, off: 20, payload: req2[20:]}, seg{fromA: true, payload: req2[:9]},
			seg{fromA: true, off: 9, payload: req2[9:20]}),
			want: []want{{"MPA_REQ", 5, []int{3, 4, 5}, 4, nil}}},
		{name: "retransmitted and overlapping", segs: with(seg{fromA: true, payload: req1[:10]}, seg{fromA: true, payload: req1[:10]},
			seg{fromA: true, off: 5, payload: req1[5:20]}, seg{fromA: true, off: 18, payload: req1[18:]}),
			// the retransmission adds nothing; the overlaps add octets 10-19, then 20-27
			want: []want{{"MPA_REQ", 6, []int{3, 4, 5, 6}, 0, nil}}},
		// Overlapping segments that disagree: the first copy of an octet wins.
		// Here the overlap brings a bogus PD_Length (0xeeee) before the original.
		{name: "conflicting overlap, first copy wins", segs: with(seg{fromA: true, payload: req1[:10]},
			seg{fromA: true, off: 5, payload: append(append([]byte(nil), req1[5:18]...), 0xee, 0xee)}, seg{fromA: true, off: 18, payload: req1[18:]}),
			want:     []want{{"MPA_REQ", 5, []int{3, 4, 5}, 0, []string{"mpa-truncated", "tcp-retransmission-mismatch", "mpa-pd-too-long"}}},
			contains: "PD_Length is 61166"},
		// A retransmission that differs from the first copy: the first is
		// shown, with a warning naming the later copy and the octet.
		{name: "retransmission differs", segs: with(seg{fromA: true, payload: req1[:20]},
			seg{fromA: true, payload: append(append([]byte(nil), req1[:17]...), 2, 0, 8)}, seg{fromA: true, off: 20, payload: req1[20:]}),
			want:     []want{{"MPA_REQ", 5, []int{3, 4, 5}, 0, []string{"tcp-retransmission-mismatch"}}},
			contains: "frame 4 carried octet 17 of the MPA frame again with different contents; the first copy is shown",
			check: func(t *testing.T, ms []*record.Message) {
				if field(ms[0], "rev") != "1" {
					t.Errorf("rev %s, want the first copy's 1", field(ms[0], "rev"))
				}
			}},
		{name: "retransmission identical", segs: with(seg{fromA: true, payload: req1[:12]}, seg{fromA: true, payload: req1[:12]},
			seg{fromA: true, off: 12, payload: req1[12:]}, seg{fromA: true, off: 12, payload: req1[12:]}),
			want: []want{{"MPA_REQ", 5, []int{3, 4, 5}, 0, nil}}},
		{name: "no handshake", segs: []seg{{fromA: true, payload: req1[:3]}, {fromA: true, off: 3, payload: req1[3:]}, {payload: rep1}},
			want: []want{{"MPA_REQ", 2, []int{1, 2}, 0, nil}, {"MPA_REP", 3, []int{3}, 0, nil}}},
		{name: "no handshake, out of order", segs: []seg{{fromA: true, off: 16, payload: req1[16:]}, {fromA: true, payload: req1[:16]}},
			want: []want{{"MPA_REQ", 2, []int{1, 2}, 0, nil}}},
		{name: "rejecting Reply with private data", segs: with(seg{fromA: true, payload: req1},
			seg{payload: mpaBytes(craft.MPA{Rev: 1, Reject: true, Data: rpcRes})}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}, {"MPA_REP", 4, []int{4}, 0, []string{"mpa-reject"}}}},
		{name: "PD_Length over 512", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 2, Data: append(rpcIni, make([]byte, 600)...)})}),
			want: []want{{"MPA_REQ", 3, []int{3}, 4, []string{"mpa-pd-too-long"}}}, contains: "PD_Length is 612"},
		{name: "v2 too short for RFC 8797", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 2, Data: rpcIni[:4]})}),
			want:     []want{{"MPA_REQ", 3, []int{3}, -1, []string{"pd-capacity-too-small", "rpcrdma-absent", "rpcrdma-truncated"}}},
			contains: "leaves 4 octets after the IRD/ORD words"},
		{name: "stream ends early", segs: with(seg{fromA: true, payload: req1[:25]}, seg{fromA: true, off: 25, fin: true}),
			want: []want{{"MPA_REQ", 3, []int{3}, -1, []string{"mpa-truncated"}}}, contains: "the stream ends (FIN) after 25 of the MPA frame's 28 octets"},
		// A stream that ends inside the key is an MPA frame from 10 octets of
		// a key on (enough to tell a Request from a Reply).
		{name: "capture ends inside the key", segs: with(seg{fromA: true, payload: req1[:12]}),
			want:     []want{{"MPA_REQ", 3, []int{3}, -1, []string{"mpa-truncated"}}},
			contains: "the capture ends after 12 of the MPA frame's 20 octets",
			check: func(t *testing.T, ms []*record.Message) {
				if field(ms[0], "key") != "MPA ID Req F" || field(ms[0], "rev") != "<none>" || len(ms[0].Layers().MPA) != 1 {
					t.Errorf("fields %v", ms[0].Layers().MPA)
				}
			}},
		{name: "Reply ends inside the key (FIN)", segs: with(seg{payload: rep1[:10]}, seg{off: 10, fin: true}),
			want: []want{{"MPA_REP", 3, []int{3}, -1, []string{"mpa-truncated"}}}, contains: "the stream ends (FIN) after 10 of the MPA frame's 20 octets"},
		{name: "too little of a key", segs: with(seg{fromA: true, payload: req1[:9]}), want: nil},
		// Ending inside the header: the flags and Rev that arrived are shown
		// and checked; PD_Length and the rules on it are not.
		{name: "capture ends inside the header", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 2, NoEnhanced: true, CRC: true, Data: rpcIni})[:18]}),
			want: []want{{"MPA_REQ", 3, []int{3}, -1, []string{"mpa-truncated", "mpa-enhanced-mismatch"}}},
			check: func(t *testing.T, ms []*record.Message) {
				got := []string{field(ms[0], "key"), field(ms[0], "crc"), field(ms[0], "enhanced"), field(ms[0], "rev"), field(ms[0], "pd_length")}
				if !reflect.DeepEqual(got, []string{"MPA ID Req Frame", "true", "false", "2", "<none>"}) {
					t.Errorf("fields %v", got)
				}
			}},
		{name: "capture ends after the flags", segs: with(seg{fromA: true, payload: req1[:17]}),
			want: []want{{"MPA_REQ", 3, []int{3}, -1, []string{"mpa-truncated"}}},
			check: func(t *testing.T, ms []*record.Message) {
				if field(ms[0], "crc") != "true" || field(ms[0], "rev") != "<none>" {
					t.Errorf("fields %v", ms[0].Layers().MPA)
				}
			}},
		{name: "capture ends early", segs: with(seg{fromA: true, payload: req1[:17]}),
			want: []want{{"MPA_REQ", 3, []int{3}, -1, []string{"mpa-truncated"}}}, contains: "the capture ends after 17 of the MPA frame's 20 octets"},
		{name: "snap length cut", segs: with(seg{fromA: true, payload: req1, cut: 22}),
			want: []want{{"MPA_REQ", 3, []int{3}, -1, []string{"capture-truncated"}}}, contains: "22 of the MPA frame's 28 octets"},
		{name: "revision 3, reserved bits", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 3, Reserved: 0x5, Data: rpcIni})}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, []string{"mpa-rev-unknown", "mpa-reserved-nonzero"}}}},
		{name: "R in a Request", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 1, Reject: true, Data: rpcIni})}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, []string{"mpa-reserved-nonzero"}}}, contains: "in a Request"},
		{name: "enhanced flag with revision 1", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 1, Enhanced: true, Data: rpcIni})}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, []string{"mpa-enhanced-mismatch"}}}},
		{name: "revision 2 without the flag", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 2, NoEnhanced: true, Data: rpcIni})}),
			want: []want{{"MPA_REQ", 3, []int{3}, 4, []string{"mpa-enhanced-mismatch"}}}},
		{name: "RFC 8797 at 0 in revision 2", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 1, Enhanced: true, Data: rpcIni})}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, []string{"mpa-enhanced-mismatch"}}}},
		// Data in a SYN starts after the SYN's own sequence number.
		{name: "Request in the SYN (TCP Fast Open)", segs: []seg{{fromA: true, off: -1, syn: true, payload: req1}},
			want: []want{{"MPA_REQ", 1, []int{1}, 0, nil}}},
		// A SYN with a new ISN on the same ports starts a new stream; the old
		// one's unfinished frame is reported.
		{name: "new connection on the same ports", segs: []seg{{fromA: true, off: -1, syn: true}, {fromA: true, payload: req1[:20]},
			{fromA: true, off: -1, syn: true, isn: 777000}, {fromA: true, payload: req2, isn: 777000}},
			want:     []want{{"MPA_REQ", 2, []int{2}, -1, []string{"mpa-truncated"}}, {"MPA_REQ", 4, []int{4}, 4, nil}},
			contains: "the connection is replaced by a new one (SYN) after 20 of the MPA frame's 28 octets"},
		{name: "new connection on the same ports, old one inside the key", segs: []seg{{fromA: true, off: -1, syn: true}, {fromA: true, payload: req1[:10]},
			{fromA: true, off: -1, syn: true, isn: 777000}, {fromA: true, payload: req1, isn: 777000}},
			want: []want{{"MPA_REQ", 2, []int{2}, -1, []string{"mpa-truncated"}}, {"MPA_REQ", 4, []int{4}, 0, nil}}},
		{name: "SYN retransmitted mid-frame", segs: []seg{{fromA: true, off: -1, syn: true}, {fromA: true, payload: req1[:20]},
			{fromA: true, off: -1, syn: true}, {fromA: true, off: 20, payload: req1[20:]}},
			want: []want{{"MPA_REQ", 4, []int{2, 4}, 0, nil}}},
		// Without a handshake, segments before the key are kept by octets,
		// not by a small count.
		{name: "no handshake, six segments in reverse order", segs: reverse(splitAt(req2, 4, 9, 16, 19, 24)),
			want: []want{{"MPA_REQ", 6, []int{1, 2, 3, 4, 5, 6}, 4, nil}}},
		{name: "no handshake, one octet a segment in reverse order", segs: reverse(splitAt(req1, seq(1, len(req1)-1)...)),
			want: []want{{"MPA_REQ", 28, seq(1, 28), 0, nil}}},
		// Before the key only what an MPA frame within the RFC's limit spans
		// is kept (532 octets): an over-long frame whose tail comes first is
		// shown cut short.
		{name: "no handshake, over-long frame, tail first", segs: reverse(splitAt(reqLong, 16)),
			want:     []want{{"MPA_REQ", 2, []int{1, 2}, 4, []string{"mpa-truncated", "mpa-pd-too-long"}}},
			contains: "the capture ends after 548 of the MPA frame's 1032 octets"},
		{name: "no handshake, two keyless segments longer than a frame", segs: []seg{{fromA: true, off: 1000, payload: make([]byte, 600)},
			{fromA: true, off: 1600, payload: make([]byte, 600)}, {fromA: true, payload: reqLong[:1000]}},
			dropped: 1, silent: 1, want: nil},
		// Giving up early segments at a limit is counted, never silent.
		{name: "no handshake, early octets over the per-stream limit", segs: reverse(splitAt(req1, 5, 10)),
			lim: reassembly.Options{StreamBytes: 20}, dropped: 1, silent: 1, want: nil},
		{name: "no handshake, early segments over the count limit", segs: reverse(splitAt(req1, 5, 10, 15)),
			lim: reassembly.Options{MaxEarlySegs: 2}, dropped: 1, silent: 1, want: nil},
		// The segments before the key given up at the total buffer are counted
		// when the key arrives (here too little of it for a message); keyless
		// segments in between are not taken up again.
		{name: "no handshake, total buffer full", segs: reverse(splitAt(req1, 5, 10, 15)),
			lim: reassembly.Options{TotalBytes: 100}, dropped: 1, silent: 1, want: nil},
		{name: "no handshake, total buffer full, key shown later", segs: []seg{{fromA: true, off: 15, payload: req1[15:]},
			{fromA: true, off: 10, payload: req1[10:15]}, {fromA: true, payload: req1[:15]}},
			lim: reassembly.Options{TotalBytes: 100}, dropped: 1,
			want:     []want{{"MPA_REQ", 3, []int{3}, -1, []string{"state-limit-reached"}}},
			contains: "arrived before its MPA key were given up at a state limit"},
		// A frame that fills the total buffer is given up at once, counted
		// and reported with what arrived (frame 3 and its time).
		{name: "total buffer full, key shown", segs: with(seg{fromA: true, payload: req1[:20]}, seg{fromA: true, off: 20, payload: req1[20:]}),
			lim: reassembly.Options{TotalBytes: 24}, dropped: 1,
			want: []want{{"MPA_REQ", 3, []int{3}, -1, []string{"state-limit-reached"}}}, contains: "buffers of all streams are full (24 octets)"},
		// A SYN (or SYN-ACK) repeating the start of a finished direction is a
		// retransmission: it does not reopen it.
		{name: "SYN retransmitted after the frame", segs: with(seg{fromA: true, payload: req1}, seg{fromA: true, off: -1, syn: true},
			seg{fromA: true, payload: req1}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}}},
		{name: "Fast Open SYN with the Request retransmitted", segs: []seg{{fromA: true, off: -1, syn: true, payload: req1},
			{fromA: true, off: -1, syn: true, payload: req1}},
			want: []want{{"MPA_REQ", 1, []int{1}, 0, nil}}},
		{name: "SYN-ACK retransmitted after the Reply", segs: with(seg{fromA: true, payload: req1}, seg{payload: rep1},
			seg{off: -1, syn: true}, seg{payload: rep1}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}, {"MPA_REP", 4, []int{4}, 0, nil}}},
		// A FIN ends the direction once the octets before it are in.
		{name: "FIN before the octets before it", segs: with(seg{fromA: true, off: 20, payload: req1[20:], fin: true},
			seg{fromA: true, payload: req1[:20]}),
			want: []want{{"MPA_REQ", 4, []int{3, 4}, 0, nil}}},
		{name: "no handshake, tail and FIN before the head", segs: []seg{{fromA: true, off: 20, payload: req1[20:], fin: true},
			{fromA: true, payload: req1[:20]}},
			want: []want{{"MPA_REQ", 2, []int{1, 2}, 0, nil}}},
		{name: "FIN with octets missing before it", segs: with(seg{fromA: true, payload: req1[:12]}, seg{fromA: true, off: 20, payload: req1[20:], fin: true}),
			want:     []want{{"MPA_REQ", 3, []int{3}, -1, []string{"mpa-truncated"}}},
			contains: "the stream ends (FIN) with octets missing before it; the capture ends after 12 of the MPA frame's 20 octets"},
		// A FIN before the start, or before octets already seen, is stale
		// (or forged): ignored, like an RST outside the window.
		{name: "stale FIN before the start ignored", segs: with(seg{fromA: true, payload: req1[:10]}, seg{fromA: true, off: -500, fin: true},
			seg{fromA: true, off: 10, payload: req1[10:]}),
			want: []want{{"MPA_REQ", 5, []int{3, 5}, 0, nil}}},
		{name: "stale FIN inside the octets seen ignored", segs: with(seg{fromA: true, payload: req1[:20]}, seg{fromA: true, off: 5, fin: true},
			seg{fromA: true, off: 20, payload: req1[20:]}),
			want: []want{{"MPA_REQ", 5, []int{3, 5}, 0, nil}}},
		// Without a handshake, a key above the octets kept starts the
		// direction when those stop short of it, or are one octet right
		// before it (a keep-alive probe); a key right after longer data is
		// inside the stream ("not MPA, no handshake").
		{name: "no handshake, a keep-alive octet before the key", segs: []seg{{fromA: true, off: -1, payload: []byte{0}}, {fromA: true, payload: req1}},
			want: []want{{"MPA_REQ", 2, []int{2}, 0, nil}}},
		{name: "no handshake, octets and a gap before the key", segs: []seg{{fromA: true, off: -100, payload: []byte("xxxxxxxxxxxxxxxxxxxx")},
			{fromA: true, off: -40, payload: []byte("yyyyyyyyyy")}, {fromA: true, payload: req1}},
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}}},
		// An RST ends it only with a sequence number within what the frame
		// needs or what was seen.
		{name: "RST out of the window ignored", segs: with(seg{fromA: true, payload: req1[:20]}, seg{fromA: true, off: 999999, rst: true},
			seg{fromA: true, off: 20, payload: req1[20:]}),
			want: []want{{"MPA_REQ", 5, []int{3, 5}, 0, nil}}},
		{name: "RST in the window", segs: with(seg{fromA: true, payload: req1[:20]}, seg{fromA: true, off: 20, rst: true},
			seg{fromA: true, off: 20, payload: req1[20:]}),
			want:     []want{{"MPA_REQ", 3, []int{3}, -1, []string{"mpa-truncated"}}},
			contains: "the connection is reset (RST) after 20 of the MPA frame's 28 octets"},
		// A difference beyond the frame, seen before PD_Length was known, does
		// not hide a later one within it.
		{name: "retransmission differs within the frame after one beyond it", segs: with(
			seg{fromA: true, off: 20, payload: append(slices.Clone(req1[20:]), "0123456789"...)},
			seg{fromA: true, off: 20, payload: append(slices.Clone(req1[20:]), "012345678X"...)},
			seg{fromA: true, off: 20, payload: append(append(slices.Clone(req1[20:25]), 0xee), req1[26:]...)},
			seg{fromA: true, payload: req1[:20]}),
			want:     []want{{"MPA_REQ", 6, []int{3, 4, 5, 6}, 0, []string{"tcp-retransmission-mismatch"}}},
			contains: "frame 5 carried octet 25 of the MPA frame again"},
		// Octets kept before a SYN: a later copy replaces them (here an
		// earlier connection's); without one they stand (the capture
		// reordered the SYN and its connection's data).
		{name: "segment before its SYN (capture reordered)", segs: []seg{{fromA: true, off: 8, payload: req1[8:]},
			{fromA: true, off: -1, syn: true, payload: req1[:8]}},
			want: []want{{"MPA_REQ", 2, []int{1, 2}, 0, nil}}},
		// Octets kept before a SYN belong to an earlier connection.
		{name: "segment before the SYN not replayed", segs: []seg{{fromA: true, off: 20, payload: []byte("garbage!")},
			{fromA: true, off: -1, syn: true}, {fromA: true, payload: req1[:20]}, {fromA: true, off: 20, payload: req1[20:]}},
			want: []want{{"MPA_REQ", 4, []int{3, 4}, 0, nil}}},
		// TCP streaming-mode data before the MPA frames (RFC 5044, section
		// 6: iSER logs in over plain TCP first): the key is found where it
		// starts, within the first 64 KiB of the direction.
		{name: "streaming-mode data before the Request and the Reply", segs: with(seg{fromA: true, payload: login},
			seg{payload: loginResp}, seg{fromA: true, off: len(login), payload: req2}, seg{off: len(loginResp), payload: rep2}),
			want: []want{{"MPA_REQ", 5, []int{5}, 4, nil}, {"MPA_REP", 6, []int{6}, 4, nil}}},
		{name: "streaming-mode data and the Request in one segment", segs: with(seg{fromA: true, payload: append(slices.Clone(login), req1...)}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}}},
		{name: "streaming-mode data, the key split over segments", segs: with(seg{fromA: true, payload: append(slices.Clone(login), req2[:7]...)},
			seg{fromA: true, off: len(login) + 7, payload: req2[7:]}),
			want: []want{{"MPA_REQ", 4, []int{3, 4}, 4, nil}}},
		{name: "streaming-mode data out of order", segs: with(seg{fromA: true, off: len(login), payload: req1},
			seg{fromA: true, payload: login}),
			// Frame 4 completes the Request; only frame 3 carried octets of it.
			want: []want{{"MPA_REQ", 4, []int{3}, 0, nil}}},
		{name: "a key just inside the first 64 KiB", segs: with(append(bulk(65535-len(req1[:16])), seg{fromA: true, off: 65535 - 16, payload: req1})...),
			want: []want{{"MPA_REQ", 48, []int{48}, 0, nil}}},
		{name: "a key beyond the first 64 KiB is not looked for", segs: with(append(bulk(65536), seg{fromA: true, off: 65536, payload: req1})...),
			want: nil},
		// The 4-tuple of an earlier connection reused without a SYN in the
		// capture: a key at a sequence number far from the old connection's,
		// or after its FIN, starts a new direction; the old Request carried
		// again at its place is a retransmission.
		{name: "4-tuple reused without a SYN", segs: with(seg{fromA: true, payload: req1}, seg{payload: rep1},
			seg{fromA: true, off: len(req1), payload: []byte("FPDUs...")}, seg{fromA: true, payload: req1},
			seg{fromA: true, payload: req2, isn: 3_000_000_000}, seg{payload: rep2, isn: 70_000_000}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}, {"MPA_REP", 4, []int{4}, 0, nil},
				{"MPA_REQ", 7, []int{7}, 4, nil}, {"MPA_REP", 8, []int{8}, 4, nil}}},
		{name: "4-tuple reused after a FIN, near the old sequence numbers", segs: with(seg{fromA: true, payload: req1},
			seg{fromA: true, off: len(req1), fin: true}, seg{fromA: true, off: len(req1) + 100, payload: req2}),
			want: []want{{"MPA_REQ", 3, []int{3}, 0, nil}, {"MPA_REQ", 5, []int{5}, 4, nil}}},
		{name: "a key inside a decided stream is not a new connection", segs: with(seg{fromA: true, payload: []byte("GET / HTTP/1.1\r\n")},
			seg{fromA: true, off: 65536 + 100, payload: req1}),
			want: nil},
		{name: "not MPA", segs: with(seg{fromA: true, payload: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")}, seg{payload: []byte("HTTP/1.1 200 OK\r\n")}),
			want: nil},
		{name: "not MPA, no handshake", segs: []seg{{fromA: true, off: 500, payload: []byte("xxxxxxxxxxxxxxxxxxxxxxxxxx")},
			{fromA: true, off: 526, payload: []byte("yyyyyyyy")}, {fromA: true, off: 534, payload: []byte("zz")},
			{fromA: true, off: 536, payload: []byte("zz")}, {fromA: true, off: 538, payload: []byte("zz")}, {fromA: true, off: 540, payload: req1}},
			want: nil},
		{name: "per-stream limit", segs: with(seg{fromA: true, payload: mpaBytes(craft.MPA{Request: true, Rev: 1, Data: append(rpcIni, make([]byte, 200)...)})}),
			lim: reassembly.Options{StreamBytes: 100}, dropped: 1,
			want: []want{{"MPA_REQ", 3, []int{3}, 0, []string{"state-limit-reached"}}}, contains: "more than the per-stream limit of 100"},
		{name: "active flow limit", segs: []seg{{fromA: true, payload: req1[:18]}, {payload: rep1[:5]}, {fromA: true, off: 18, payload: req1[18:]}},
			lim: reassembly.Options{Flows: 1}, dropped: 1,
			// The Reply's first segment evicts the Request's direction, which is
			// reported; the Reply's 5 octets never show a whole key: nothing.
			want:     []want{{"MPA_REQ", 1, []int{1}, -1, []string{"state-limit-reached"}}},
			contains: "more than 1 TCP directions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frames := tcpFrames(t, tc.ipv6, tc.segs)
			var wire []int
			for i, s := range tc.segs {
				w := len(frames[i])
				if s.cut > 0 {
					w += len(s.payload) - s.cut
				}
				wire = append(wire, w)
			}
			ms, d := decodeTCP(t, tc.lim, frames, wire)
			// Every direction given up at a limit is counted once; those no
			// message shows are counted apart as well.
			if d.Dropped() != tc.dropped || d.SilentDrops() != tc.silent {
				t.Errorf("dropped %d, silently %d; want %d, %d", d.Dropped(), d.SilentDrops(), tc.dropped, tc.silent)
			}
			limited := 0
			for _, m := range ms {
				if slices.Contains(codes(m.Findings), "state-limit-reached") {
					limited++
				}
			}
			if d.Dropped() != limited+d.SilentDrops() {
				t.Errorf("dropped %d, but %d messages with state-limit-reached and %d silently", d.Dropped(), limited, d.SilentDrops())
			}
			if len(ms) != len(tc.want) {
				for _, m := range ms {
					t.Logf("%s frame %d %v %v", m.Name(), m.Frame, m.Frames, m.Findings)
				}
				t.Fatalf("%d messages, want %d", len(ms), len(tc.want))
			}
			for i, w := range tc.want {
				m := ms[i]
				got := want{m.Name(), m.Frame, m.Frames, -1, codes(m.Findings)}
				if m.RPCRDMA != nil {
					got.rpcOff = m.RPCRDMA.Offset
				}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("message %d:\n got %+v\nwant %+v\n%v", i, got, w, m.Findings)
				}
				if m.Transport != record.IWARP {
					t.Errorf("transport %s", m.Transport)
				}
				// The time is that of the frame named, also when the frame
				// never completed and a later one ended the stream.
				if !m.Time.Equal(frameTime(m.Frame)) {
					t.Errorf("message %d: time %v is not that of frame %d (%v)", i, m.Time, m.Frame, frameTime(m.Frame))
				}
			}
			if tc.contains != "" {
				found := false
				for _, m := range ms {
					for _, f := range m.Findings {
						found = found || strings.Contains(f.Message, tc.contains)
					}
				}
				if !found {
					t.Errorf("no finding says %q", tc.contains)
				}
			}
			if tc.check != nil {
				tc.check(t, ms)
			}
		})
	}
}

// TestEarlyWindowDropReported: an MPA Request whose later segments came
// first, spanning more than an MPA frame can (532 octets), is not shown
// (the early window decided the direction), but never silently: it is
// counted as a state drop, and a state-limit-reached note names the first
// frame. Its retransmission counts no second time.
func TestEarlyWindowDropReported(t *testing.T) {
	req := mpaBytes(craft.MPA{Request: true, Rev: 1, Data: rpc(1, 1, 3, 3)})
	segs := []seg{{fromA: true, off: 100, payload: make([]byte, 300)}, {fromA: true, off: 400, payload: make([]byte, 300)},
		{fromA: true, payload: append(req, make([]byte, 100-len(req))...)}, {fromA: true, payload: append(req, make([]byte, 100-len(req))...)}}
	ms, d := decodeTCP(t, reassembly.Options{}, tcpFrames(t, false, segs), nil)
	notes := d.Notes()
	if len(ms) != 0 || d.Dropped() != 1 || d.SilentDrops() != 1 || len(notes) != 1 || notes[0].Code != finding.StateLimitReached ||
		!strings.Contains(notes[0].Message, "test: 1 TCP direction began with an MPA key only after more than 532 octets") ||
		!strings.Contains(notes[0].Message, "(first at frame 3)") {
		t.Errorf("%d messages, dropped %d (%d silently), notes %v", len(ms), d.Dropped(), d.SilentDrops(), notes)
	}
}
