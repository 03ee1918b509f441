package decode

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The data path's share of the decoder: a frame the classifier found to be
// Reliable Connected traffic (a BTH with an RC opcode, over RoCEv2, RoCEv1
// or native InfiniBand) is decoded as far as the data path needs (the BTH,
// its extended headers, where the payload lies) and handed to the
// datapath.Follower. Nothing here allocates.

// rcState is what the decoder reuses for RC frames.
type rcState struct {
	pkt  datapath.Packet
	reth layers.RETH
	aeth layers.AETH
	ieth layers.IETH
}

// SetDataPath hands the RC frames that follow to f (nil: the data path is
// off, and the classifier skips them as before).
func (d *Decoder) SetDataPath(f *datapath.Follower) { d.dp = f }

// isRC reports whether a BTH at off carries an RC opcode.
func isRC(b []byte, off int) bool {
	return len(b) >= off+layers.BTHLen && layers.IsRC(b[off])
}

// rcFrame decodes an RC frame for the data path.
func (d *Decoder) rcFrame(f *capture.Frame, fi *frameInfo) {
	b := f.Data
	bth := fi.bth
	op, qp := b[bth], uint24(b[bth+5:])
	// Most RC frames of a capture are data of a connection whose setup is
	// not in it (or no SEND of one that is): the follower's filter says so
	// from the DestQP and the destination, before the Packet is built.
	if !datapath.IsSend(op) && !d.dp.Maybe(qp, rcDst4(b, fi)) {
		d.dp.Orphan()
		return
	}
	p := &d.rc.pkt
	p.Frame, p.Time = f.Index, f.Time
	p.OpCode = op
	p.PadCnt = b[bth+1] >> 4 & 0x03
	p.DestQP = qp
	p.PSN = uint24(b[bth+9:])
	switch fi.transport {
	case record.RoCEv2:
		p.Net = datapath.NetRoCEv2
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
	// Where the packet ends by its own length field (its ICRC included);
	// a field too small for the BTH and ICRC says nothing, and the frame's
	// end stands for it.
	end := fi.ibEnd
	if end < bth+layers.BTHLen+layers.ICRCLen {
		end = len(b)
	}
	hdr := bth + layers.BTHLen
	ext := d.rcExtended(p, b[hdr:min(end, len(b))])
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
	d.dp.Packet(p)
}

// rcExtended decodes the extended headers of the opcode from data (what
// follows the BTH) into p and returns their size. A header the capture cut
// leaves its fields zero.
func (d *Decoder) rcExtended(p *datapath.Packet, data []byte) int {
	p.VA, p.RKey, p.DMALength, p.Syndrome, p.IETH = 0, 0, 0, 0, 0
	n := 0
	for _, t := range layers.ExtendedHeaders(p.OpCode) {
		rest := data[min(n, len(data)):]
		df := gopacket.NilDecodeFeedback
		switch t {
		case layers.LayerTypeRETH:
			if d.rc.reth.DecodeFromBytes(rest, df) == nil {
				p.VA, p.RKey, p.DMALength = d.rc.reth.VA, d.rc.reth.RKey, d.rc.reth.DMALength
			}
			n += layers.RETHLen
		case layers.LayerTypeAETH:
			if d.rc.aeth.DecodeFromBytes(rest, df) == nil {
				p.Syndrome = d.rc.aeth.Syndrome
			}
			n += layers.AETHLen
		case layers.LayerTypeIETH:
			if d.rc.ieth.DecodeFromBytes(rest, df) == nil {
				p.IETH = d.rc.ieth.RKey
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
