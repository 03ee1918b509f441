package capture

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"regexp"
	"testing"
	"testing/iotest"
)

// TestErrors checks the exact error of every kind of damage, its class,
// and that the frames before the damage are returned first.
func TestErrors(t *testing.T) {
	type tc struct {
		name   string
		file   []byte
		opts   ReaderOptions
		frames int    // frames returned before the error
		want   string // exact error text
		kind   error
	}
	var cases []tc
	add := func(name string, file []byte, frames int, want string, kind error) {
		cases = append(cases, tc{name: name, file: file, frames: frames, want: want, kind: kind})
	}

	// Not a capture file at all.
	add("empty", nil, 0, "offset 0: empty file", ErrEmpty)
	add("html", []byte("<!DOCTYPE html>"), 0,
		"offset 0: not a capture file (pcap, pcapng, gzip, zstd or lz4): starts with 3c 21 44 4f", ErrNotCapture)
	add("two octets", []byte("ab"), 0,
		"offset 0: not a capture file (pcap, pcapng, gzip, zstd or lz4): starts with 61 62", ErrNotCapture)
	add("gzip of text", gz(t, []byte("hello, world"), 5), 0,
		"offset 0: not a capture file (pcap or pcapng inside gzip): starts with 68 65 6c 6c", ErrNotCapture)
	add("gzip of nothing", gz(t, nil, 5), 0, "offset 0: empty file", ErrEmpty)

	// File headers cut short or wrong.
	p := newPcap(false, false, 65535, 1)
	add("pcap header cut", p.b[:10], 0, "offset 0: file header cut short: 10 of 24 octets", ErrTruncated)
	add("pcap magic cut", p.b[:2], 0, "offset 0: file header cut short: 2 of 24 octets", ErrTruncated)
	add("gzip magic only", []byte{0x1f, 0x8b}, 0, "offset 0: gzip stream cut short", ErrTruncated)
	add("pcap version", newPcapVersion(true, false, 3, 0, 65535, 1).b, 0,
		"offset 0: unknown pcap version 3.0", ErrMalformed)
	ng := newNg(false)
	add("pcapng header cut", ng.b[:10], 0, "offset 0: file header cut short: 10 of 28 octets", ErrTruncated)
	add("pcapng header cut after length", ng.b[:20], 0,
		fmt.Sprintf("offset 0: file header cut short: 20 of %d octets", len(ng.b)), ErrTruncated)
	add("pcapng header cut late", ng.b[:len(ng.b)-1], 0,
		fmt.Sprintf("offset 0: file header cut short: %d of %d octets", len(ng.b)-1, len(ng.b)), ErrTruncated)
	add("pcapng magic cut", ng.b[:3], 0, "offset 0: file header cut short: 3 of 28 octets", ErrTruncated)
	add("pcapng version", (&ngFile{}).shb(2, 0).b, 0, "offset 0: unknown pcapng version 2.0", ErrMalformed)
	bom := bytes.Clone(ng.b)
	copy(bom[8:], []byte{1, 2, 3, 4})
	add("pcapng byte order", bom, 0, "offset 0: section header block: bad byte-order magic 01 02 03 04", ErrMalformed)

	add("lone gzip octet", []byte{0x1f}, 0, "offset 0: gzip stream cut short", ErrTruncated)
	shb := bytes.Clone(ng.b)
	shb[len(shb)-4] ^= 0x40
	add("pcapng header trailer", shb, 0, fmt.Sprintf("offset 0: block trailing length %d does not match leading length %d",
		len(ng.b)^0x40, len(ng.b)), ErrMalformed)
	shb = bytes.Clone(ng.b)
	shb[4] = 24
	add("pcapng header short", shb, 0, "offset 0: section header block too short: 24 octets (minimum 28)", ErrMalformed)

	// pcap records.
	p = newPcap(false, false, 65535, 1).rec(1, 2, payload(60, 1), 0).rec(3, 4, payload(1514, 2), 0)
	off := len(p.b)
	cut := newPcap(false, false, 65535, 1).raw(p.b[24:]).recHeader(5, 6, 1514, 1514).raw(payload(100, 3))
	add("record cut", cut.b, 2, fmt.Sprintf("frame 3 at offset %d: record cut short: 100 of 1514 octets", off), ErrTruncated)
	add("record header cut", append(bytes.Clone(p.b), 1, 2, 3, 4, 5), 2,
		fmt.Sprintf("frame 3 at offset %d: record header cut short: 5 of 16 octets", off), ErrTruncated)
	add("caplen over limit", newPcap(false, false, 65535, 1).recHeader(0, 0, 300000, 300000).b, 0,
		"frame 1 at offset 24: captured length 300000 exceeds limit 262144", ErrTooLarge)
	add("caplen over raised limit", newPcap(true, true, 0xffffffff, 1).recHeader(0, 0, 20_000_000, 20_000_000).b, 0,
		"frame 1 at offset 24: captured length 20000000 exceeds limit 16777216", ErrTooLarge)

	snapNg := newNg(false).idb(1, 100).epb(0, 1, payload(60, 1), 0)
	atSnap := len(snapNg.b)
	add("pcapng snap length 0 is unlimited", newNg(false).idb(1, 0).epb(0, 1, payload(60, 1), 0).raw([]byte{1}).b, 1,
		fmt.Sprintf("offset %d: block header cut short: 1 of 8 octets", atSnap), ErrTruncated)

	// pcapng blocks.
	base := newNg(false).idb(1, 0).epb(0, 1, payload(60, 1), 0)
	at := len(base.b)
	block := func(typ, leading, trailing uint32, body int) []byte {
		w := &ngFile{b: bytes.Clone(base.b)}
		w.raw(w.u32(typ)).raw(w.u32(leading)).raw(make([]byte, body)).raw(w.u32(trailing))
		return w.b
	}
	add("block length small", block(5, 8, 8, 0), 1,
		fmt.Sprintf("offset %d: block total length 8 too small (minimum 12)", at), ErrMalformed)
	add("epb length small", block(6, 8, 8, 0), 1,
		fmt.Sprintf("frame 2 at offset %d: block total length 8 too small (minimum 12)", at), ErrMalformed)
	add("block length odd", block(5, 30, 30, 18), 1,
		fmt.Sprintf("offset %d: block total length 30 not a multiple of 4", at), ErrMalformed)
	add("block length huge", block(5, 0x7ffffff0, 0, 0), 1,
		fmt.Sprintf("offset %d: block total length 2147483632 exceeds limit 16842752", at), ErrTooLarge)
	add("trailer mismatch", block(5, 32, 99, 20), 1,
		fmt.Sprintf("offset %d: block trailing length 99 does not match leading length 32", at), ErrMalformed)
	add("epb too short", block(6, 28, 28, 16), 1,
		fmt.Sprintf("frame 2 at offset %d: enhanced packet block too short: 28 octets (minimum 32)", at), ErrMalformed)
	add("idb too short", block(1, 16, 16, 4), 1,
		fmt.Sprintf("offset %d: interface description block too short: 16 octets (minimum 20)", at), ErrMalformed)
	add("block header cut", append(bytes.Clone(base.b), 1, 2, 3, 4, 5), 1,
		fmt.Sprintf("offset %d: block header cut short: 5 of 8 octets", at), ErrTruncated)
	add("skipped block cut", block(5, 64, 64, 20)[:at+36], 1,
		fmt.Sprintf("offset %d: block cut short: 36 of 64 octets", at), ErrTruncated)

	add("pb too short", block(2, 28, 28, 16), 1,
		fmt.Sprintf("frame 2 at offset %d: packet block too short: 28 octets (minimum 32)", at), ErrMalformed)
	add("spb too short", block(3, 12, 12, 0), 1,
		fmt.Sprintf("frame 2 at offset %d: simple packet block too short: 12 octets (minimum 16)", at), ErrMalformed)
	idb := (&ngFile{b: bytes.Clone(base.b)}).idb(1, 0, base.tsresol(9)).b
	add("idb cut", idb[:at+10], 1,
		fmt.Sprintf("offset %d: interface description block cut short: 10 of %d octets", at, len(idb)-at), ErrTruncated)
	idb[len(idb)-1] = 1
	add("idb trailer", idb, 1,
		fmt.Sprintf("offset %d: block trailing length %d does not match leading length %d", at, 1<<24+len(idb)-at, len(idb)-at), ErrMalformed)
	spb := (&ngFile{b: bytes.Clone(base.b)}).spb(100, payload(100, 1)).b
	add("spb cut", spb[:at+50], 1,
		fmt.Sprintf("frame 2 at offset %d: simple packet block cut short: 50 of 116 octets", at), ErrTruncated)
	add("spb header cut", spb[:at+10], 1,
		fmt.Sprintf("frame 2 at offset %d: simple packet block cut short: 10 of 116 octets", at), ErrTruncated)
	spb[len(spb)-4] = 120
	add("spb trailer", spb, 1,
		fmt.Sprintf("frame 2 at offset %d: block trailing length 120 does not match leading length 116", at), ErrMalformed)
	epb := (&ngFile{b: bytes.Clone(base.b)}).epb(0, 2, payload(64, 2), 0).b
	add("epb header cut", epb[:at+20], 1,
		fmt.Sprintf("frame 2 at offset %d: enhanced packet block cut short: 20 of %d octets", at, len(epb)-at), ErrTruncated)
	epb[len(epb)-4] = 0
	add("epb trailer", epb, 1,
		fmt.Sprintf("frame 2 at offset %d: block trailing length %d does not match leading length %d", at, (len(epb)-at)&^0xff, len(epb)-at), ErrMalformed)

	w := &ngFile{b: bytes.Clone(base.b)}
	w.epb(0, 2, payload(64, 2), 0)
	add("epb cut", w.b[:at+50], 1,
		fmt.Sprintf("frame 2 at offset %d: enhanced packet block cut short: 50 of %d octets", at, len(w.b)-at), ErrTruncated)
	w = &ngFile{b: bytes.Clone(base.b)}
	add("epb unknown interface", w.epb(3, 2, payload(4, 2), 0).b, 1,
		fmt.Sprintf("frame 2 at offset %d: interface 3 not defined in section (1 defined)", at), ErrMalformed)
	add("packet before idb", newNg(true).epb(0, 1, payload(4, 1), 0).b, 0,
		"frame 1 at offset 48: packet block before any interface description block", ErrMalformed)
	add("spb before idb", newNg(true).spb(4, payload(4, 1)).b, 0,
		"frame 1 at offset 48: packet block before any interface description block", ErrMalformed)
	w = &ngFile{b: bytes.Clone(base.b)}
	add("epb over limit", w.raw(w.u32(6)).raw(w.u32(300032)).raw(w.u32(0)).raw(make([]byte, 8)).
		raw(w.u32(300000)).raw(w.u32(300000)).b, 1,
		fmt.Sprintf("frame 2 at offset %d: captured length 300000 exceeds limit 262144", at), ErrTooLarge)
	w = &ngFile{b: bytes.Clone(base.b)}
	w.raw(w.u32(6)).raw(w.u32(40)).raw(w.u32(0)).raw(make([]byte, 8)).raw(w.u32(12)).raw(w.u32(12)).
		raw(make([]byte, 8)).raw(w.u32(40))
	add("epb data past block", w.b, 1,
		fmt.Sprintf("frame 2 at offset %d: captured length 12 does not fit in a block of 40 octets", at), ErrMalformed)
	w = &ngFile{b: bytes.Clone(base.b)}
	w.raw(w.u32(3)).raw(w.u32(0x00100010)).raw(w.u32(1 << 20))
	add("spb over limit", w.b, 1,
		fmt.Sprintf("frame 2 at offset %d: captured length 1048576 exceeds limit 262144", at), ErrTooLarge)

	// A second section: its own interfaces only, and its own version.
	s2 := newNg(true).idb(1, 0).epb(0, 1, payload(8, 1), 0)
	bad := len(base.b) + len(s2.b)
	two := append(bytes.Clone(base.b), s2.epb(1, 1, payload(8, 1), 0).b...)
	add("interface of previous section", two, 2,
		fmt.Sprintf("frame 3 at offset %d: interface 1 not defined in section (1 defined)", bad), ErrMalformed)
	add("second section version", append(bytes.Clone(base.b), (&ngFile{be: true}).shb(2, 1).b...), 1,
		fmt.Sprintf("offset %d: unknown pcapng version 2.1", at), ErrMalformed)
	add("second section cut", append(bytes.Clone(base.b), newNg(true).b[:10]...), 1,
		fmt.Sprintf("offset %d: section header block cut short: 10 of 28 octets", at), ErrTruncated)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, size := range []int{0, 64} {
				opts := c.opts
				opts.bufSize = size
				checkError(t, c.file, opts, c.frames, c.want, c.kind)
			}
		})
	}
}

