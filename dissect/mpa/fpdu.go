package mpa

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// After its MPA frame, each direction of an iWARP connection is a sequence
// of FPDUs (RFC 5044, section 4), each holding one DDP segment (RFC 5041)
// of an RDMAP message (RFC 5040). The follower reads them from the octets
// the reassembler delivers in order, keeping only what the checks need:
// the headers of the FPDU being read (also when they span segments) and the
// first octets of a Send (its RPC-over-RDMA header). The payload of an RDMA
// Write or Read Response is counted and passed over, never kept. Markers
// (RFC 5044, section 4.3), when the receiver asked for them, sit every 512
// octets of the stream from the first FPDU on; each is checked (its
// FPDUPTR must point back at the FPDU it is in) and taken out. When CRC is
// in use the CRC32c of each FPDU is computed as its octets pass (markers
// inside it included).
//
// When the peer's MPA frame was not seen, whether markers and CRC are in
// use is worked out from the stream: a marker opens the FPDU stream when
// markers are in use, and its first two octets are zero, which no
// ULPDU_Length can be; a CRC field that is zero says CRC is not in use,
// one that matches says it is, and until one of them is seen no CRC is
// judged.

// fpduEvents receives what the follower reads.
type fpduEvents interface {
	// fpdu: the FPDU at stream offsets [start, end) (markers in it
	// included) was read whole; m is the Send it carried a segment of, or
	// nil.
	fpdu(start, end int, m *untagged)
	// message: a Send (an untagged message on queue 0) ended, or was left
	// unfinished (m.complete false): a new message began on the queue, or
	// the direction ended. head holds its first octets (read during the
	// call only).
	message(m *untagged, head []byte)
	// readRequest: an RDMA Read Request (queue 1) was read.
	readRequest(rr *layers.RDMAPReadRequest)
	// readResponseDone: the last segment of an RDMA Read Response was read.
	readResponseDone()
	// tagged: octets of a tagged DDP segment (an RDMA Write's or Read
	// Response's) passed at stream offset off; t and its Data are the
	// follower's, read during the call only.
	tagged(off int, t *Tagged)
	// terminate: a Terminate was read.
	terminate(t *layers.RDMAPTerminate)
	// crcProblem: the CRC field of the FPDU at stream offset off is wrong
	// (mismatch), or zero although CRC is in use, or not zero although it
	// is not (missing).
	crcProblem(off int, mismatch bool, field, computed uint32)
	// summed: the CRC of the FPDU just read, computed ahead over the
	// octets data its CRC covers, when it was (Framer.Lend).
	summed(data []byte) (uint32, bool)
	// checkAside: the FPDU just read, which CRC is in use for, lies whole
	// in the octets delivered, data the octets its CRC covers and field its
	// CRC field. It reports whether the check was taken, to be made on
	// another core with its verdict joined back in order (crc.go); false:
	// the follower checks it now.
	checkAside(data []byte, field uint32) bool
	// lost: the direction cannot be followed further.
	framingLost(why string)
}

// HeadLen is how many first octets of a Send are kept: enough for an
// RPC-over-RDMA header with the chunk lists anyone sends.
const HeadLen = 2048

// hdrKeep holds a DDP header and the longest RDMAP header after it (a
// Read Request's).
const hdrKeep = layers.DDPUntaggedLen + layers.RDMAPReadRequestLen

// untagged is a Send being reassembled by its MSN and MO.
type untagged struct {
	msn        uint32
	opcode     uint8
	invalidate uint32
	length     int  // the largest MO + segment length seen
	gap        bool // a segment was missing (its MO was not where the last one ended)
	complete   bool // its last segment was read
	start      int  // stream offset of its first FPDU
	segments   int
	head       int  // octets of it kept (in view or buf), from MO 0 on
	headCut    bool // it is longer than what was kept
	headLimit  bool // ... because no buffer could be had
}

// headPool lends the buffers (HeadLen octets) that hold the first octets of
// Sends; get returns nil when none may be had.
type headPool interface {
	get() []byte
	put([]byte)
}

// Whether markers or CRC are in use.
type mode uint8

const (
	modeOff mode = iota
	modeOn
	modeGuess // not known: worked out from the stream
)

