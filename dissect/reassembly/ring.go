package reassembly

import (
	"fmt"
	"slices"
)

// A direction's held octets sit in a ring buffer, stream.buf, at their
// sequence number modulo its length, and the ranges of offsets held are kept
// in stream.got, sorted. No order of segments ever makes an octet held move:
// only growing the buffer (room) copies them, and it doubles. Buffers of
// directions that close are kept for reuse (ringPool).

// span is a held range of offsets [lo, hi).
type span struct {
	lo, hi int
	soft   bool
}

// maxHoles bounds the holes between held ranges of one direction: beyond
// it the direction is given up, so that storing a segment costs
// O(maxHoles) at most.
const maxHoles = 64

// at is the position of an offset in buf.
func (s *stream) at(off int) int { return int((s.origin + uint32(off)) % uint32(len(s.buf))) }

// put copies b into buf at offset off.
func (s *stream) put(off int, b []byte) {
	for len(b) > 0 {
		p := s.at(off)
		n := copy(s.buf[p:], b)
		b, off = b[n:], off+n
	}
}

// view calls f with the held octets [lo, hi), in at most two pieces.
func (s *stream) view(lo, hi int, f func(off int, b []byte)) {
	for lo < hi {
		p := s.at(lo)
		n := min(hi-lo, len(s.buf)-p)
		f(lo, s.buf[p:p+n])
		lo += n
	}
}

// room makes buf hold the range [lo, hi) with everything already held,
// growing it (and charging the growth) when needed.
func (a *Assembler) room(s *stream, lo, hi int) {
	if len(s.got) > 0 {
		lo, hi = min(lo, s.got[0].lo), max(hi, s.got[len(s.got)-1].hi)
	}
	need := hi - lo
	if need <= len(s.buf) {
		return
	}
	// Grow by doubling, but never past what the direction may hold: the
	// early window before the start is known, the per-direction limit
	// after.
	limit := a.opt.StreamBytes
	if !s.anchored {
		limit = min(limit, a.p.EarlyWindow())
	}
	size := max(need, min(max(2*len(s.buf), 64), limit))
	nb := a.rings.get(size)
	old := s.buf
	for _, g := range s.got {
		for o := g.lo; o < g.hi; {
			p := int((s.origin + uint32(o)) % uint32(len(old)))
			n := min(g.hi-o, len(old)-p)
			q := int((s.origin + uint32(o)) % uint32(size))
			m := copy(nb[q:], old[p:p+n])
			if m < n {
				copy(nb, old[p+m:p+n])
			}
			o += n
		}
	}
	a.charge(s, size-len(old))
	a.rings.put(old)
	s.buf = nb
}

// hold stores data at offset off, filling only the gaps between the octets
// already held, except that it replaces soft octets. An octet held that
// data carries differently is reported (the lowest such). It reports
// whether it stored anything.
func (a *Assembler) hold(s *stream, off int, data []byte, frame int) bool {
	lo, hi := off, off+len(data)
	if lo >= hi {
		return false
	}
	a.room(s, lo, hi)
	stored := false
	pos := lo
	for i := 0; i < len(s.got); i++ {
		g := s.got[i]
		if g.hi <= pos || g.lo >= hi {
			continue
		}
		if g.lo > pos {
			s.put(pos, data[pos-off:g.lo-off])
			stored = true
		}
		a0, b0 := max(pos, g.lo), min(hi, g.hi)
		if g.soft {
			// A later copy wins over octets kept from before the SYN.
			s.put(a0, data[a0-off:b0-off])
			s.firm(a0, b0)
			stored = true
			i = -1 // the ranges changed: look again from the start
			pos = b0
			continue
		}
		s.view(a0, b0, func(o int, b []byte) {
			for j, c := range b {
				if c != data[o+j-off] {
					a.differ(s, o+j, frame)
					return
				}
			}
		})
		pos = max(pos, g.hi)
	}
	if pos < hi {
		s.put(pos, data[pos-off:])
		stored = true
	}
	if stored {
		s.merge(span{lo, hi, false})
		if len(s.got) > maxHoles+1 && s.capped == "" {
			s.capped = fmt.Sprintf("the octets received of this direction have more than %d holes", maxHoles)
		}
	}
	return stored
}

// differ reports a differing later copy of octet off.
func (a *Assembler) differ(s *stream, off, frame int) {
	if s.r != nil {
		s.differs(off-s.startOff(), frame)
		return
	}
	if s.differ == 0 || off+1 < s.differ {
		s.differ, s.differFrame = off+1, frame
	}
}

