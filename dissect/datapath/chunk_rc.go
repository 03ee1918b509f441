package datapath

import (
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The InfiniBand family's RDMA operations, for the chunks (chunk.go). An
// RDMA Write First or Only carries a RETH (VA, R_Key, DMA Length); its
// Middle and Last packets follow by PSN, each at the VA after the octets
// before it. An RDMA Read Request's RETH names the octets it pulls; its
// Read Response First, Middle, Last or Only packets bring them back, one
// PSN each from the request's PSN on, a path MTU of octets each but the
// last.

// rcChunks is what a connection's chunks need of its RC traffic, by side
// (the side that sent the Write, or issued the Read).
type rcChunks struct {
	write [2]rcWrite
	reads [2][]rcRead
}

// rcWrite is a multi-packet RDMA Write in progress.
type rcWrite struct {
	active bool
	handle uint32
	va     uint64
	next   uint32 // the PSN of its next packet
}

// rcRead is an outstanding RDMA Read Request: its PSNs from first, n of
// them, and what it pulls; got counts its response packets seen, seen
// marks the first 64 (a copy of one of them is not counted again).
type rcRead struct {
	first, n uint32
	handle   uint32
	va       uint64
	length   uint32
	got      uint32
	seen     uint64
	refused  bool // outside every segment: its octets are not counted
}

// chunkFrame hands the RDMA operations of an RPC-over-RDMA connection to
// its Checker: Writes, Read Requests and the data of Read Responses.
func (fl *Follower) chunkFrame(f *flow, side int, p *Packet) {
	c := f.chk
	if c == nil || !c.rule.IsRPCRDMA() && !c.judgeChunks() {
		return
	}
	if f.chunks == nil {
		f.chunks = &rcChunks{}
	}
	ch := f.chunks
	n := uint32(max(p.PayloadLen, 0))
	switch p.OpCode {
	case layers.OpWriteFirst, layers.OpWriteOnly, layers.OpWriteOnlyImm, layers.OpWriteMiddle, layers.OpWriteLast,
		layers.OpWriteLastImm, layers.OpReadRequest:
		// A request packet sent again (its PSN is behind the side's
		// next): its octets were counted, and its Call may be gone.
		if f.sides[side].order(p.PSN) == behind {
			return
		}
	}
	switch p.OpCode {
	case layers.OpWriteFirst, layers.OpWriteOnly, layers.OpWriteOnlyImm:
		w := &ch.write[side]
		in := c.RDMAWrite(side, p.Frame, p.RKey, p.VA, p.Payload, n, true, p.DMALength)
		// The rest of a Write outside every segment is not followed.
		*w = rcWrite{active: in && p.OpCode == layers.OpWriteFirst, handle: p.RKey, va: p.VA + uint64(n), next: (p.PSN + 1) & psnMask}
	case layers.OpWriteMiddle, layers.OpWriteLast, layers.OpWriteLastImm:
		w := &ch.write[side]
		if !w.active || p.PSN != w.next {
			if p.PSN != (w.next-1)&psnMask { // not a retransmission of the last packet
				w.active = false // a gap: the rest of this Write is not followed
			}
			return
		}
		c.RDMAWrite(side, p.Frame, w.handle, w.va, p.Payload, n, false, 0)
		w.va += uint64(n)
		w.next = (p.PSN + 1) & psnMask
		w.active = p.OpCode == layers.OpWriteMiddle
	case layers.OpReadRequest:
		in := c.RDMARead(side, p.Frame, p.RKey, p.VA, p.DMALength)
		k := uint32(1)
		if f.mtu > 0 && p.DMALength > 0 {
			k = readPSNs(p.DMALength, uint32(f.mtu))
		}
		rs := ch.reads[side]
		if len(rs) == readsPerSide {
			rs = rs[:copy(rs, rs[1:])]
		}
		ch.reads[side] = append(rs, rcRead{first: p.PSN, n: k, handle: p.RKey, va: p.VA, length: p.DMALength, refused: !in})
	case layers.OpReadResponseFirst, layers.OpReadResponseMiddle, layers.OpReadResponseLast, layers.OpReadResponseOnly:
		issuer := 1 - side
		rs := ch.reads[issuer]
		for i := range rs {
			r := &rs[i]
			off := (p.PSN - r.first) & psnMask
			if off >= r.n {
				continue
			}
			at := uint64(0)
			if off > 0 {
				if f.mtu == 0 {
					return // where a middle packet's octets belong is not known
				}
				at = uint64(off) * uint64(f.mtu)
			}
			if off < 64 {
				if r.seen&(1<<off) != 0 {
					return // a copy of a packet seen
				}
				r.seen |= 1 << off
			}
			if !r.refused {
				c.RDMAReadData(issuer, p.Frame, r.handle, r.va+at, p.Payload, n)
			}
			// Once all its packets are in, the Read is done, and so are
			// those before it (the responder answers in order: what
			// they still miss was lost). A capture may show its Last
			// before a Middle: that Middle still counts.
			if r.got++; r.got >= r.n {
				ch.reads[issuer] = append(rs[:0], rs[i+1:]...)
			}
			return
		}
	}
}