// follower reads the FPDUs of one direction.
type follower struct {
	ev        fpduEvents
	onSegment segmentSeen
	pos       int  // stream offset of the next octet
	base      int  // stream offset of the first FPDU: markers sit at base + 512k
	markers   mode // the receiver asked for markers
	crc       mode // CRC is in use (either MPA frame set C)
	done      bool // framing was lost: nothing more is read
	// After framing was lost, what could not be read is counted: the
	// octets delivered from the start of the FPDU it was lost in (unread;
	// lostFrom is where counting goes on from), and those that never
	// arrived (missing: the hole that lost it, and any later).
	unread, missing, lostFrom int
	// holeEnd: framing was lost at a hole, which ended at this offset (0
	// when it was lost otherwise).
	holeEnd int

	// The first two octets of the stream, while markers are guessed.
	peek  [2]byte
	npeek int

	// The FPDU being read; o counts its octets read, markers excluded.
	start   int
	o       int
	ulpdu   int
	pad     int
	lenBuf  [2]byte
	hdr     [hdrKeep]byte
	hdrNeed int // octets of headers in the DDP segment; 2 until the control field is in
	sum     uint32
	crcBuf  [4]byte
	// whole: the FPDU being read lies whole in the octets being delivered,
	// and these are the octets its CRC covers: its CRC is computed over
	// them in one pass when it ends, not piece by piece (nil: piece by
	// piece, into sum).
	whole []byte
	ddp   layers.DDP
	rr    layers.RDMAPReadRequest
	term  layers.RDMAPTerminate

	// The Send on queue 0; msg points at it while the FPDU being read
	// carries a segment of it.
	send    untagged
	sending bool // send is in progress
	msg     *untagged
	// Its first octets: view points into the octets being delivered (a
	// Send in one FPDU that came in one delivery: nothing is copied);
	// otherwise they are copied to buf.
	view []byte
	buf  []byte
	// heads lends buf.
	heads headPool

	// The tagged message in progress (RDMA Write or Read Response): its
	// STag, the TO of its first octet, and whether its last segment is
	// still to come; tagFirst: the segment being read begins it. tag is
	// the piece handed on.
	tagSTag  uint32
	tagBase  uint64
	tagOpen  bool
	tagFirst bool
	tag      Tagged

	inMarker int // octets of the current marker read, 0 when not in one
	marker   [4]byte
	lead     bool // sum holds a marker right before the FPDU about to start

	fpdus int // FPDUs read whole
}

// init starts following a direction at stream offset pos.
func (f *follower) init(ev fpduEvents, heads headPool, pos int, markers, crc mode) {
	*f = follower{ev: ev, heads: heads, pos: pos, base: pos, markers: markers, crc: crc, hdrNeed: 2, start: pos}
}

// segmentSeen is a test's look at each DDP segment whose headers are in
// (its payload octets follow them): nil but in tests.
type segmentSeen func(d *layers.DDP, payload int)

// fpduLen is the current FPDU's length, markers excluded, once its length
// field is in.
func (f *follower) fpduLen() int { return layers.FPDUHeaderLen + f.ulpdu + f.pad + layers.FPDUCRCLen }

// next is the stream offset the follower expects next.
func (f *follower) next() int { return f.pos + f.npeek }

// feed reads octets delivered in order at stream offset off.
func (f *follower) feed(off int, b []byte) {
	if f.done {
		f.lostOctets(off, b)
		return
	}
	if off != f.next() {
		// A hole the reassembler will not see filled (reassembly.Dir.AcceptGaps).
		from := f.next()
		f.holeEnd = off
		f.lose(fmt.Sprintf("%d octets of the stream (offsets %d to %d) never arrived", off-from, from, off-1))
		f.unread += f.pos - f.lostFrom
		f.pos = off // the hole is in why; missing counts the later ones
		f.lostOctets(off, b)
		return
	}
	if f.markers == modeGuess {
		n := copy(f.peek[f.npeek:], b)
		f.npeek += n
		b = b[n:]
		if f.npeek < len(f.peek) {
			return
		}
		f.markers, f.npeek = modeOff, 0
		if f.peek == [2]byte{} {
			f.markers = modeOn
		}
		f.octets(f.peek[:])
	}
	f.octets(b)
}

// octets reads octets at f.pos.
func (f *follower) octets(b []byte) {
	for len(b) > 0 && !f.done {
		if f.markers == modeOn && (f.inMarker > 0 || (f.pos-f.base)%layers.MarkerInterval == 0) {
			b = b[f.markerOctets(b):]
			continue
		}
		n := len(b)
		if f.markers == modeOn {
			next := f.base + ((f.pos-f.base)/layers.MarkerInterval+1)*layers.MarkerInterval
			n = min(n, next-f.pos)
		}
		b = b[f.fpduOctets(b[:n]):]
	}
	if f.done {
		// Lost in these octets: what was read of the FPDU, and the rest.
		f.unread += f.pos - f.lostFrom + len(b)
		f.pos += len(b)
		f.lostFrom = f.pos
	}
	f.keepView() // the octets delivered are gone after this call
}

