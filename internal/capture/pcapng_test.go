package capture

import (
	"bytes"
	"io"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

var ngBase = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// sectionsFile builds a pcapng file of three sections (little-, big-, then
// little-endian) with interfaces of link types 1, 113, 247, 276 and 1,
// several timestamp resolutions and offsets, every packet block type and
// blocks to skip. It returns the file and the frames it holds.
func sectionsFile() ([]byte, []got) {
	var want []got
	add := func(prefix int, w *ngFile, d []byte, wire int, tm time.Time, link uint16, ifc int, write func()) {
		off := int64(prefix + len(w.b))
		write()
		want = append(want, got{d, wire, tm, link, ifc, len(want) + 1, off})
	}

	// Section 1, little-endian: interfaces 0 (Ethernet, µs) and 1 (SLL, ns).
	s1 := newNg(false)
	s1.idb(1, 0)
	s1.idb(113, 65535, s1.tsresol(9), s1.opt(2, []byte("eth0")), s1.opt(0, nil))
	s1.block(4, payload(20, 0)) // Name Resolution Block
	d := payload(60, 1)
	us := ngBase.UnixMicro() + 123456
	add(0, s1, d, 60, time.UnixMicro(us).UTC(), 1, 0, func() { s1.epb(0, uint64(us), d, 0) })
	s1.block(5, payload(20, 0)) // Interface Statistics Block
	d = payload(1514, 2)
	ns := ngBase.UnixNano() + 987654321
	add(0, s1, d, 1514, time.Unix(0, ns).UTC(), 113, 1, func() { s1.epb(1, uint64(ns), d, 0) })
	s1.block(0xBAD, payload(13, 3)) // custom block
	d = payload(100, 4)
	add(0, s1, d, 200, time.Time{}, 1, 0, func() { s1.spb(200, d) }) // cut to the room in the block
	d = payload(70, 5)
	add(0, s1, d, 80, time.Unix(0, ns+1).UTC(), 113, 1, func() { s1.pb(1, uint64(ns+1), d, 80) })
	s1.block(0x12345678, payload(8, 6)) // unknown block
	d = payload(40, 6)
	add(0, s1, d, 1000, time.UnixMicro(us+1).UTC(), 1, 0, func() { s1.epb(0, uint64(us+1), d, 1000) })

	// Section 2, big-endian: interfaces 2 (InfiniBand, 2^-20 s, snap 128),
	// 3 (SLL2, ns, +1000 s) and 4 (Ethernet, ms, -3600 s).
	p2 := len(s1.b)
	s2 := newNg(true)
	s2.idb(247, 128, s2.tsresol(0x80|20))
	s2.idb(276, 0, s2.tsresol(9), s2.tsoffset(1000))
	s2.idb(1, 0, s2.tsresol(3), s2.tsoffset(-3600))
	s2.block(0x0A, payload(16, 7)) // Decryption Secrets Block
	d = payload(64, 8)
	add(p2, s2, d, 64, ngBase.Add(500*time.Millisecond), 247, 2, func() {
		s2.epb(0, uint64(ngBase.Unix())<<20|1<<19, d, 0)
	})
	d = payload(33, 9)
	add(p2, s2, d, 33, time.Unix(1000, ngBase.UnixNano()+5).UTC(), 276, 3, func() {
		s2.epb(1, uint64(ngBase.UnixNano()+5), d, 0)
	})
	d = payload(300, 10)
	add(p2, s2, d[:128], 300, time.Time{}, 247, 2, func() { s2.spb(300, d) }) // cut to the snap length
	d = payload(1, 11)
	add(p2, s2, d, 1, time.UnixMilli(ngBase.UnixMilli()+7-3600_000).UTC(), 1, 4, func() {
		s2.epb(2, uint64(ngBase.UnixMilli()+7), d, 0)
	})
	s2.block(5, payload(24, 12))

	// Section 3, little-endian again: interface 5.
	p3 := p2 + len(s2.b)
	s3 := newNg(false)
	s3.idb(1, 0)
	d = payload(0, 13)
	add(p3, s3, d, 0, time.UnixMicro(us+2).UTC(), 1, 5, func() { s3.epb(0, uint64(us+2), d, 0) })

	return slices.Concat(s1.b, s2.b, s3.b), want
}

// TestPcapngSections reads sectionsFile whole and through small buffers.
func TestPcapngSections(t *testing.T) {
	file, want := sectionsFile()
	for _, size := range []int{0, 64, 100} {
		r, frames, err := readBytes(file, ReaderOptions{bufSize: size})
		if err != nil {
			t.Fatal(err)
		}
		sameFrames(t, frames, want)
		if r.Format() != "pcapng" || r.Compressed() {
			t.Errorf("Format %q Compressed %v", r.Format(), r.Compressed())
		}
		if lt := r.LinkTypes(); !slices.Equal(lt, []uint16{1, 113, 247, 276}) {
			t.Errorf("LinkTypes %v", lt)
		}
	}
}

// TestLinkTypesSoFar: LinkTypes grows as interfaces are met.
func TestLinkTypesSoFar(t *testing.T) {
	w := newNg(false).idb(276, 0).epb(0, 1, payload(4, 1), 0).idb(1, 0).idb(276, 0).epb(1, 1, payload(4, 1), 0)
	r, err := NewReader(bytes.NewReader(w.b), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lt := r.LinkTypes(); len(lt) != 0 {
		t.Errorf("before any IDB: %v", lt)
	}
	r.Next()
	if lt := r.LinkTypes(); !slices.Equal(lt, []uint16{276}) {
		t.Errorf("after one IDB: %v", lt)
	}
	r.Next()
	if lt := r.LinkTypes(); !slices.Equal(lt, []uint16{276, 1}) {
		t.Errorf("after three IDBs: %v", lt)
	}
}

// TestGarbledOptions: option lists that run out of bounds or hold odd
// values never cause an error; what was read before the damage counts.
func TestGarbledOptions(t *testing.T) {
	w := newNg(true)
	o := w.o()
	cases := [][]byte{
		o.AppendUint16(o.AppendUint16(nil, 9), 200), // length past the end
		{0, 9}, // half an option header
		append(w.opt(9, nil), w.opt(14, []byte{1, 2, 3})...),                // too short to use
		append(w.tsresol(9), o.AppendUint16(o.AppendUint16(nil, 14), 9)...), // resolution kept, offset out of bounds
		w.opt(9, []byte{0xff}), // 2^-127
		w.opt(9, []byte{0x7f}), // 10^-127
	}
	for i, opts := range cases {
		w.idb(uint16(i), 0, opts)
	}
	for i := range cases {
		w.epb(uint32(i), 1_000_000_000_000, payload(10, i), 0)
	}
	_, frames, err := readBytes(w.b, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantTimes := []time.Time{
		time.Unix(1e6, 0), time.Unix(1e6, 0), time.Unix(1e6, 0), time.Unix(1000, 0),
		time.Unix(0, 0), time.Unix(0, 0),
	}
	for i, f := range frames {
		if !f.Time.Equal(wantTimes[i]) {
			t.Errorf("interface %d: time %v, want %v", i, f.Time, wantTimes[i].UTC())
		}
	}
}

// TestScaleTime checks timestamp conversion for every if_tsresol value
// against exact arithmetic.
func TestScaleTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	stamps := []uint64{0, 1, 999_999, 1e9, 1<<63 - 1, 1 << 63, ^uint64(0)}
	for range 50 {
		stamps = append(stamps, rng.Uint64(), rng.Uint64()>>rng.IntN(64))
	}
	billion := big.NewInt(1e9)
	for res := range 256 {
		unit := new(big.Int) // units per second
		if res&0x80 != 0 {
			unit.Lsh(big.NewInt(1), uint(res&0x7f))
		} else {
			unit.Exp(big.NewInt(10), big.NewInt(int64(res)), nil)
		}
		for _, ts := range stamps {
			x := new(big.Int).SetUint64(ts)
			sec, rem := new(big.Int).QuoRem(x, unit, new(big.Int))
			ns := rem.Mul(rem, billion)
			ns.Quo(ns, unit)
			gs, gns := scaleTime(ts, uint8(res))
			if sec.Uint64() != gs || ns.Uint64() != gns {
				t.Fatalf("res %#x ts %d: got %d s %d ns, want %v s %v ns", res, ts, gs, gns, sec, ns)
			}
			// The fast paths agree with the general one.
			if res == 6 || res == 9 {
				f := iface{res: uint8(res)}
				got, out := f.time(ts)
				want := time.Unix(int64(gs), int64(gns))
				if gs > maxUnixTime {
					want = time.Time{} // after the year 9999
				}
				if !got.Equal(want) || out != (gs > maxUnixTime) {
					t.Fatalf("res %d ts %d: fast path %v (out of range %v), want %v", res, ts, got, out, want)
				}
			}
		}
	}
}

// TestPcapngAgainstPcapgo writes a file with pcapgo's NgWriter (several
// interfaces, statistics blocks) and reads it back; then pcapgo's NgReader
// reads a hand-built file as this package does.
func TestPcapngAgainstPcapgo(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{Name: "eth0", LinkType: layers.LinkTypeEthernet},
		pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "test", OS: "linux"}})
	if err != nil {
		t.Fatal(err)
	}
	links := []uint16{1, 113, 247, 276}
	for _, lt := range links[1:] {
		if _, err := w.AddInterface(pcapgo.NgInterface{LinkType: layers.LinkType(lt), SnapLength: 65535}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	data, times := randomFrames(400, false, 2)
	var want []got
	for i, d := range data {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		off := int64(buf.Len())
		ci := gopacket.CaptureInfo{Timestamp: times[i], CaptureLength: len(d), Length: len(d) + 4, InterfaceIndex: i % 4}
		if err := w.WritePacket(ci, d); err != nil {
			t.Fatal(err)
		}
		want = append(want, got{d, len(d) + 4, times[i], links[i%4], i % 4, i + 1, off})
		if i%100 == 0 {
			if err := w.WriteInterfaceStats(i%4, pcapgo.NgInterfaceStatistics{LastUpdate: times[i], PacketsDropped: 3, PacketsReceived: pcapgo.NgNoValue64}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, frames, err := readBytes(buf.Bytes(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameFrames(t, frames, want)
	if lt := r.LinkTypes(); !slices.Equal(lt, links) {
		t.Errorf("LinkTypes %v", lt)
	}

	// pcapgo reads a hand-built single-section file (µs, ns, offset) as we do.
	for _, be := range []bool{false, true} {
		h := newNg(be)
		h.idb(1, 0)
		h.idb(113, 0, h.tsresol(9), h.tsoffset(77))
		for i := range 60 {
			h.epb(uint32(i%2), 1_700_000_000_000_000+uint64(i)*1_234_567, payload(i*25, i), uint32(i*25+i%3))
		}
		_, frames, err := readBytes(h.b, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nr, err := pcapgo.NewNgReader(bytes.NewReader(h.b), pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range frames {
			d, ci, err := nr.ReadPacketData()
			if err != nil {
				t.Fatal(err)
			}
			intf, _ := nr.Interface(ci.InterfaceIndex)
			if !bytes.Equal(d, f.Data) || !ci.Timestamp.Equal(f.Time) || ci.Length != f.WireLen ||
				ci.InterfaceIndex != f.Interface || uint16(intf.LinkType) != f.LinkType {
				t.Fatalf("be %v frame %d: pcapgo %v %d if%d, got %v", be, i+1, ci.Timestamp, ci.Length, ci.InterfaceIndex, f)
			}
		}
		if _, _, err := nr.ReadPacketData(); err != io.EOF {
			t.Fatalf("pcapgo has more frames: %v", err)
		}
	}
}

// TestTimeOutOfRange: a timestamp that, with the interface's if_tsresol and
// if_tsoffset, falls outside the years 1970 to 9999 is flagged and read as
// no time, never wrapped; the bounds themselves are in range.
func TestTimeOutOfRange(t *testing.T) {
	const last = 253402300799 // 9999-12-31T23:59:59Z
	for _, tc := range []struct {
		name   string
		res    byte // if_tsresol (0: absent, microseconds)
		offset int64
		ts     uint64
		want   time.Time // zero: out of range
	}{
		{"epoch", 0, 0, 0, time.Unix(0, 0)},
		{"2026 in microseconds", 0, 0, 1767225600e6, time.Unix(1767225600, 0)},
		{"largest microseconds", 0, 0, ^uint64(0), time.Time{}},
		{"largest nanoseconds (2554)", 9, 0, ^uint64(0), time.Unix(int64(^uint64(0)/1e9), int64(^uint64(0)%1e9))},
		{"last second of 9999", 0x80, 0, last, time.Unix(last, 0)},
		{"first second of 10000", 0x80, 0, last + 1, time.Time{}},
		{"largest seconds", 0x80, 0, ^uint64(0), time.Time{}},
		{"offset back before 1970", 0, -1, 0, time.Time{}},
		{"offset back to 1970", 9, -10, 10e9, time.Unix(0, 0)},
		{"smallest offset", 0x80, -1 << 63, 1 << 63, time.Unix(0, 0)},
		{"offset past 9999", 0, last, 1e6, time.Time{}},
		{"largest offset", 0, 1<<63 - 1, 0, time.Time{}},
	} {
		w := newNg(false).shb(1, 0)
		var opts [][]byte
		if tc.res != 0 {
			opts = append(opts, w.tsresol(tc.res))
		}
		if tc.offset != 0 {
			opts = append(opts, w.tsoffset(tc.offset))
		}
		w.idb(1, 0, opts...).epb(0, tc.ts, payload(60, 1), 0)
		rd, err := NewReader(bytes.NewReader(w.b), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := rd.Next()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !f.Time.Equal(tc.want) || (f.Issue&TimeOutOfRange != 0) != tc.want.IsZero() {
			t.Errorf("%s: time %v, out of range %v; want %v", tc.name, f.Time, f.Issue&TimeOutOfRange != 0, tc.want)
		}
		if y := f.Time.Year(); !f.Time.IsZero() && (y < 1970 || y > 9999) {
			t.Errorf("%s: year %d", tc.name, y)
		}
	}
}
