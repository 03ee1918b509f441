package mpa

import (
	"fmt"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The DDP segment an FPDU holds (RFC 5041, section 4; RFC 5040, section
// 4): its headers' length from their control octets, their decoding, and
// its payload: the pieces of a tagged message handed on, the first octets
// of a Send kept.

// segmentOctets reads octets of the DDP segment at offset h in it.
func (f *follower) segmentOctets(h int, b []byte) {
	off, start := f.pos, false // the stream offset of b[0]
	if h < f.hdrNeed {
		n := min(len(b), f.hdrNeed-h)
		copy(f.hdr[h:], b[:n])
		h += n
		b = b[n:]
		if h == 2 && f.hdrNeed == 2 {
			if !f.headerLength() {
				return
			}
			if n := min(len(b), f.hdrNeed-h); n > 0 {
				copy(f.hdr[h:], b[:n])
				h += n
				b = b[n:]
			}
		}
		if h < f.hdrNeed {
			return
		}
		f.startSegment(f.hdr[:f.hdrNeed])
		if f.done {
			return
		}
		start = true
		off += h - (f.o - layers.FPDUHeaderLen) // past the headers
	}
	f.payloadOctets(off, h-f.hdrNeed, b, start)
}

// payloadOctets reads octets b of the DDP segment's payload, at offset at
// in it and stream offset off; start says its headers just came in (b may
// then be empty).
func (f *follower) payloadOctets(off, at int, b []byte, start bool) {
	if f.ddp.Tagged {
		if start || len(b) > 0 {
			f.taggedOctets(off, at, b, start)
		}
		return
	}
	if m := f.msg; m != nil && len(b) > 0 {
		at += int(f.ddp.MO) // the message offset of b[0]
		if at == 0 && m.head == 0 && f.ddp.Last && len(b) == f.ulpdu-f.hdrNeed {
			// The whole Send in these octets: nothing to copy, as long as
			// its FPDU ends in this delivery.
			f.view = b[:min(len(b), HeadLen)]
			m.head, m.headCut = len(f.view), len(b) > HeadLen
			return
		}
		f.keep(at, b)
	}
}

// TaggedKeep bounds the octets of a tagged message handed on with its
// pieces (Tagged.Data): those at message offsets below it, enough for the
// first octets of a Long Call or Long Reply.
const TaggedKeep = 4096

// taggedOctets hands on a piece of the tagged segment being read: b, at
// offset at of its payload and stream offset off; start says its headers
// just came in (b may then be empty).
func (f *follower) taggedOctets(off, at int, b []byte, start bool) {
	d := &f.ddp
	payload := f.ulpdu - f.hdrNeed
	to := d.TaggedOffset + uint64(at)
	t := &f.tag
	*t = Tagged{Opcode: d.Opcode, STag: d.STag, TO: to, N: len(b), Start: start, SegmentLen: payload,
		First: f.tagFirst, Last: d.Last, End: at+len(b) == payload}
	if mo := to - f.tagBase; to >= f.tagBase && mo < TaggedKeep {
		t.Data = b[:min(uint64(len(b)), TaggedKeep-mo)]
	}
	f.ev.tagged(off, t)
}

// keep copies octets of the Send at message offset at, as far as they
// continue what was kept (or go on beyond it) and fit in HeadLen.
func (f *follower) keep(at int, b []byte) {
	m := &f.send
	switch {
	case at > m.head:
		m.headCut = true // a segment before these is missing
		return
	case at < m.head:
		// They overlap what was kept (a segment whose MO is not where the
		// last one ended, Send.Gap): what goes beyond it is kept, however
		// the segments were cut into deliveries.
		if at+len(b) <= m.head {
			return
		}
		b = b[m.head-at:]
	}
	n := min(len(b), HeadLen-m.head)
	if n < len(b) {
		m.headCut = true
	}
	if n <= 0 {
		return
	}
	if f.buf == nil && f.heads != nil {
		f.buf = f.heads.get()
	}
	if f.buf == nil {
		m.headCut, m.headLimit = true, true
		return
	}
	copy(f.buf[m.head:], b[:n])
	m.head += n
}

// keepView copies the octets of view, which are about to go.
func (f *follower) keepView() {
	if v := f.view; v != nil {
		f.view, f.send.head = nil, 0
		f.keep(0, v)
	}
}

// headerLength works out, from the DDP and RDMAP control fields, how long
// the segment's headers are. It reports false when framing is lost.
func (f *follower) headerLength() bool {
	need, bad := segmentHeaders(f.hdr[0], f.hdr[1], f.ulpdu)
	switch bad {
	case badVersion:
		f.lose(fmt.Sprintf("the FPDU at stream offset %d has DDP version %d and RDMAP version %d, not 1 and 1", f.start, f.hdr[0]&0x03, f.hdr[1]>>6))
		return false
	case badOpcode:
		kind := "an untagged"
		if f.hdr[0]&0x80 != 0 {
			kind = "a tagged"
		}
		f.lose(fmt.Sprintf("the FPDU at stream offset %d carries %s DDP segment with RDMAP opcode %d, which RFC 5040 does not allow", f.start, kind, f.hdr[1]&0x0f))
		return false
	case badShort:
		f.lose(fmt.Sprintf("the FPDU at stream offset %d has ULPDU_Length %d, shorter than its headers (%d octets)", f.start, f.ulpdu, need))
		return false
	}
	f.hdrNeed = need
	return true
}

// What can be wrong with a DDP segment's control octets (segmentHeaders).
const (
	badNone    = iota
	badVersion // DDP or RDMAP version not 1
	badOpcode  // an RDMAP opcode a segment of its kind (tagged or not) cannot carry
	badShort   // a ULPDU shorter than the headers
)

// segmentHeaders is how long the DDP and RDMAP headers of a segment are,
// from its two control octets (DDP's, RDMAP's), and what is wrong with
// them for a ULPDU of ulpdu octets (badNone: nothing).
func segmentHeaders(ddpCtl, rdmapCtl byte, ulpdu int) (need, bad int) {
	if ddpCtl&0x03 != layers.DDPVersion || rdmapCtl>>6 != layers.RDMAPVersion {
		return 0, badVersion
	}
	tagged, op := ddpCtl&0x80 != 0, rdmapCtl&0x0f
	need = layers.DDPUntaggedLen
	switch {
	case tagged && op != layers.RDMAPOpWrite && op != layers.RDMAPOpReadResponse,
		!tagged && (op == layers.RDMAPOpWrite || op == layers.RDMAPOpReadResponse || op > layers.RDMAPOpTerminate):
		return 0, badOpcode
	case tagged:
		need = layers.DDPTaggedLen
	case op == layers.RDMAPOpReadRequest:
		need += layers.RDMAPReadRequestLen
	case op == layers.RDMAPOpTerminate:
		need += layers.RDMAPTerminateLen
	}
	if need > ulpdu {
		return need, badShort
	}
	return need, badNone
}

// startSegment decodes the segment's headers, h, once they are in.
func (f *follower) startSegment(h []byte) {
	if err := f.ddp.DecodeFromBytes(h, gopacket.NilDecodeFeedback); err != nil {
		f.lose(fmt.Sprintf("the DDP header of the FPDU at stream offset %d does not decode: %v", f.start, err))
		return
	}
	f.msg = nil
	payload := f.ulpdu - f.hdrNeed
	if d := &f.ddp; d.Tagged {
		// A segment begins a message after the last segment of another,
		// or when it names another STag or comes before the message's
		// first octet (the segments of a message come in order).
		f.tagFirst = !f.tagOpen || d.STag != f.tagSTag || d.TaggedOffset < f.tagBase
		if f.tagFirst {
			f.tagSTag, f.tagBase = d.STag, d.TaggedOffset
		}
		f.tagOpen = !d.Last
	}
	if !f.ddp.Tagged {
		if want := queueOf(f.ddp.Opcode); f.ddp.QN != want {
			f.lose(fmt.Sprintf("the FPDU at stream offset %d carries RDMAP opcode %d on DDP queue %d, not on queue %d", f.start, f.ddp.Opcode, f.ddp.QN, want))
			return
		}
		switch f.ddp.Opcode {
		case layers.RDMAPOpReadRequest:
			_ = f.rr.DecodeFromBytes(f.ddp.Payload, gopacket.NilDecodeFeedback)
		case layers.RDMAPOpTerminate:
			_ = f.term.DecodeFromBytes(f.ddp.Payload, gopacket.NilDecodeFeedback)
		default:
			m := &f.send
			if !f.sending || m.msn != f.ddp.MSN {
				if f.sending {
					f.finish() // another message began: that one never ended
				}
				*m = untagged{msn: f.ddp.MSN, start: f.start, gap: f.ddp.MO != 0}
				f.sending = true
			} else if int(f.ddp.MO) != m.length {
				m.gap = true
			}
			m.opcode, m.invalidate = f.ddp.Opcode, f.ddp.InvalidateSTag
			m.length = max(m.length, int(f.ddp.MO)+payload)
			m.segments++
			f.msg = m
		}
	}
	if f.onSegment != nil {
		f.onSegment(&f.ddp, payload)
	}
}

// queueOf is the DDP queue an untagged RDMAP opcode goes on (RFC 5040,
// section 5).
func queueOf(op uint8) uint32 {
	switch op {
	case layers.RDMAPOpReadRequest:
		return layers.QNReadRequest
	case layers.RDMAPOpTerminate:
		return layers.QNTerminate
	}
	return layers.QNSend
}
