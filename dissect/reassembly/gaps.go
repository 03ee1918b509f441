package reassembly

// Holes a direction will not see filled. A reader that follows a stream
// with no end in view (the FPDUs of an iWARP connection) would otherwise
// wait for ever for octets the capture lost, with everything after them
// held back or, past the per-direction limit, dropped unseen. Such a
// reader asks for gaps (Dir.AcceptGaps): the assembler then delivers past
// a hole once the hole cannot be filled any more, and the reader sees a
// Data call at an offset beyond the octets delivered before (with the
// octets held after the hole, or none when nothing is held there). A hole
// is taken as lost:
//
//   - when a segment arrives beyond what the direction may hold
//     (StreamBytes past the next octet): waiting longer would drop it;
//   - when the peer acknowledges octets past the hole (a segment of the
//     reverse direction whose ACK number lies beyond it): the receiver has
//     them, so the capture lost them; TCP never acknowledges past octets it
//     has not received, so reordering cannot trigger this;
//   - when the direction ends: the input ends, an RST, a new connection on
//     the 4-tuple. A FIN with octets missing before it does not end the
//     direction at once: TCP may retransmit them after the FIN, and the
//     peer's ACK of the FIN says when they are lost.
//
// A direction given up at a limit or by age is not delivered past its
// holes: what is missing may still have been on its way.
//
// Only the directions that accept gaps and hold octets after a hole
// (holey) are looked up by the ACK number of reverse segments, so that a
// capture without such a direction pays nothing for it.

// AcceptGaps makes the assembler deliver the direction past holes that
// cannot be filled any more (see Reader.Data).
func (d *Dir) AcceptGaps() { d.s.gaps = true }

// noteHoles keeps count of the directions that accept gaps and hold octets
// past a hole (Assembler.holey); s must be followed.
func (a *Assembler) noteHoles(s *stream) {
	h := s.gaps && s.anchored && len(s.got) > 0
	if h != s.holey {
		s.holey = h
		if h {
			a.holey++
		} else {
			a.holey--
		}
	}
}

// followed reports whether s is still followed (not closed while a
// segment was taken).
func (a *Assembler) followed(s *stream) bool { return s.slot < len(a.all) && a.all[s.slot] == s }

// peerAck takes the ACK number of a segment as the peer's word on the
// reverse direction: when that direction accepts gaps and holds octets past
// a hole the ACK covers, the hole is lost and skipped.
func (a *Assembler) peerAck(seg *Segment) {
	f := Flow{Src: seg.Flow.Dst, Dst: seg.Flow.Src, SrcPort: seg.Flow.DstPort, DstPort: seg.Flow.SrcPort, V6: seg.Flow.V6}
	d := a.lookup(&f)
	if d == nil || d.kind != kindFollowed {
		return
	}
	s := a.all[d.slot]
	if !s.holey {
		return
	}
	ack := int(int32(seg.Ack - s.start))
	// An ACK beyond everything the direction sent (and its FIN) is not
	// taken: it acknowledges nothing seen.
	top := int(int32(s.end - s.start))
	if s.fin {
		top = max(top, int(int32(s.finSeq-s.start))+1)
	}
	if ack <= s.next || ack > top {
		return
	}
	for s.next < ack {
		skipped, st := a.skipHole(s, ack, false)
		if st == Done {
			return
		}
		if !skipped {
			break
		}
	}
	a.noteHoles(s)
	if s.fin && int(int32(s.finSeq-s.start)) <= s.contiguous() {
		a.finish(s, End{Kind: EndFIN})
	}
}

// skipHole moves the next octet to deliver of a direction that accepts
// gaps past the hole before the first range held, when that range starts
// at or below limit (a stream offset), and delivers what is contiguous
// there (soft octets too when soft). It reports whether it skipped a hole,
// and Done when the reader then closed the direction.
func (a *Assembler) skipHole(s *stream, limit int, soft bool) (bool, Status) {
	if !s.gaps || !s.anchored {
		return false, More
	}
	base := s.startOff()
	for len(s.got) > 0 && s.got[0].hi-base <= s.next {
		s.got = s.got[1:] // delivered already
	}
	if len(s.got) == 0 {
		return false, More
	}
	lo := s.got[0].lo - base
	if lo <= s.next || lo > limit {
		return false, More
	}
	s.skipped(lo)
	s.next = lo
	return true, a.drain(s, soft)
}

// skipTo moves the next octet to deliver of a direction that accepts gaps
// to off, beyond what it may hold: the holes before off are lost, the
// octets held before off delivered across them, and when nothing is held
// at off the reader is told (an empty Data at off). It reports Done when
// the reader closed the direction.
func (a *Assembler) skipTo(s *stream, off int) Status {
	for s.next < off {
		skipped, st := a.skipHole(s, off, false)
		if st == Done {
			return Done
		}
		if !skipped {
			break
		}
	}
	if s.next < off {
		s.gapFrame = 0 // the segment at off brought what follows the hole
		s.skipped(off)
		s.next = off
		if st := s.data(off, nil); st == Done {
			a.close(s, kindStart, 0)
			return Done
		}
	}
	return More
}

// deliverAcross delivers, at the end of a direction that accepts gaps,
// everything held, across its holes (soft octets too). It reports Done
// when the reader closed the direction.
func (a *Assembler) deliverAcross(s *stream) Status {
	for {
		if a.drain(s, true) == Done {
			return Done
		}
		skipped, st := a.skipHole(s, int(^uint(0)>>1), true)
		if st == Done {
			return Done
		}
		if !skipped {
			return More
		}
	}
}
