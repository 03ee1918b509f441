package mpa

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// earlyCost and originCost are what the assembler charges per segment kept
// before a direction's start is known (its doc: the early segment and its
// entry).
const earlyCost, originCost = 16, 48

// Busy non-MPA traffic: the first segment of each mid-connection flow keeps
// at most what an MPA frame spans, and a later MPA Request still fits in the
// total buffer; nothing is counted as dropped.
func TestTCPKeylessFirstSegmentsBounded(t *testing.T) {
	const flows = 200
	limit := flows * (MaxFrame + earlyCost)
	r := newSegRun(reassembly.Options{TotalBytes: limit})
	at := craft.DefaultStart
	bulk := make([]byte, 1460)
	for i := range flows {
		r.at(i, 1000000, false, bulk, i+1, at)
		if held := r.a.Stats().Held; held > limit {
			t.Fatalf("%d octets kept for %d keyless segments", held, i+1)
		}
	}
	req := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 20)}).Bytes()
	r.at(60000, 99, true, nil, flows+1, at)
	r.at(60000, 100, false, req, flows+2, at)
	r.flush()
	if len(r.got) != 1 || r.got[0].Name() != "MPA_REQ" || r.f.Dropped() != 0 {
		t.Fatalf("%d messages, %d dropped", len(r.got), r.f.Dropped())
	}
	for _, c := range findingCodes(r.got[0]) {
		if c == "state-limit-reached" || c == "mpa-truncated" {
			t.Errorf("finding %s", c)
		}
	}
}

// A direction whose first segment is missing keeps only what an MPA frame
// spans behind the hole, and segments that add nothing do not keep it alive.
func TestTCPHoleAtStartBounded(t *testing.T) {
	r := newSegRun(reassembly.Options{})
	r.f.emit = func(m *record.Message) { t.Errorf("message %s", m.Name()) }
	at := craft.DefaultStart
	r.at(1, 999, true, nil, 1, at)
	for k := range 60 {
		r.at(1, 1000+1460*uint32(k+1), false, make([]byte, 1460), k+2, at)
	}
	if s := r.a.Stats(); s.Followed != 1 || s.Held > MaxFrame {
		t.Fatalf("%d directions, %d octets kept behind a hole at the start", s.Followed, s.Held)
	}
	// Retransmissions for 80 s add nothing: the direction ages out (the
	// ageing clock moves at most a second a segment).
	for k := range 80 {
		at = at.Add(time.Second)
		r.at(1, 1000+1460, false, make([]byte, 1460), 100+k, at)
	}
	if s := r.a.Stats(); s.Followed != 0 || s.Held != 0 {
		t.Fatalf("%d directions, %d octets still held", s.Followed, s.Held)
	}
}

// Overlapping segments before the key are kept once: the octets held stay
// within an MPA frame's span, whatever the segments repeat.
func TestTCPEarlyOverlapsBounded(t *testing.T) {
	r := newSegRun(reassembly.Options{StreamBytes: 1000})
	data := make([]byte, 400)
	for i := range 130 {
		r.at(1, 5000+uint32(i), false, data, i+1, craft.DefaultStart)
	}
	if s := r.a.Stats(); s.Held > MaxFrame+130*(earlyCost+originCost) || s.Followed != 1 {
		t.Fatalf("%d octets held, %d directions", s.Held, s.Followed)
	}
}

// A frame begun and then silent for over a minute is given up while the
// capture goes on (by capture time), not only at its end.
func TestTCPQuietFrameSweptByTime(t *testing.T) {
	r := newSegRun(reassembly.Options{})
	at := craft.DefaultStart
	req := (&craft.MPA{Request: true, Rev: 1}).Bytes()
	r.at(1, 999, true, nil, 1, at)
	r.at(1, 1000, false, req[:12], 2, at)
	for k := range 80 {
		at = at.Add(time.Second)
		r.at(2, 1, false, []byte("GET / HTTP/1.1\r\n"), 3+k, at)
	}
	if len(r.got) != 1 || len(r.got[0].Findings) == 0 || !strings.Contains(findingsText(r.got[0]), "nothing more arrived for 1m0s") {
		t.Fatalf("%d messages before the end of the capture", len(r.got))
	}
	if r.f.Dropped() != 1 {
		t.Fatalf("dropped %d", r.f.Dropped())
	}
}

// A flood of retransmissions that add nothing costs a direction at most
// maxDupCarried entries of its frames list, each charged to the total
// buffer: memory per direction stays bounded and accounted.
func TestTCPRetransmissionsBounded(t *testing.T) {
	r := newSegRun(reassembly.Options{})
	at := craft.DefaultStart
	hdr := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 100)}).Bytes()[:20]
	r.at(1, 999, true, nil, 1, at)
	r.at(1, 1000, false, hdr, 2, at)
	for k := range 1000 {
		r.at(1, 1000, false, hdr[:1], 3+k, at)
	}
	// What is charged: the 20 octets of the frame held and the frames list,
	// the segment that brought them and maxDupCarried retransmissions.
	if s := r.a.Stats(); s.Followed != 1 || s.Held != 20+(1+maxDupCarried)*carryCost {
		t.Fatalf("%d directions, %d octets charged", s.Followed, s.Held)
	}
	r.flush()
	if len(r.got) != 1 || !slices.Equal(r.got[0].Frames, []int{2, 3, 4, 5, 6, 7, 8, 9, 10}) || r.f.Dropped() != 0 {
		t.Fatalf("%d messages, dropped %d", len(r.got), r.f.Dropped())
	}
}

// Segments every other octet: a direction holds at most 64 holes; beyond
// that it is given up at a limit, reported with what arrived and
// state-limit-reached, and counted once.
func TestTCPHolesBounded(t *testing.T) {
	r := newSegRun(reassembly.Options{})
	at := craft.DefaultStart
	req := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 1000)}).Bytes()
	r.at(1, 999, true, nil, 1, at)
	r.at(1, 1000, false, req[:20], 2, at)
	frame := 3
	for off := 21; off < 1020; off += 2 {
		r.at(1, 1000+uint32(off), false, req[off:off+1], frame, at)
		frame++
	}
	if s := r.a.Stats(); len(r.got) != 1 || r.f.Dropped() != 1 || s.Followed != 0 || s.Held != 0 {
		t.Fatalf("%d messages, dropped %d, %d directions, %d octets", len(r.got), r.f.Dropped(), s.Followed, s.Held)
	}
	if m := r.got[0]; m.Frame != 2 || !slices.Contains(findingCodes(m), "state-limit-reached") || !strings.Contains(findingsText(m), "more than 64 holes") {
		t.Fatalf("frame %d, findings %s", m.Frame, findingsText(m))
	}
	r.flush()
	if len(r.got) != 1 || r.f.Dropped() != 1 {
		t.Fatalf("%d messages, dropped %d after the flush", len(r.got), r.f.Dropped())
	}
}
