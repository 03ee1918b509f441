package decode

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// bulkFlows makes frames of n concurrent TCP flows captured mid-stream: one
// template segment whose source address, port and sequence number are
// patched for each frame, in turn.
type bulkFlows struct {
	frame []byte
	ahead []byte // the frame shown ahead (peek)
	seq   []uint32
	next  int
	f     capture.Frame
}

func newBulkFlows(t testing.TB, n, payload int) *bulkFlows {
	src, dst := craft.Endpoints(120, false)
	dst.Port = 5001
	seg := craft.TCP{Src: src, Dst: dst, Seq: 1, Ack: 1, ACK: true, Payload: make([]byte, payload)}
	frame, err := seg.Frame()
	if err != nil {
		t.Fatal(err)
	}
	bf := &bulkFlows{frame: frame, ahead: append([]byte(nil), frame...), seq: make([]uint32, n)}
	for i := range bf.seq {
		bf.seq[i] = uint32(i) * 0x9e3779b1
	}
	bf.f = capture.Frame{Data: frame, WireLen: len(frame), LinkType: linkEthernet, Time: craft.DefaultStart}
	return bf
}

// nextFrame is the next flow's next segment, 2 µs after the previous one.
func (bf *bulkFlows) nextFrame() *capture.Frame {
	i := bf.next
	bf.next = (bf.next + 1) % len(bf.seq)
	patch(bf.frame, i, bf.seq[i])
	bf.seq[i] += uint32(len(bf.frame) - 14 - 40)
	bf.f.Index++
	bf.f.Time = bf.f.Time.Add(2 * time.Microsecond)
	return &bf.f
}

// patch makes frame the segment of the i-th flow, with sequence number seq.
func patch(frame []byte, i int, seq uint32) {
	binary.BigEndian.PutUint32(frame[14+12:], 0x0a000000|uint32(i/50000)<<8)
	binary.BigEndian.PutUint16(frame[14+20:], uint16(1024+i%50000))
	binary.BigEndian.PutUint32(frame[14+20+4:], seq)
}

// peek is the frame k after the one nextFrame returned last, as the run
// loop shows it to Decoder.Ahead.
func (bf *bulkFlows) peek(k int) []byte {
	i := (bf.next + k - 1) % len(bf.seq)
	patch(bf.ahead, i, bf.seq[i])
	return bf.ahead
}

// Bulk TCP over many concurrent flows captured mid-stream costs nothing per
// frame in the steady state, whatever the flow count: each direction is
// decided once and then found in the flow table.
func TestTCPFlowsNoAllocs(t *testing.T) {
	for _, n := range []int{1000, 100000} {
		bf := newBulkFlows(t, n, 1448)
		d := New("t", Config{})
		for range 3 * n {
			d.Decode(bf.nextFrame())
		}
		if a := testing.AllocsPerRun(2*n, func() { d.Decode(bf.nextFrame()) }); a != 0 {
			t.Errorf("%d flows: %v allocations per frame", n, a)
		}
		if s := d.TCPStats(); s.Remembered != n {
			t.Errorf("%d flows: %d remembered", n, s.Remembered)
		}
	}
}

// BenchmarkTCPFlows decodes bulk TCP segments of many concurrent flows
// captured mid-stream, in turn (every segment of a flow is n frames after
// its previous one): the cost per frame in the steady state, where the flow
// table no longer fits a cache. "new" opens a new flow with every frame
// (each seen twice), the churn of a capture of short connections;
// "new-bulk" does so with full-sized segments, the first segments of a
// capture of bulk flows taken mid-stream (each decided at once once 4096
// wait for their start).
func BenchmarkTCPFlows(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		// Each also shown the frame two ahead, as the run loop shows a
		// capture file's (Decoder.Ahead).
		for _, ahead := range []bool{false, true} {
			name := fmt.Sprintf("flows=%d", n)
			if ahead {
				name += "/ahead"
			}
			b.Run(name, func(b *testing.B) {
				bf := newBulkFlows(b, n, 1448)
				d := New("t", Config{})
				for range 2 * n {
					d.Decode(bf.nextFrame())
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(bf.frame)))
				for b.Loop() {
					d.Decode(bf.nextFrame())
					if ahead && d.LooksAhead() {
						d.Ahead(linkEthernet, bf.peek(2))
					}
				}
			})
		}
	}
	for _, c := range []struct {
		name    string
		payload int
	}{{"new", 400}, {"new-bulk", 1448}} {
		b.Run(c.name, func(b *testing.B) {
			bf := newBulkFlows(b, 1<<22, c.payload)
			d := New("t", Config{})
			b.ReportAllocs()
			b.SetBytes(int64(len(bf.frame)))
			for b.Loop() {
				d.Decode(bf.nextFrame())
			}
		})
	}
}
