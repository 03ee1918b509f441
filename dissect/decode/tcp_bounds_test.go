package decode

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/craft"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// boundSeg feeds one segment of flow i (its own source port) to d.
func boundSeg(d *testDecoder, i int, seq uint32, syn bool, payload []byte, frame int, at time.Time, emit func(*record.Message)) {
	fullSeg(d, i, seq, syn, false, false, payload, frame, at, emit)
}

// Busy non-MPA traffic: the first segment of each mid-connection flow keeps
// at most what an MPA frame spans, and a later MPA Request still fits in the
// total buffer; nothing is counted as dropped.
func TestTCPKeylessFirstSegmentsBounded(t *testing.T) {
	const flows = 200
	d := NewDecoder("t", Config{TCP: TCPLimits{TotalBytes: flows * (maxMPAFrame + earlyCost)}})
	var got []*record.Message
	emit := func(m *record.Message) { got = append(got, m) }
	at := craft.DefaultStart
	bulk := make([]byte, 1460)
	for i := range flows {
		boundSeg(d, i, 1000000, false, bulk, i+1, at, emit)
	}
	if d.tcp.total > flows*(maxMPAFrame+earlyCost) {
		t.Fatalf("%d octets kept for %d keyless segments", d.tcp.total, flows)
	}
	req := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 20)}).Bytes()
	boundSeg(d, 60000, 99, true, nil, flows+1, at, emit)
	boundSeg(d, 60000, 100, false, req, flows+2, at, emit)
	d.Flush(emit)
	if len(got) != 1 || got[0].Name() != "MPA_REQ" || d.Dropped() != 0 {
		t.Fatalf("%d messages, %d dropped", len(got), d.Dropped())
	}
	for _, f := range got[0].Findings {
		if f.Code.String() == "state-limit-reached" || f.Code.String() == "mpa-truncated" {
			t.Errorf("finding %v", f)
		}
	}
}

// A direction whose first segment is missing keeps only what an MPA frame
// spans behind the hole, and segments that add nothing do not keep it alive.
func TestTCPHoleAtStartBounded(t *testing.T) {
	d := NewDecoder("t", Config{})
	emit := func(m *record.Message) { t.Errorf("message %s", m.Name()) }
	at := craft.DefaultStart
	boundSeg(d, 1, 999, true, nil, 1, at, emit)
	for k := range 60 {
		boundSeg(d, 1, 1000+1460*uint32(k+1), false, make([]byte, 1460), k+2, at, emit)
	}
	st := d.tcp.active[func() flowKey {
		var k flowKey
		binary.BigEndian.PutUint32(k.src[12:], 0x0a000001)
		binary.BigEndian.PutUint32(k.dst[12:], 0x0a000002)
		k.sport, k.dport = 1025, 443
		return k
	}()]
	if st == nil || len(st.buf) > maxMPAFrame || d.tcp.total > maxMPAFrame {
		t.Fatalf("kept %d octets behind a hole at the start", d.tcp.total)
	}
	// Retransmissions for 80 s add nothing: the direction ages out (the
	// ageing clock moves at most a second a segment).
	for k := range 80 {
		at = at.Add(time.Second)
		boundSeg(d, 1, 1000+1460, false, make([]byte, 1460), 100+k, at, emit)
	}
	if len(d.tcp.active) != 0 || d.tcp.total != 0 {
		t.Fatalf("%d directions, %d octets still held", len(d.tcp.active), d.tcp.total)
	}
}

// Overlapping segments before the key are kept once: the octets held stay
// within an MPA frame's span, whatever the segments repeat.
func TestTCPEarlyOverlapsBounded(t *testing.T) {
	d := NewDecoder("t", Config{TCP: TCPLimits{StreamBytes: 1000}})
	emit := func(*record.Message) {}
	data := make([]byte, 400)
	for i := range 130 {
		boundSeg(d, 1, 5000+uint32(i), false, data, i+1, craft.DefaultStart, emit)
	}
	for _, st := range d.tcp.active {
		if len(st.buf) > maxMPAFrame || d.tcp.total > maxMPAFrame+130*(earlyCost+carryCost) {
			t.Fatalf("%d octets in the buffer, %d in all", len(st.buf), d.tcp.total)
		}
	}
	if len(d.tcp.active) != 1 {
		t.Fatalf("%d directions", len(d.tcp.active))
	}
}

