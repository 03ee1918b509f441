package reassembly

import "fmt"

// segmentUnanchored takes a segment of a direction followed whose start is
// not known. A SYN anchors it, at the octet after the SYN; so does a
// segment that Starts it, at the segment (takeUnanchored).
func (a *Assembler) segmentUnanchored(str *stream, s *Segment, seq uint32) {
	if s.SYN {
		a.anchorSYN(str, seq, s.Frame)
		a.takeAnchored(str, s, seq)
		return
	}
	a.takeUnanchored(str, s, seq)
}

// takeUnanchored takes a segment, not a SYN, of a direction whose start is
// not known. One that Starts anchors the direction there (anchorAt) when
// no octets are kept yet, when it lies at or below the lowest one kept, or
// when it starts strongly above them (startsAbove); any other is kept as a
// possible later part of a first message (keepEarly). Then the segment may
// end the direction (ending).
func (a *Assembler) takeUnanchored(str *stream, s *Segment, seq uint32) {
	str.lastFrame, str.lastTime = s.Frame, s.Time
	if len(s.Payload) > 0 {
		cut := len(s.Payload) < s.WireLen
		ok, strong := a.p.Starts(s.Payload)
		var followed bool // the direction is still followed
		if ok && (str.nEarly == 0 || int32(str.lowSeq()-seq) >= 0 || strong && str.startsAbove(seq)) {
			followed = a.anchorAt(str, s, seq, cut)
		} else {
			followed = a.keepEarly(str, s, seq, cut)
		}
		if !followed {
			return
		}
		str.saw(seq, len(s.Payload))
	}
	a.ending(str, s, seq)
}

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
