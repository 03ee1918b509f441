package reassembly

import (
	"fmt"
	"time"
)

// stream is a direction being followed. Held octets sit in buf at their
// sequence number modulo len(buf); their ranges are kept in got, in offsets
// from the direction's first sequence number seen (origin), so that a
// segment below everything held, or a start that moves, never moves an
// octet.
type stream struct {
	flow Flow
	dir  Dir
	r    Reader
	slot int
	// ent is the direction's entry in the flow table: entries never move,
	// and a followed one is never removed.
	ent *dirState
	// prev and next link the directions followed from the least recently
	// progressed to the most (Assembler.lru).
	lprev, lnext *stream
	inEarly      bool // in the list of unanchored directions

	anchored bool // the start is known: octets are delivered from it
	syn      bool // the start is the octet after a SYN
	lost     bool
	origin   uint32 // first sequence number seen: offsets count from it
	start    uint32 // anchored: the sequence number of stream offset 0
	next     int    // anchored: stream offset of the next octet to deliver
	// zero is the sequence number where the direction started; start and
	// origin move ahead of it (rebase) on a long stream, and shift says by
	// how much: the reader's offsets are the stream's plus shift.
	zero    uint32
	shift   int
	low     int // unanchored: offset of the lowest octet seen
	anyData bool
	end     uint32 // sequence number after the highest octet seen
	fin     bool
	finSeq  uint32

	buf []byte
	got []span // held ranges, sorted, merged where their softness agrees
	tmp []span // scratch for merge
	// early: the segments that brought held octets before the start was
	// known (replayed to the reader as Seen once it is), and after a SYN
	// the ones whose octets are soft (replayed when delivered).
	early  []origin
	nEarly int // early segments that added octets
	dups   int // early segments that added nothing, recorded
	// differ: 1 + the lowest offset a later copy carried differently while
	// no reader was there, and that copy's frame.
	differ, differFrame int

	capped  string // a limit was reached: which (the direction is given up)
	charged int    // octets charged to the total

	lastFrame     int
	lastTime      time.Time
	progressFrame int   // frame of the last segment that added octets (or opened it)
	progress      int64 // the ageing clock then
}

// origin is a segment that brought held octets [lo, hi).
type origin struct {
	lo, hi     int
	frame      int
	time       time.Time
	added, cut bool
	soft       bool
}

// Costs charged to the total buffer besides held octets, so that many tiny
// segments stay bounded too.
const (
	earlyCost  = 16 // an early segment that added octets
	originCost = 48 // an entry of early
	// streamCost is what following a direction costs besides the octets
	// it holds (its stream, its flow table entry), charged to the budget.
	streamCost = 640
	// maxDupEarly bounds the early segments that added nothing recorded
	// per direction.
	maxDupEarly = 8
)

func (s *stream) reset(f Flow, seq uint32) {
	buf := s.buf[:0]
	got, early, tmp := s.got[:0], s.early[:0], s.tmp[:0]
	*s = stream{flow: f, origin: seq, start: seq, zero: seq, buf: buf, got: got, early: early, tmp: tmp}
}

// release forgets what the stream refers to, for reuse from the pool.
func (s *stream) release() {
	s.r = nil
	s.dir = Dir{}
	clear(s.early[:cap(s.early)])
}

// Calls to the reader, in its offsets.
func (s *stream) seen(lo, hi int, frame int, at time.Time, added, cut bool) {
	s.r.Seen(lo+s.shift, hi+s.shift, frame, at, added, cut)
}
func (s *stream) data(off int, b []byte) Status      { return s.r.Data(off+s.shift, b) }
func (s *stream) again(off int, b []byte, frame int) { s.r.Again(off+s.shift, b, frame) }
func (s *stream) differs(off, frame int)             { s.r.Differ(off+s.shift, frame) }
func (s *stream) need() int                          { return s.r.Need() - s.shift }

// Rebasing keeps the offsets of a long stream within what 32-bit sequence
// arithmetic tells apart: once a direction has delivered rebaseAt octets,
// its offsets start again rebaseKeep octets before the next one.
const (
	rebaseAt   = 1 << 30
	rebaseKeep = 1 << 20
)

// rebase moves the direction's offsets back when it has come far.
func (s *stream) rebase() {
	if !s.anchored || s.next < rebaseAt {
		return
	}
	k := s.next - rebaseKeep
	s.start += uint32(k)
	s.origin += uint32(k)
	s.next -= k
	s.shift += k
	s.low -= k
	for i := range s.got {
		s.got[i].lo -= k
		s.got[i].hi -= k
	}
	for i := range s.early {
		s.early[i].lo -= k
		s.early[i].hi -= k
	}
	if s.differ > 0 {
		s.differ = max(1, s.differ-k)
	}
}

