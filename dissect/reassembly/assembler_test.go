package reassembly_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
)

// A toy protocol: a direction starts with "START", and its reader wants
// the first need octets of the stream.
type toy struct {
	need    int
	log     []string // what every reader was told, in order
	readers []*toyReader
}

type toyReader struct {
	p    *toy
	d    *reassembly.Dir
	got  []byte
	done bool
}

func (p *toy) Starts(b []byte) (ok, strong bool) {
	n := min(len(b), 5)
	return n > 0 && string(b[:n]) == "START"[:n], n == 5
}

func (p *toy) EarlyWindow() int { return 64 }

func (p *toy) Open(d *reassembly.Dir) reassembly.Reader {
	r := &toyReader{p: p, d: d}
	p.readers = append(p.readers, r)
	p.logf("open port %d syn=%v lost=%v", d.Flow.SrcPort, d.SYN, d.Lost)
	return r
}

func (p *toy) logf(format string, args ...any) { p.log = append(p.log, fmt.Sprintf(format, args...)) }

func (r *toyReader) Seen(lo, hi int, frame int, at time.Time, added, cut bool) {
	r.p.logf("seen [%d,%d) frame %d added=%v cut=%v", lo, hi, frame, added, cut)
}

func (r *toyReader) Data(off int, b []byte) reassembly.Status {
	r.p.logf("data %d %q", off, b)
	r.got = append(r.got, b...)
	r.d.Charge(len(b))
	if len(r.got) >= r.p.need {
		r.done = true
		r.p.logf("done")
		return reassembly.Done
	}
	return reassembly.More
}

func (r *toyReader) Again(off int, b []byte, frame int) {
	r.p.logf("again %d %q frame %d", off, b, frame)
}

func (r *toyReader) Differ(off, frame int) { r.p.logf("differ %d frame %d", off, frame) }

func (r *toyReader) Need() int { return r.p.need }

func (r *toyReader) Interest() reassembly.Interest {
	if len(r.got) > 0 {
		return reassembly.Shown
	}
	return reassembly.Nothing
}

func (r *toyReader) End(e reassembly.End) {
	r.p.logf("end %d %q frame %d", e.Kind, e.Detail, e.Frame)
}

// seg is a segment of port's direction at offset off from ISN+1 1000.
type seg struct {
	port          uint16
	off           int
	syn, fin, rst bool
	data          string
	isn           uint32
}

func run(t *testing.T, opt reassembly.Options, need int, segs []seg) (*toy, *reassembly.Assembler) {
	t.Helper()
	p := &toy{need: need}
	a := reassembly.New(opt, p)
	at := time.Unix(1700000000, 0)
	for i, s := range segs {
		isn := uint32(999)
		if s.isn != 0 {
			isn = s.isn
		}
		g := reassembly.Segment{Seq: isn + 1 + uint32(s.off), SYN: s.syn, FIN: s.fin, RST: s.rst, Payload: []byte(s.data),
			WireLen: len(s.data), Frame: i + 1, Time: at.Add(time.Duration(i) * time.Millisecond)}
		if s.syn {
			g.Seq = isn
		}
		g.Flow.Src[15], g.Flow.Dst[15] = 1, 2
		g.Flow.SrcPort, g.Flow.DstPort = s.port, 80
		a.Segment(&g)
	}
	a.Flush()
	return p, a
}