// lostOctets counts octets delivered at off after framing was lost, and
// the octets before them that never arrived.
func (f *follower) lostOctets(off int, b []byte) {
	f.missing += max(0, off-f.pos)
	f.unread += len(b)
	f.pos = max(f.pos, off+len(b))
}

// markerOctets takes octets of the marker at f.pos and reports how many.
func (f *follower) markerOctets(b []byte) int {
	n := min(len(b), layers.MarkerLen-f.inMarker)
	copy(f.marker[f.inMarker:], b[:n])
	inFPDU := f.o > 0
	// The CRC covers the markers of an FPDU before its CRC field: those
	// inside it (one right before the field too), and one right before its
	// ULPDU_Length (as tshark's check has it).
	if f.crc != modeOff {
		switch {
		case !inFPDU:
			if f.inMarker == 0 {
				f.sum = 0
			}
			f.lead = true
			f.sum = layers.UpdateFPDUCRC(f.sum, b[:n])
		case f.o < layers.FPDUHeaderLen || f.o <= layers.FPDUHeaderLen+f.ulpdu+f.pad:
			f.sum = layers.UpdateFPDUCRC(f.sum, b[:n])
		}
	}
	f.inMarker += n
	f.pos += n
	if f.inMarker < layers.MarkerLen {
		return n
	}
	f.inMarker = 0
	at := f.pos - layers.MarkerLen
	// FPDUPTR is the distance back from the marker to the start of the FPDU
	// it is in; a marker just before an FPDU points at it with 0.
	want := 0
	if inFPDU {
		want = at - f.start
	}
	if ptr := int(binary.BigEndian.Uint16(f.marker[2:4])); ptr != want {
		f.lose(fmt.Sprintf("the marker at stream offset %d has FPDUPTR %d, but the FPDU it is in starts %d octets before it", at, ptr, want))
	}
	return n
}

// fpduOctets reads octets of FPDUs, no marker among them, and reports how
// many it took.
func (f *follower) fpduOctets(b []byte) int {
	took := 0
	for len(b) > 0 && !f.done {
		if f.o == 0 {
			f.start = f.pos
			f.whole = nil
			lead := f.lead
			f.lead = false
			if !lead {
				f.sum = 0
				if n := f.inPlace(b); n > 0 {
					took += n
					b = b[n:]
					continue
				}
			}
			if f.crc == modeOn && !lead && len(b) >= layers.FPDUHeaderLen {
				if n := layers.FPDULen(int(binary.BigEndian.Uint16(b))); n <= len(b) {
					f.whole = b[:n-layers.FPDUCRCLen]
				}
			}
		}
		var n int
		covered := true // by the CRC
		switch o := f.o; {
		case o < layers.FPDUHeaderLen:
			n = min(len(b), layers.FPDUHeaderLen-o)
			copy(f.lenBuf[o:], b[:n])
			if o+n == layers.FPDUHeaderLen {
				f.ulpdu = int(binary.BigEndian.Uint16(f.lenBuf[:]))
				f.pad, f.hdrNeed = layers.FPDUPad(f.ulpdu), 2
				if f.ulpdu < layers.DDPTaggedLen {
					f.lose(fmt.Sprintf("the FPDU at stream offset %d has ULPDU_Length %d, shorter than any DDP header", f.start, f.ulpdu))
				}
			}
		case o < layers.FPDUHeaderLen+f.ulpdu:
			n = min(len(b), layers.FPDUHeaderLen+f.ulpdu-o)
			f.segmentOctets(o-layers.FPDUHeaderLen, b[:n])
		case o < layers.FPDUHeaderLen+f.ulpdu+f.pad:
			n = min(len(b), layers.FPDUHeaderLen+f.ulpdu+f.pad-o)
		default:
			c := o - (layers.FPDUHeaderLen + f.ulpdu + f.pad)
			n = min(len(b), layers.FPDUCRCLen-c)
			copy(f.crcBuf[c:], b[:n])
			covered = false
		}
		if covered && f.crc != modeOff && f.whole == nil {
			f.sum = layers.UpdateFPDUCRC(f.sum, b[:n])
		}
		f.o += n
		f.pos += n
		took += n
		b = b[n:]
		if !f.done && f.o > layers.FPDUHeaderLen && f.o == f.fpduLen() {
			f.endFPDU()
		}
	}
	return took
}

