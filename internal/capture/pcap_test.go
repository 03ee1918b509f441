package capture

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestPcapVariants reads hand-built pcap files in both byte orders with
// microsecond and nanosecond timestamps.
func TestPcapVariants(t *testing.T) {
	for _, tc := range []struct {
		name     string
		be, nano bool
		link     uint32
	}{
		{"le-usec", false, false, 1},
		{"be-usec", true, false, 247},
		{"le-nsec", false, true, 113},
		{"be-nsec", true, true, 276},
		{"fcs-bits", false, false, 0x1000_0000 | 197}, // FCS length in the high bits
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPcap(tc.be, tc.nano, 65535, tc.link)
			var want []got
			unit := uint32(1000) // ns per fractional unit
			if tc.nano {
				unit = 1
			}
			for i, n := range []int{60, 0, 1514, 7, 333} {
				sec, frac := uint32(1_700_000_000+i), uint32(123_456+i)
				if tc.nano {
					frac = 999_999_000 + uint32(i)
				}
				wire := uint32(n + i*10)
				off := int64(len(p.b))
				d := payload(n, i)
				p.rec(sec, frac, d, wire)
				if wire == 0 {
					wire = uint32(n)
				}
				want = append(want, got{d, int(wire), time.Unix(int64(sec), int64(frac*unit)).UTC(),
					uint16(tc.link), 0, i + 1, off})
			}
			r, frames, err := readBytes(p.b, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sameFrames(t, frames, want)
			if r.Format() != "pcap" || r.Compressed() {
				t.Errorf("Format %q Compressed %v", r.Format(), r.Compressed())
			}
			if lt := r.LinkTypes(); len(lt) != 1 || lt[0] != uint16(tc.link) {
				t.Errorf("LinkTypes %v", lt)
			}
			// At the end, Next keeps returning io.EOF.
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("after end: %v", err)
			}
		})
	}
}

// TestPcapHeaderOnly: a file with no record is fine.
func TestPcapHeaderOnly(t *testing.T) {
	r, frames, err := readBytes(newPcap(false, false, 0, 1).b, ReaderOptions{})
	if err != nil || len(frames) != 0 || r.Format() != "pcap" {
		t.Fatalf("%v %v", frames, err)
	}
}

// randomFrames returns n frames with deterministic random sizes, contents
// and times (at microsecond precision when usec).
func randomFrames(n int, usec bool, seed uint64) ([][]byte, []time.Time) {
	rng := rand.New(rand.NewPCG(seed, 7))
	data := make([][]byte, n)
	times := make([]time.Time, n)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range data {
		data[i] = payload(rng.IntN(1600), i)
		d := time.Duration(rng.Int64N(int64(1000 * time.Hour)))
		if usec {
			d = d.Truncate(time.Microsecond)
		}
		times[i] = t0.Add(d)
	}
	return data, times
}

// TestPcapAgainstPcapgo writes files with gopacket's pcapgo and checks that
// every frame, time and link type reads back identically; then it reads
// hand-built files with both readers and compares.
func TestPcapAgainstPcapgo(t *testing.T) {
	for _, tc := range []struct {
		name string
		nano bool
		link layers.LinkType
	}{
		{"usec", false, layers.LinkTypeEthernet},
		{"nsec", true, layers.LinkType(247)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, times := randomFrames(500, !tc.nano, 1)
			var buf bytes.Buffer
			w := pcapgo.NewWriter(&buf)
			if tc.nano {
				w = pcapgo.NewWriterNanos(&buf)
			}
			if err := w.WriteFileHeader(65536, tc.link); err != nil {
				t.Fatal(err)
			}
			var want []got
			for i, d := range data {
				off := int64(buf.Len())
				ci := gopacket.CaptureInfo{Timestamp: times[i], CaptureLength: len(d), Length: len(d) + i%3}
				if err := w.WritePacket(ci, d); err != nil {
					t.Fatal(err)
				}
				want = append(want, got{d, len(d) + i%3, times[i], uint16(tc.link), 0, i + 1, off})
			}
			_, frames, err := readBytes(buf.Bytes(), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sameFrames(t, frames, want)
		})
	}

	// The other way round: pcapgo reads hand-built files as this package does.
	for _, be := range []bool{false, true} {
		for _, nano := range []bool{false, true} {
			p := newPcap(be, nano, 65535, 113)
			for i := range 50 {
				p.rec(uint32(1e9+i*1000), uint32(i*12345), payload(i*31, i), uint32(i*31+i%2))
			}
			_, frames, err := readBytes(p.b, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pr, err := pcapgo.NewReader(bytes.NewReader(p.b))
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range frames {
				d, ci, err := pr.ReadPacketData()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(d, f.Data) || !ci.Timestamp.Equal(f.Time) || ci.Length != f.WireLen ||
					uint16(pr.LinkType()) != f.LinkType {
					t.Fatalf("be %v nano %v frame %d: pcapgo %v %d, got %v", be, nano, i+1, ci.Timestamp, ci.Length, f)
				}
			}
			if _, _, err := pr.ReadPacketData(); err != io.EOF {
				t.Fatalf("pcapgo has more frames: %v", err)
			}
		}
	}
}

// bigFile returns a pcap file of about size octets of records of varied,
// odd sizes (so they straddle buffer boundaries), with the frames expected.
func bigFile(size int, big int) ([]byte, []got) {
	p := newPcap(false, true, 1<<20, 1)
	var want []got
	for i := 0; len(p.b) < size; i++ {
		n := (i*7919 + 13) % 9001
		if i == 37 {
			n = big // one record larger than the 1 MiB buffer's comfort
		}
		off := int64(len(p.b))
		d := payload(n, i)
		p.rec(uint32(i), uint32(i), d, 0)
		want = append(want, got{d, n, time.Unix(int64(i), int64(i)).UTC(), 1, 0, i + 1, off})
	}
	return p.b, want
}

// TestLargeAndStraddling reads records straddling the buffer boundary and
// one of 200 KiB, with the default buffer and a tiny one that must grow, and
// through readers that return one octet or half the request at a time.
func TestLargeAndStraddling(t *testing.T) {
	file, want := bigFile(3<<20+12345, 200<<10)
	sources := map[string]func() io.Reader{
		"bytes":   func() io.Reader { return bytes.NewReader(file) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(file)) },
		"half":    func() io.Reader { return iotest.HalfReader(bytes.NewReader(file)) },
		"dataerr": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(file)) },
		"gzip": func() io.Reader {
			return bytes.NewReader(gz(t, file, gzip.BestSpeed))
		},
	}
	for name, src := range sources {
		for _, size := range []int{0, 64, 4096} {
			r, frames, err := readFrom(src(), ReaderOptions{bufSize: size})
			if err != nil {
				t.Fatalf("%s/%d: %v", name, size, err)
			}
			sameFrames(t, frames, want)
			if size == 64 && len(r.buf) > 2*(200<<10+16) {
				t.Errorf("%s: buffer grew to %d", name, len(r.buf))
			}
		}
	}
}

