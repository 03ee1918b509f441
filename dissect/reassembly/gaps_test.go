package reassembly_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
)

// gapProto is a protocol whose readers accept gaps (as the MPA framer's do
// once they follow a connection's FPDUs): each logs the holes it is
// delivered past, the octets it gets and how its direction ends.
type gapProto struct {
	log    []string
	health reassembly.Health // what End said last
}

type gapReader struct {
	p    *gapProto
	next int
}

func (p *gapProto) Starts(b []byte) (ok, strong bool) {
	return strings.HasPrefix(string(b), "START"), len(b) >= 5
}
func (p *gapProto) EarlyWindow() int { return 64 }
func (p *gapProto) Open(d *reassembly.Dir) reassembly.Reader {
	d.AcceptGaps()
	return &gapReader{p: p}
}

func (r *gapReader) Seen(int, int, int, time.Time, bool, bool) {}
func (r *gapReader) Data(off int, b []byte) reassembly.Status {
	if off != r.next {
		r.p.log = append(r.p.log, fmt.Sprintf("gap %d-%d", r.next, off))
	}
	if len(b) > 0 {
		// Octets that continue the last ones logged (a held range comes in
		// two pieces when it wraps in the ring) are logged with them.
		var lo, n int
		if l := len(r.p.log); l > 0 && off == r.next {
			if _, err := fmt.Sscanf(r.p.log[l-1], "data %d+%d", &lo, &n); err == nil && lo+n == off {
				r.p.log[l-1] = fmt.Sprintf("data %d+%d", lo, n+len(b))
				r.next = off + len(b)
				return reassembly.More
			}
		}
		r.p.log = append(r.p.log, fmt.Sprintf("data %d+%d", off, len(b)))
	}
	r.next = off + len(b)
	return reassembly.More
}
func (r *gapReader) Again(int, []byte, int)        {}
func (r *gapReader) Differ(int, int)               {}
func (r *gapReader) Need() int                     { return r.next + 1<<20 }
func (r *gapReader) Interest() reassembly.Interest { return reassembly.Following }
func (r *gapReader) End(e reassembly.End) {
	r.p.log = append(r.p.log, fmt.Sprintf("end %d", e.Kind))
	r.p.health = e.Health
}

// gapSeg is a segment of the direction followed (port 1 → 80, ISN 999), or
// with back set a segment of the reverse direction that acknowledges ack
// (a stream offset of the direction followed).
type gapSeg struct {
	off      int
	data     string
	syn, fin bool
	rst      bool
	back     bool
	ack      int
	zeroWin  bool // advertises a zero window (else 65535)
}

func runGaps(t *testing.T, opt reassembly.Options, segs []gapSeg, flush bool) []string {
	t.Helper()
	return runGapsProto(t, &gapProto{}, opt, segs, flush)
}

func runGapsProto(t *testing.T, p *gapProto, opt reassembly.Options, segs []gapSeg, flush bool) []string {
	t.Helper()
	a := reassembly.New(opt, p)
	at := time.Unix(1700000000, 0)
	for i, s := range segs {
		g := reassembly.Segment{Seq: 1000 + uint32(s.off), SYN: s.syn, FIN: s.fin, RST: s.rst, Payload: []byte(s.data),
			WireLen: len(s.data), Frame: i + 1, Time: at.Add(time.Duration(i) * time.Millisecond), Window: 65535}
		if s.zeroWin {
			g.Window = 0
		}
		if s.syn {
			g.Seq = 999
		}
		g.Flow.Src[15], g.Flow.Dst[15] = 1, 2
		g.Flow.SrcPort, g.Flow.DstPort = 1, 80
		if s.back {
			g = reassembly.Segment{Seq: 5000, ACK: true, Ack: 1000 + uint32(s.ack), Frame: i + 1, Time: g.Time}
			g.Flow.Src[15], g.Flow.Dst[15] = 2, 1
			g.Flow.SrcPort, g.Flow.DstPort = 80, 1
		}
		a.Segment(&g)
	}
	if flush {
		a.Flush()
	}
	return p.log
}

