package mpa

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// fpduLog records what a follower reads.
type fpduLog struct {
	got       []string
	logTagged bool // log the pieces of tagged segments
}

func (l *fpduLog) segment(d *layers.DDP, payload int) {
	l.got = append(l.got, fmt.Sprintf("segment op %d tagged %v last %v payload %d", d.Opcode, d.Tagged, d.Last, payload))
}
func (l *fpduLog) fpdu(start, end int, m *untagged) {}
func (l *fpduLog) message(m *untagged, head []byte) {
	l.got = append(l.got, fmt.Sprintf("message msn %d op %d inval %#x length %d gap %v complete %v first %q", m.msn, m.opcode,
		m.invalidate, m.length, m.gap, m.complete, head))
}

// heap lends buffers from the heap.
type heap struct{ out int }

func (h *heap) get() []byte { h.out++; return make([]byte, HeadLen) }
func (h *heap) put([]byte)  { h.out-- }
func (l *fpduLog) readRequest(rr *layers.RDMAPReadRequest) {
	l.got = append(l.got, fmt.Sprintf("read request size %d sink %#x source %#x", rr.Size, rr.SinkSTag, rr.SourceSTag))
}
func (l *fpduLog) readResponseDone() { l.got = append(l.got, "read response done") }
func (l *fpduLog) tagged(off int, t *Tagged) {
	if l.logTagged {
		l.got = append(l.got, fmt.Sprintf("tagged at %d op %d stag %#x to %#x n %d data %d start %v seg %d first %v last %v end %v",
			off, t.Opcode, t.STag, t.TO, t.N, len(t.Data), t.Start, t.SegmentLen, t.First, t.Last, t.End))
	}
}
func (l *fpduLog) terminate(t *layers.RDMAPTerminate) {
	l.got = append(l.got, "terminate "+t.TermDescription())
}
func (l *fpduLog) crcProblem(off int, mismatch bool, field, computed uint32) {
	l.got = append(l.got, fmt.Sprintf("crc at %d mismatch %v", off, mismatch))
}
func (l *fpduLog) framingLost(why string)         { l.got = append(l.got, "lost: "+why) }
func (l *fpduLog) checkAside([]byte, uint32) bool { return false }
func (l *fpduLog) summed([]byte) (uint32, bool)   { return 0, false }

// unit is one FPDU to build.
type unit = craft.FPDUUnit

func send(msn, mo uint32, last bool, p string) unit {
	return unit{DDP: layers.DDP{Last: last, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpSend, MSN: msn, MO: mo}, Payload: []byte(p)}
}

// stream frames units (see craft.FPDUStream).
func stream(units []unit, markers, crc bool) []byte {
	s, _ := craft.FPDUStream(units, markers, crc)
	return s
}

// follow feeds s to a follower in pieces of the given sizes (cycled).
func follow(s []byte, markers, crc bool, sizes ...int) []string {
	var l fpduLog
	var f follower
	var h heap
	f.init(&l, &h, 1000, modeOf(markers), modeOf(crc))
	f.onSegment = l.segment
	off := 1000
	for i := 0; len(s) > 0; i++ {
		n := len(s)
		if len(sizes) > 0 {
			n = min(n, sizes[i%len(sizes)])
		}
		f.feed(off, s[:n])
		off += n
		s = s[n:]
	}
	f.end()
	if h.out != 0 {
		l.got = append(l.got, fmt.Sprintf("%d buffers not given back", h.out))
	}
	return l.got
}