func TestAssembler(t *testing.T) {
	cases := []struct {
		name string
		opt  reassembly.Options
		need int
		segs []seg
		want []string
	}{
		{name: "in order from a SYN", need: 10, segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, data: "abcd"}, {port: 1, off: 4, data: "efghij"}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,4) frame 2 added=true cut=false`, `data 0 "abcd"`,
				`seen [4,10) frame 3 added=true cut=false`, `data 4 "efghij"`, "done"}},
		{name: "out of order: held, then delivered", need: 10, segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, off: 4, data: "efghij"}, {port: 1, data: "abcd"}},
			want: []string{"open port 1 syn=true lost=false", `seen [4,10) frame 2 added=true cut=false`,
				`seen [0,4) frame 3 added=true cut=false`, `data 0 "abcd"`, `data 4 "efghij"`, "done"}},
		{name: "a retransmission goes to Again; a held octet carried differently to Differ", need: 20,
			segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, data: "abcd"}, {port: 1, data: "abXd"}, {port: 1, off: 8, data: "ijkl"},
				{port: 1, off: 8, data: "iJkL"}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,4) frame 2 added=true cut=false`, `data 0 "abcd"`,
				`seen [0,4) frame 3 added=false cut=false`, `again 0 "abXd" frame 3`, `seen [8,12) frame 4 added=true cut=false`,
				"differ 9 frame 5", `seen [8,12) frame 5 added=false cut=false`, `end 0 "" frame 5`}},
		{name: "data in the SYN", need: 5, segs: []seg{{port: 1, off: -1, syn: true, data: "hello"}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,5) frame 1 added=true cut=false`, `data 0 "hello"`, "done"}},
		// Octets kept before the SYN are soft: a later copy replaces them;
		// what stands is delivered at the end, its segments told then.
		{name: "octets before the SYN replaced by a later copy", need: 20,
			segs: []seg{{port: 1, off: 4, data: "OLD!"}, {port: 1, off: -1, syn: true}, {port: 1, data: "abcdefgh"}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,8) frame 3 added=true cut=false`, `data 0 "abcdefgh"`,
				`end 0 "" frame 3`}},
		{name: "octets before the SYN that stand", need: 20,
			segs: []seg{{port: 1, off: 4, data: "efgh"}, {port: 1, off: -1, syn: true, data: "abcd"}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,4) frame 2 added=true cut=false`, `data 0 "abcd"`,
				`seen [4,8) frame 1 added=true cut=false`, `data 4 "efgh"`, `end 0 "" frame 2`}},
		// Without a SYN: a segment that starts the direction; segments kept
		// before it that follow it are delivered after it.
		{name: "no SYN: the start arrives after later octets", need: 9,
			segs: []seg{{port: 1, off: 5, data: "1234"}, {port: 1, data: "START"}},
			want: []string{"open port 1 syn=false lost=false", `seen [5,9) frame 1 added=true cut=false`,
				`seen [0,5) frame 2 added=true cut=false`, `data 0 "START"`, `data 5 "1234"`, "done"}},
		{name: "no SYN and no start: more than the early window, decided", need: 9,
			segs: []seg{{port: 1, off: 100, data: strings.Repeat("x", 40)}, {port: 1, off: 140, data: strings.Repeat("y", 40)},
				{port: 1, off: 180, data: "START"}},
			want: nil},
		// Decided directions: a SYN repeating the start is a retransmission;
		// another ISN is a new connection; a segment that starts strongly far
		// away is a new connection without a captured SYN.
		{name: "decided: SYN again, new ISN, reuse without a SYN", need: 5,
			segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, data: "START"}, {port: 1, off: -1, syn: true}, {port: 1, data: "START"},
				{port: 1, off: -1, syn: true, isn: 5000}, {port: 1, data: "START", isn: 5000},
				{port: 1, data: "START", isn: 0x80000000}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,5) frame 2 added=true cut=false`, `data 0 "START"`, "done",
				"open port 1 syn=true lost=false", `seen [0,5) frame 6 added=true cut=false`, `data 0 "START"`, "done",
				"open port 1 syn=false lost=false", `seen [0,5) frame 7 added=true cut=false`, `data 0 "START"`, "done"}},
		{name: "a FIN ends it once the octets before it are in", need: 20,
			segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, off: 4, data: "efgh", fin: true}, {port: 1, data: "abcd"}},
			want: []string{"open port 1 syn=true lost=false", `seen [4,8) frame 2 added=true cut=false`,
				`seen [0,4) frame 3 added=true cut=false`, `data 0 "abcd"`, `data 4 "efgh"`, `end 1 "" frame 3`}},
		{name: "an RST in the window ends it, one outside does not", need: 20,
			segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, data: "abcd"}, {port: 1, off: 900000, rst: true}, {port: 1, off: 4, rst: true}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,4) frame 2 added=true cut=false`, `data 0 "abcd"`, `end 2 "" frame 4`}},
		{name: "octets beyond what the reader needs are not held", need: 4,
			segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, off: 10, data: "later"}, {port: 1, data: "abcd"}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,4) frame 3 added=true cut=false`, `data 0 "abcd"`, "done"}},
		{name: "the flow limit gives up the least recently progressed", opt: reassembly.Options{Flows: 1}, need: 20,
			segs: []seg{{port: 1, off: -1, syn: true}, {port: 1, data: "abcd"}, {port: 2, off: -1, syn: true}},
			want: []string{"open port 1 syn=true lost=false", `seen [0,4) frame 2 added=true cut=false`, `data 0 "abcd"`,
				`end 5 "more than 1 TCP directions were being followed at once; this one was given up" frame 2`,
				"open port 2 syn=true lost=false", `end 0 "" frame 3`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, a := run(t, tc.opt, tc.need, tc.segs)
			if !reflect.DeepEqual(p.log, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(p.log, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if s := a.Stats(); s.Held != 0 || s.Followed != 0 {
				t.Errorf("after the flush: %+v", s)
			}
		})
	}
}

