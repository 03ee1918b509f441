package reassembly

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
)

// Assembler follows the TCP directions of one input. It is not safe for
// concurrent use.
type Assembler struct {
	opt  Options
	p    Protocol
	t4   *table[key4]
	t6   *table[key6]
	all  []*stream // followed directions; a stream's slot is its index
	pool []*stream
	st   Stats
	held int

	// Scratch space, so that the steady state allocates nothing.
	scratch []*stream
	drops   []drop // forget's
	making  bool   // makeRoom is running
	rings   ringPool
	lru     stream // sentinel of the list of anchored directions followed, by last progress
	elru    stream // sentinel of the list of unanchored ones
	// unanchored counts the directions in elru.
	unanchored int
	// why says which limit gave a direction up (made once: the steady state
	// allocates nothing).
	why struct{ flows, early, room, full, budgetRoom, budgetFull, budgetFlow string }

	// holey counts the directions followed that accept gaps and hold
	// octets past a hole (gaps.go).
	holey int
	// opened counts the directions opened; idleLook is that count when
	// giveBack last found no direction of no interest to give up.
	opened, idleLook int

	opens  int
	tables int            // the flow tables' octets charged to the budget
	acct   budget.Account // this holder's share of the budget (Options.Budget)
	// The ageing clock, the latest capture time seen and the clock at the
	// last sweep, in nanoseconds (see tick).
	started    bool
	clock      int64
	hwm        int64
	lastSweep  int64
	behind     int
	sinceSweep int

	// ahead is the hash of the IPv4 direction of the segment expected
	// next, whose slot was hinted (Ahead, ahead.go), when aheadOK.
	ahead   uint64
	aheadOK bool
}

// maxPooled bounds the streams kept for reuse.
const maxPooled = 1024

// New returns an assembler that follows directions for protocol p.
func New(opt Options, p Protocol) *Assembler {
	a := &Assembler{opt: opt.WithDefaults(), p: p, t4: newTable(hash4), t6: newTable(hash6)}
	a.acct = a.opt.Budget.NewAccount(budget.TCP)
	a.lru.lprev, a.lru.lnext = &a.lru, &a.lru
	a.elru.lprev, a.elru.lnext = &a.elru, &a.elru
	o := a.opt
	a.why.flows = fmt.Sprintf("more than %d TCP directions were being followed at once; this one was given up", o.Flows)
	a.why.early = fmt.Sprintf("more than %d TCP directions whose start was not seen were being followed at once; this one was given up",
		o.EarlyFlows)
	a.why.room = fmt.Sprintf("the reassembly buffers of all streams are full (%d octets); this one was given up for a newer one", o.TotalBytes)
	a.why.full = fmt.Sprintf("the reassembly buffers of all streams are full (%d octets)", o.TotalBytes)
	if o.Budget != nil {
		a.why.budgetRoom = o.Budget.Full() + "; this TCP direction was given up to make room"
		a.why.budgetFull = o.Budget.Full()
		a.why.budgetFlow = o.Budget.Full() + "; this TCP direction, the least recently active, was given up for a newer one"
	}
	return a
}

// touch records that a direction progressed (opened, or stored new octets)
// in frame: it moves to the back of the list.
// Directions whose start is not known are in a list of their own (elru):
// there are at most EarlyFlows of them.
func (a *Assembler) touch(s *stream, frame int) {
	s.progressFrame, s.progress = frame, a.clock
	a.unlink(s)
	l := &a.lru
	if !s.anchored {
		l, s.inEarly = &a.elru, true
		a.unanchored++
	}
	s.lprev, s.lnext = l.lprev, l
	l.lprev.lnext = s
	l.lprev = s
}

func (a *Assembler) unlink(s *stream) {
	if s.lnext == nil {
		return
	}
	s.lprev.lnext, s.lnext.lprev = s.lnext, s.lprev
	s.lprev, s.lnext = nil, nil
	if s.inEarly {
		s.inEarly = false
		a.unanchored--
	}
}