// TestLimitRaisedBySnaplen: the default cap follows a larger snap length,
// up to 16 MiB, and MaxRecord fixes it; a record over a non-zero snap
// length within the cap is read (and flagged, TestRecordLengthIssues).
func TestLimitRaisedBySnaplen(t *testing.T) {
	d := payload(300<<10, 1)
	for _, tc := range []struct {
		snap uint32
		max  int
		ok   bool
	}{
		{65535, 0, false},
		{1 << 20, 0, true},
		{0xffffffff, 0, true},
		{1 << 20, 100 << 10, false},
		{0, 400 << 10, true},     // no snap length given
		{0, 1 << 30, true},       // reduced to 16 MiB
		{65535, 400 << 10, true}, // within the cap, over the snap length: read, flagged
	} {
		p := newPcap(true, false, tc.snap, 1).rec(1, 2, d, 0)
		_, frames, err := readBytes(p.b, ReaderOptions{MaxRecord: tc.max})
		if (err == nil) != tc.ok || (tc.ok && len(frames) != 1) {
			t.Errorf("snap %d max %d: %d frames, %v", tc.snap, tc.max, len(frames), err)
		}
	}
}

// TestGzip reads gzip-compressed pcap and pcapng files, one and two
// members, and checks that they read as the plain files do.
func TestGzip(t *testing.T) {
	pcap, _ := bigFile(300<<10, 5000)
	ng, _ := sectionsFile()
	for name, plain := range map[string][]byte{"pcap": pcap, "pcapng": ng} {
		_, want, err := readBytes(plain, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cut := len(plain)/2 + 3 // the members split a record
		two := append(gz(t, plain[:cut], gzip.BestCompression), gz(t, plain[cut:], gzip.NoCompression)...)
		for kind, file := range map[string][]byte{"one": gz(t, plain, gzip.DefaultCompression), "two": two} {
			for _, oneByte := range []bool{false, true} {
				var src io.Reader = bytes.NewReader(file)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				r, frames, err := readFrom(src, ReaderOptions{})
				if err != nil {
					t.Fatalf("%s/%s: %v", name, kind, err)
				}
				sameFrames(t, frames, want)
				if !r.Compressed() || r.Format() != name {
					t.Errorf("%s/%s: Compressed %v Format %s", name, kind, r.Compressed(), r.Format())
				}
			}
		}
	}
}

// TestZeroAllocs asserts that Next allocates nothing per frame, with and
// without read-ahead (at its real chunk sizes).
func TestZeroAllocs(t *testing.T) {
	if testReadahead.on {
		t.Skip("tiny read-ahead chunks join buffers for most records; the real sizes are tested in the first run")
	}
	for name, file := range map[string][]byte{"pcap": benchPcap(16 << 20), "pcapng": benchPcapng(16 << 20),
		"pcap read-ahead": benchPcap(16 << 20), "pcapng read-ahead": benchPcapng(16 << 20)} {
		r, err := NewReader(bytes.NewReader(file), ReaderOptions{Readahead: strings.HasSuffix(name, "read-ahead")})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		// Past the growth of the first buffers and chunks.
		for range 5000 {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(5000, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Next", name, allocs)
		}
	}
}

// TestOpen opens a file by name and through "-" (openCapture).
func TestOpen(t *testing.T) {
	file, want := bigFile(100<<10, 10)
	name := t.TempDir() + "/x.pcap"
	if err := writeFile(name, file); err != nil {
		t.Fatal(err)
	}
	r, err := openCapture(name, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frames, err := readAll(r.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sameFrames(t, frames, want)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != errClosed {
		t.Errorf("Next after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := openCapture(name+".missing", ReaderOptions{}); err == nil {
		t.Error("missing file opened")
	}
	// "-" is standard input.
	stdin := swapStdin(t, name)
	r, err = openCapture("-", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frames, err = readAll(r.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sameFrames(t, frames, want)
	r.Close()
	if _, err := stdin.Stat(); err != nil {
		t.Errorf("Close closed standard input: %v", err)
	}
}