// checkError reads file and checks the frames before the error and the error.
func checkError(t *testing.T, file []byte, opts ReaderOptions, nframes int, want string, kind error) {
	t.Helper()
	r, frames, err := readBytes(file, opts)
	if err == nil {
		t.Fatalf("no error; %d frames", len(frames))
	}
	if err.Error() != want {
		t.Fatalf("error\n got %q\nwant %q", err, want)
	}
	if len(frames) != nframes {
		t.Errorf("%d frames before the error, want %d", len(frames), nframes)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error is not %v", kind)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("error is %T, not *Error", err)
	}
	if r != nil {
		if _, err2 := r.Next(); err2 != err {
			t.Errorf("error not sticky: %v", err2)
		}
	}
}

// TestGzipErrors: corruption and truncation of the compressed stream come
// after the frames decoded before them, with the frame and offset reached.
func TestGzipErrors(t *testing.T) {
	file, want := bigFile(400<<10, 3000)

	// A bad checksum is found at the very end.
	z := gz(t, file, gzip.BestSpeed)
	z[len(z)-8] ^= 0xff
	checkError(t, z, ReaderOptions{}, len(want),
		fmt.Sprintf("offset %d: corrupt gzip stream: gzip member checksum mismatch", len(file)), ErrGzip)

	// Stored blocks: damage the second block's header, inside the data.
	z = gz(t, file, gzip.NoCompression)
	second := 10 + 5 + 65535 // gzip header, first block header and data
	z[second+1] ^= 0xff
	r, frames, err := readBytes(z, ReaderOptions{})
	checkPrefix(t, frames, want, err, r, "corrupt gzip stream: flate: corrupt input before offset", ErrGzip)
	var ce flate.CorruptInputError
	if !errors.As(err, &ce) {
		t.Errorf("error does not wrap flate.CorruptInputError: %v", err)
	}

	// The compressed stream stops half-way.
	z = gz(t, file, gzip.NoCompression)
	r, frames, err = readBytes(z[:len(z)/2], ReaderOptions{})
	checkPrefix(t, frames, want, err, r, "gzip stream cut short", ErrTruncated)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error does not wrap io.ErrUnexpectedEOF: %v", err)
	}

	// Only the trailer is missing: all frames, then the error.
	z = gz(t, file, gzip.BestSpeed)
	checkError(t, z[:len(z)-4], ReaderOptions{}, len(want),
		fmt.Sprintf("offset %d: gzip stream cut short", len(file)), ErrTruncated)

	// A bad gzip header.
	checkError(t, []byte{0x1f, 0x8b, 99, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ReaderOptions{}, 0,
		"offset 0: corrupt gzip stream: invalid gzip member header", ErrGzip)
}

