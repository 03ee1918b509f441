package mpa

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// After its MPA frame, each direction of an iWARP connection is a sequence
// of FPDUs (RFC 5044, section 4), each holding one DDP segment (RFC 5041)
// of an RDMAP message (RFC 5040). The follower reads them from the octets
// the reassembler delivers in order, keeping only what the checks need:
// the headers of the FPDU being read (also when they span segments) and the
// first octets of an untagged message (a Send's RPC-over-RDMA header). The
// payload of an RDMA Write or Read Response is counted and passed over,
// never kept. Markers (RFC 5044, section 4.3), when the receiver asked for
// them, sit every 512 octets of the stream from the first FPDU on; each is
// checked (its FPDUPTR must point back at the FPDU it is in) and taken out.
// When CRC is in use the CRC32c of each FPDU is computed as its octets
// pass (markers inside it included).

// fpduEvents receives what the follower reads.
type fpduEvents interface {
	// segment: a DDP segment's headers are in; payload octets follow them.
	segment(d *layers.DDP, payload int)
	// message: the last segment of an untagged message was read.
	message(m *untagged)
	// readRequest: an RDMA Read Request (queue 1) was read.
	readRequest(rr *layers.RDMAPReadRequest)
	// readResponseDone: the last segment of an RDMA Read Response was read.
	readResponseDone()
	// terminate: a Terminate was read.
	terminate(t *layers.RDMAPTerminate)
	// crcProblem: the CRC field of the FPDU at stream offset off is wrong
	// (mismatch), or zero although CRC is in use, or not zero although it
	// is not (missing).
	crcProblem(off int, mismatch bool, field, computed uint32)
	// lost: the direction cannot be followed further.
	lost(why string)
}

// maxKeep is how many first octets of an untagged message are kept (for
// the RPC-over-RDMA header of a Send).
const maxKeep = 1024

// hdrKeep holds a DDP header and the longest RDMAP header after it (a
// Read Request's).
const hdrKeep = layers.DDPUntaggedLen + layers.RDMAPReadRequestLen

// untagged is an untagged DDP message being reassembled by its MSN and MO.
type untagged struct {
	qn, msn    uint32
	opcode     uint8
	invalidate uint32
	length     int    // the largest MO + segment length seen
	first      []byte // the octets from MO 0 on, up to maxKeep, as far as they came in order
	gap        bool   // a segment was missing (its MO was not where the last one ended)
	start      int    // stream offset of the message's first FPDU
	segments   int
}

// follower reads the FPDUs of one direction.
type follower struct {
	ev      fpduEvents
	pos     int  // stream offset of the next octet
	base    int  // stream offset of the first FPDU: markers sit at base + 512k
	markers bool // the receiver asked for markers
	crc     bool // CRC is in use (either MPA frame set C)
	done    bool // framing was lost: nothing more is read

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
	ddp     layers.DDP
	rr      layers.RDMAPReadRequest
	term    layers.RDMAPTerminate
	msg     *untagged // the untagged message the segment belongs to, or nil
	msgs    [3]untagged
	have    [3]bool
	keep    [3][maxKeep]byte

	inMarker int // octets of the current marker read, 0 when not in one
	marker   [4]byte

	fpdus int // FPDUs read whole
}

// init starts following a direction at stream offset pos.
func (f *follower) init(ev fpduEvents, pos int, markers, crc bool) {
	f.ev, f.pos, f.base, f.markers, f.crc, f.done = ev, pos, pos, markers, crc, false
	f.start, f.o, f.hdrNeed, f.sum, f.msg, f.inMarker, f.fpdus = pos, 0, 2, 0, nil, 0, 0
	f.have = [3]bool{}
}

// fpduLen is the current FPDU's length, markers excluded, once its length
// field is in.
func (f *follower) fpduLen() int { return layers.FPDUHeaderLen + f.ulpdu + f.pad + layers.FPDUCRCLen }

// feed reads octets delivered in order at stream offset off.
func (f *follower) feed(off int, b []byte) {
	if f.done {
		return
	}
	if off != f.pos {
		f.lose(fmt.Sprintf("octets %d to %d of the stream never arrived", f.pos, off))
		return
	}
	for len(b) > 0 && !f.done {
		if f.markers && (f.inMarker > 0 || (f.pos-f.base)%layers.MarkerInterval == 0) {
			b = b[f.markerOctets(b):]
			continue
		}
		n := len(b)
		if f.markers {
			next := f.base + ((f.pos-f.base)/layers.MarkerInterval+1)*layers.MarkerInterval
			n = min(n, next-f.pos)
		}
		n = f.fpduOctets(b[:n])
		f.pos += n
		b = b[n:]
	}
}