// Stats returns the counters.
func (a *Assembler) Stats() Stats {
	s := a.st
	s.Followed, s.Held, s.Remembered = len(a.all), a.held, a.t4.used+a.t6.used
	return s
}

// Options returns the limits in force.
func (a *Assembler) Options() Options { return a.opt }

// lookup finds a direction's state, or nil.
func (a *Assembler) lookup(f *Flow) *dirState {
	if f.V6 {
		k := key6{f.Src, f.Dst, f.SrcPort, f.DstPort}
		return a.t6.find(&k, hash6(&k))
	}
	k, h := key4Of(f)
	return a.t4.find(&k, h)
}

// insert adds a direction, forgetting the least recently seen decided ones
// beyond the Remembered limit, or when the table would grow past its share
// of the budget (tables.go).
func (a *Assembler) insert(f *Flow) *dirState {
	switch {
	case a.t4.used+a.t6.used >= a.opt.Remembered:
		a.forget()
	case !a.tableFits(f):
		a.forget() // the insert then takes an entry forgotten
	}
	if f.V6 {
		k := key6{f.Src, f.Dst, f.SrcPort, f.DstPort}
		st := a.t6.insert(&k, hash6(&k))
		a.chargeTables()
		return st
	}
	k, h := key4Of(f)
	st := a.t4.insert(&k, h)
	a.chargeTables()
	return st
}

// Segment takes one TCP segment. It finds the segment's direction and hands
// the segment to the handler of the direction's state, as doc.go draws them.
func (a *Assembler) Segment(s *Segment) {
	a.st.Segments++
	a.tick(s.Time)
	a.sweepIfDue()
	if s.ACK && a.holey > 0 {
		a.peerAck(s)
	}
	// The SYN occupies its own sequence number, before the first data
	// octet (RFC 9293, section 3.4): data in a SYN (TCP Fast Open) starts at
	// ISN+1.
	seq := s.Seq
	if s.SYN {
		seq++
	}
	switch d := a.lookup(&s.Flow); {
	case d == nil:
		a.segmentNew(s, nil, seq, false)
	case d.kind == kindFollowed:
		if str := a.all[d.slot]; str.anchored {
			a.segmentAnchored(str, s, seq)
		} else {
			a.segmentUnanchored(str, s, seq)
		}
	case d.kind == kindLost:
		a.segmentLost(d, s, seq)
	default:
		// The common case, TCP bulk: a direction already decided.
		a.segmentDecided(d, s, seq)
	}
}

// segmentNew takes a segment of a direction that is not followed: one
// first seen (d is nil), or one whose entry d the segment starts afresh (a
// decided or lost direction it takes up again, a followed one it ended as
// a new connection on the same 4-tuple). lost says that the direction was
// given up at a limit before its start was known (Dir.Lost).
func (a *Assembler) segmentNew(s *Segment, d *dirState, seq uint32, lost bool) {
	ok, _ := a.p.Starts(s.Payload)
	switch {
	case s.SYN:
		str := a.open(s, d, seq, true, lost)
		str.syn = true
		a.startReader(str)
		a.takeAnchored(str, s, seq)
	case len(s.Payload) == 0:
		// Nothing to follow: no handshake, and no octet to start from.
	case ok:
		str := a.open(s, d, seq, true, lost)
		a.startReader(str)
		a.takeAnchored(str, s, seq)
	case len(s.Payload) > a.p.EarlyWindow() && (len(s.Payload) > a.opt.StreamBytes || a.unanchored >= a.opt.EarlyFlows):
		// No handshake, no start, and longer than any first message within
		// the RFC's limit: bulk data of a connection whose start is not in
		// the capture, most likely. It is decided at once, without holding
		// its octets, when it is more than a direction may hold, or when
		// EarlyFlows directions wait for their start already: rather than
		// give up the oldest of them (that may still be the later part of
		// a first message) for a segment that would be one only of an
		// over-long frame. A start that then arrives below it is counted
		// (Stats.EarlyMissed).
		a.decideEarly(s, d)
	default:
		// No handshake seen and this segment does not start one: the
		// capture may begin mid-connection, or this may be a later part
		// of a first message whose start arrives next.
		a.takeUnanchored(a.open(s, d, seq, false, lost), s, seq)
	}
}

