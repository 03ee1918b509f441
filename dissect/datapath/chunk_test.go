package datapath

import (
	"bytes"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The chunks of one Checker (chunk.go), fuzzed: Calls advertising random
// segments (a Long Call's read chunk, write chunks, a reply chunk), random
// RDMA Writes, Read Requests, Read Responses and Replies. Nothing panics,
// the state stays within its bounds, every octet counted was handed over,
// and closing the connection gives everything back to the budget.

// longsHeld counts the long messages in progress of the outstanding Calls.
func (c *Checker) longsHeld() int {
	n := 0
	for i := range c.calls {
		if c.calls[i].longCall != nil {
			n++
		}
		if c.calls[i].reply != nil {
			n++
		}
	}
	return n
}

func FuzzChunks(f *testing.F) {
	// A Long Call, the responder's Read and its data; a Write into a
	// reply chunk, its Reply; a Write past a segment.
	f.Add([]byte{0, 1, 0, 4, 0, 0, 0, 0, 3, 1, 0, 4, 0, 0, 0, 0, 4, 1, 0, 2, 0, 0, 0, 0, 4, 1, 8, 2, 0, 0, 0, 0,
		1, 3, 0, 4, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 5, 0, 0, 0, 0})
	f.Add([]byte{0, 7, 255, 255, 1, 0, 0, 0, 2, 7, 255, 255, 0, 0, 0, 0, 4, 7, 254, 255, 9, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		bud := budget.New(1 << 20)
		bn := newBench(t, ModeAll, Limits{Budget: bud}, both())
		c := bn.chk
		var xid uint32
		var handed [2]int64
		data := bytes.Repeat([]byte{0x5a}, 1<<12)
		for ; len(b) >= 8; b = b[8:] {
			handle := 0x100 + uint32(b[1]&7)
			va := uint64(b[2]) << 8
			n := uint32(b[3]) << 6
			side := int(b[4] & 1)
			bn.frame++
			switch b[0] % 6 {
			case 0: // a Call: a Long Call's read chunk, a write chunk, a reply chunk, as b says
				xid++
				h := hdr(xid, 32, layers.RPCRDMAMsg)
				s := layers.RPCRDMASegment{Handle: handle, Length: n, Offset: va}
				rest := rpcCall(xid)
				if b[5]&1 != 0 {
					h.Proc, rest = layers.RPCRDMANoMsg, nil
					h.ReadList = []layers.RPCRDMAReadSegment{{RPCRDMASegment: s}}
				}
				if b[5]&2 != 0 {
					h.WriteList = []layers.RPCRDMAChunk{{s, {Handle: handle + 1, Length: n / 2, Offset: va + uint64(n)}}}
				}
				if b[5]&4 != 0 {
					h.ReplyChunk, h.HasReplyChunk = layers.RPCRDMAChunk{{Handle: handle + 2, Length: n, Offset: va}}, true
				}
				bn.send(0, encode(h, rest))
			case 1, 2: // a Write packet, first or not
				k := min(n, uint32(len(data)))
				if c.RDMAWrite(1, bn.frame, handle, va, data[:k], k, b[0]%6 == 1, n+uint32(b[5])) {
					handed[1] += int64(k)
				}
			case 3: // a Read Request
				c.RDMARead(side, bn.frame, handle, va, n)
			case 4: // a Read Response's data
				k := min(n, uint32(len(data)))
				c.RDMAReadData(1, bn.frame, handle, va, data[:k], k)
				handed[0] += int64(k)
			case 5: // a Reply to a recent Call, inline or long, claiming segments
				x := xid - uint32(b[5]&3)
				h := hdr(x, 32, layers.RPCRDMAMsg)
				rest := rpcReply(x)
				if b[6]&1 != 0 {
					h.Proc, rest = layers.RPCRDMANoMsg, nil
					h.ReplyChunk, h.HasReplyChunk = layers.RPCRDMAChunk{{Handle: handle + 2, Length: n, Offset: va}}, true
				}
				if b[6]&2 != 0 {
					h.WriteList = []layers.RPCRDMAChunk{{{Handle: handle, Length: n + uint32(b[7]), Offset: va}}}
				}
				bn.send(1, encode(h, rest))
			}
			f := &c.chunks
			if len(c.segs) > maxSegs || len(f.notes) > maxChunkNotes || f.violations < len(f.notes) || c.out.longsOut != c.longsHeld() {
				t.Fatalf("%d segments, %d notes of %d violations, %d buffers out for %d", len(c.segs), len(f.notes), f.violations,
					c.out.longsOut, c.longsHeld())
			}
			if f.octets[0] > handed[0] || f.octets[1] > handed[1] || f.octets[0] < 0 || f.octets[1] < 0 {
				t.Fatalf("octets %v counted of %v handed over", f.octets, handed)
			}
			for i := range c.calls {
				for _, l := range []*longBuf{c.calls[i].longCall, c.calls[i].reply} {
					if l != nil && (l.have > l.want || l.want > chunkKeep || len(l.b) != int(l.want) || len(l.prefix()) > int(l.have)) {
						t.Fatalf("a long message: %d of %d octets in, %d kept, prefix %d", l.have, l.want, len(l.b), len(l.prefix()))
					}
				}
			}
		}
		_ = c.chunkNotes()
		_ = c.thresholdAdvice()
		c.Close()
		bn.out.releaseAll()
		if s := bud.Stats(); s.Used != 0 || c.out.longsOut != 0 {
			t.Fatalf("%d octets still charged, %d buffers out", s.Used, c.out.longsOut)
		}
	})
}

// fill and prefix: octets in any order, each counted once.
func TestLongBufFill(t *testing.T) {
	var l longBuf
	l.b, l.want = make([]byte, 300), 300
	msg := make([]byte, 300)
	for i := range msg {
		msg[i] = byte(i)
	}
	steps := []struct {
		at, n        uint32
		have, prefix int
	}{
		{100, 100, 100, 0},   // a Middle first
		{250, 100, 150, 0},   // past the end: cut to what is kept
		{100, 100, 150, 0},   // the same again
		{0, 64, 214, 64},     // the start
		{64, 40, 250, 200},   // the gap closed
		{200, 100, 300, 300}, // the rest
	}
	for _, s := range steps {
		end := min(s.at+s.n, 300)
		l.fill(s.at, msg[s.at:end])
		if int(l.have) != s.have || len(l.prefix()) != s.prefix {
			t.Errorf("after %d at %d: %d in, prefix %d; want %d, %d", s.n, s.at, l.have, len(l.prefix()), s.have, s.prefix)
		}
	}
	if !bytes.Equal(l.b, msg) {
		t.Error("octets not where they belong")
	}
}

// Write and Read Response packets allocate nothing: a Write into a write
// chunk, and the Read Responses of a Long Call's read chunk (the first
// 4096 octets kept, then the rest counted), packet by packet.
func TestChunkAllocsPerPacket(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 100, 200, true)
	const big = 1 << 30
	h := hdr(1, 32, layers.RPCRDMANoMsg)
	h.ReadList = []layers.RPCRDMAReadSegment{{RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x88, Length: big}}}
	h.WriteList = []layers.RPCRDMAChunk{{{Handle: 0x77, Length: big}}}
	r.pkt(0, layers.OpSendOnly, 100, encode(h, nil), -1, nil)
	payload := make([]byte, 256)
	r.pkt(1, layers.OpWriteFirst, 200, payload, -1, func(p *Packet) { p.RKey, p.DMALength = 0x77, big })
	psn := uint32(201)
	p := &Packet{Net: NetRoCEv2, Src: Addr{10: 0xff, 11: 0xff, 12: 192, 14: 2, 15: 2}, Dst: Addr{10: 0xff, 11: 0xff, 12: 192, 14: 2, 15: 1},
		DestQP: 0x100, OpCode: layers.OpWriteMiddle, Payload: payload, PayloadLen: len(payload)}
	if n := testing.AllocsPerRun(1000, func() {
		p.Frame, p.PSN = p.Frame+1, psn
		psn++
		r.fl.Packet(p)
	}); n != 0 {
		t.Errorf("%.2f allocations per Write packet", n)
	}
	// The responder's Read of the Long Call: 2^20 packets of 256.
	r.pkt(1, layers.OpReadRequest, psn, nil, -1, func(p *Packet) { p.RKey, p.DMALength = 0x88, 1<<28 })
	r.pkt(0, layers.OpReadResponseFirst, psn, payload, -1, aeth(0))
	q := &Packet{Net: NetRoCEv2, Src: p.Dst, Dst: p.Src, DestQP: 0x200, OpCode: layers.OpReadResponseMiddle,
		Payload: payload, PayloadLen: len(payload)}
	at := psn + 1
	if n := testing.AllocsPerRun(1000, func() {
		q.Frame, q.PSN = q.Frame+1, at
		at++
		r.fl.Packet(q)
	}); n != 0 {
		t.Errorf("%.2f allocations per Read Response packet", n)
	}
	c := r.chk()
	if d := c.chunks.octets; d[1] != 256*1002 || d[0] != 256*1002 || c.chunks.violations != 0 {
		t.Errorf("octets %v, violations %d", d, c.chunks.violations)
	}
}