// What a stream delivers is what was sent, whatever the order and the
// overlaps of its segments, and however many (up to the hole limit).
func TestAssemblerOrders(t *testing.T) {
	const n = 2000
	msg := make([]byte, n)
	for i := range msg {
		msg[i] = byte('a' + i%26)
	}
	copy(msg, "START")
	orders := map[string]func(k int) int{
		"ascending":  func(k int) int { return k },
		"descending": func(k int) int { return 39 - k },
		"interleaved": func(k int) int {
			if k%2 == 0 {
				return k / 2
			}
			return 20 + k/2
		},
	}
	for name, order := range orders {
		for _, syn := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s syn=%v", name, syn), func(t *testing.T) {
				var segs []seg
				if syn {
					segs = append(segs, seg{port: 1, off: -1, syn: true})
				}
				for k := range 40 {
					i := order(k)
					lo, hi := i*50, min(n, i*50+60) // overlapping by 10
					segs = append(segs, seg{port: 1, off: lo, data: string(msg[lo:hi])})
				}
				p, _ := run(t, reassembly.Options{}, n, segs)
				if !syn && name == "descending" {
					// Without a SYN, only an early window's span is kept below
					// the start: the direction is decided before it arrives.
					if len(p.readers) != 0 {
						t.Fatalf("%d readers", len(p.readers))
					}
					return
				}
				if len(p.readers) != 1 || !bytes.Equal(p.readers[0].got, msg) {
					t.Fatalf("%d readers; got %d octets", len(p.readers), len(p.readers[0].got))
				}
			})
		}
	}
}

// Decided directions are remembered exactly up to Remembered; beyond it
// the least recently seen are forgotten, and counted.
func TestAssemblerRemembered(t *testing.T) {
	var segs []seg
	for i := range 200 {
		segs = append(segs, seg{port: uint16(100 + i), off: -1, syn: true}, seg{port: uint16(100 + i), data: "START"})
	}
	_, a := run(t, reassembly.Options{Remembered: 100}, 5, segs)
	s := a.Stats()
	if s.Remembered > 100 || s.Forgotten < 100 || s.Remembered+s.Forgotten != 200 {
		t.Fatalf("%+v", s)
	}
}

// TestEarlyWindowMissed: segments that arrive before a direction's start
// and span more than the early window decide it; a start that comes after
// them (below them) is not shown, and is counted once (with its frame),
// however often it is retransmitted. A direction that never shows a start,
// or whose start comes within the window, is not counted. Above them, a key
// right after them is data of the direction going on (not shown, not
// counted); one after a gap starts the direction there.
func TestEarlyWindowMissed(t *testing.T) {
	start := "START" + strings.Repeat("s", 35)
	late := []seg{{port: 1, off: 40, data: strings.Repeat("x", 20)}, {port: 1, off: 60, data: strings.Repeat("y", 20)}, // span 40
		{port: 1, off: 100, data: strings.Repeat("z", 10)}, // span 70: more than the window of 64
		{port: 1, off: 0, data: start}, {port: 1, off: 0, data: start}}
	for _, tc := range []struct {
		name   string
		segs   []seg
		missed int
		frame  int
		shown  string // what a reader got, if one was opened
	}{
		{"start after the window", late, 1, 4, ""},
		{"no start at all", late[:3], 0, 0, ""},
		{"start within the window", []seg{late[0], late[1], {port: 1, off: 0, data: start}}, 0, 0, "START"},
		{"key right after the octets", append(late[:3:3], seg{port: 1, off: 110, data: start}), 0, 0, ""},
		{"key after a gap above the octets", append(late[:3:3], seg{port: 1, off: 200, data: start}), 0, 0, start},
	} {
		p, a := run(t, reassembly.Options{}, 100, tc.segs)
		if s := a.Stats(); s.EarlyMissed != tc.missed || s.EarlyMissedFrame != tc.frame {
			t.Errorf("%s: missed %d (frame %d), want %d (frame %d); log %q", tc.name, s.EarlyMissed, s.EarlyMissedFrame, tc.missed, tc.frame, p.log)
		}
		switch {
		case tc.shown == "" && len(p.readers) != 0:
			t.Errorf("%s: %d readers, want none; log %q", tc.name, len(p.readers), p.log)
		case tc.shown != "" && (len(p.readers) != 1 || !strings.HasPrefix(string(p.readers[0].got), tc.shown)):
			t.Errorf("%s: %d readers, want one that got %q; log %q", tc.name, len(p.readers), tc.shown, p.log)
		}
	}
}

