package capture

import (
	"fmt"
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
	defer func(w, o, a, m int) { mapWindow, mapOverlap, mapAhead, mapMinRecord = w, o, a, m }(mapWindow, mapOverlap, mapAhead, mapMinRecord)
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
	// Windows mapped ahead that overlap by more than most records, by
	// less, not at all, and none mapped ahead.
	for _, ahead := range []struct{ overlap, ahead int }{{4096, 2}, {1000, 1}, {0, 3}, {4096, 0}} {
		for name, data := range map[string][]byte{"f.pcap": p.b, "f.pcapng": ng.b, "cut.pcap": cut, "f.pcap.gz": gz(t, p.b, 1)} {
			mapOverlap, mapAhead = ahead.overlap, ahead.ahead
			t.Run(fmt.Sprintf("%s/overlap=%d/ahead=%d", name, ahead.overlap, ahead.ahead), func(t *testing.T) {
				path := filepath.Join(dir, name)
				if err := writeFile(path, data); err != nil {
					t.Fatal(err)
				}
				_, want, wantErr := readBytes(data, ReaderOptions{})
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				r, err := NewReader(f, ReaderOptions{Map: true, Readahead: true})
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
}

// Closed before its first frame, or in the middle of the file, a mapped
// Reader stops the goroutine that maps ahead and unmaps every window.
func TestMappedClose(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no mapping here")
	}
	defer func(w, m int) { mapWindow, mapMinRecord = w, m }(mapWindow, mapMinRecord)
	mapWindow, mapMinRecord = 1<<16, 0
	p := newPcap(false, true, 262144, 1)
	for i := 0; len(p.b) < 20*mapWindow; i++ {
		p.rec(uint32(i), uint32(i), payload(1500, i), 1500)
	}
	path := filepath.Join(t.TempDir(), "f.pcap")
	if err := writeFile(path, p.b); err != nil {
		t.Fatal(err)
	}
	for _, frames := range []int{0, 1, 500} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(f, ReaderOptions{Map: true})
		if err != nil || !r.Mapped() {
			t.Fatalf("mapped %v, %v", r != nil && r.Mapped(), err)
		}
		m := r.mp
		for range frames {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		f.Close()
		select {
		case <-m.done:
		default:
			t.Errorf("after %d frames: the mapping goroutine still runs", frames)
		}
		if m.win != nil || m.pending.b != nil || len(m.ahead) != 0 || len(m.release) != 0 {
			t.Errorf("after %d frames: windows still mapped", frames)
		}
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
	if _, err := NewReader(f, ReaderOptions{Map: true}); err == nil {
		t.Fatal("a text file was taken")
	}
}

// A file is mapped only when its records average 1 KiB or more over its
// first octets, whatever they carry (TCP segments, UDP datagrams, raw
// octets): pcap (both byte orders) and pcapng.
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
		{"small.pcap", 900, false, false, false},
		{"large.pcap", 2900, false, false, true},
		{"large-be.pcap", 2900, true, false, true},
		{"small.pcapng", 900, false, true, false},
		{"large.pcapng", 2900, false, true, true},
		{"large-be.pcapng", 2900, true, true, true},
		{"tcp.pcap", -1100, false, false, true},
		{"tcp-be.pcapng", -1100, true, true, true},
		{"udp.pcap", -1101, false, false, true},
		{"small-tcp.pcap", -200, false, false, false},
	} {
		p := newPcap(tc.big, true, 262144, 1)
		ng := newNg(tc.big).shb(1, 0).idb(1, 262144)
		for i := range 100 {
			var d []byte
			if tc.n > 0 {
				d = payload(tc.n, i)
			} else { // Ethernet, VLAN, IPv4 and TCP (UDP when odd)
				d = payload(-tc.n, i)
				copy(d[12:], []byte{0x81, 0x00, 0, 1, 0x08, 0x00, 0x45})
				d[18+9] = byte(6 + 11*(-tc.n&1))
			}
			p.rec(uint32(i), uint32(i), d, uint32(len(d)))
			ng.epb(0, uint64(i), d, uint32(len(d)))
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
		r, err := NewReader(f, ReaderOptions{Map: true})
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

// Read through its mapping, Next allocates nothing per frame, nor per
// window (the file is several windows long).
func TestMappedZeroAllocs(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no mapping here")
	}
	defer func(w, m int) { mapWindow, mapMinRecord = w, m }(mapWindow, mapMinRecord)
	mapWindow, mapMinRecord = 1<<18, 0
	path := filepath.Join(t.TempDir(), "f.pcap")
	if err := writeFile(path, benchPcap(16<<20)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewReader(f, ReaderOptions{Map: true})
	if err != nil || !r.Mapped() {
		t.Fatalf("mapped %v, %v", r != nil && r.Mapped(), err)
	}
	defer r.Close()
	for range 5000 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(10000, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Next", allocs)
	}
}

// A file of large records (pcap, pcapng), a quarter or more of which get
// sums from the Summer, is read ahead rather than mapped (where no sums
// are computed), and its frames carry their sums; with fewer summed (one
// in ten), or no Summer, it is mapped.
func TestSummedNotMapped(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no mapping here")
	}
	dir := t.TempDir()
	p := newPcap(false, true, 262144, 1)
	ng := newNg(true).idb(113, 0).idb(1, 0)
	for i := range 100 {
		p.rec(uint32(i), 0, payload(2900, i), 0)
		ng.epb(uint32(i%2), 0, payload(2900, i), 0)
	}
	for _, name := range []string{"large.pcap", "large.pcapng"} {
		data := p.b
		if name == "large.pcapng" {
			data = ng.b
		}
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			t.Fatal(err)
		}
	}
	every := func(n int) Summer {
		return func(link uint16, data []byte, out []Sum) []Sum {
			if int(data[0])%n == 0 {
				out = append(out, Sum{At: 0, N: 4, Value: uint32(data[1])})
			}
			return out
		}
	}
	// payload(2900, i) starts with 13*i: a multiple of 2 for every other
	// record, of 10 for one in ten.
	for _, tc := range []struct {
		name   string
		summer Summer
		mapped bool
	}{
		{"large.pcap", nil, true}, {"large.pcap", every(10), true}, {"large.pcap", every(2), false},
		{"large.pcapng", nil, true}, {"large.pcapng", every(10), true}, {"large.pcapng", every(2), false},
	} {
		f, err := os.Open(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(f, ReaderOptions{Map: true, Readahead: true, Summer: tc.summer})
		if err != nil {
			t.Fatal(err)
		}
		if r.Mapped() != tc.mapped {
			t.Errorf("%s, summer %v: mapped %v, want %v", tc.name, tc.summer != nil, r.Mapped(), tc.mapped)
		}
		summed := 0
		for {
			fr, err := r.Next()
			if err != nil {
				break
			}
			if len(fr.Sums) > 0 {
				summed++
			}
		}
		// (The suite's tiny chunks of read-ahead hold none of these
		// records whole.)
		if want := !tc.mapped && !testReadahead.on; (summed > 0) != want {
			t.Errorf("%s: %d frames summed", tc.name, summed)
		}
		r.Close()
		f.Close()
	}
}
