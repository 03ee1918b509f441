package mpa

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// The assembler and the framer together, driven segment by segment: what
// the decoder does with TCP. Tests see the assembler only through its API
// and Stats.

// segRun feeds numbered segments (from frame 1) and keeps the messages.
type segRun struct {
	a     *reassembly.Assembler
	f     *Framer
	got   []*record.Message
	frame int
}

func newSegRun(opt reassembly.Options) *segRun {
	r := &segRun{frame: 1}
	r.f = New("t", func(m *record.Message) { r.got = append(r.got, m) })
	r.a = reassembly.New(opt, r.f)
	return r
}

// flow is the i-th test direction: 10.0.0.1:1024+i → 10.0.0.2:443.
func flow(i int) reassembly.Flow {
	var f reassembly.Flow
	binary.BigEndian.PutUint32(f.Src[12:], 0x0a000001)
	binary.BigEndian.PutUint32(f.Dst[12:], 0x0a000002)
	f.SrcPort, f.DstPort = uint16(1024+i), 443
	return f
}

// full feeds one segment of flow i with every flag.
func (r *segRun) full(i int, seq uint32, syn, fin, rst bool, p []byte, frame int, at time.Time) {
	s := reassembly.Segment{Flow: flow(i), Seq: seq, SYN: syn, FIN: fin, RST: rst, Payload: p, WireLen: len(p), Frame: frame, Time: at}
	r.a.Segment(&s)
}

// at feeds one segment of flow i as frame n.
func (r *segRun) at(i int, seq uint32, syn bool, p []byte, frame int, at time.Time) {
	r.full(i, seq, syn, false, false, p, frame, at)
}

// seg feeds the next numbered segment.
func (r *segRun) seg(i int, seq uint32, syn bool, p []byte, when time.Time) {
	r.at(i, seq, syn, p, r.frame, when)
	r.frame++
}

func (r *segRun) flush() { r.a.Flush() }

// whole flushes the run and reports whether it showed just one MPA frame
// with pd octets of private data, no finding, nothing dropped or evicted;
// otherwise it logs what it showed.
func (r *segRun) whole(t *testing.T, pd int) bool {
	t.Helper()
	r.flush()
	if len(r.got) == 1 && len(r.got[0].PrivateData) == pd && len(r.got[0].Findings) == 0 && r.f.Dropped() == 0 && r.a.Stats().Keyless == 0 {
		return true
	}
	for _, m := range r.got {
		t.Logf("%s frame %d %s", m.Name(), m.Frame, findingsText(m))
	}
	t.Logf("%d messages, dropped %d, keyless evictions %d", len(r.got), r.f.Dropped(), r.a.Stats().Keyless)
	return false
}

// rpcRequest is an MPA Request (revision 1, or 2 with IRD/ORD words)
// carrying an RFC 8797 message.
func rpcRequest(rev uint8) []byte {
	return (&craft.MPA{Request: true, Rev: rev, IRD: 8, ORD: 8, Data: []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}}).Bytes()
}

func findingCodes(m *record.Message) []string {
	var c []string
	for _, f := range m.Findings {
		c = append(c, f.Code.String())
	}
	return c
}

func findingsText(m *record.Message) string {
	var b strings.Builder
	for _, f := range m.Findings {
		b.WriteString(f.Code.String() + ": " + f.Message + "; ")
	}
	return b.String()
}