// TestEarlyFlowsLimit: while fewer than EarlyFlows directions wait for
// their start, a keyless first segment longer than the early window is held
// (the tail of an over-long first message, whose start then shows it);
// at the limit it is decided at once, without giving up a direction that
// waits; a start that then arrives below it is counted as missed, one
// after a gap above it starts the direction. A short keyless segment at the
// limit gives up the oldest that waits.
func TestEarlyFlowsLimit(t *testing.T) {
	long := strings.Repeat("t", 100) // longer than the toy's early window of 64
	t.Run("room: held", func(t *testing.T) {
		p, a := run(t, reassembly.Options{EarlyFlows: 2}, 1000, []seg{{port: 3, off: 10, data: long}, {port: 3, data: "START12345"}})
		if s := a.Stats(); s.EarlyMissed != 0 || s.Keyless != 0 || len(p.readers) != 1 {
			t.Fatalf("%+v, %d readers; log %q", s, len(p.readers), p.log)
		}
		if got := string(p.readers[0].got); got != "START12345"+long[:64] { // the window spans from the lowest octet seen
			t.Errorf("the reader got %q", got)
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		segs := []seg{
			{port: 1, off: 10, data: "0123456789"}, {port: 2, off: 10, data: "0123456789"}, // two wait: the limit
			{port: 3, off: 10, data: long},          // decided at once
			{port: 1, data: "START12345"},           // port 1 still waited: its start shows its octets
			{port: 5, off: 10, data: "0123456789"},  // two wait again
			{port: 4, off: 10, data: "0123456789"},  // short: gives up the oldest that waits (port 2)
			{port: 3, data: "START12345"},           // below octets decided: missed, frame 7
			{port: 6, off: 10, data: long},          // decided at once too
			{port: 6, off: 200, data: "START12345"}, // a key after a gap above them: a start
		}
		p, a := run(t, reassembly.Options{EarlyFlows: 2}, 1000, segs)
		s := a.Stats()
		if s.EarlyMissed != 1 || s.EarlyMissedFrame != 7 || s.Keyless != 1 {
			t.Errorf("missed %d (frame %d), keyless %d; want 1 (frame 7), 1 (port 2); log %q",
				s.EarlyMissed, s.EarlyMissedFrame, s.Keyless, p.log)
		}
		if len(p.readers) != 2 || string(p.readers[0].got) != "START123450123456789" || string(p.readers[1].got) != "START12345" {
			t.Fatalf("%d readers; log %q", len(p.readers), p.log)
		}
	})
}

// A segment decided at once that carries a FIN ends its connection, which
// is forgotten at once (counted as ended): a key right after it is a new
// connection on the 4-tuple, not data of the old one.
func TestEarlyFlowsLimitFIN(t *testing.T) {
	long := strings.Repeat("t", 100)
	for _, fin := range []bool{false, true} {
		p, a := run(t, reassembly.Options{EarlyFlows: 1}, 1000, []seg{
			{port: 1, off: 10, data: "0123456789"},   // one waits: the limit
			{port: 2, off: 10, data: long, fin: fin}, // decided at once
			{port: 2, off: 110, data: "START12345"},  // right after it
		})
		if got, want := len(p.readers) == 1 && a.Stats().Ended == 1, fin; got != want {
			t.Errorf("FIN %v: %d readers, %d ended; log %q", fin, len(p.readers), a.Stats().Ended, p.log)
		}
	}
}

// TestAssemblerBudget: the octets held and the directions followed are
// charged to the run's budget too. When another holder has filled it, the
// direction least recently progressed is given up for the newer one,
// saying so, and counted as lost (it had shown something); everything is
// released at the end.
func TestAssemblerBudget(t *testing.T) {
	b := budget.New(1 << 20)
	b.Force(budget.Attempts, 1<<20-256<<10) // another holder's: 256 KiB are left
	chunk := strings.Repeat("x", 1000)
	var segs []seg
	segs = append(segs, seg{port: 1, syn: true}, seg{port: 1, data: "START"})
	for i := range 100 {
		segs = append(segs, seg{port: 1, off: 5 + 1000*i, data: chunk})
	}
	segs = append(segs, seg{port: 2, syn: true}, seg{port: 2, data: "START"})
	for i := range 100 {
		segs = append(segs, seg{port: 2, off: 5 + 1000*i, data: chunk})
	}
	p, _ := run(t, reassembly.Options{Budget: b}, 1<<20, segs)
	var ends []string
	for _, l := range p.log {
		if strings.HasPrefix(l, "end ") {
			ends = append(ends, l)
		}
	}
	if len(ends) != 2 || !strings.Contains(ends[0], "the memory budget of 1 MiB for all state is full; this TCP direction was given up to make room") {
		t.Errorf("ends %q", ends)
	}
	if s := b.Stats(); s.Lost[budget.TCP] != 1 || s.Held[budget.TCP] != 0 || s.Refused[budget.TCP] == 0 {
		t.Errorf("lost %d, held %d, refused %d", s.Lost[budget.TCP], s.Held[budget.TCP], s.Refused[budget.TCP])
	}
	if len(p.readers) != 2 || len(p.readers[1].got) != 5+100000 {
		t.Errorf("%d readers; the newer direction got %d octets", len(p.readers), len(p.readers[1].got))
	}
}
