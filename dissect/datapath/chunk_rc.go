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
// them, and what it pulls.
type rcRead struct {
	first, n uint32
	handle   uint32
	va       uint64
	length   uint32
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
	case layers.OpWriteFirst, layers.OpWriteOnly, layers.OpWriteOnlyImm:
		w := &ch.write[side]
		c.RDMAWrite(side, p.Frame, p.RKey, p.VA, p.Payload, n, true, p.DMALength)
		*w = rcWrite{active: p.OpCode == layers.OpWriteFirst, handle: p.RKey, va: p.VA + uint64(n), next: (p.PSN + 1) & psnMask}
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
		c.RDMARead(side, p.Frame, p.RKey, p.VA, p.DMALength)
		k := uint32(1)
		if f.mtu > 0 && p.DMALength > 0 {
			k = readPSNs(p.DMALength, uint32(f.mtu))
		}
		rs := ch.reads[side]
		if len(rs) == readsPerSide {
			rs = rs[:copy(rs, rs[1:])]
		}
		ch.reads[side] = append(rs, rcRead{first: p.PSN, n: k, handle: p.RKey, va: p.VA, length: p.DMALength})
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
			c.RDMAReadData(issuer, p.Frame, r.handle, r.va+at, p.Payload, n)
			if off == r.n-1 { // its last packet: the Read is done
				ch.reads[issuer] = append(rs[:i], rs[i+1:]...)
			}
			return
		}
	}
}
