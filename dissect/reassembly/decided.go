package reassembly

// A decided direction is only an entry in the flow table (dirState): no
// stream, no reader. Most segments of a capture are of such directions
// (TCP bulk), so taking one touches nothing but its entry.

// segmentDecided takes a segment of a decided direction (start known or
// not). It is only recorded (note), unless it starts the direction afresh:
// a new connection on the 4-tuple (reopens), or the start of a direction
// the early window decided (earlyStarts).
func (a *Assembler) segmentDecided(d *dirState, s *Segment, seq uint32) {
	d.seen = uint32(a.st.Segments)
	if a.reopens(d, s, seq) || a.earlyStarts(d, s) {
		a.segmentNew(s, d, seq, false)
		return
	}
	d.note(s)
	a.ended(d, &s.Flow)
}

// reopens reports whether a segment starts a decided direction afresh: a
// SYN of a new connection, the start of a direction that aged with nothing
// but its SYN, or a segment that starts strongly where only a new
// connection on the 4-tuple can (counted in Stats.Reused).
func (a *Assembler) reopens(d *dirState, s *Segment, seq uint32) bool {
	w := uint32(a.opt.ReuseWindow)
	switch {
	case s.SYN:
		// Only a SYN of a new connection reopens it: one with the start
		// already known is a retransmission.
		return !(d.kind == kindStart && d.lo == seq)
	case d.flags&flagAged != 0 && seq == d.lo:
		ok, _ := a.p.Starts(s.Payload) // aged with nothing but its SYN: its start takes it up
		return ok
	case d.flags&flagEnded != 0 || seq-(d.lo-w) >= (d.end-d.lo)+2*w:
		// After its FIN or RST, or outside [lo-w, end+w) of sequence space:
		// a segment that starts strongly is a new connection on the
		// 4-tuple, whose SYN is not in the capture.
		if _, strong := a.p.Starts(s.Payload); strong {
			a.st.Reused++
			return true
		}
	}
	return false
}

// earlyStarts reports whether a segment starts a direction the early window
// decided, its start never seen: a key above the octets that decided it,
// with a gap, starts the direction there (as for a direction that waits:
// startsAbove). A key below them is a start that came after all, too late:
// its first message is not shown; it is counted (Stats.EarlyMissed), once.
// A key right after or among them is data of the direction going on, and a
// segment that continues them is not looked into.
func (a *Assembler) earlyStarts(d *dirState, s *Segment) bool {
	if d.kind != kindDecided || d.flags&flagEarly == 0 || len(s.Payload) == 0 {
		return false
	}
	below, gap := int32(d.lo-s.Seq) > 0, int32(s.Seq-d.end) > 0
	if !below && !gap {
		return false
	}
	switch ok, strong := a.p.Starts(s.Payload); {
	case ok && below:
		d.flags &^= flagEarly
		if a.st.EarlyMissed++; a.st.EarlyMissed == 1 {
			a.st.EarlyMissedFrame = s.Frame
		}
	case strong && gap:
		return true
	}
	return false
}

// segmentLost takes a segment of a direction given up at a limit before its
// reader saw anything of interest. Only a SYN or a segment that Starts takes
// it up again; after a start that is not a SYN the new reader is told that
// octets before it were lost (Dir.Lost). Any other segment is only recorded.
func (a *Assembler) segmentLost(d *dirState, s *Segment, seq uint32) {
	d.seen = uint32(a.st.Segments)
	if ok, _ := a.p.Starts(s.Payload); s.SYN || ok {
		a.segmentNew(s, d, seq, !s.SYN)
		return
	}
	d.note(s)
	a.ended(d, &s.Flow)
}

// note records a segment that leaves a decided or lost direction as it is:
// the sequence space seen grows to cover it (downwards too while the start
// is not known), and a FIN or RST marks its connection ended.
func (d *dirState) note(s *Segment) {
	if n := len(s.Payload); n > 0 {
		if e := s.Seq + uint32(n); int32(e-d.end) > 0 {
			d.end = e
		}
		if d.kind == kindDecided && int32(d.lo-s.Seq) > 0 {
			d.lo = s.Seq
		}
	}
	if s.FIN || s.RST {
		d.flags |= flagEnded
	}
}

// decideEarly decides a direction at its first segment, without following
// it (see segmentNew): the decided direction spans the segment, and is
// marked as decided by the early window (flagEarly), so that a start that
// arrives below it is counted.
func (a *Assembler) decideEarly(s *Segment, d *dirState) {
	if d == nil {
		d = a.insert(&s.Flow)
	}
	*d = dirState{kind: kindDecided, flags: flagEarly, lo: s.Seq, end: s.Seq + uint32(len(s.Payload)), seen: uint32(a.st.Segments)}
	if s.FIN || s.RST {
		d.flags |= flagEnded
		a.ended(d, &s.Flow)
	}
}
