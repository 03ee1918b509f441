package ipfrag

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// frag builds a fragment of datagram id carrying data at offset off.
func frag(id uint32, off int, more bool, data []byte, frame int) *Fragment {
	return &Fragment{Key: Key{ID: id, Proto: 17}, Offset: off, More: more, Data: data, WireLen: len(data),
		Header: []byte{0xaa, 0xbb}, L3: 0, Frame: frame, Time: t0}
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestReassemble(t *testing.T) {
	d := seq(200)
	for _, tc := range []struct {
		name   string
		frags  []*Fragment
		done   int // index of the fragment that completes, -1: none
		want   []byte
		frames []int
	}{
		{"in order", []*Fragment{frag(1, 0, true, d[:96], 1), frag(1, 96, true, d[96:192], 2), frag(1, 192, false, d[192:], 3)},
			2, d, []int{1, 2, 3}},
		{"reversed", []*Fragment{frag(1, 192, false, d[192:], 1), frag(1, 96, true, d[96:192], 2), frag(1, 0, true, d[:96], 3)},
			2, d, []int{1, 2, 3}},
		{"overlapping: the first copy wins", []*Fragment{frag(1, 0, true, d[:104], 1),
			frag(1, 96, false, append(bytes.Repeat([]byte{0xee}, 8), d[104:]...), 2)}, 1, d, []int{1, 2}},
		{"a gap", []*Fragment{frag(1, 0, true, d[:96], 1), frag(1, 192, false, d[192:], 2)}, -1, nil, nil},
		{"no last fragment", []*Fragment{frag(1, 0, true, d[:96], 1), frag(1, 96, true, d[96:192], 2)}, -1, nil, nil},
		{"another datagram between", []*Fragment{frag(1, 0, true, d[:96], 1), frag(2, 0, true, d[:8], 2), frag(1, 96, false, d[96:], 3)},
			2, d, []int{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Options{})
			for i, f := range tc.frags {
				dg, ok := r.Add(f)
				if ok != (i == tc.done) {
					t.Fatalf("fragment %d: complete %v", i, ok)
				}
				if ok {
					if !bytes.Equal(dg.Payload, tc.want) || dg.WireLen != len(tc.want) || !bytes.Equal(dg.Header, []byte{0xaa, 0xbb}) {
						t.Errorf("payload %x (wire %d)", dg.Payload, dg.WireLen)
					}
					if len(dg.Frames) != len(tc.frames) {
						t.Errorf("frames %v, want %v", dg.Frames, tc.frames)
					}
				}
			}
		})
	}
}

// TestCut: a fragment the capture cut completes the datagram, which is
// handed on as far as it was captured.
func TestCut(t *testing.T) {
	d := seq(200)
	r := New(Options{})
	f := frag(1, 96, false, d[96:150], 2)
	f.WireLen = 104
	r.Add(frag(1, 0, true, d[:96], 1))
	dg, ok := r.Add(f)
	if !ok || dg.WireLen != 200 || !bytes.Equal(dg.Payload, d[:150]) {
		t.Fatalf("ok %v, %+v", ok, dg)
	}
}