// merge adds the firm range n to got, joining the firm ranges it overlaps
// or touches and keeping the parts of soft ones it does not cover. It costs
// O(len(got)) at most, whatever the order of the ranges.
func (s *stream) merge(n span) {
	g := s.got
	// The first range that ends at or after n's start.
	i, hi := 0, len(g)
	for i < hi {
		m := int(uint(i+hi) >> 1)
		if g[m].hi < n.lo {
			i = m + 1
		} else {
			hi = m
		}
	}
	var left, right span
	j := i
	for ; j < len(g) && g[j].lo <= n.hi; j++ {
		if !g[j].soft {
			n.lo, n.hi = min(n.lo, g[j].lo), max(n.hi, g[j].hi)
			continue
		}
		if g[j].lo < n.lo {
			left = span{g[j].lo, n.lo, true}
		}
		if g[j].hi > n.hi {
			right = span{n.hi, g[j].hi, true}
		}
	}
	// A soft remainder on the right may have been passed by a firm range
	// joined after it.
	if right.hi <= n.hi {
		right = span{}
	}
	repl := s.tmp[:0]
	if left.hi > left.lo {
		repl = append(repl, left)
	}
	repl = append(repl, n)
	if right.hi > right.lo {
		repl = append(repl, right)
	}
	s.got = slices.Replace(g, i, j, repl...)
	s.tmp = repl[:0]
}

// firm makes [lo, hi) no longer soft and drops the soft origins it covers
// (their frames count only while some of their octets stand).
func (s *stream) firm(lo, hi int) {
	s.merge(span{lo, hi, false})
	kept := s.early[:0]
	for _, o := range s.early {
		if o.soft && o.lo >= lo && o.hi <= hi {
			continue
		}
		if o.soft && o.lo < hi && lo < o.hi {
			// Partly replaced: what stands of it.
			if o.lo < lo {
				o.hi = min(o.hi, lo)
			} else {
				o.lo = max(o.lo, hi)
			}
		}
		kept = append(kept, o)
	}
	s.early = kept
}

// trimBelow drops held octets and early segments below offset lo.
func (s *stream) trimBelow(lo int) {
	kept := s.got[:0]
	for _, g := range s.got {
		if g.hi <= lo {
			continue
		}
		g.lo = max(g.lo, lo)
		kept = append(kept, g)
	}
	s.got = kept
	ke := s.early[:0]
	for _, o := range s.early {
		if o.hi > lo {
			ke = append(ke, o)
		}
	}
	s.early = ke
}

// trimAbove drops held octets at or above offset hi.
func (s *stream) trimAbove(hi int) {
	kept := s.got[:0]
	for _, g := range s.got {
		if g.lo >= hi {
			continue
		}
		g.hi = min(g.hi, hi)
		kept = append(kept, g)
	}
	s.got = kept
}

// overlapsHeld reports whether held octets lie in [lo, hi).
func (s *stream) overlapsHeld(lo, hi int) bool {
	for _, g := range s.got {
		if g.lo < hi && lo < g.hi {
			return true
		}
	}
	return false
}

// contiguous is the stream offset up to which octets are delivered or held
// without a gap, soft ones included.
func (s *stream) contiguous() int {
	n, base := s.next, s.startOff()
	for _, g := range s.got {
		if g.lo-base > n {
			break
		}
		n = max(n, g.hi-base)
	}
	return n
}

// ringPool keeps ring buffers for reuse, by power-of-two capacity, up to
// ringPoolBytes in all: directions that open and close all the time (mid-
// stream bulk TCP) then allocate nothing.
type ringPool struct {
	free  [ringClasses][][]byte
	bytes int
}

const (
	ringMinBits   = 6  // 64 octets
	ringClasses   = 11 // to 64 KiB
	ringPoolBytes = 4 << 20
)

func ringClass(n int) int {
	c := 0
	for (1<<(ringMinBits+c)) < n && c < ringClasses {
		c++
	}
	return c
}

// get returns a buffer of length n, zeroed or not.
func (p *ringPool) get(n int) []byte {
	c := ringClass(n)
	if c < ringClasses {
		if l := len(p.free[c]); l > 0 {
			b := p.free[c][l-1]
			p.free[c] = p.free[c][:l-1]
			p.bytes -= cap(b)
			return b[:n]
		}
		return make([]byte, n, 1<<(ringMinBits+c))
	}
	return make([]byte, n)
}

// put keeps b for reuse, while there is room.
func (p *ringPool) put(b []byte) {
	c := ringClass(cap(b))
	if cap(b) == 0 || c >= ringClasses || cap(b) != 1<<(ringMinBits+c) || p.bytes+cap(b) > ringPoolBytes {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
	p.bytes += cap(b)
}