func TestFollower(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 64) // 1024 octets
	rr := unit{DDP: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpReadRequest, QN: 1, MSN: 1},
		Payload: make([]byte, 28)}
	binary.BigEndian.PutUint32(rr.Payload[12:], 4096)
	binary.BigEndian.PutUint32(rr.Payload[0:], 0x11)
	binary.BigEndian.PutUint32(rr.Payload[16:], 0x22)
	write := unit{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite, STag: 9}, Payload: []byte(big)}
	resp := unit{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpReadResponse, STag: 0x11}, Payload: []byte("data")}
	inv := unit{DDP: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpSendInvalidate, InvalidateSTag: 0xabc, MSN: 3}, Payload: []byte("rpl")}
	term := unit{DDP: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpTerminate, QN: 2, MSN: 1}, Payload: []byte{0x12, 0x05, 0x40, 0x00}}
	units := []unit{send(1, 0, false, "hello "), send(1, 6, true, "world"), rr, write, resp, inv, term}
	want := []string{
		"segment op 3 tagged false last false payload 6",
		"segment op 3 tagged false last true payload 5",
		`message msn 1 op 3 inval 0x0 length 11 gap false complete true first "hello world"`,
		"segment op 1 tagged false last true payload 0",
		"read request size 4096 sink 0x11 source 0x22",
		"segment op 0 tagged true last true payload 1024",
		"segment op 2 tagged true last true payload 4",
		"read response done",
		"segment op 4 tagged false last true payload 3",
		`message msn 3 op 4 inval 0xabc length 3 gap false complete true first "rpl"`,
		"segment op 7 tagged false last true payload 0",
		"terminate DDP, untagged buffer error: DDP message too long for the available buffer (layer 1, type 2, code 0x05)",
	}
	for _, markers := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			s := stream(units, markers, crc)
			for _, sizes := range [][]int{nil, {1}, {7, 13}, {1460}, {3, 500, 2}} {
				name := fmt.Sprintf("markers %v crc %v pieces %v", markers, crc, sizes)
				if got := follow(s, markers, crc, sizes...); !reflect.DeepEqual(got, want) {
					t.Errorf("%s:\n got %q\nwant %q", name, got, want)
				}
			}
		}
	}
}

func TestFollowerProblems(t *testing.T) {
	good := []unit{send(1, 0, true, "abcd")}
	bad := []unit{{DDP: good[0].DDP, Payload: good[0].Payload, BadCRC: true}}
	cases := []struct {
		name    string
		s       []byte
		markers bool
		crc     bool
		want    string
	}{
		{"CRC mismatch", stream(bad, false, true), false, true, "crc at 1000 mismatch true"},
		{"CRC zero when in use", stream(good, false, false), false, true, "crc at 1000 mismatch false"},
		{"CRC present when not in use", stream(good, false, true), false, false, "crc at 1000 mismatch false"},
		{"ULPDU_Length too short", []byte{0, 4, 0x41, 0x43, 0, 0, 0, 0, 0, 0}, false, false, "lost: the FPDU at stream offset 1000 has ULPDU_Length 4, shorter than any DDP header"},
		{"DDP version 2", func() []byte { s := stream(good, false, false); s[2] = 0x42; return s }(), false, false,
			"lost: the FPDU at stream offset 1000 has DDP version 2 and RDMAP version 1, not 1 and 1"},
		{"marker pointing elsewhere", func() []byte {
			s := stream([]unit{send(1, 0, true, strings.Repeat("x", 600))}, true, false)
			s[512+3] ^= 4
			return s
		}(), true, false, "lost: the marker at stream offset 1512 has FPDUPTR 504, but the FPDU it is in starts 508 octets before it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := follow(tc.s, tc.markers, tc.crc)
			found := false
			for _, g := range got {
				found = found || g == tc.want
			}
			if !found {
				t.Errorf("got %q, want %q among them", got, tc.want)
			}
		})
	}
	// After framing is lost nothing more is read, however much comes.
	var l fpduLog
	var f follower
	f.init(&l, nil, 0, modeOff, modeOff)
	f.onSegment = l.segment
	f.feed(0, []byte{0, 1, 2, 3, 4, 5})
	f.feed(6, make([]byte, 100000))
	if len(l.got) != 1 {
		t.Errorf("after the loss: %q", l.got)
	}
}

