package reassembly

import "time"

// segmentAnchored takes a segment of a direction followed whose start is
// known. A SYN with another initial sequence number, or a segment that
// starts strongly far outside the direction's sequence space, begins a new
// connection on the same 4-tuple: what the old one began ends here, and
// the segment is taken as the first of a direction not followed.
func (a *Assembler) segmentAnchored(str *stream, s *Segment, seq uint32) {
	// The stream goes back to the pool when it ends; its entry in the flow
	// table may be forgotten then (an ended connection), or move (the
	// tables shrink when a reader charges): it is looked up again.
	switch {
	case s.SYN && str.zero != seq:
		// A SYN with another ISN: a new connection on the same addresses
		// and ports.
		a.finish(str, End{Kind: EndReplaced})
		a.segmentNew(s, a.lookup(&s.Flow), seq, false)
	case !s.SYN && len(s.Payload) > 0 && a.reused(str, s, seq):
		// The 4-tuple and its sequence numbers used again by a new
		// connection whose SYN is not in the capture.
		a.finish(str, End{Kind: EndReplaced})
		a.st.Reused++
		a.segmentNew(s, a.lookup(&s.Flow), seq, false)
	default:
		a.takeAnchored(str, s, seq)
	}
}

// takeAnchored takes a segment of a direction whose start is known: its
// octets are delivered, held or told again (add), then the segment may end
// the direction (ending).
func (a *Assembler) takeAnchored(str *stream, s *Segment, seq uint32) {
	str.lastFrame, str.lastTime = s.Frame, s.Time
	str.window(s)
	if len(s.Payload) > 0 {
		if !a.add(str, seq, s.Payload, s.Frame, s.Time, len(s.Payload) < s.WireLen) {
			return
		}
		str.saw(seq, len(s.Payload))
	}
	a.ending(str, s, seq)
	if str.gaps && a.followed(str) {
		a.noteHoles(str)
	}
}

// reused reports whether a segment of a followed direction begins a new
// connection on the same 4-tuple whose SYN is not in the capture: one that
// starts strongly (an MPA key) at a point outside the direction's sequence
// space (more than ReuseWindow from it), as reopens decides for a direction
// already decided. A followed direction never ages, so without this such
// a connection would be read as octets of the old one.
func (a *Assembler) reused(str *stream, s *Segment, seq uint32) bool {
	w := uint32(a.opt.ReuseWindow)
	if !str.anyData || seq-(str.zero-w) < (str.end-str.zero)+2*w {
		return false
	}
	_, strong := a.p.Starts(s.Payload)
	return strong
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
		if !s.gaps {
			return true // nothing wanted there
		}
		// Beyond what the direction may hold: the holes before it are lost.
		if a.skipTo(s, lo) == Done {
			return false
		}
		if s.need() <= lo {
			return true // the reader wants no more there
		}
		return a.add(s, seq, p, frame, at, cut)
	}
	base := s.startOff()
	added, direct := false, false
	retx := end <= s.next // every octet delivered already
	if nlo := max(lo, s.next); nlo < end {
		top := min(end, wend)
		switch {
		case nlo >= top:
		case off > s.next || s.overlapsHeld(nlo+base, top+base):
			added = a.hold(s, nlo+base, p[nlo-off:top-off], frame)
			retx = !added && top == end // every octet delivered or held already
			if added && nlo > s.next {
				s.holdAhead(nlo, frame)
			}
		default:
			added, direct = true, true
		}
	}
	if retx {
		note(&s.health.Retransmitted, &s.health.RetransmittedFrames, frame)
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