func (s *stream) rel(seq uint32) int { return int(int32(seq - s.origin)) }

// startOff is the origin offset of stream offset 0.
func (s *stream) startOff() int { return s.rel(s.start) }

// lowSeq is the lowest sequence number seen of an unanchored direction.
func (s *stream) lowSeq() uint32 { return s.origin + uint32(s.low) }

// startsAbove reports whether a segment that starts strongly at seq, above
// octets held before the start is known, starts the direction: the octets
// held do not run up to it, or are just one octet right before it (the
// shape of a TCP keep-alive probe, RFC 9293 section 3.8.4). A start right
// after longer data is inside a stream.
func (s *stream) startsAbove(seq uint32) bool {
	off := s.rel(seq)
	if off <= s.low {
		return false
	}
	held, before := 0, false
	for _, g := range s.got {
		if g.lo < off {
			held += min(g.hi, off) - g.lo
			before = before || g.hi >= off
		}
	}
	return !before || held == 1
}

// rstInWindow reports whether an RST at seq ends the direction: its
// sequence number lies within what the reader needs or what was seen (or,
// without a start, within an early window of the octets held).
func (s *stream) rstInWindow(seq uint32, a *Assembler) bool {
	if !s.anchored {
		if !s.anyData {
			return true
		}
		w := int32(a.p.EarlyWindow())
		return int32(seq-s.lowSeq()) >= -w && int32(seq-s.end) <= w
	}
	off := int(int32(seq - s.start))
	hi := s.need()
	if s.anyData {
		hi = max(hi, int(int32(s.end-s.start)))
	}
	return off >= 0 && off <= hi
}

// finInWindow reports whether a FIN ending the stream at finSeq can be
// taken: not before the start, nor before octets already seen. Others
// (stale or forged) are ignored, like an RST outside the window.
func (s *stream) finInWindow(finSeq uint32) bool {
	if s.anchored && int32(finSeq-s.start) < 0 {
		return false
	}
	return !s.anyData || int32(finSeq-s.end) >= 0
}

// keepEarly keeps a segment of a direction whose start is not known: the
// octets within the early window from the lowest one seen, bounded by the
// per-direction limit, the total and MaxEarlySegs. It reports false when the
// direction was closed as decided: the segments span more than the early
// window and none starts it.
func (a *Assembler) keepEarly(s *stream, seg *Segment, seq uint32, cut bool) bool {
	o := s.rel(seq)
	e := o + len(seg.Payload)
	lo, hi := o, e
	if s.anyData {
		lo, hi = min(s.low, lo), max(s.rel(s.end), hi)
	}
	win := min(a.p.EarlyWindow(), a.opt.StreamBytes)
	switch span := hi - lo; {
	case s.anyData && span > a.p.EarlyWindow():
		// More octets than a first message spans, and still no start: not
		// this protocol, or not its first octets. A start that comes after
		// all the same is counted (Stats.EarlyMissed). The decided direction
		// spans this segment's octets too.
		s.low, s.end = lo, s.origin+uint32(hi)
		a.finishFlags(s, End{Kind: EndIdle}, flagEarly)
		return false
	case span > a.opt.StreamBytes:
		s.capped = fmt.Sprintf("%d octets arrived before the start of the stream, more than the per-stream limit of %d", span, a.opt.StreamBytes)
	case s.nEarly >= a.opt.MaxEarlySegs:
		s.capped = fmt.Sprintf("more than %d segments arrived before the start of the stream", a.opt.MaxEarlySegs)
	default:
		if !s.anyData || o < s.low {
			s.low = o
			s.trimAbove(s.low + win)
		}
		top := min(e, s.low+win)
		added := top > o && a.hold(s, o, seg.Payload[:top-o], seg.Frame)
		if top > o && len(s.early) < a.opt.MaxEarlySegs && (added || s.dups < maxDupEarly) {
			if !added {
				s.dups++
			}
			s.early = append(s.early, origin{lo: o, hi: top, frame: seg.Frame, time: seg.Time, added: added, cut: cut && top == e})
			a.charge(s, originCost)
		}
		if added {
			s.nEarly++
			a.charge(s, earlyCost)
			a.touch(s, seg.Frame)
		}
	}
	return true
}