// A frame begun and then silent for over a minute is given up while the
// capture goes on (by capture time), not only at its end.
func TestTCPQuietFrameSweptByTime(t *testing.T) {
	d := NewDecoder("t", Config{})
	var got []*record.Message
	emit := func(m *record.Message) { got = append(got, m) }
	at := craft.DefaultStart
	req := (&craft.MPA{Request: true, Rev: 1}).Bytes()
	boundSeg(d, 1, 999, true, nil, 1, at, emit)
	boundSeg(d, 1, 1000, false, req[:12], 2, at, emit)
	for k := range 80 {
		at = at.Add(time.Second)
		boundSeg(d, 2, 1, false, []byte("GET / HTTP/1.1\r\n"), 3+k, at, emit)
	}
	if len(got) != 1 || len(got[0].Findings) == 0 || !strings.Contains(got[0].Findings[0].Message, "nothing more arrived for 1m0s") {
		t.Fatalf("%d messages before the end of the capture", len(got))
	}
	if d.Dropped() != 1 {
		t.Fatalf("dropped %d", d.Dropped())
	}
}

// A flood of retransmissions that add nothing costs a direction at most
// maxDupCarried entries of its frames list, each charged to the total
// buffer: memory per direction stays bounded and accounted.
func TestTCPRetransmissionsBounded(t *testing.T) {
	d := NewDecoder("t", Config{})
	var got []*record.Message
	emit := func(m *record.Message) { got = append(got, m) }
	at := craft.DefaultStart
	hdr := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 100)}).Bytes()[:20]
	boundSeg(d, 1, 999, true, nil, 1, at, emit)
	boundSeg(d, 1, 1000, false, hdr, 2, at, emit)
	for k := range 1000 {
		boundSeg(d, 1, 1000, false, hdr[:1], 3+k, at, emit)
	}
	st := d.tcp.active[flowKeyOf(1)]
	if st == nil {
		t.Fatal("direction not followed")
	}
	if len(st.carried) != 1+maxDupCarried || d.tcp.total != st.held() || d.tcp.total != len(st.buf)+len(st.carried)*carryCost {
		t.Fatalf("%d segments recorded, %d octets charged, %d held", len(st.carried), d.tcp.total, st.held())
	}
	d.Flush(emit)
	if len(got) != 1 || !slices.Equal(got[0].Frames, []int{2, 3, 4, 5, 6, 7, 8, 9, 10}) || d.Dropped() != 0 {
		t.Fatalf("%d messages, dropped %d", len(got), d.Dropped())
	}
}

func flowKeyOf(i int) flowKey {
	var k flowKey
	binary.BigEndian.PutUint32(k.src[12:], 0x0a000001)
	binary.BigEndian.PutUint32(k.dst[12:], 0x0a000002)
	k.sport, k.dport = uint16(1024+i), 443
	return k
}

// Segments every other octet: a direction holds at most maxHoles holes;
// beyond that it is given up at a limit, reported with what arrived and
// state-limit-reached, and counted once.
func TestTCPHolesBounded(t *testing.T) {
	d := NewDecoder("t", Config{})
	var got []*record.Message
	emit := func(m *record.Message) { got = append(got, m) }
	at := craft.DefaultStart
	req := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 1000)}).Bytes()
	boundSeg(d, 1, 999, true, nil, 1, at, emit)
	boundSeg(d, 1, 1000, false, req[:20], 2, at, emit)
	frame := 3
	for off := 21; off < 1020; off += 2 {
		boundSeg(d, 1, 1000+uint32(off), false, req[off:off+1], frame, at, emit)
		if st := d.tcp.active[flowKeyOf(1)]; st != nil && len(st.got) > maxHoles+1 {
			t.Fatalf("%d ranges held", len(st.got))
		}
		frame++
	}
	if len(got) != 1 || d.Dropped() != 1 || len(d.tcp.active) != 0 || d.tcp.total != 0 {
		t.Fatalf("%d messages, dropped %d, %d directions, %d octets", len(got), d.Dropped(), len(d.tcp.active), d.tcp.total)
	}
	if m := got[0]; m.Frame != 2 || !slices.Contains(findingCodes(m), "state-limit-reached") || !strings.Contains(findingsText(m), "more than 64 holes") {
		t.Fatalf("frame %d, findings %s", m.Frame, findingsText(m))
	}
	d.Flush(emit)
	if len(got) != 1 || d.Dropped() != 1 {
		t.Fatalf("%d messages, dropped %d after the flush", len(got), d.Dropped())
	}
}