// FuzzFollower feeds arbitrary octets (or a valid stream, changed at one
// octet) to a follower in pieces. Properties: no panic; every buffer lent
// is given back; no Send is longer in its head than it is, or than
// HeadLen; after framing is lost nothing more is read.
func FuzzFollower(f *testing.F) {
	valid := stream([]unit{send(1, 0, false, "hello "), send(1, 6, true, "world"),
		{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite}, Payload: make([]byte, 600)},
		send(2, 0, true, strings.Repeat("x", 3000))}, true, true)
	f.Add(uint8(0), uint16(0), uint8(0), []byte(nil))
	f.Add(uint8(0x0f), uint16(100), uint8(7), []byte(nil))
	f.Add(uint8(0x15), uint16(600), uint8(1), []byte{1, 2, 3})
	f.Add(uint8(0x2a), uint16(9), uint8(0), []byte{0, 0, 0, 0, 0, 0x20, 0x41, 0x43})
	f.Fuzz(func(t *testing.T, opts uint8, at uint16, piece uint8, data []byte) {
		s := data
		if opts&1 != 0 {
			s = slices.Clone(valid)
			if i := int(at); i < len(s) {
				s[i] ^= byte(opts)
			}
		}
		modes := []mode{modeOff, modeOn, modeGuess}
		var l fuzzLog
		var h heap
		var fo follower
		fo.init(&l, &h, 20, modes[int(opts>>1)%3], modes[int(opts>>3)%3])
		fo.onSegment = l.segment
		off, size := 20, int(piece)%64+1
		for len(s) > 0 {
			n := min(size, len(s))
			fo.feed(off, s[:n])
			off += n
			s = s[n:]
			if fo.done && fo.pos > off {
				t.Fatalf("read past the end: %d > %d", fo.pos, off)
			}
		}
		fo.end()
		if h.out != 0 {
			t.Fatalf("%d buffers not given back", h.out)
		}
		if l.lost > 1 || l.bad != "" {
			t.Fatalf("lost %d times; %s", l.lost, l.bad)
		}
	})
}

// tagged checks a piece: its octets within its segment, no more data
// than octets, and a Read Response or Write.
func (l *fuzzLog) tagged(off int, p *Tagged) {
	switch {
	case l.lost > 0:
		l.bad = "a tagged piece after the loss"
	case p.N < 0 || p.N > p.SegmentLen || len(p.Data) > p.N || len(p.Data) > TaggedKeep:
		l.bad = fmt.Sprintf("a piece of %d octets, %d of data, in a segment of %d", p.N, len(p.Data), p.SegmentLen)
	case p.Opcode != layers.RDMAPOpWrite && p.Opcode != layers.RDMAPOpReadResponse:
		l.bad = fmt.Sprintf("a tagged piece of opcode %d", p.Opcode)
	}
}

// fuzzLog checks what a follower says.
type fuzzLog struct {
	lost int
	bad  string
}

func (l *fuzzLog) segment(d *layers.DDP, payload int) {
	if l.lost > 0 {
		l.bad = "a segment after the loss"
	}
}
func (l *fuzzLog) fpdu(start, end int, m *untagged) {
	if end <= start {
		l.bad = fmt.Sprintf("an FPDU from %d to %d", start, end)
	}
}
func (l *fuzzLog) message(m *untagged, head []byte) {
	if len(head) > HeadLen || len(head) > m.length {
		l.bad = fmt.Sprintf("head of %d octets for a message of %d", len(head), m.length)
	}
}
func (l *fuzzLog) readRequest(*layers.RDMAPReadRequest) {}
func (l *fuzzLog) readResponseDone()                    {}
func (l *fuzzLog) terminate(*layers.RDMAPTerminate)     {}
func (l *fuzzLog) crcProblem(int, bool, uint32, uint32) {}
func (l *fuzzLog) framingLost(string)                   { l.lost++ }
func (l *fuzzLog) checkAside([]byte, uint32) bool       { return false }
func (l *fuzzLog) summed([]byte) (uint32, bool)         { return 0, false }