// open starts following a direction. At the Flows limit the least recently
// progressed eighth of the directions followed is given up first.
func (a *Assembler) open(s *Segment, d *dirState, seq uint32, anchored, lost bool) *stream {
	// Sweep after as many new directions as are followed (at least
	// sweepEvery): a sweep costs one look at each, so each new direction
	// pays for one look or fewer.
	if a.opens++; a.opens >= max(sweepEvery, len(a.all)) {
		a.opens = 0
		a.sweep()
	}
	if len(a.all) >= a.opt.Flows {
		a.evict(a.why.flows)
	}
	a.opened++
	if !a.acct.Charge(streamCost) {
		// What costs nothing goes first (d may move: looked up again).
		fits := false
		for !fits && a.giveBack(nil) {
			fits = a.acct.Charge(streamCost)
		}
		if d != nil {
			d = a.lookup(&s.Flow)
		}
		if !fits {
			a.evict(a.why.budgetFlow)
			a.acct.Force(streamCost)
		}
	}
	var str *stream
	if n := len(a.pool); n > 0 {
		str, a.pool = a.pool[n-1], a.pool[:n-1]
	} else {
		str = &stream{}
	}
	str.reset(s.Flow, seq)
	str.anchored, str.lost = anchored, lost
	a.touch(str, s.Frame)
	str.dir = Dir{Flow: s.Flow, Lost: lost, s: str, a: a}
	str.slot = len(a.all)
	a.all = append(a.all, str)
	if d == nil {
		d = a.insert(&s.Flow)
	}
	str.ent = d
	*d = dirState{kind: kindFollowed, slot: uint32(str.slot), seen: uint32(a.st.Segments)}
	if a.unanchored > a.opt.EarlyFlows {
		a.giveUp(a.elru.lnext, EndLimit, a.why.early)
		a.hintVictim()
	}
	return str
}

// startReader opens the reader of a direction that became anchored.
func (a *Assembler) startReader(str *stream) {
	str.dir.SYN = str.syn
	str.r = a.p.Open(&str.dir)
}

// close stops following a direction and records it as decided (or lost).
func (a *Assembler) close(str *stream, kind uint8, flags uint8) {
	lo := str.zero
	if !str.anchored {
		lo = str.lowSeq()
	}
	end := str.end
	if !str.anyData {
		end = lo
	}
	if str.fin {
		flags |= flagEnded
	}
	if str.holey {
		str.holey = false
		a.holey--
	}
	a.charge(str, -str.charged)
	a.acct.Release(streamCost)
	a.unlink(str)
	last := a.all[len(a.all)-1]
	a.all[str.slot] = last
	last.slot = str.slot
	last.ent.slot = uint32(last.slot)
	a.all[len(a.all)-1] = nil // a pointer left past the end would keep a stream given up alive
	a.all = a.all[:len(a.all)-1]
	*str.ent = dirState{kind: kind, lo: lo, end: end, seen: uint32(a.st.Segments), flags: flags}
	a.ended(str.ent, &str.flow)
	a.rings.put(str.buf)
	str.buf = nil
	str.release()
	if len(a.pool) < maxPooled {
		a.pool = append(a.pool, str)
	}
}