// TestGiveUp: the limits, ageing, malformed fragments and the end of the
// input give datagrams up, counted by why, the flagged ones apart.
func TestGiveUp(t *testing.T) {
	d := seq(4000)
	flagged := func(f *Fragment) *Fragment { f.Flagged = true; return f }
	t.Run("fragments", func(t *testing.T) {
		r := New(Options{Fragments: 2})
		r.Add(flagged(frag(1, 0, true, d[:8], 1)))
		r.Add(frag(2, 0, true, d[:8], 2))
		r.Add(frag(3, 0, true, d[:8], 3)) // gives datagram 1 up
		if s := r.Stats(); s.Limit != 1 || s.FlaggedLimit != 1 || s.FlaggedFirst != 1 || r.Pending() != 2 {
			t.Errorf("%+v, %d pending", s, r.Pending())
		}
	})
	t.Run("octets", func(t *testing.T) {
		r := New(Options{Bytes: 1000})
		r.Add(frag(1, 0, true, d[:800], 1))
		r.Add(frag(2, 0, true, d[:800], 2))
		if s := r.Stats(); s.Limit != 1 || r.Pending() != 1 {
			t.Errorf("%+v, %d pending", s, r.Pending())
		}
		// A single high fragment charges the buffer up to its end.
		r.Add(frag(3, 3000, true, d[:8], 3))
		if s := r.Stats(); s.Limit != 3 || r.Pending() != 0 {
			t.Errorf("%+v, %d pending", s, r.Pending())
		}
	})
	t.Run("datagrams", func(t *testing.T) {
		r := New(Options{Datagrams: 2})
		for i := range 5 {
			r.Add(frag(uint32(i), 0, true, d[:8], i+1))
		}
		if s := r.Stats(); s.Limit != 3 || r.Pending() != 2 {
			t.Errorf("%+v, %d pending", s, r.Pending())
		}
	})
	t.Run("age", func(t *testing.T) {
		r := New(Options{Timeout: time.Second})
		r.Add(flagged(frag(1, 0, true, d[:8], 1)))
		late := frag(2, 0, true, d[:8], 2)
		late.Time = t0.Add(2 * time.Second)
		r.Add(late)
		if s := r.Stats(); s.Aged != 1 || s.FlaggedAged != 1 || r.Pending() != 1 {
			t.Errorf("%+v", s)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		r := New(Options{})
		r.Add(frag(1, 65528, false, d[:16], 1)) // beyond 65535
		r.Add(frag(2, 0, true, d[:12], 2))      // not a multiple of 8
		r.Add(frag(3, 16, true, d[:8], 3))
		r.Add(frag(3, 0, false, d[:8], 4)) // ends before what arrived
		if s := r.Stats(); s.Malformed != 3 || s.Reassembled != 0 {
			t.Errorf("%+v", s)
		}
	})
	t.Run("end of input and duplicates", func(t *testing.T) {
		r := New(Options{})
		r.Add(flagged(frag(1, 0, true, d[:8], 1)))
		r.Add(frag(2, 0, true, d[:8], 2))
		if _, ok := r.Add(frag(2, 8, false, d[:8], 3)); !ok {
			t.Fatal("datagram 2 not complete")
		}
		r.Add(frag(2, 0, true, d[:8], 4)) // a copy, after it was reassembled
		r.Flush()
		if s := r.Stats(); s.Incomplete != 1 || s.FlaggedIncomplete != 1 || s.Duplicates != 1 || s.Lost() != 1 || r.Pending() != 0 {
			t.Errorf("%+v", s)
		}
	})
}

// TestSteadyStateAllocs: once warm, reassembling a datagram allocates
// nothing.
func TestSteadyStateAllocs(t *testing.T) {
	d := seq(3000)
	r := New(Options{})
	id := uint32(0)
	fr := frag(0, 0, false, nil, 1)
	one := func() {
		id++
		for off := 0; off < len(d); off += 1000 {
			fr.Key.ID, fr.Offset, fr.More, fr.Data = id%50000, off, off+1000 < len(d), d[off:off+1000]
			fr.WireLen = len(fr.Data)
			r.Add(fr)
		}
	}
	for range 5000 {
		one()
	}
	if n := testing.AllocsPerRun(1000, one); n != 0 {
		t.Errorf("%v allocations per datagram", n)
	}
}

// FuzzReassemble feeds fragments described by the input to a small
// reassembler: it must never panic, never hold more than its limits, and
// every datagram it hands on must be as long as the fragments said.
func FuzzReassemble(f *testing.F) {
	f.Add([]byte{1, 0, 0, 1, 8, 1, 0, 1, 0, 8})
	f.Add([]byte{1, 0, 8, 0, 8, 1, 0, 0, 1, 8, 1, 0, 4, 0, 16})
	f.Add(bytes.Repeat([]byte{3, 0xff, 0xf0, 1, 200}, 20))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := New(Options{Datagrams: 4, Fragments: 16, Bytes: 4096, Timeout: time.Second})
		data := seq(2048)
		for i := 0; i+5 <= len(in); i += 5 {
			id := uint32(in[i] % 8)
			off := int(binary.BigEndian.Uint16(in[i+1:])) &^ 7
			more := in[i+3]&1 != 0
			n := int(in[i+4]) * 8
			fr := frag(id, off, more, data[:min(n, len(data))], i/5+1)
			fr.WireLen = n
			fr.Time = t0.Add(time.Duration(in[i+3]>>1) * 100 * time.Millisecond)
			dg, ok := r.Add(fr)
			if r.frags > 16 || r.bytes > 4096+2 || len(r.m) > 4 {
				t.Fatalf("over the limits: %d fragments, %d octets, %d datagrams", r.frags, r.bytes, len(r.m))
			}
			if ok && (len(dg.Payload) > dg.WireLen || dg.WireLen > MaxDatagram) {
				t.Fatalf("datagram of %d octets (wire %d)", len(dg.Payload), dg.WireLen)
			}
		}
		r.Flush()
		if r.Pending() != 0 || r.frags != 0 || r.bytes != 0 {
			t.Fatalf("after Flush: %d pending, %d fragments, %d octets", r.Pending(), r.frags, r.bytes)
		}
	})
}