// FuzzFollowerSplit feeds the same octets to two followers, at once and
// in pieces: the FPDUs that lie whole in what one call delivers are read
// where they lie (inPlace), the others octet run by octet run, and both
// must read the same segments, messages, CRC problems and losses, and
// count the same octets read and not. Tagged pieces differ by design (a
// piece per delivery) and are not compared.
func FuzzFollowerSplit(f *testing.F) {
	valid := stream([]unit{send(1, 0, false, "hello "), send(1, 6, true, "world"),
		{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite}, Payload: make([]byte, 600)},
		send(2, 0, true, strings.Repeat("x", 3000)), send(3, 0, true, "")}, false, true)
	f.Add(uint8(0), uint16(0), uint8(0), []byte(nil))
	f.Add(uint8(0x09), uint16(2), uint8(3), []byte(nil))
	f.Add(uint8(0x1b), uint16(30), uint8(17), []byte(nil))
	f.Add(uint8(0x0d), uint16(8), uint8(1), []byte(nil))
	f.Fuzz(func(t *testing.T, opts uint8, at uint16, piece uint8, data []byte) {
		s := data
		if opts&1 != 0 {
			s = slices.Clone(valid)
			if i := int(at); i < len(s) {
				s[i] ^= byte(opts >> 4)
			}
		}
		modes := []mode{modeOff, modeOn, modeGuess}
		run := func(size int) []string {
			var l fpduLog
			var h heap
			var fo follower
			fo.init(&l, &h, 20, modes[int(opts>>1)%3], modes[int(opts>>3)%3])
			fo.onSegment = l.segment
			rest, off := s, 20
			for len(rest) > 0 {
				n := min(size, len(rest))
				fo.feed(off, rest[:n])
				off += n
				rest = rest[n:]
			}
			fo.end()
			return append(l.got, fmt.Sprintf("pos %d unread %d missing %d fpdus %d buffers %d", fo.pos, fo.unread, fo.missing, fo.fpdus, h.out))
		}
		whole, pieces := run(len(s)+1), run(int(piece)%64+1)
		if !slices.Equal(whole, pieces) {
			t.Fatalf("at once:\n%q\nin pieces of %d:\n%q", whole, int(piece)%64+1, pieces)
		}
	})
}

// pieceLog puts the tagged segments back together from their pieces,
// checking each piece as it comes.
type pieceLog struct {
	fpduLog
	t     *testing.T
	segs  []string          // one line a segment
	octs  map[uint32][]byte // the octets handed on, by STag, at TO - base
	base  map[uint32]uint64
	next  uint64 // the TO the next piece must start at
	n, in int    // the segment's payload octets, and those seen
}

func (l *pieceLog) tagged(off int, p *Tagged) {
	switch {
	case p.Start:
		if l.n != l.in {
			l.t.Errorf("a segment began at TO %#x with %d of %d octets of the last one seen", p.TO, l.in, l.n)
		}
		l.n, l.in, l.next = p.SegmentLen, 0, p.TO
		l.segs = append(l.segs, fmt.Sprintf("op %d stag %#x to %#x len %d first %v last %v", p.Opcode, p.STag, p.TO, p.SegmentLen, p.First, p.Last))
		if p.First {
			l.base[p.STag] = p.TO
		}
	case p.N == 0:
		l.t.Errorf("an empty piece at TO %#x", p.TO)
	}
	if p.TO != l.next {
		l.t.Errorf("a piece at TO %#x, where %#x was next", p.TO, l.next)
	}
	if len(p.Data) > p.N {
		l.t.Errorf("a piece of %d octets with %d of data", p.N, len(p.Data))
	}
	l.next += uint64(p.N)
	l.in += p.N
	if p.End != (l.in == l.n) {
		l.t.Errorf("a piece at TO %#x: end %v, %d of %d octets", p.TO, p.End, l.in, l.n)
	}
	if at := int(p.TO - l.base[p.STag]); len(p.Data) > 0 {
		b := l.octs[p.STag]
		if at != len(b) {
			l.t.Errorf("data at message offset %d, after %d octets", at, len(b))
		}
		l.octs[p.STag] = append(b, p.Data...)
	}
}

