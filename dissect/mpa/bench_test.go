package mpa

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// BenchmarkFollow: the FPDUs of a followed direction, one per segment, as
// an NFS READ sends them (RDMA Writes of 1384 octets, then a Send with
// Invalidate), through the assembler and the follower, with CRC, with and
// without markers. It reports allocations: the target is none.
func BenchmarkFollow(b *testing.B) {
	for _, v := range []struct{ markers, crc bool }{{false, true}, {true, true}, {false, false}} {
		markers, crc := v.markers, v.crc
		name := fmt.Sprintf("markers=%v", markers)
		if !crc {
			name += "/nocrc"
		}
		b.Run(name, func(b *testing.B) {
			data := make([]byte, 1384)
			var units []craft.FPDUUnit
			for i := range 23 {
				units = append(units, craft.FPDUUnit{DDP: layers.DDP{Tagged: true, Opcode: layers.RDMAPOpWrite, STag: 7, TaggedOffset: uint64(i * 1384), Last: i == 22}, Payload: data})
			}
			// The stream repeats: with markers its length must be a
			// multiple of 512 for them to fall the same way each time, so
			// the Send's length is chosen to make it one.
			var s []byte
			var starts []int
			for n := 140; ; n++ {
				u := append(slices.Clone(units), craft.FPDUUnit{DDP: layers.DDP{Opcode: layers.RDMAPOpSendInvalidate, InvalidateSTag: 7, Last: true, MSN: 1},
					Payload: make([]byte, n)})
				s, starts = craft.FPDUStream(u, markers, crc)
				if !markers || len(s)%layers.MarkerInterval == 0 {
					break
				}
			}
			// A segment per FPDU, a marker right before one with it.
			cut := func(i int) int {
				switch {
				case i == 0:
					return 0
				case i == len(starts):
					return len(s)
				case markers && (starts[i]-layers.MarkerLen)%layers.MarkerInterval == 0:
					return starts[i] - layers.MarkerLen
				}
				return starts[i]
			}
			var segs [][]byte
			for i := range starts {
				segs = append(segs, s[cut(i):cut(i+1)])
			}
			c := newConn()
			tr := &nopTraffic{}
			c.r.f.Follow(func(*Pair) Traffic { return tr })
			c.syn()
			c.send(0, (&craft.MPA{Request: true, Rev: 1, CRC: crc, Marker: markers}).Bytes(), 0)
			c.send(1, (&craft.MPA{Rev: 1, CRC: crc, Marker: markers}).Bytes(), 0)
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
			b.StopTimer()
			if len(tr.findings) > 0 || c.r.a.Stats().Segments == 0 {
				b.Fatalf("findings %v", tr.findings)
			}
		})
	}
}
