package decode

import (
	"encoding/binary"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The data path's share of the decoder: a frame the classifier found to be
// Reliable Connected traffic (a BTH with an RC opcode, over RoCEv2, RoCEv1
// or native InfiniBand) is an event of its own, which the data path reads
// through datapath.RCFrame: its key first, then, when the frame may belong
// to a connection it follows, the BTH, its extended headers and where the
// payload lies. Nothing here allocates.

// rcState is the RC frame of the call under way, decoded only as far as
// the data path asks (datapath.RCFrame).
type rcState struct {
	b     []byte
	fi    frameInfo
	frame int
	at    time.Time
	wire  int // where the frame ends on the wire (wireEnd)
	pkt   datapath.Packet
	lie   struct {
		field          lengthField
		wire, captured int
		text           string
	}
	reth layers.RETH
	aeth layers.AETH
	ieth layers.IETH
}

// isRC reports whether a BTH at off carries an RC opcode, or is a RoCEv2
// CNP (the data path counts them on the connection they notify).
func isRC(b []byte, off int) bool {
	return len(b) >= off+layers.BTHLen && (layers.IsRC(b[off]) || b[off] == layers.OpCNP)
}

// rcFrame keeps an RC frame for the data path.
func (d *Decoder) rcFrame(f *capture.Frame, fi *frameInfo) {
	d.rc.b, d.rc.fi, d.rc.frame, d.rc.at, d.rc.wire = f.Data, *fi, f.Index, f.Time, wireEnd(f)
	d.ev.out = append(d.ev.out, Event{RC: &d.rc})
}

// Key is what the data path's filter looks at first: the opcode, the
// DestQP and the end of the destination address.
func (r *rcState) Key() (op uint8, qp, dst4 uint32) {
	b, bth := r.b, r.fi.bth
	return b[bth], uint24(b[bth+5:]), rcDst4(b, &r.fi)
}

// Packet decodes the RC frame as far as the data path needs: the BTH, its
// extended headers, where the payload lies.
func (r *rcState) Packet() *datapath.Packet {
	b, fi := r.b, &r.fi
	bth := fi.bth
	p := &r.pkt
	p.Frame, p.Time = r.frame, r.at
	p.OpCode = b[bth]
	p.PadCnt = b[bth+1] >> 4 & 0x03
	p.DestQP = uint24(b[bth+5:])
	p.PSN = uint24(b[bth+9:])
	p.FECN, p.BECN = b[bth+4]&0x80 != 0, b[bth+4]&0x40 != 0
	p.HasTClass = false
	switch fi.transport {
	case record.RoCEv2:
		p.Net = datapath.NetRoCEv2
		tc := b[fi.l3+1] // IPv4: the TOS octet
		if fi.ipv6 {
			tc = b[fi.l3]<<4 | b[fi.l3+1]>>4
		}
		p.DSCP, p.ECN, p.HasTClass = tc>>2, tc&0x03, true
		if fi.ipv6 {
			copy(p.Src[:], b[fi.l3+8:fi.l3+24])
			copy(p.Dst[:], b[fi.l3+24:fi.l3+40])
		} else {
			p.Src, p.Dst = v4prefix, v4prefix
			copy(p.Src[12:], b[fi.l3+12:fi.l3+16])
			copy(p.Dst[12:], b[fi.l3+16:fi.l3+20])
		}
	case record.RoCEv1:
		p.Net = datapath.NetRoCEv1
		copy(p.Src[:], b[fi.grh+8:fi.grh+24])
		copy(p.Dst[:], b[fi.grh+24:fi.grh+40])
	default:
		p.Net = datapath.NetIB
		p.Src = datapath.LIDAddr(binary.BigEndian.Uint16(b[fi.lrh+6:]))
		p.Dst = datapath.LIDAddr(binary.BigEndian.Uint16(b[fi.lrh+2:]))
	}
	// Where the packet ends: by its own length fields (its ICRC included),
	// as far as the frame went on the wire. A field that claims more than
	// the wire carried lies (the rule CM messages follow too): the packet
	// ends with the frame on the wire, and says so (LengthLie). A field too
	// small for the BTH and ICRC says nothing, and the frame's end stands
	// for it.
	lens := lengthsOf(b, fi)
	end := lens.end
	p.LengthLie = ""
	if lf, ok := lens.lie(r.wire); ok {
		p.LengthLie = r.lieText(lf, len(b))
	}
	if end < bth+layers.BTHLen+layers.ICRCLen || lens.lies(lens.field, r.wire) {
		end = r.wire
		if fi.lrh >= 0 {
			end -= vcrcLen
		}
	}
	hdr := bth + layers.BTHLen
	ext := r.extended(p, b[hdr:min(max(end, hdr), len(b))])
	start := hdr + ext
	wire := end - layers.ICRCLen - int(p.PadCnt)
	p.PayloadLen = max(wire-start, 0)
	captured := min(wire, len(b))
	if captured < start {
		captured = start
	}
	if start > len(b) {
		p.Payload = nil
	} else {
		p.Payload = b[start:captured]
	}
	return p
}

// lieText says how the length field lf of the frame under way claims more
// than the wire carried; the text of the last such frame is kept, so that a
// run of them costs one.
func (r *rcState) lieText(lf lengthField, captured int) string {
	if lf != r.lie.field || r.wire != r.lie.wire || captured != r.lie.captured {
		r.lie.field, r.lie.wire, r.lie.captured = lf, r.wire, captured
		r.lie.text = beyond(lf, r.wire, captured)
	}
	return r.lie.text
}

// extended decodes the extended headers of the opcode from data (what
// follows the BTH) into p and returns their size. A header the capture cut
// leaves its fields zero.
func (r *rcState) extended(p *datapath.Packet, data []byte) int {
	p.VA, p.RKey, p.DMALength, p.Syndrome, p.HasAETH, p.IETH = 0, 0, 0, 0, false, 0
	n := 0
	for _, t := range layers.ExtendedHeaders(p.OpCode) {
		rest := data[min(n, len(data)):]
		df := gopacket.NilDecodeFeedback
		switch t {
		case layers.LayerTypeRETH:
			if r.reth.DecodeFromBytes(rest, df) == nil {
				p.VA, p.RKey, p.DMALength = r.reth.VA, r.reth.RKey, r.reth.DMALength
			}
			n += layers.RETHLen
		case layers.LayerTypeAETH:
			if r.aeth.DecodeFromBytes(rest, df) == nil {
				p.Syndrome, p.HasAETH = r.aeth.Syndrome, true
			}
			n += layers.AETHLen
		case layers.LayerTypeIETH:
			if r.ieth.DecodeFromBytes(rest, df) == nil {
				p.IETH = r.ieth.RKey
			}
			n += layers.IETHLen
		case layers.LayerTypeImmDt:
			n += layers.ImmDtLen
		case layers.LayerTypeAtomicETH:
			n += layers.AtomicETHLen
		case layers.LayerTypeAtomicAckETH:
			n += layers.AtomicAckETHLen
		}
	}
	return n
}

// vcrcLen is the VCRC's size: native InfiniBand frames end with it, after
// the ICRC.
const vcrcLen = 2

func uint24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// v4prefix is the start of an IPv4-mapped IPv6 address.
var v4prefix = datapath.Addr{10: 0xff, 11: 0xff}

// rcDst4 is the last four octets of an RC frame's destination address: the
// IPv4 address, the end of the IPv6 address or GID, or the LID.
func rcDst4(b []byte, fi *frameInfo) uint32 {
	switch fi.transport {
	case record.RoCEv2:
		if fi.ipv6 {
			return binary.BigEndian.Uint32(b[fi.l3+36:])
		}
		return binary.BigEndian.Uint32(b[fi.l3+16:])
	case record.RoCEv1:
		return binary.BigEndian.Uint32(b[fi.grh+36:])
	}
	return uint32(binary.BigEndian.Uint16(b[fi.lrh+2:]))
}
