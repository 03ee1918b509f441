package reassembly

// The health of a followed direction's TCP, counted as its segments pass,
// in a few integers per direction (nothing per segment is kept, nothing
// allocated): the reader gets the counts with End (End.Health).
//
//   - A retransmission is a segment with payload every octet of which was
//     seen before: delivered already, or held after a hole. A segment
//     that brings some new octets with old ones is not counted (tshark's
//     tcp.analysis.retransmission counts it), nor is one before the start.
//     A keep-alive probe that repeats the last octet counts (tshark names
//     it tcp.analysis.keep_alive instead).
//   - A missing segment is a hole in the sequence space that nothing filled
//     and that the direction was delivered past (gaps.go: the peer
//     acknowledged octets beyond it, the direction went on past what it
//     may hold, or it ended), or that lies before its FIN when it ends:
//     the capture lost what was there. It is counted once per hole,
//     whatever its length. Only a direction whose reader accepts gaps is
//     delivered past its holes (and counted).
//   - A zero window is a segment (other than an RST) whose Window field is
//     0: its sender's receive buffer was full.
//   - A reset is an RST within the direction's window, which ends it while
//     it is followed (before its FIN completed it).

// Health is what a direction's segments showed of TCP's own work, with the
// first frames of each kind: 44 octets a direction.
type Health struct {
	Retransmitted int32 // segments with payload whose every octet was seen before
	Missing       int32 // holes never filled, delivered past: the capture lost them
	ZeroWindows   int32 // segments, not RST, that advertised a zero receive window
	Resets        int32 // RSTs that ended the direction while it was followed
	// The first frames of retransmissions and holes (0 past those seen),
	// and the frame of the RST.
	RetransmittedFrames, MissingFrames [3]int32
	ResetFrame                         int32
}

// note counts an event of frame in n, keeping the first frames in fs.
func note(n *int32, fs *[3]int32, frame int) {
	if int(*n) < len(fs) {
		fs[*n] = int32(frame)
	}
	*n++
}

// holdAhead records that octets at stream offset off were held past the
// next octet to deliver, brought by frame: the lowest such offset names
// the frame after the first hole.
func (s *stream) holdAhead(off, frame int) {
	if s.gapFrame == 0 || off < int(s.gapOff) || int(s.gapOff) < s.next {
		s.gapOff, s.gapFrame = int32(off), int32(frame)
	}
}

// skipped counts a hole delivered past, up to stream offset to: the frame
// that brought the octets after it when known, else the latest segment's.
func (s *stream) skipped(to int) {
	frame := s.lastFrame
	if s.gapFrame != 0 && int(s.gapOff) == to {
		frame = int(s.gapFrame)
	}
	s.gapFrame = 0
	note(&s.health.Missing, &s.health.MissingFrames, frame)
}

// window counts a segment's zero window.
func (s *stream) window(seg *Segment) {
	if seg.Window == 0 && !seg.RST {
		s.health.ZeroWindows++
	}
}

// holeBeforeFIN counts, as a direction that accepts gaps ends, the hole
// before its FIN that nothing filled and nothing held after it made the
// assembler deliver past: the FIN's frame names it.
func (s *stream) holeBeforeFIN() {
	if s.gaps && s.fin && s.anchored {
		if off := int(int32(s.finSeq - s.start)); off > s.contiguous() {
			s.skipped(off)
		}
	}
}
