package reassembly

import (
	"math"
	"slices"
	"time"
)

// Sweeps run after sweepEvery new directions (or as many as are followed)
// and whenever the ageing clock advanced sweepPeriod.
const (
	sweepEvery  = 1024
	sweepPeriod = 10 * time.Second
	// maxClockStep is the most one segment moves the ageing clock forward.
	maxClockStep = time.Second
	// rebaseAfter is how many segments in a row stamped more than
	// maxClockStep before the latest timestamp make that timestamp a fluke.
	rebaseAfter = 64
)

// tick advances the ageing clock by how far a segment's capture time moves
// the latest one seen (the high-water mark) forward, at most maxClockStep:
// a backwards jump moves nothing, and one frame with a wrong timestamp (an
// hour ahead, a damaged first record from 1970) or a real idle hour moves
// it a second, not an hour. When rebaseAfter segments in a row are stamped
// well before the mark, the mark was a fluke and is set back to them. The
// clock itself never moves back: ageing may come late, not early.
func (a *Assembler) tick(t time.Time) {
	at := nanos(t)
	switch {
	case !a.started:
		a.started, a.hwm, a.clock = true, at, at
	case at > a.hwm:
		a.clock += min(at-a.hwm, int64(maxClockStep))
		a.hwm, a.behind = at, 0
	case a.hwm-at > int64(maxClockStep):
		if a.behind++; a.behind >= rebaseAfter {
			a.hwm, a.behind = at, 0
		}
	default:
		a.behind = 0
	}
}

// sweepIfDue sweeps when the ageing clock advanced sweepPeriod since the
// last sweep and at least an eighth as many segments as directions are
// followed came since: a sweep costs one look at each, so each segment pays
// for a bounded number of looks.
func (a *Assembler) sweepIfDue() {
	if a.sinceSweep++; a.clock-a.lastSweep >= int64(sweepPeriod) && a.sinceSweep >= len(a.all)/8 {
		a.lastSweep, a.sinceSweep = a.clock, 0
		if len(a.all) > 0 {
			a.sweep()
		}
	}
}

// nanos is a capture time in nanoseconds since 1970, clamped to about 290
// years either side so that differences never overflow.
func nanos(t time.Time) int64 {
	const lim = 9_000_000_000 // seconds
	sec := min(max(t.Unix(), -lim), lim)
	return sec*1e9 + int64(t.Nanosecond())
}

// snapshot copies the directions followed, so that giving some up while
// going through them is safe. The copy is cleared once gone through
// (doneSnapshot): a stale pointer left in it would keep a direction given
// up alive, with everything it held, beyond any charge.
func (a *Assembler) snapshot() []*stream {
	a.scratch = append(a.scratch[:0], a.all...)
	return a.scratch
}

// doneSnapshot clears the copy snapshot made.
func (a *Assembler) doneSnapshot() {
	clear(a.scratch)
	a.scratch = a.scratch[:0]
}

// sweep decides the directions that have been quiet too long.
func (a *Assembler) sweep() {
	a.st.Sweeps++
	now := a.clock
	for _, s := range a.snapshot() {
		if s.slot >= len(a.all) || a.all[s.slot] != s {
			continue // given up meanwhile
		}
		quiet := time.Duration(now - s.progress)
		interest := Nothing
		if s.r != nil {
			interest = s.r.Interest()
		}
		switch {
		case interest == Following:
		case interest != Nothing:
			if quiet > a.opt.QuietBegun {
				a.giveUp(s, EndQuiet, "")
			}
		case !s.anchored && quiet > a.opt.QuietUnknown, s.anchored && quiet > a.opt.QuietNoData:
			a.ageOut(s)
		}
	}
	a.doneSnapshot()
}

// ageOut stops following a direction of no interest that has been quiet
// too long. Age is measured by capture time, which one frame with a wrong
// timestamp can move ahead, so age decides nothing it cannot undo: one that
// showed nothing but a SYN lost nothing and is marked aged (its start still
// takes it up); one that held octets is marked lost (only a start takes it
// up again, and its reader then flags what it shows).
func (a *Assembler) ageOut(s *stream) {
	switch {
	case s.anchored && !s.anyData && len(s.got) == 0:
		a.idle(s)
		a.close(s, kindStart, flagAged)
	case len(s.got) > 0:
		a.idle(s)
		a.close(s, kindLost, 0)
	default:
		a.finish(s, End{Kind: EndIdle})
	}
}

// evict gives up an eighth of the directions followed (at least one),
// each with why: at the flow limit, or when the budget has no room for
// another direction. What is least likely to matter goes first: the
// directions whose reader saw nothing of interest, then those in the middle
// of an MPA frame, last those following a connection's traffic; within
// each, the least recently progressed first.
func (a *Assembler) evict(why string) {
	n := max(1, len(a.all)/8)
	for _, most := range [...]Interest{Nothing, Shown, Following} {
		for _, l := range [...]*stream{&a.elru, &a.lru} {
			for s := l.lnext; s != l && n > 0; {
				next := s.lnext
				if s.interest() <= most {
					a.lostFor(s, why)
					a.giveUp(s, EndLimit, why)
					n--
				}
				s = next
			}
		}
	}
}

