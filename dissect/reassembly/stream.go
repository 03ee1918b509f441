package reassembly

import "time"

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

	// gaps: the reader accepts gaps (gaps.go); holey: it does, and octets
	// are held past a hole (counted in Assembler.holey).
	gaps, holey bool

	capped  string // a limit was reached: which (the direction is given up)
	charged int    // octets charged to the total

	// health counts what the segments showed of TCP's own work (health.go);
	// gapOff and gapFrame are the lowest offset held past a hole and the
	// frame that brought it (gapFrame 0 when not known).
	health           Health
	gapOff, gapFrame int32

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
	s.gapOff -= int32(k)
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

// saw records that the segment at seq carried n octets: end follows the
// highest octet seen.
func (s *stream) saw(seq uint32, n int) {
	if e := seq + uint32(n); !s.anyData || int32(e-s.end) > 0 {
		s.anyData, s.end = true, e
	}
}
