package capture

import (
	"bytes"
	"compress/gzip"
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"testing"
	"testing/iotest"
	"time"
)

// Fuzzing stops reading after this many frames or decompressed octets, so
// that a small gzip input expanding to a huge stream still ends quickly.
const (
	fuzzMaxFrames = 1 << 16
	fuzzMaxOctets = 64 << 20
)

// fuzzFrame is a frame with its data reduced to a checksum.
type fuzzFrame struct {
	crc     uint32
	n, wire int
	time    time.Time
	link    uint16
	iface   int
	index   int
	offset  int64
}

type fuzzResult struct {
	format string
	frames []fuzzFrame
	links  []uint16
	err    string
}

// FuzzReader reads arbitrary input until an error, through a reader with a
// roomy buffer, one with a tiny buffer and one fed an octet at a time; it
// checks invariants (no panic, bounded memory, sane frames, *Error errors)
// and that the three agree exactly.
func FuzzReader(f *testing.F) {
	pcap := newPcap(false, false, 65535, 1).rec(1, 2, payload(60, 1), 0).rec(3, 4, payload(7, 2), 90).b
	ng, _ := sectionsFile()
	f.Add(pcap)
	f.Add(newPcap(true, true, 128, 247).rec(1, 2, payload(100, 1), 0).recHeader(1, 2, 3, 4).b)
	f.Add(ng)
	f.Add(gz(f, pcap, gzip.BestSpeed))
	f.Add(append(gz(f, ng[:100], gzip.NoCompression), gz(f, ng[100:], gzip.BestCompression)...))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a})

	f.Fuzz(func(t *testing.T, data []byte) {
		// A buffer that holds most inputs whole, as the default 1 MiB one
		// does real files (the default itself costs time on every run).
		a := fuzzRead(t, bytes.NewReader(data), ReaderOptions{bufSize: 4096})
		b := fuzzRead(t, bytes.NewReader(data), ReaderOptions{bufSize: minBufSize})
		c := fuzzRead(t, iotest.OneByteReader(bytes.NewReader(data)), ReaderOptions{bufSize: 100})
		d := fuzzRead(t, iotest.HalfReader(bytes.NewReader(data)), ReaderOptions{bufSize: 256, Readahead: true, Summer: testSummer})
		for _, x := range []fuzzResult{b, c, d} {
			if a.err != x.err || a.format != x.format || !slices.Equal(a.frames, x.frames) || !slices.Equal(a.links, x.links) {
				t.Fatalf("readers disagree:\n%d frames, %v, %q\n%d frames, %v, %q",
					len(a.frames), a.links, a.err, len(x.frames), x.links, x.err)
			}
		}
	})
}

func fuzzRead(t *testing.T, src io.Reader, opts ReaderOptions) fuzzResult {
	var res fuzzResult
	r, err := NewReader(src, opts)
	if err != nil {
		checkFuzzError(t, err)
		res.err = err.Error()
		return res
	}
	defer r.Close()
	initial := len(r.buf)
	res.format = r.Format()
	last := int64(-1)
	var ahead []byte // what Ahead(1) showed of the record Next hands out next
	for len(res.frames) < fuzzMaxFrames && r.offset() < fuzzMaxOctets {
		fr, err := r.Next()
		if err == nil && !bytes.HasPrefix(fr.Data, ahead) {
			t.Fatalf("frame %d: %x shown ahead, %x handed out", fr.Index, ahead, fr.Data)
		}
		ahead = append(ahead[:0], r.Ahead(1)...)
		r.Ahead(2)
		r.Ahead(3)
		// Memory: the buffer grows only while full of data, at most doubling.
		// (Read-ahead reads chunks before they are needed, and gathers a
		// record longer than a chunk's headroom in a buffer made once for
		// it: never beyond the checked record limit and a chunk.)
		if read := r.base + int64(r.w); !opts.Readahead && !testReadahead.on && len(r.buf) > max(initial, int(2*read)) {
			t.Fatalf("buffer of %d octets after reading %d", len(r.buf), read)
		}
		if r.pf != nil && cap(r.gather) > maxBlock+r.pf.most {
			t.Fatalf("gathering buffer of %d octets", cap(r.gather))
		}
		if err != nil {
			if err != io.EOF {
				checkFuzzError(t, err)
				res.err = err.Error()
			}
			if _, err2 := r.Next(); err2 != err {
				t.Fatalf("error not sticky: %v then %v", err, err2)
			}
			break
		}
		switch {
		case (len(fr.Data) > fr.WireLen) != (fr.Issue&OverWire != 0):
			t.Fatalf("frame %d: %d octets captured of %d, issue %v", fr.Index, len(fr.Data), fr.WireLen, fr.Issue)
		case len(fr.Data) > r.limit || r.limit > hardMaxRecord:
			t.Fatalf("frame %d: %d octets over the limit %d", fr.Index, len(fr.Data), r.limit)
		case fr.Index != len(res.frames)+1:
			t.Fatalf("frame index %d, want %d", fr.Index, len(res.frames)+1)
		case fr.Offset <= last:
			t.Fatalf("frame offset %d after %d", fr.Offset, last)
		case fr.Time.Location() != time.UTC:
			t.Fatalf("time not UTC")
		}
		last = fr.Offset
		// Sums are exactly those of the frame's own octets and link type.
		if fr.Sums != nil {
			if want := testSummer(fr.LinkType, fr.Data, nil); !slices.Equal(fr.Sums, want[:min(len(want), maxRecordSums)]) {
				t.Fatalf("frame %d: sums %v, want %v", fr.Index, fr.Sums, want)
			}
		}
		res.frames = append(res.frames, fuzzFrame{crc32.ChecksumIEEE(fr.Data), len(fr.Data), fr.WireLen,
			fr.Time, fr.LinkType, fr.Interface, fr.Index, fr.Offset})
	}
	res.links = r.LinkTypes()
	return res
}

func checkFuzzError(t *testing.T, err error) {
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not *Error", err, err)
	}
	if e.Msg == "" || e.Offset < 0 || e.Frame < 0 {
		t.Fatalf("odd error %#v", e)
	}
}