// giveBack makes room in a full budget at no cost to what the output
// shows: the flow tables give back (shrinkTables), else an eighth of the
// directions followed whose reader saw nothing of interest is given up
// (counted as keyless, as at the flow limit), never keep. It reports whether
// anything was given back. When none was found, the next look waits for a
// direction more to be opened: a full budget does not make every charge
// pay for a look at every direction.
func (a *Assembler) giveBack(keep *stream) bool {
	if a.shrinkTables() {
		return true
	}
	if a.idleLook == a.opened {
		return false
	}
	n := max(1, len(a.all)/8)
	given := 0
	for _, l := range [...]*stream{&a.elru, &a.lru} {
		for s := l.lnext; s != l && given < n; {
			next := s.lnext
			if s != keep && s.interest() == Nothing {
				a.giveUp(s, EndLimit, a.why.budgetRoom)
				given++
			}
			s = next
		}
	}
	if given == 0 {
		a.idleLook = a.opened
	}
	return given > 0
}

// interest is the reader's Interest (Nothing without a reader).
func (s *stream) interest() Interest {
	if s.r == nil {
		return Nothing
	}
	return s.r.Interest()
}

// lostFor counts on the budget a direction given up for it (why is one of
// the budget's reasons) that showed something of interest.
func (a *Assembler) lostFor(s *stream, why string) {
	if (why == a.why.budgetRoom || why == a.why.budgetFlow || why == a.why.budgetFull) && s.r != nil && s.r.Interest() != Nothing {
		a.acct.Lost()
	}
}

// charge accounts n octets held by s (negative to release), to the total
// and to the run's budget. Over the total limit, or when the budget is
// full, it first gives up other directions (makeRoom); when that is not
// enough it marks s given up and reports false. The octets are accounted
// all the same (forced on the budget), and released when s lets go.
func (a *Assembler) charge(s *stream, n int) bool {
	b := &a.acct
	if n <= 0 {
		a.held += n
		s.charged += n
		b.Release(-n)
		return true
	}
	if a.held+n > a.opt.TotalBytes {
		a.makeRoom(s, max(0, a.opt.TotalBytes-a.opt.TotalBytes/8-n), a.why.room)
	}
	fits := b.Charge(n)
	for !fits && a.giveBack(s) {
		fits = b.Charge(n)
	}
	if !fits {
		// Others hold the budget too: give up an eighth of what this
		// holder has, least recently progressed first, and try again.
		a.makeRoom(s, max(0, a.held-a.held/8-n), a.why.budgetRoom)
		if fits = b.Charge(n); !fits {
			b.Force(n)
		}
	}
	a.held += n
	s.charged += n
	switch {
	case a.held > a.opt.TotalBytes:
		if s.capped == "" {
			s.capped = a.why.full
		}
		return false
	case !fits:
		if s.capped == "" {
			s.capped = a.why.budgetFull
			a.lostFor(s, s.capped)
		}
		return false
	}
	return true
}

// makeRoom gives up other directions, least recently progressed first,
// until the octets held are down to goal, each with why: first those whose
// reader saw nothing of interest, then, if that was not enough, the others. Freeing an eighth at a time, a
// flood pays O(1) per direction.
func (a *Assembler) makeRoom(keep *stream, goal int, why string) {
	if a.making {
		return // a reader charged while a direction was being given up
	}
	a.making = true
	defer func() { a.making = false }()
	for _, l := range [...]struct {
		list  *stream
		shown bool
	}{{&a.elru, false}, {&a.lru, false}, {&a.lru, true}} {
		for s := l.list.lnext; s != l.list && a.held > goal; {
			next := s.lnext
			if s != keep && s.charged > 0 && (s.r != nil && s.r.Interest() != Nothing) == l.shown {
				a.lostFor(s, why)
				a.giveUp(s, EndLimit, why)
			}
			s = next
		}
	}
}

// forget drops the least recently seen eighth of the decided directions
// (by a histogram of when they were last seen: no sort), making room in the
// flow table. A forgotten direction that sends again is followed afresh,
// as if first seen.
func (a *Assembler) forget() {
	var hist [64]int
	lo, hi := uint32(math.MaxUint32), uint32(0)
	scan := func(st *dirState) {
		if st.kind != kindFollowed {
			lo, hi = min(lo, st.seen), max(hi, st.seen)
		}
	}
	a.t4.each(func(_ *key4, st *dirState) { scan(st) })
	a.t6.each(func(_ *key6, st *dirState) { scan(st) })
	if lo > hi {
		return
	}
	width := (hi-lo)/64 + 1
	count := func(st *dirState) {
		if st.kind != kindFollowed {
			hist[(st.seen-lo)/width]++
		}
	}
	a.t4.each(func(_ *key4, st *dirState) { count(st) })
	a.t6.each(func(_ *key6, st *dirState) { count(st) })
	want := max(1, (a.t4.used+a.t6.used)/8)
	cut, got := 0, 0
	for cut < 64 && got < want {
		got += hist[cut]
		cut++
	}
	below := lo + uint32(cut)*width
	var n4, n6 int
	a.drops, n4 = a.t4.dropSeenBelow(below, a.drops)
	a.drops, n6 = a.t6.dropSeenBelow(below, a.drops)
	a.st.Forgotten += n4 + n6
}

// sortByLastFrame orders directions by the frame of their last segment.
func sortByLastFrame(all []*stream) {
	slices.SortFunc(all, func(x, y *stream) int { return x.lastFrame - y.lastFrame })
}