// anchorSYN starts an unanchored direction at a SYN: octets held before
// it are placed from its start and become soft.
func (a *Assembler) anchorSYN(s *stream, seq uint32, frame int) {
	s.anchored, s.syn, s.start, s.next, s.zero = true, true, seq, 0, seq
	s.fin, s.differ = false, 0
	s.trimBelow(s.startOff())
	for i := range s.got {
		s.got[i].soft = true
	}
	for i := range s.early {
		s.early[i].soft = true
	}
	a.charge(s, -s.nEarly*earlyCost)
	s.nEarly = 0
	a.touch(s, frame)
	a.startReader(s)
}

// anchorAt starts an unanchored direction at a segment that Starts it:
// octets held below it are dropped, the early segments above it are told to
// the reader, then the segment is added. It reports false when the
// direction was closed.
func (a *Assembler) anchorAt(s *stream, seg *Segment, seq uint32, cut bool) bool {
	s.anchored, s.start, s.next, s.zero = true, seq, 0, seq
	a.touch(s, seg.Frame)
	base := s.startOff()
	s.trimBelow(base)
	a.startReader(s)
	for _, o := range s.early {
		s.seen(max(o.lo, base)-base, o.hi-base, o.frame, o.time, o.added, o.cut)
	}
	if s.differ > 0 && s.differ-1 >= base {
		s.differs(s.differ-1-base, s.differFrame)
	}
	a.charge(s, -(s.nEarly*earlyCost + len(s.early)*originCost))
	s.early, s.nEarly, s.differ = s.early[:0], 0, 0
	return a.add(s, seq, seg.Payload, seg.Frame, seg.Time, cut)
}

// add takes a segment of an anchored direction: octets already delivered
// go to Again, in-order ones are delivered, later ones held as far as the
// reader needs them. It reports false when the direction was closed.
func (a *Assembler) add(s *stream, seq uint32, p []byte, frame int, at time.Time, cut bool) bool {
	s.rebase()
	off := int(int32(seq - s.start))
	end := off + len(p)
	if end <= 0 {
		return true // before the start: stale
	}
	lo := max(off, 0)
	need := s.need()
	wend := min(max(need, s.next), s.next+a.opt.StreamBytes)
	if lo >= wend && lo >= s.next {
		return true // nothing wanted there
	}
	base := s.startOff()
	added, direct := false, false
	if nlo := max(lo, s.next); nlo < end {
		top := min(end, wend)
		switch {
		case nlo >= top:
		case off > s.next || s.overlapsHeld(nlo+base, top+base):
			added = a.hold(s, nlo+base, p[nlo-off:top-off], frame)
		default:
			added, direct = true, true
		}
	}
	s.seen(lo, end, frame, at, added, cut)
	if lo < s.next {
		s.again(lo, p[lo-off:min(end, s.next)-off], frame)
	}
	if added {
		a.touch(s, frame)
	}
	if direct {
		for s.next < end {
			top := min(end, s.need())
			if top <= s.next {
				break
			}
			st := s.data(s.next, p[s.next-off:top-off])
			s.next = top
			if st == Done {
				a.close(s, kindStart, 0)
				return false
			}
			if s.capped != "" {
				return true
			}
		}
	}
	return a.drain(s, false) != Done
}

// drain delivers held octets that became contiguous with what was
// delivered: firm ones, and with soft also those kept from before the SYN
// (their segments are told to the reader first). A reader that needs no
// more octets is done: the direction is closed, and drain says Done.
func (a *Assembler) drain(s *stream, soft bool) Status {
	base := s.startOff()
	for len(s.got) > 0 {
		g := s.got[0]
		if g.lo-base > s.next || g.soft && !soft {
			break
		}
		if g.hi-base <= s.next {
			s.got = s.got[1:]
			continue
		}
		if g.soft {
			for i := range s.early {
				if o := &s.early[i]; o.soft && o.lo < g.hi && g.lo < o.hi {
					s.seen(o.lo-base, o.hi-base, o.frame, o.time, true, o.cut)
					o.soft = false // told
				}
			}
		}
		top := min(g.hi-base, s.need())
		if top <= s.next {
			break
		}
		st := More
		s.view(s.next+base, top+base, func(o int, b []byte) {
			if st == More {
				st = s.data(o-base, b)
			}
		})
		s.next = top
		if st == Done {
			a.close(s, kindStart, 0)
			return Done
		}
	}
	if s.capped == "" && s.need() <= s.next && s.next > 0 {
		a.close(s, kindStart, 0)
		return Done
	}
	return More
}

// deliverSoft delivers, at the end, what is held contiguously, soft
// octets included.
func (a *Assembler) deliverSoft(s *stream) Status {
	if !s.anchored || len(s.got) == 0 {
		return More
	}
	return a.drain(s, true)
}