// markerOctets takes octets of the marker at f.pos and reports how many.
func (f *follower) markerOctets(b []byte) int {
	n := min(len(b), layers.MarkerLen-f.inMarker)
	copy(f.marker[f.inMarker:], b[:n])
	inFPDU := f.o > 0
	if inFPDU {
		f.sum = layers.UpdateFPDUCRC(f.sum, b[:n])
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
			f.start, f.sum = f.pos+took, 0
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
		if covered && f.crc {
			f.sum = layers.UpdateFPDUCRC(f.sum, b[:n])
		}
		f.o += n
		took += n
		b = b[n:]
		if !f.done && f.o > layers.FPDUHeaderLen && f.o == f.fpduLen() {
			f.endFPDU()
		}
	}
	return took
}

// segmentOctets reads octets of the DDP segment at offset h in it.
func (f *follower) segmentOctets(h int, b []byte) {
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
		f.startSegment()
		if f.done {
			return
		}
	}
	// Payload: the first octets of an untagged message are kept.
	if m := f.msg; m != nil && len(b) > 0 {
		at := int(f.ddp.MO) + h - f.hdrNeed // the message offset of b[0]
		if at == len(m.first) && at < maxKeep {
			m.first = append(m.first, b[:min(len(b), maxKeep-at)]...)
		}
	}
}

// headerLength works out, from the DDP and RDMAP control fields, how long
// the segment's headers are. It reports false when framing is lost.
func (f *follower) headerLength() bool {
	ctl := f.hdr[:2]
	if dv, rv := ctl[0]&0x03, ctl[1]>>6; dv != layers.DDPVersion || rv != layers.RDMAPVersion {
		f.lose(fmt.Sprintf("the FPDU at stream offset %d has DDP version %d and RDMAP version %d, not 1 and 1", f.start, dv, rv))
		return false
	}
	need := layers.DDPUntaggedLen
	if ctl[0]&0x80 != 0 {
		need = layers.DDPTaggedLen
	} else {
		switch ctl[1] & 0x0f {
		case layers.RDMAPOpReadRequest:
			need += layers.RDMAPReadRequestLen
		case layers.RDMAPOpTerminate:
			need += layers.RDMAPTerminateLen
		}
	}
	if need > f.ulpdu {
		f.lose(fmt.Sprintf("the FPDU at stream offset %d has ULPDU_Length %d, shorter than its headers (%d octets)", f.start, f.ulpdu, need))
		return false
	}
	f.hdrNeed = need
	return true
}

// startSegment decodes the segment's headers once they are in.
func (f *follower) startSegment() {
	if err := f.ddp.DecodeFromBytes(f.hdr[:f.hdrNeed], gopacket.NilDecodeFeedback); err != nil {
		f.lose(fmt.Sprintf("the DDP header of the FPDU at stream offset %d does not decode: %v", f.start, err))
		return
	}
	f.msg = nil
	payload := f.ulpdu - f.hdrNeed
	if !f.ddp.Tagged {
		switch f.ddp.Opcode {
		case layers.RDMAPOpReadRequest:
			_ = f.rr.DecodeFromBytes(f.ddp.Payload, gopacket.NilDecodeFeedback)
		case layers.RDMAPOpTerminate:
			_ = f.term.DecodeFromBytes(f.ddp.Payload, gopacket.NilDecodeFeedback)
		}
		if q := f.ddp.QN; q <= layers.QNTerminate {
			m := &f.msgs[q]
			if !f.have[q] || m.msn != f.ddp.MSN {
				*m = untagged{qn: q, msn: f.ddp.MSN, start: f.start, first: f.keep[q][:0], gap: f.ddp.MO != 0}
				f.have[q] = true
			} else if int(f.ddp.MO) != m.length {
				m.gap = true
			}
			m.opcode, m.invalidate = f.ddp.Opcode, f.ddp.InvalidateSTag
			m.length = max(m.length, int(f.ddp.MO)+payload)
			m.segments++
			f.msg = m
		}
	}
	f.ev.segment(&f.ddp, payload)
}

// endSegment is called when the segment's last octet was read; endFPDU
// when its CRC was.
func (f *follower) endFPDU() {
	f.fpdus++
	field := binary.LittleEndian.Uint32(f.crcBuf[:])
	switch {
	case f.crc && field != f.sum:
		f.ev.crcProblem(f.start, field != 0, field, f.sum)
	case !f.crc && field != 0:
		f.ev.crcProblem(f.start, false, field, 0)
	}
	if f.hdrNeed > 2 && !f.done {
		switch {
		case f.ddp.Tagged && f.ddp.Opcode == layers.RDMAPOpReadResponse && f.ddp.Last:
			f.ev.readResponseDone()
		case !f.ddp.Tagged && f.ddp.Last && f.msg != nil:
			switch f.ddp.Opcode {
			case layers.RDMAPOpReadRequest:
				f.ev.readRequest(&f.rr)
			case layers.RDMAPOpTerminate:
				f.ev.terminate(&f.term)
			default:
				f.ev.message(f.msg)
			}
			f.have[f.msg.qn] = false
		}
	}
	f.o, f.hdrNeed, f.msg = 0, 2, nil
}

// lose stops the follow.
func (f *follower) lose(why string) {
	if !f.done {
		f.done = true
		f.ev.lost(why)
	}
}
