package mpa

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/craft"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// BenchmarkFollow: the FPDUs of a followed direction, one per segment, as
// an NFS READ sends them (RDMA Writes of 1384 octets, then a Send with
// Invalidate), through the assembler and the follower, with CRC, with and
// without markers. It reports allocations: the target is none.
func BenchmarkFollow(b *testing.B) {
	for _, markers := range []bool{false, true} {
		b.Run(fmt.Sprintf("markers=%v", markers), func(b *testing.B) {
			data := make([]byte, 1384)
			var units []craft.FPDUUnit
			for i := range 23 {
				units = append(units, craft.FPDUUnit{DDP: layers.DDP{Tagged: true, Opcode: layers.RDMAPOpWrite, STag: 7, TaggedOffset: uint64(i * 1384), Last: i == 22}, Payload: data})
			}
			units = append(units, craft.FPDUUnit{DDP: layers.DDP{Opcode: layers.RDMAPOpSendInvalidate, InvalidateSTag: 7, Last: true, MSN: 1}, Payload: make([]byte, 140)})
			// One period of the stream: 24 FPDUs, then the same again
			// (markers repeat every 512 octets: a period that is a multiple
			// of 512 keeps them right).
			s, starts := craft.FPDUStream(units, markers, true)
			if markers {
				for len(s)%layers.MarkerInterval != 0 {
					// Not a whole number of marker intervals: fall back to
					// a stream twice as long, cut at FPDU starts.
					units = append(units, units...)
					s, starts = craft.FPDUStream(units, markers, true)
					break
				}
			}
			var segs [][]byte
			for i, st := range starts {
				end := len(s)
				if i+1 < len(starts) {
					end = starts[i+1]
				}
				segs = append(segs, s[st:end])
			}
			c := newConn()
			c.r.f.Follow(func(*Pair) Traffic { return &nopTraffic{} })
			c.syn()
			c.send(0, (&craft.MPA{Request: true, Rev: 1, CRC: true, Marker: markers}).Bytes(), 0)
			c.send(1, (&craft.MPA{Rev: 1, CRC: true, Marker: markers}).Bytes(), 0)
			seg := reassembly.Segment{Flow: dirFlow(1), Time: time.Unix(1e9, 0)}
			seq := c.seq[1]
			i := 0
			b.ReportAllocs()
			b.SetBytes(int64(len(s) / len(segs)))
			for b.Loop() {
				seg.Seq, seg.Payload, seg.WireLen = seq, segs[i], len(segs[i])
				seg.Frame++
				c.r.a.Segment(&seg)
				seq += uint32(len(segs[i]))
				if i++; i == len(segs) {
					i = 0
				}
			}
		})
	}
}