// ending ends a followed direction once a segment of it is taken, when
// the segment made it reach a limit (it is given up), reset it within its
// window, or completed it: its FIN is in, and every octet before the FIN.
// A FIN within the window is recorded first.
func (a *Assembler) ending(str *stream, s *Segment, seq uint32) {
	if str.capped != "" {
		a.giveUp(str, EndLimit, str.capped)
		return
	}
	if s.RST && str.rstInWindow(seq, a) {
		str.health.Resets++
		str.health.ResetFrame = int32(s.Frame)
		a.finish(str, End{Kind: EndRST})
		return
	}
	if s.FIN && !str.fin && str.finInWindow(seq+uint32(len(s.Payload))) {
		str.fin, str.finSeq = true, seq+uint32(len(s.Payload))
		if str.anchored {
			str.holdAhead(int(int32(str.finSeq-str.start)), s.Frame) // the FIN names a hole before it
		}
	}
	// The direction ends at its FIN once every octet before it is in: what
	// has not arrived will not.
	if str.fin && str.anchored && int(int32(str.finSeq-str.start)) <= str.contiguous() {
		a.finish(str, End{Kind: EndFIN})
	}
}

// finish ends a direction that ended (FIN, RST, a new SYN, the end of the
// input, age): octets held before the SYN that nothing replaced are
// delivered first, then the reader gets End.
func (a *Assembler) finish(str *stream, e End) { a.finishFlags(str, e, 0) }

// finishFlags is finish, recording flags with the decided direction.
func (a *Assembler) finishFlags(str *stream, e End, flags uint8) {
	if str.r != nil {
		if a.deliverSoft(str) == Done {
			return // closed: the reader has seen all it wanted
		}
		// The direction ended: its holes will not be filled (not so for
		// one given up, whose missing octets may still have been coming).
		if str.gaps && (e.Kind == EndInput || e.Kind == EndRST || e.Kind == EndReplaced) && a.deliverAcross(str) == Done {
			return
		}
		str.holeBeforeFIN()
		e.Frame, e.Time, e.Health = str.lastFrame, str.lastTime, str.health
		str.r.End(e)
	}
	if e.Kind == EndFIN || e.Kind == EndRST {
		flags |= flagEnded
	}
	kind := uint8(kindDecided)
	if str.anchored {
		kind = kindStart
	}
	a.close(str, kind, flags)
}

// giveUp stops following a direction at a limit or by age (e.Kind EndLimit
// or EndQuiet). One whose reader saw nothing of interest is counted as
// keyless and marked lost; one that showed nothing but its SYN lost nothing.
func (a *Assembler) giveUp(str *stream, e EndKind, detail string) {
	switch {
	case str.anchored && !str.anyData && len(str.got) == 0:
		// Nothing but its SYN: nothing lost; its start still takes it up.
		a.st.Keyless++
		a.idle(str)
		a.close(str, kindStart, flagAged)
	case str.r == nil || str.r.Interest() == Nothing:
		a.st.Keyless++
		a.idle(str)
		a.close(str, kindLost, 0)
	default:
		a.finish(str, End{Kind: e, Detail: detail, Quiet: a.opt.QuietBegun})
	}
}

// idle ends the reader of a direction given up with nothing of interest.
func (a *Assembler) idle(str *stream) {
	if str.r != nil {
		str.r.End(End{Kind: EndIdle, Frame: str.lastFrame, Time: str.lastTime, Health: str.health})
	}
}

// Shed makes room in a full budget, between two segments: what costs
// nothing goes first (giveBack); if that is not enough, it gives up the
// least recently progressed directions until an eighth of the octets held
// is free, those of no interest first.
func (a *Assembler) Shed() {
	for a.giveBack(nil) {
		if !a.opt.Budget.Over() {
			return
		}
	}
	a.makeRoom(nil, a.held-a.held/8, a.why.budgetRoom)
}

// Flush ends every direction still followed, at the end of the input, in
// the order they were last seen.
func (a *Assembler) Flush() {
	open := append([]*stream(nil), a.all...) // once per input
	sortByLastFrame(open)
	for _, str := range open {
		a.finish(str, End{Kind: EndInput, FINMissing: str.fin})
	}
	a.acct.Release(a.tables)
	a.tables = 0
	a.acct.Close()
}