// TestGaps: a direction whose reader accepts gaps is delivered past a hole
// once the hole cannot be filled: the peer acknowledged octets past it, a
// segment came beyond what the direction may hold, or the direction ended
// (the input, an RST); not before (an ACK short of the hole's end, a FIN
// the peer has not acknowledged, reordering), nor when it is given up.
func TestGaps(t *testing.T) {
	hole := []gapSeg{{syn: true}, {off: 0, data: "START12345"}, {off: 20, data: "0123456789"}} // octets 10 to 19 missing
	cases := []struct {
		name  string
		opt   reassembly.Options
		segs  []gapSeg
		flush bool
		want  []string
	}{
		{"reordered: filled", reassembly.Options{}, append(hole[:3:3], gapSeg{off: 10, data: "abcdefghij"}), false,
			[]string{"data 0+30"}},
		{"acknowledged past the hole", reassembly.Options{}, append(hole[:3:3], gapSeg{back: true, ack: 30}), false,
			[]string{"data 0+10", "gap 10-20", "data 20+10"}},
		{"acknowledged short of its end", reassembly.Options{}, append(hole[:3:3], gapSeg{back: true, ack: 15}), false,
			[]string{"data 0+10"}},
		{"acknowledged beyond all sent", reassembly.Options{}, append(hole[:3:3], gapSeg{back: true, ack: 5000}), false,
			[]string{"data 0+10"}},
		{"FIN, then its ACK", reassembly.Options{}, append(hole[:3:3], gapSeg{off: 30, fin: true}, gapSeg{back: true, ack: 31}), false,
			[]string{"data 0+10", "gap 10-20", "data 20+10", "end 1"}},
		{"FIN not acknowledged: waits", reassembly.Options{}, append(hole[:3:3], gapSeg{off: 30, fin: true}), false,
			[]string{"data 0+10"}},
		{"beyond what it may hold", reassembly.Options{StreamBytes: 100}, append(hole[:3:3], gapSeg{off: 500, data: "xyz"}), false,
			[]string{"data 0+10", "gap 10-20", "data 20+10", "gap 30-500", "data 500+3"}},
		{"end of input", reassembly.Options{}, hole, true,
			[]string{"data 0+10", "gap 10-20", "data 20+10", "end 0"}},
		{"RST", reassembly.Options{}, append(hole[:3:3], gapSeg{off: 30, rst: true}), false,
			[]string{"data 0+10", "gap 10-20", "data 20+10", "end 2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := runGaps(t, tc.opt, tc.segs, tc.flush); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Given up at the flow limit: not delivered past the hole.
	p := &gapProto{}
	a := reassembly.New(reassembly.Options{Flows: 1}, p)
	at := time.Unix(1700000000, 0)
	for i, s := range []struct {
		port uint16
		seq  uint32
		syn  bool
		data string
	}{{1, 999, true, ""}, {1, 1000, false, "START12345"}, {1, 1020, false, "0123456789"}, {2, 499, true, ""}} {
		g := reassembly.Segment{Seq: s.seq, SYN: s.syn, Payload: []byte(s.data), WireLen: len(s.data), Frame: i + 1, Time: at}
		g.Flow.Src[15], g.Flow.Dst[15] = 1, 2
		g.Flow.SrcPort, g.Flow.DstPort = s.port, 80
		a.Segment(&g)
	}
	if want := []string{"data 0+10", "end 5"}; !reflect.DeepEqual(p.log, want) {
		t.Errorf("given up: got %q, want %q", p.log, want)
	}
}

// TestGapsHealth: what a direction's segments show of TCP (End.Health): a
// segment whose octets were all seen before, delivered or held, is a
// retransmission, one that brings new octets with old ones is not; a hole
// delivered past is one missing segment, named by the frame after it; a
// zero window counts but on an RST; an RST within the window is a reset.
func TestGapsHealth(t *testing.T) {
	p := &gapProto{}
	segs := []gapSeg{
		{syn: true},                         // 1
		{off: 0, data: "START12345"},        // 2
		{off: 20, data: "0123456789"},       // 3: held past the hole 10-19
		{off: 20, data: "0123456789"},       // 4: held already: sent again
		{off: 0, data: "START12345"},        // 5: delivered already: sent again
		{off: 7, data: "345abcdefg"},        // 6: 7-9 old, 10-16 new: not counted
		{back: true, ack: 30},               // 7: 17-19 lost
		{off: 30, zeroWin: true},            // 8: a zero window
		{off: 30, rst: true, zeroWin: true}, // 9: an RST (its zero window not counted)
	}
	got := runGapsProto(t, p, reassembly.Options{}, segs, false)
	if want := []string{"data 0+17", "gap 17-20", "data 20+10", "end 2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	want := reassembly.Health{Retransmitted: 2, Missing: 1, ZeroWindows: 1, Resets: 1,
		RetransmittedFrames: [3]int32{4, 5}, MissingFrames: [3]int32{3}, ResetFrame: 9}
	if p.health != want {
		t.Errorf("health %+v, want %+v", p.health, want)
	}

	// A hole before the FIN, nothing held after it: counted at the end of
	// the input, named by the FIN's frame.
	p = &gapProto{}
	runGapsProto(t, p, reassembly.Options{}, []gapSeg{{syn: true}, {off: 0, data: "START12345"}, {off: 20, fin: true}}, true)
	if want := (reassembly.Health{Missing: 1, MissingFrames: [3]int32{3}}); p.health != want {
		t.Errorf("hole before the FIN: health %+v, want %+v", p.health, want)
	}
}