// checkPrefix checks that frames are a prefix of want, and that err names
// the next frame, its offset and the message msg.
func checkPrefix(t *testing.T, frames, want []got, err error, r *Reader, msg string, kind error) {
	t.Helper()
	if err == nil || len(frames) >= len(want) {
		t.Fatalf("%d frames, error %v", len(frames), err)
	}
	sameFrames(t, frames, want[:len(frames)])
	next := want[len(frames)]
	re := fmt.Sprintf(`^frame %d at offset %d: .*%s`, next.Index, next.Offset, regexp.QuoteMeta(msg))
	if !regexp.MustCompile(re).MatchString(err.Error()) {
		t.Errorf("error %q does not match %q", err, re)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("error is not %v", kind)
	}
}

// TestReadErrors: a failing source is reported as a read error with the
// frame reached, wraps the cause, and is not mistaken for gzip damage.
func TestReadErrors(t *testing.T) {
	file, want := bigFile(200<<10, 3000)
	at := 100_000
	for _, compressed := range []bool{false, true} {
		data := file[:at]
		if compressed {
			data = gz(t, file, gzip.NoCompression)[:at]
		}
		r, frames, err := readFrom(&errAfter{data: data, err: errBoom}, ReaderOptions{})
		checkPrefix(t, frames, want, err, r, "read error: boom", nil)
		if !errors.Is(err, errBoom) {
			t.Errorf("compressed %v: error does not wrap the cause: %v", compressed, err)
		}
		if errors.Is(err, ErrGzip) {
			t.Errorf("compressed %v: read error taken for gzip damage", compressed)
		}
	}

	// An error at once, while the format is detected.
	_, _, err := readFrom(iotest.ErrReader(errBoom), ReaderOptions{})
	if err == nil || err.Error() != "offset 0: read error: boom" || !errors.Is(err, errBoom) {
		t.Errorf("immediate error: %v", err)
	}
	// A source that never returns anything.
	_, _, err = readFrom(zeroReader{}, ReaderOptions{})
	if !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("stalled source: %v", err)
	}
	// A timeout after the first read.
	_, _, err = readFrom(iotest.TimeoutReader(bytes.NewReader(file)), ReaderOptions{})
	if err == nil || err.Error() != "offset 0: read error: timeout" || !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("timeout: %v", err)
	}
}

