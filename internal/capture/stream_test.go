package capture

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime"
	"testing"
	"time"
)

// TestStreamReadahead: with Stream, read-ahead hands on each record as soon
// as it is written to a pipe that stays open, instead of waiting for a full
// chunk.
func TestStreamReadahead(t *testing.T) {
	pr, pw := io.Pipe()
	file := newPcap(false, false, 65535, 1)
	head := len(file.b)
	file.rec(1, 0, payload(100, 1), 0).rec(2, 0, payload(200, 2), 0)
	go pw.Write(file.b[:head]) // the file header alone
	rd, err := NewReader(pr, ReaderOptions{Readahead: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int)
	go func() {
		defer close(got)
		for {
			f, err := rd.Next()
			if err != nil {
				return
			}
			got <- len(f.Data)
		}
	}()
	for i, r := range [][]byte{file.b[head : head+16+100], file.b[head+16+100:]} {
		go pw.Write(r) // one record at a time, the pipe staying open
		select {
		case n := <-got:
			if n != 100*(i+1) {
				t.Errorf("record %d: %d octets", i+1, n)
			}
		case <-time.After(time.Second):
			t.Errorf("record %d waited for more data", i+1)
		}
	}
	// The end: the reading goroutine finishes before the Reader is closed.
	pw.Close()
	for range got {
	}
	rd.Close()
}

// zeroPcap is a pcap file of n records of size octets each (zeros), made
// as it is read.
type zeroPcap struct {
	head []byte
	n    int // records left
	size int
	left int // octets of the current record's data left
}

func newZeroPcap(n, size int) *zeroPcap {
	return &zeroPcap{head: newPcap(false, false, uint32(size), 1).b, n: n, size: size}
}

func (z *zeroPcap) Read(b []byte) (int, error) {
	switch {
	case len(z.head) > 0:
		k := copy(b, z.head)
		z.head = z.head[k:]
		return k, nil
	case z.left > 0:
		k := min(len(b), z.left)
		clear(b[:k])
		z.left -= k
		return k, nil
	case z.n > 0:
		z.n--
		z.head = (&pcapFile{}).recHeader(1, 0, uint32(z.size), uint32(z.size)).b
		z.left = z.size
		return z.Read(b)
	}
	return 0, io.EOF
}

// smallReads returns at most 64 KiB a read, as a pipe does.
type smallReads struct{ r io.Reader }

func (s smallReads) Read(b []byte) (int, error) { return s.r.Read(b[:min(len(b), 64<<10)]) }

// TestLargeRecordsBounded: records of 16 MiB (the cap) are read without
// joining buffers again and again, from a file, from gzip and from a pipe
// (small reads): about one record's buffer is allocated for all of them.
func TestLargeRecordsBounded(t *testing.T) {
	const size, n = 16 << 20, 4
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := io.Copy(zw, newZeroPcap(n, size)); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	for _, tc := range []struct {
		name string
		src  func() io.Reader
		opts ReaderOptions
	}{
		{"file", func() io.Reader { return newZeroPcap(n, size) }, ReaderOptions{Readahead: true}},
		{"pipe", func() io.Reader { return smallReads{newZeroPcap(n, size)} }, ReaderOptions{Readahead: true, Stream: true}},
		{"gzip", func() io.Reader { return bytes.NewReader(gz.Bytes()) }, ReaderOptions{Readahead: true}},
		{"gzip pipe", func() io.Reader { return smallReads{bytes.NewReader(gz.Bytes())} }, ReaderOptions{Readahead: true, Stream: true}},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rd, err := NewReader(tc.src(), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for {
			f, err := rd.Next()
			if err != nil {
				if err != io.EOF {
					t.Fatalf("%s: %v", tc.name, err)
				}
				break
			}
			if len(f.Data) != size {
				t.Fatalf("%s: record %d of %d octets", tc.name, got+1, len(f.Data))
			}
			got++
		}
		rd.Close()
		runtime.ReadMemStats(&after)
		// One gathering buffer (16 MiB and a chunk), the chunks, the
		// decompressor: well under three records' worth.
		if alloc := after.TotalAlloc - before.TotalAlloc; got != n || alloc > 3*size {
			t.Errorf("%s: %d records, %d MiB allocated", tc.name, got, alloc>>20)
		}
	}
}
