package reassembly_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
)

// longReader follows a stream with no end in view and checks that every
// octet comes once, in order, at the offset it was sent at.
type longReader struct {
	next, again int
	bad         string
}

type longProto struct{ r *longReader }

func (p *longProto) Starts(b []byte) (bool, bool)                     { return false, false }
func (p *longProto) EarlyWindow() int                                 { return 64 }
func (p *longProto) Open(d *reassembly.Dir) reassembly.Reader         { return p.r }
func (r *longReader) Seen(lo, hi, frame int, at time.Time, a, c bool) {}
func (r *longReader) Data(off int, b []byte) reassembly.Status {
	if off != r.next && r.bad == "" {
		r.bad = "a gap or overlap"
	}
	if !bytes.Equal(b, patterned(off, len(b))) && r.bad == "" {
		r.bad = "wrong octets"
	}
	r.next = off + len(b)
	return reassembly.More
}
func (r *longReader) Again(off int, b []byte, frame int) {
	r.again++
	if !bytes.Equal(b, patterned(off, len(b))) && r.bad == "" {
		r.bad = "wrong octets again"
	}
}
func (r *longReader) Differ(off, frame int)         {}
func (r *longReader) Need() int                     { return r.next + 1<<20 }
func (r *longReader) Interest() reassembly.Interest { return reassembly.Following }
func (r *longReader) End(reassembly.End)            {}

// The octet at stream offset off is off % 251.
var patternBuf = func() []byte {
	b := make([]byte, 251+1<<20)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

func patterned(off, n int) []byte { return patternBuf[off%251 : off%251+n] }

// TestLongStream: a direction followed past 4 GiB (its sequence numbers
// wrap, and its offsets pass what 32-bit arithmetic tells apart) still
// gets every octet once, in order, with retransmissions and segments out of
// order on the way.
func TestLongStream(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 5 GiB")
	}
	r := &longReader{}
	a := reassembly.New(reassembly.Options{}, &longProto{r})
	var fl reassembly.Flow
	fl.SrcPort, fl.DstPort = 1, 2
	isn := uint32(0xfff00000)
	seg := reassembly.Segment{Flow: fl, Seq: isn, SYN: true, Frame: 1}
	a.Segment(&seg)
	const size = 8 << 10 // an out-of-order one fits the per-direction limit
	send := func(off int, b []byte) {
		seg = reassembly.Segment{Flow: fl, Seq: isn + 1 + uint32(off), Payload: b, WireLen: len(b), Frame: seg.Frame + 1, Time: time.Unix(0, int64(seg.Frame))}
		a.Segment(&seg)
	}
	total := 5 << 30
	for off := 0; off < total; off += 2 * size {
		b0, b1 := patterned(off, size), patterned(off+size, size)
		if (off/(2*size))%32768 == 7 {
			send(off+size, b1) // out of order
			send(off, b0)
			send(off, b0) // and again
		} else {
			send(off, b0)
			send(off+size, b1)
		}
	}
	a.Flush()
	t.Logf("delivered %d, %d again", r.next, r.again)
	if r.bad != "" || r.next != total || r.again == 0 {
		t.Errorf("%s; delivered %d of %d, %d again", r.bad, r.next, total, r.again)
	}
}