// The tagged segments of Writes and Read Responses are handed on in
// pieces, whatever cuts them (deliveries, markers): each piece continues
// the last, a segment's pieces hold all its octets, and a message's first
// TaggedKeep octets come with them.
func TestFollowerTagged(t *testing.T) {
	tagged := func(op uint8, stag uint32, to uint64, p []byte, maxSeg int) []unit {
		var out []unit
		for off := 0; ; off += maxSeg {
			end := min(len(p), off+maxSeg)
			out = append(out, unit{DDP: layers.DDP{Tagged: true, Last: end == len(p), Opcode: op, STag: stag, TaggedOffset: to + uint64(off)},
				Payload: p[off:end]})
			if end == len(p) {
				return out
			}
		}
	}
	write := make([]byte, 6000)
	for i := range write {
		write[i] = byte(i * 7)
	}
	resp := []byte(strings.Repeat("response", 100))
	units := append(tagged(layers.RDMAPOpWrite, 0x31, 0x7f00, write, 1400), send(1, 0, true, "between"))
	units = append(units, tagged(layers.RDMAPOpReadResponse, 0xa1, 0x1000, resp, 500)...)
	units = append(units, tagged(layers.RDMAPOpWrite, 0x32, 0, nil, 1400)...) // a zero-length Write
	want := []string{
		"op 0 stag 0x31 to 0x7f00 len 1400 first true last false",
		"op 0 stag 0x31 to 0x8478 len 1400 first false last false",
		"op 0 stag 0x31 to 0x89f0 len 1400 first false last false",
		"op 0 stag 0x31 to 0x8f68 len 1400 first false last false",
		"op 0 stag 0x31 to 0x94e0 len 400 first false last true",
		"op 2 stag 0xa1 to 0x1000 len 500 first true last false",
		"op 2 stag 0xa1 to 0x11f4 len 300 first false last true",
		"op 0 stag 0x32 to 0x0 len 0 first true last true",
	}
	for _, markers := range []bool{false, true} {
		s := stream(units, markers, true)
		for _, sizes := range [][]int{nil, {1}, {7, 13}, {1460}, {3, 500, 2}} {
			l := &pieceLog{t: t, octs: map[uint32][]byte{}, base: map[uint32]uint64{}}
			var f follower
			var h heap
			f.init(l, &h, 1000, modeOf(markers), modeOn)
			off := 1000
			for i, rest := 0, s; len(rest) > 0; i++ {
				n := len(rest)
				if len(sizes) > 0 {
					n = min(n, sizes[i%len(sizes)])
				}
				f.feed(off, rest[:n])
				off += n
				rest = rest[n:]
			}
			f.end()
			name := fmt.Sprintf("markers %v pieces %v", markers, sizes)
			if !reflect.DeepEqual(l.segs, want) {
				t.Errorf("%s: segments\n%q\nwant\n%q", name, l.segs, want)
			}
			if !bytes.Equal(l.octs[0x31], write[:TaggedKeep]) || !bytes.Equal(l.octs[0xa1], resp) {
				t.Errorf("%s: %d and %d octets of data", name, len(l.octs[0x31]), len(l.octs[0xa1]))
			}
			if len(l.got) != 2 || !strings.Contains(l.got[0], `"between"`) || l.got[1] != "read response done" {
				t.Errorf("%s: %q", name, l.got)
			}
		}
	}
}

// FPDUs that lie whole in a delivery are read where they lie: nothing of
// their length or headers is copied into the follower (only the CRC
// field), which it is when the same FPDUs come in pieces.
func TestFollowerInPlace(t *testing.T) {
	units := []unit{send(1, 0, true, "hello"),
		{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite, STag: 3}, Payload: make([]byte, 900)}}
	s := stream(units, false, true)
	for _, pieces := range []int{len(s), 7} {
		var l fpduLog
		var h heap
		var f follower
		f.init(&l, &h, 0, modeOff, modeOn)
		for off := 0; off < len(s); off += pieces {
			f.feed(off, s[off:min(off+pieces, len(s))])
		}
		f.end()
		copied := f.lenBuf != [2]byte{} || f.hdr != [hdrKeep]byte{}
		switch {
		case f.fpdus != len(units):
			t.Fatalf("pieces of %d: %d FPDUs read, want %d", pieces, f.fpdus, len(units))
		case pieces == len(s) && copied:
			t.Errorf("at once: length %x, headers %x copied", f.lenBuf, f.hdr)
		case pieces < len(s) && !copied:
			t.Errorf("in pieces of %d: nothing copied", pieces)
		}
	}
}