// TestMisbehavingSources: a source that stops making progress after some
// data, or returns an impossible count, ends in an error, not a hang or a
// panic.
func TestMisbehavingSources(t *testing.T) {
	file, want := bigFile(200<<10, 3000)
	for _, compressed := range []bool{false, true} {
		data := file[:150_000]
		if compressed {
			data = gz(t, file, gzip.NoCompression)[:150_000]
		}
		r, frames, err := readFrom(&stallAfter{data: data}, ReaderOptions{})
		checkPrefix(t, frames, want, err, r, "read error: multiple Read calls return no data or error", nil)
		if !errors.Is(err, io.ErrNoProgress) {
			t.Errorf("compressed %v: %v", compressed, err)
		}
		r, frames, err = readFrom(&stallAfter{data: data, overcount: true}, ReaderOptions{})
		checkPrefix(t, frames, want, err, r, "read error: invalid count from source reader", nil)
	}
	_, _, err := readFrom(&stallAfter{overcount: true}, ReaderOptions{})
	if err == nil || err.Error() != "offset 0: read error: invalid count from source reader" {
		t.Errorf("overcount at once: %v", err)
	}
}

// stallAfter returns its data, then either nothing, forever, or a count
// larger than the buffer.
type stallAfter struct {
	data      []byte
	overcount bool
}

func (s *stallAfter) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		if s.overcount {
			return len(p) + 1, nil
		}
		return 0, nil
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

// TestTooManyInterfaces: a section may describe 65536 interfaces, not more;
// a new section starts again.
func TestTooManyInterfaces(t *testing.T) {
	w := newNg(false)
	for range maxIfaces {
		w.idb(1, 0)
	}
	w.epb(maxIfaces-1, 1, payload(4, 1), 0)
	w.raw(newNg(true).idb(2, 0).epb(0, 1, payload(4, 1), 0).b)
	r, frames, err := readBytes(w.b, ReaderOptions{})
	if err != nil || len(frames) != 2 || frames[0].Interface != maxIfaces-1 || frames[1].Interface != maxIfaces {
		t.Fatalf("%v %v", frames, err)
	}
	if lt := r.LinkTypes(); len(lt) != 2 {
		t.Errorf("LinkTypes %v", lt)
	}
	w = newNg(false)
	for range maxIfaces + 1 {
		w.idb(1, 0)
	}
	at := len(w.b) - 20
	checkError(t, w.b, ReaderOptions{}, 0, fmt.Sprintf("offset %d: more than 65536 interfaces in one section", at), ErrTooLarge)
}

// zeroReader returns nothing, forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }
