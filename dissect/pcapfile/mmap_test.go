package pcapfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Reading through the mapping gives exactly the frames reading does:
// pcap and pcapng, records straddling the windows (the files are several
// windows long, some records longer than a window), errors at the same frame and
// offset; a gzip file and a non-file are read as before.
func TestMapped(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no mapping here")
	}
	defer func(w, m int) { mapWindow, mapMinRecord = w, m }(mapWindow, mapMinRecord)
	mapWindow, mapMinRecord = 1<<16, 0
	p := newPcap(false, true, 262144, 1)
	ng := newNg(false).shb(1, 0).idb(1, 262144)
	size := 0
	for i := 0; size < 3*mapWindow+12345; i++ {
		n := 60 + i*977%1500
		if i%37 == 0 {
			n = 100000 // a record larger than a window
		}
		p.rec(uint32(i), uint32(i), payload(n, i), uint32(n))
		ng.epb(0, uint64(i), payload(n, i), uint32(n))
		size += n + 16
	}
	cut := p.b[:len(p.b)-100] // the last record cut short
	dir := t.TempDir()
	for name, data := range map[string][]byte{"f.pcap": p.b, "f.pcapng": ng.b, "cut.pcap": cut, "f.pcap.gz": gz(t, p.b, 1)} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := writeFile(path, data); err != nil {
				t.Fatal(err)
			}
			_, want, wantErr := readBytes(data, Options{})
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := NewReader(f, Options{Map: true, Readahead: true})
			if err != nil {
				t.Fatal(err)
			}
			if mapped := r.Mapped(); mapped == (name == "f.pcap.gz") {
				t.Errorf("mapped %v", mapped)
			}
			frames, gotErr := readAll(r)
			sameFrames(t, frames, want)
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("error %v, want %v", gotErr, wantErr)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if r.mp != nil {
				t.Error("still mapped after Close")
			}
		})
	}
}

// A file that is not a capture is refused, and its mapping released.
func TestMappedNotCapture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.txt")
	if err := writeFile(path, []byte("hello, not a capture file at all")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewReader(f, Options{Map: true}); err == nil {
		t.Fatal("a text file was taken")
	}
}

// A file is mapped only when its records average 2 KiB or more over its
// first octets: pcap (both byte orders) and pcapng.
func TestMappedOnlyLargeRecords(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no mapping here")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		n    int // octets a record
		big  bool
		ng   bool
		want bool
	}{
		{"small.pcap", 1100, false, false, false},
		{"large.pcap", 2900, false, false, true},
		{"large-be.pcap", 2900, true, false, true},
		{"small.pcapng", 1100, false, true, false},
		{"large.pcapng", 2900, false, true, true},
		{"large-be.pcapng", 2900, true, true, true},
	} {
		p := newPcap(tc.big, true, 262144, 1)
		ng := newNg(tc.big).shb(1, 0).idb(1, 262144)
		for i := range 100 {
			p.rec(uint32(i), uint32(i), payload(tc.n, i), uint32(tc.n))
			ng.epb(0, uint64(i), payload(tc.n, i), uint32(tc.n))
		}
		data := p.b
		if tc.ng {
			data = ng.b
		}
		path := filepath.Join(dir, tc.name)
		if err := writeFile(path, data); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(f, Options{Map: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Mapped() != tc.want {
			t.Errorf("%s: mapped %v, want %v", tc.name, r.Mapped(), tc.want)
		}
		if frames, err := readAll(r); err != nil || len(frames) != 100 {
			t.Errorf("%s: %d frames, %v", tc.name, len(frames), err)
		}
		r.Close()
		f.Close()
	}
}