// inPlace reads the FPDU at the start of b where it lies, when b holds it
// whole and its length and control octets are sound (the usual case: MPA
// senders align FPDUs with TCP segments, RFC 5044, section 4.1): its DDP
// and RDMAP headers are decoded in b, its CRC covers b, nothing is copied
// but its CRC field and, when the Send it carries outlives b, the Send's
// first octets. It returns the octets it took: 0 when the FPDU is left to
// be read octet run by octet run (not whole in b, or a length or header to
// report), which ends in the same state.
func (f *follower) inPlace(b []byte) int {
	const hl = layers.FPDUHeaderLen
	if len(b) < hl+2 {
		return 0
	}
	ulpdu := int(binary.BigEndian.Uint16(b))
	n := layers.FPDULen(ulpdu)
	if n > len(b) || ulpdu < layers.DDPTaggedLen {
		return 0
	}
	need, bad := segmentHeaders(b[hl], b[hl+1], ulpdu)
	if bad != badNone {
		return 0
	}
	f.ulpdu, f.pad, f.hdrNeed, f.o = ulpdu, layers.FPDUPad(ulpdu), need, hl+need
	f.startSegment(b[hl : hl+need])
	// The layers decoded keep no hold on b, which may be a reassembler's
	// buffer given back after this call.
	f.ddp.Contents, f.ddp.Payload = nil, nil
	f.rr.Contents, f.rr.Payload, f.term.Contents, f.term.Payload = nil, nil, nil, nil
	if f.done {
		// As when read run by run: the ULPDU taken, framing lost in it.
		f.o, f.pos = hl+ulpdu, f.start+hl+ulpdu
		return f.o
	}
	f.payloadOctets(f.start+hl+need, 0, b[hl+need:hl+ulpdu], true)
	covered := b[:n-layers.FPDUCRCLen]
	copy(f.crcBuf[:], b[len(covered):n])
	switch f.crc {
	case modeOn:
		f.whole = covered
	case modeGuess:
		f.sum = layers.UpdateFPDUCRC(0, covered)
	}
	f.o, f.pos = n, f.start+n
	f.endFPDU()
	return n
}

// endFPDU is called when the FPDU's last octet (of its CRC) was read.
func (f *follower) endFPDU() {
	f.fpdus++
	field := binary.LittleEndian.Uint32(f.crcBuf[:])
	switch f.crc {
	case modeOn:
		if f.whole != nil {
			w := f.whole
			f.whole = nil
			if s, ok := f.ev.summed(w); ok {
				f.sum = s
			} else if f.ev.checkAside(w, field) {
				break
			} else {
				f.sum = layers.UpdateFPDUCRC(0, w)
			}
		}
		if field != f.sum {
			f.ev.crcProblem(f.start, field != 0, field, f.sum)
		}
	case modeOff:
		if field != 0 {
			f.ev.crcProblem(f.start, false, field, 0)
		}
	case modeGuess:
		switch field {
		case 0:
			f.crc = modeOff
		case f.sum:
			f.crc = modeOn
		}
	}
	f.ev.fpdu(f.start, f.pos, f.msg)
	if f.hdrNeed > 2 && !f.done {
		switch {
		case f.ddp.Tagged && f.ddp.Opcode == layers.RDMAPOpReadResponse && f.ddp.Last:
			f.ev.readResponseDone()
		case f.ddp.Tagged || !f.ddp.Last:
		case f.ddp.Opcode == layers.RDMAPOpReadRequest:
			if f.ddp.MO == 0 {
				f.ev.readRequest(&f.rr)
			}
		case f.ddp.Opcode == layers.RDMAPOpTerminate:
			if f.ddp.MO == 0 {
				f.ev.terminate(&f.term)
			}
		case f.msg != nil:
			f.msg.complete = true
			f.finish()
		}
	}
	f.o, f.hdrNeed, f.msg = 0, 2, nil
}

// finish hands on the Send in progress and releases its octets.
func (f *follower) finish() {
	if !f.sending {
		return
	}
	m := &f.send
	var head []byte
	switch {
	case f.view != nil:
		head = f.view
	case f.buf != nil:
		head = f.buf[:m.head]
	}
	f.ev.message(m, head)
	f.sending, f.view, f.msg = false, nil, nil
	if f.buf != nil {
		f.heads.put(f.buf)
		f.buf = nil
	}
}

// end is the end of the direction: a Send in progress is handed on
// unfinished.
func (f *follower) end() {
	f.keepView()
	f.finish()
}

// lose stops the follow. The octets of the FPDU it was lost in, as far as
// they were read, are not read.
func (f *follower) lose(why string) {
	if !f.done {
		f.done = true
		f.lostFrom = f.pos
		if f.o > 0 {
			f.lostFrom = f.start
		}
		f.ev.framingLost(why)
	}
}
