package capture

// A Plan is what -w writes for a file input: the frames behind every
// record shown. A record's verdict rests on more than its own frames: a
// Send is judged against its connection's setup (the thresholds, the R
// bits), and against what the traffic before it left outstanding (Calls
// and their STags, Read Requests, credits); a gap in the PSNs or the TCP
// stream makes the follower stop judging. So the file gets, for a record
// of a connection, every frame of that connection from its setup up to the
// record (to its end for a connection record), and for a record without a
// connection its own frames. Dissecting the file again then gives the same
// verdicts for the records shown.
//
// Which frames belong to a connection is known only once the records are,
// often long after the frames went by; so the Plan is made in a first pass,
// as a record.Sink behind the display filter, and an Excerpt writes it in a
// second pass over the same input, where the data path tells it the
// connection of each frame of its traffic (datapath.Output.Evidence) and
// the records name their frames again. The same input gives the same
// records, numbers and frames in both passes.

import (
	"sort"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// maxPlanned bounds what a Plan holds besides the connections wanted
// whole (a bit each): the connections wanted up to a frame and the runs of
// frames together, at most some 50 octets each. Beyond it the records
// shown are counted in Unplanned, and their frames are not written.
const maxPlanned = 1 << 18

// Plan gathers what -w writes for the records shown. Put it behind the
// display filter: every record it gets is one shown. It passes the records
// on to next.
type Plan struct {
	next record.Sink
	// whole marks the connections wanted whole, by Number; upto the
	// others wanted, by Number: the last frame needed.
	whole []uint64
	upto  map[int]int
	// frames are the frames of records without a connection, by input.
	frames  map[string]*frameRuns
	planned int // entries in upto and frames

	// Shown counts the records shown, by kind.
	Shown struct{ Messages, Connections, RPCs int }
	// Unplanned counts the records shown beyond maxPlanned, whose frames
	// are not written.
	Unplanned int
}

// NewPlan makes a Plan that passes the records on to next.
func NewPlan(next record.Sink) *Plan {
	return &Plan{next: next, upto: map[int]int{}, frames: map[string]*frameRuns{}}
}

// Message plans a message's frames: those of its connection up to it, or
// its own when it belongs to none.
func (p *Plan) Message(m *record.Message) error {
	p.Shown.Messages++
	if m.Conn != 0 {
		p.conn(m.Conn, m.Frame)
	} else if len(m.Frames) > 0 {
		p.own(m.File, m.Frames)
	} else {
		p.own(m.File, []int{m.Frame})
	}
	return p.next.Message(m)
}

// Connection plans every frame of the connection.
func (p *Plan) Connection(c *record.Connection) error {
	p.Shown.Connections++
	p.connWhole(c.Number)
	return p.next.Connection(c)
}

// Update plans every frame of the connection updated.
func (p *Plan) Update(u *record.ConnectionUpdate) error {
	p.connWhole(u.Number)
	return p.next.Update(u)
}

// RPC plans an rpc record's frames: its connection's up to it (the
// traffic its verdict rests on), or its own when its setup was not seen.
func (p *Plan) RPC(rec *record.RPC) error {
	p.Shown.RPCs++
	if rec.Conn != 0 {
		// Up to its Reply, when it names one: a Long Call is put together
		// from Read Responses after its Send, and its Reply shows it
		// answered.
		upto := rec.Frame
		if m := rec.Message; m != nil && m.ReplyFrame > upto {
			upto = m.ReplyFrame
		}
		p.conn(rec.Conn, upto)
	} else {
		p.own(rec.File, rec.Frames)
	}
	return p.next.RPC(rec)
}

// Summary passes the summary on.
func (p *Plan) Summary(s *record.Summary) error { return p.next.Summary(s) }

// isWhole reports whether connection n is wanted whole.
func (p *Plan) isWhole(n int) bool {
	return n >= 0 && n/64 < len(p.whole) && p.whole[n/64]&(1<<(n%64)) != 0
}

// connWhole wants every frame of connection n.
func (p *Plan) connWhole(n int) {
	if n <= 0 || p.isWhole(n) {
		return
	}
	for len(p.whole) <= n/64 {
		p.whole = append(p.whole, 0)
	}
	p.whole[n/64] |= 1 << (n % 64)
	if _, ok := p.upto[n]; ok {
		delete(p.upto, n)
		p.planned--
	}
}

// conn wants connection n's frames up to frame upto.
func (p *Plan) conn(n, upto int) {
	if p.isWhole(n) {
		return
	}
	if have, ok := p.upto[n]; ok {
		p.upto[n] = max(have, upto)
		return
	}
	if p.planned >= maxPlanned {
		p.Unplanned++
		return
	}
	p.planned++
	p.upto[n] = upto
}

// own wants frames of an input.
func (p *Plan) own(file string, frames []int) {
	r := p.frames[file]
	if r == nil {
		if p.planned >= maxPlanned {
			p.Unplanned++
			return
		}
		r = &frameRuns{}
		p.frames[file] = r
		p.planned++
	}
	for _, f := range frames {
		n := len(r.runs)
		if !r.add(f, p.planned < maxPlanned) {
			p.Unplanned++
			return
		}
		p.planned += len(r.runs) - n
	}
}

// wants reports whether frame (of connection n, 0 for none) is planned.
func (p *Plan) wants(n, frame int) bool {
	if n <= 0 {
		return false
	}
	if p.isWhole(n) {
		return true
	}
	upto, ok := p.upto[n]
	return ok && frame <= upto
}

// Empty reports whether nothing is planned.
func (p *Plan) Empty() bool { return len(p.whole) == 0 && len(p.upto) == 0 && len(p.frames) == 0 }

// frameRuns is a set of frame numbers as sorted, disjoint runs (the
// frames of a record, and of records close together, are mostly
// consecutive).
type frameRuns struct {
	runs []frameRun
	at   int // where the last lookup ended: lookups go forward
}

type frameRun struct{ lo, hi int }

// add puts f in the set; room says whether a new run may be made. It
// reports false when f needed a run and there was no room.
func (s *frameRuns) add(f int, room bool) bool {
	n := len(s.runs)
	if n > 0 && f >= s.runs[n-1].lo { // the usual case: at or after the last run
		if f <= s.runs[n-1].hi {
			return true
		}
		if f == s.runs[n-1].hi+1 {
			s.runs[n-1].hi = f
			return true
		}
	}
	i := sort.Search(n, func(i int) bool { return s.runs[i].hi >= f-1 })
	switch {
	case i < n && s.runs[i].lo <= f+1 && f-1 <= s.runs[i].hi:
		s.runs[i].lo, s.runs[i].hi = min(s.runs[i].lo, f), max(s.runs[i].hi, f)
		if i+1 < n && s.runs[i+1].lo <= s.runs[i].hi+1 { // f joined two runs
			s.runs[i].hi = max(s.runs[i].hi, s.runs[i+1].hi)
			s.runs = append(s.runs[:i+1], s.runs[i+2:]...)
		}
		return true
	case !room:
		return false
	}
	s.runs = append(s.runs, frameRun{})
	copy(s.runs[i+1:], s.runs[i:])
	s.runs[i] = frameRun{f, f}
	return true
}

// has reports whether f is in the set. The frames asked for go forward
// within an input; one before the last asked starts the search again.
func (s *frameRuns) has(f int) bool {
	if s.at >= len(s.runs) || s.at > 0 && s.runs[s.at-1].hi >= f {
		s.at = 0
	}
	for s.at < len(s.runs) && s.runs[s.at].hi < f {
		s.at++
	}
	return s.at < len(s.runs) && s.runs[s.at].lo <= f
}
