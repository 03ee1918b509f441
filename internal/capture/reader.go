package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
)

// Limits. See the package documentation.
const (
	defaultMaxRecord = 256 << 10              // default cap on one record's captured length
	hardMaxRecord    = 16 << 20               // the cap can never be raised above this
	maxBlock         = hardMaxRecord + 64<<10 // cap on a pcapng block's total length
	defaultBufSize   = 1 << 16                // initial read buffer (grown for large records)
	minBufSize       = 64                     // smallest buffer accepted (tests use small ones)
	gzipInBufSize    = 64 << 10               // buffer for the compressed input
	maxIfaces        = 1 << 16                // interfaces per pcapng section
	maxStalls        = 100                    // consecutive empty reads before giving up
)

// Fixed sizes and magic octets.
const (
	pcapHeaderLen = 24 // pcap file header
	pcapRecordLen = 16 // pcap record header
	minSHBLen     = 28 // smallest Section Header Block
	gzipMagic0    = 0x1f
	gzipMagic1    = 0x8b
)

// Values of Reader.format.
const (
	formatPcap   = 1
	formatPcapng = 2
)

// ReaderOptions tune a Reader. The zero value is ready to use.
type ReaderOptions struct {
	// MaxRecord caps the captured length accepted for one record; 0 means
	// the default (256 KiB = 262144 octets, raised to the file's snap length
	// if that is larger, but never above 16 MiB). A value above 16 MiB is
	// reduced to 16 MiB.
	MaxRecord int

	// Readahead reads (and decompresses) the source in a goroutine of its
	// own, a chunk ahead of the parsing, so that both use a core. Close
	// stops the goroutine.
	Readahead bool

	// Map reads a regular, uncompressed file through a memory mapping
	// instead (on Unix), a window at a time: records are slices of the
	// mapping and nothing is copied. The file must not shrink while it is
	// read: a file that is found shorter at a window's start ends there
	// with an error, but one truncated under the window in use faults when
	// it is read, which the caller turns into an error
	// (debug.SetPanicOnFault); Mapped says whether the mapping is in use.
	Map bool
	// Summer, with Readahead, computes sums over each record's octets on
	// the read-ahead goroutine; they come with the frames (Frame.Sums).
	// SumsWanted, when set, says before each chunk whether to (sums.go);
	// the mapping's choice (worthMapping) asks Summer whatever it says.
	Summer     Summer
	SumsWanted func() bool
	// Stream says the source is a pipe, a FIFO or a terminal, where data
	// may stop for a while: the read-ahead then hands on what each read
	// returns at once instead of waiting for a full chunk, so that every
	// frame can be dissected as soon as it arrives.
	Stream bool
	// Budget, when set, is the run's memory budget: the buffers of large
	// records are charged to it (they cannot be refused: a record must be
	// read to be skipped), so that the rest of the run holds less while
	// they are there. The read-ahead's chunks (at most prefetchDepth of
	// 1.25 MiB) are part of the budget's fixed allowance.
	Budget *budget.Budget
	// Release, when set, keeps the octets of the frames handed out valid
	// after the next call of Next: until the reader calls Release, which
	// it does before it moves, reuses or lets go of any of them (in a
	// later Next, or in Close).
	Release func()

	bufSize int // initial buffer size; 0 means defaultBufSize (tests only)
}

// Reader reads the packet records of a capture file.
type Reader struct {
	// budget is the run's memory budget, charged for the buffers of large
	// records: held octets, until Close. The charge is the longest record
	// (or block) read so far beyond defaultBufSize, whatever the source:
	// a mapped file, a stream or a pipe hold different buffers for it, but
	// the charge, and so every decision the budget makes, is the same.
	budget *budget.Budget
	held   int
	// Input. Unread octets are buf[r:w]; buf[0] is at offset base of the
	// (decompressed) stream.
	src      io.Reader
	raw      *rawReader // compressed input, nil when not compressed
	comp     int        // compGzip, compZstd, compLZ4, or compNone
	compDone func()     // releases the decompressor
	buf      []byte
	r, w     int
	base     int64
	rerr     error // sticky error from src (io.EOF at its end)

	format     int
	limit      int    // current cap on a record's captured length
	fixedLimit bool   // limit given by the caller: never raised
	be         bool   // big-endian (pcap file, or current pcapng section)
	nano       bool   // pcap: nanosecond timestamps
	snaplen    uint32 // pcap: the file header's snap length (0: none given)
	link       uint16
	n          int   // packet records returned so far
	err        error // sticky error returned by Next
	frame      Frame

	release func()   // ReaderOptions.Release
	mp      *mapping // the mapped file (ReaderOptions.Map), or nil
	// sizes are the last distinct record lengths handed out of a mapped
	// file, the latest first (hintNext).
	sizes  [4]int
	sizeAt [4]int      // the record count when each of sizes was last handed out
	pf     *prefetcher // read-ahead, when on
	// The sums of the records read ahead (sums.go) not yet handed out:
	// from sumAt on, each with its record's stream offset.
	sumOffs []int64
	sums    []Sum
	sumAt   int
	pfOwned bool   // buf is a chunk buffer of pf
	gather  []byte // read-ahead: where the last record longer than a chunk's headroom was gathered
	// sinceGather counts the octets read ahead since then.
	sinceGather int

	// pcapng state.
	ifaces  []iface // interfaces of the current section
	secBase int     // file-wide number of the current section's interface 0

	links []uint16        // distinct link types in order of first appearance
	seen  [1 << 10]uint64 // bit set of the link types in links
}

// NewReader returns a Reader for the capture file read from src. It reads
// and checks the file header (after gzip decompression, if the content is
// gzip), so a file that is not a capture file fails here.
func NewReader(src io.Reader, opts ReaderOptions) (*Reader, error) {
	r, err := newReader(src, opts)
	if err != nil && r != nil && r.mp != nil {
		r.mp.close()
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func newReader(src io.Reader, opts ReaderOptions) (*Reader, error) {
	r := &Reader{limit: defaultMaxRecord, budget: opts.Budget, release: opts.Release}
	if opts.MaxRecord > 0 {
		r.limit = min(opts.MaxRecord, hardMaxRecord)
		r.fixedLimit = true
	}
	size := opts.bufSize
	if size <= 0 {
		size = defaultBufSize
	}
	r.buf = make([]byte, max(size, minBufSize))

	// Look at the first octets without buffering more: a decompressor
	// needs them back. A mapped file (never a compressed one) needs no
	// look: its window holds the start of the file.
	var head [4]byte
	var n int
	var err error
	if m := mapFileIf(opts.Map, src, opts.Summer); m != nil {
		r.src, r.mp = src, m // the first fill maps the first window
	} else {
		n, err = readHead(src, head[:])
	}
	if k := compressionOf(head[:n]); r.mp == nil && k != compNone {
		r.comp = k
		r.raw = &rawReader{head: head[:n], r: src, err: err}
		zr, done, err := decompressor(k, r.raw)
		if err != nil {
			return r, r.readError(err, 0, 0, "", 0, 0)
		}
		r.src, r.compDone = zr, done
	} else {
		r.src = src
		r.w = copy(r.buf, head[:n])
		r.rerr = err
	}

	if err := r.fill(4); err != nil {
		switch {
		case err != io.EOF:
			return r, r.readError(err, 0, 0, "", 0, 0)
		case r.w == 0:
			return r, newError(ErrEmpty, 0, 0, "empty file")
		}
	}
	b := r.buf[:r.w]
	switch {
	case hasPrefix(b, 0xd4, 0xc3, 0xb2, 0xa1):
		r.be, r.nano = false, false
	case hasPrefix(b, 0xa1, 0xb2, 0xc3, 0xd4):
		r.be, r.nano = true, false
	case hasPrefix(b, 0x4d, 0x3c, 0xb2, 0xa1):
		r.be, r.nano = false, true
	case hasPrefix(b, 0xa1, 0xb2, 0x3c, 0x4d):
		r.be, r.nano = true, true
	case hasPrefix(b, 0x0a, 0x0d, 0x0d, 0x0a):
		r.format = formatPcapng
		if err := r.readSection(true); err != nil {
			return r, err
		}
		r.startReadahead(opts)
		return r, nil
	default:
		return r, r.notCapture(b)
	}
	r.format = formatPcap
	if err := r.readPcapHeader(); err != nil {
		return r, err
	}
	r.startReadahead(opts)
	return r, nil
}

// testReadahead turns read-ahead on for every Reader, with chunks from
// size octets up to four times that (tests only: the suite runs once
// without, once with).
var testReadahead struct {
	on   bool
	size int
}

// startReadahead starts the read-ahead goroutine when asked, unless the
// source has already ended.
func (r *Reader) startReadahead(opts ReaderOptions) {
	first, most := prefetchFirst, prefetchMax
	switch {
	case testReadahead.on:
		first, most = testReadahead.size, 4*testReadahead.size
	case !opts.Readahead:
		return
	}
	if r.rerr != nil || r.mp != nil {
		return
	}
	var scan *sumScan
	if opts.Summer != nil {
		scan = newSumScan(r, opts.Summer)
	}
	r.pf = startPrefetch(r.src, first, most, opts.Stream, scan, opts.SumsWanted)
}

// readHead reads up to len(b) octets from src, stopping at the first error
// (which it returns with the count read).
func readHead(src io.Reader, b []byte) (int, error) {
	n, stalls := 0, 0
	for n < len(b) {
		m, err := src.Read(b[n:])
		if m < 0 || m > len(b)-n {
			return n, errBadCount
		}
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			if stalls++; stalls >= maxStalls {
				return n, io.ErrNoProgress
			}
		}
	}
	return n, nil
}

// readSome reads at least one octet (or an error) from src into b, with
// one read unless reads return nothing.
func readSome(src io.Reader, b []byte) (int, error) {
	for stalls := 0; ; {
		m, err := src.Read(b)
		if m < 0 || m > len(b) {
			return 0, errBadCount
		}
		if m > 0 || err != nil {
			return m, err
		}
		if stalls++; stalls >= maxStalls {
			return 0, io.ErrNoProgress
		}
	}
}

// hasPrefix reports whether b starts with the given octets, or is a
// non-empty prefix of them when b is shorter.
func hasPrefix(b []byte, m ...byte) bool {
	if len(b) == 0 {
		return false
	}
	for i := 0; i < len(b) && i < len(m); i++ {
		if b[i] != m[i] {
			return false
		}
	}
	return true
}

// notCapture explains why the first octets b (fewer than 4 only at the end
// of the input) are not those of a capture file. Short prefixes of the pcap
// and pcapng magics do not come here: their file header is cut short.
func (r *Reader) notCapture(b []byte) error {
	if len(b) == 1 && b[0] == gzipMagic0 && r.raw == nil {
		return newError(ErrTruncated, 0, 0, "gzip stream cut short")
	}
	hex := fmt.Sprintf("% x", b[:min(len(b), 4)])
	if r.raw != nil {
		return newError(ErrNotCapture, 0, 0, "not a capture file (pcap or pcapng inside %s): starts with %s", r.compKind(), hex)
	}
	return newError(ErrNotCapture, 0, 0, "not a capture file (pcap, pcapng, gzip, zstd or lz4): starts with %s", hex)
}

// Close releases the Reader; its source is the caller's to close. Frames
// returned earlier become invalid; Next returns an error afterwards.
func (r *Reader) Close() error {
	if r.release != nil {
		r.release()
	}
	if r.pf != nil {
		r.pf.close()
		r.pf = nil
	}
	if r.compDone != nil {
		r.compDone()
		r.compDone = nil
	}
	r.err = errClosed
	r.budget.Release(budget.Records, r.held)
	r.held = 0
	r.buf, r.r, r.w, r.gather = nil, 0, 0, nil
	if r.mp != nil {
		r.mp.close()
		r.mp = nil
	}
	return nil
}

// collect is called before a buffer of size octets is made:
// with the budget over, a large one is made after a collection. (The
// budget is charged by the longest record, in fill.)
func (r *Reader) collect(size int) {
	if size >= collectBefore && r.budget != nil {
		// Collect, and give the freed memory back to the system, before
		// the buffer is made: its pages then take the garbage's place
		// rather than adding their size to the process's peak.
		debug.FreeOSMemory()
	}
}

// collectBefore is the size of a record buffer before whose making, with
// the budget over, the garbage is collected (once per run: the buffer is
// kept for the next large record).
const collectBefore = 4 << 20

// Mapped reports whether the file is read through a memory mapping.
func (r *Reader) Mapped() bool { return r.mp != nil }

// mapFileIf starts mapping src when asked and src can be mapped.
func mapFileIf(on bool, src io.Reader, summer Summer) *mapping {
	if !on {
		return nil
	}
	return mapFile(src, summer)
}

// fillMapped is fillSlow over a mapped file: it takes the next window, from
// the page of the first unread octet, until n octets are available or the
// file ends.
func (r *Reader) fillMapped(n int) error {
	if r.w-r.r >= n {
		return nil
	}
	if r.rerr != nil {
		return r.rerr
	}
	pos := r.base + int64(r.r)
	if pos+int64(r.w-r.r) >= r.mp.size {
		r.rerr = io.EOF
		return io.EOF
	}
	b, base, err := r.mp.window(pos, n)
	if err != nil {
		r.rerr = err
		return err
	}
	r.buf, r.base, r.r, r.w = b, base, int(pos-base), len(b)
	if r.w-r.r < n {
		r.rerr = io.EOF
		return io.EOF
	}
	return nil
}

// Format returns "pcap" or "pcapng".
func (r *Reader) Format() string {
	if r.format == formatPcapng {
		return "pcapng"
	}
	return "pcap"
}

// Compressed reports whether the file is compressed (gzip, zstd or lz4).
func (r *Reader) Compressed() bool { return r.raw != nil }

// Compression names the file's compression as a file suffix: "gz", "zst"
// or "lz4"; "" when it is not compressed.
func (r *Reader) Compression() string { return compressionName[r.comp] }

// LinkTypes returns the distinct link types of the interfaces seen so far,
// in order of first appearance. The slice is a copy.
func (r *Reader) LinkTypes() []uint16 {
	return append([]uint16(nil), r.links...)
}

// addLink records a link type for LinkTypes.
func (r *Reader) addLink(t uint16) {
	bit := uint64(1) << (t % 64)
	if r.seen[t/64]&bit == 0 {
		r.seen[t/64] |= bit
		r.links = append(r.links, t)
	}
}

// raiseLimit raises the default record cap to a snap length, up to the
// hard maximum, unless the caller fixed the cap.
func (r *Reader) raiseLimit(snaplen uint32) {
	if !r.fixedLimit && uint64(snaplen) > uint64(r.limit) {
		r.limit = int(min(snaplen, hardMaxRecord))
	}
}

// Next returns the next packet record, or io.EOF at a clean end of the
// file. The Frame and its Data are reused by the following call. After an
// error every call returns the same error.
func (r *Reader) Next() (*Frame, error) {
	if r.err != nil {
		return nil, r.err
	}
	var err error
	if r.format == formatPcap {
		err = r.nextPcap()
	} else {
		err = r.nextPcapng()
	}
	if err != nil {
		r.err = err
		return nil, err
	}
	return &r.frame, nil
}

// offset returns the stream offset of the next unread octet.
func (r *Reader) offset() int64 { return r.base + int64(r.r) }

// fill makes at least n unread octets available in buf[r:w]. It fails only
// when the source fails first (io.EOF at its end); fewer than n octets are
// then available. Callers must re-slice buf afterwards: it may move.
func (r *Reader) fill(n int) error {
	r.account(n)
	if r.w-r.r >= n {
		return nil
	}
	return r.fillSlow(n)
}

// account charges the budget for a record (or block) of n octets when it
// is the longest yet beyond defaultBufSize (see Reader.held).
func (r *Reader) account(n int) {
	if n > r.held && n > defaultBufSize {
		r.budget.Force(budget.Records, n-r.held)
		r.held = n
	}
}

func (r *Reader) fillSlow(n int) error {
	if r.release != nil {
		r.release() // what follows may move the octets of frames handed out
	}
	if r.mp != nil {
		return r.fillMapped(n)
	}
	if r.rerr != nil {
		return r.rerr
	}
	if r.pf != nil {
		return r.fillPrefetch(n)
	}
	// Move the unread octets to the front when n octets do not fit after r.
	if r.r+n > len(r.buf) && r.r > 0 {
		r.base += int64(r.r)
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	stalls := 0
	for r.w-r.r < n {
		if r.w == len(r.buf) {
			// Full of real data and still too small (so r is 0 and n is
			// larger than the buffer): grow, at most doubling, so that a
			// false length in a short input costs little memory.
			size := min(2*len(r.buf), n)
			r.collect(size)
			nb := make([]byte, size)
			copy(nb, r.buf[:r.w])
			r.buf = nb
		}
		m, err := r.src.Read(r.buf[r.w:])
		if m < 0 || m > len(r.buf)-r.w {
			m, err = 0, errBadCount
		}
		r.w += m
		if err == nil && m == 0 {
			if stalls++; stalls >= maxStalls {
				err = io.ErrNoProgress
			}
		}
		if err != nil {
			r.rerr = err
			if r.w-r.r >= n {
				return nil
			}
			return err
		}
	}
	return nil
}

// readError turns a failed fill into the error to report: what (a record,
// a block...) at offset off, frame fn, is cut short with got of want octets.
func (r *Reader) readError(err error, off int64, fn int, what string, got, want int) error {
	gz := r.raw != nil && (r.raw.err == nil || err != r.raw.err)
	switch {
	case err == io.EOF:
		return newError(ErrTruncated, off, fn, "%s cut short: %d of %d octets", what, got, want)
	case gz && err == io.ErrUnexpectedEOF:
		e := newError(ErrTruncated, off, fn, "%s stream cut short", r.compKind())
		if what != "" && got > 0 {
			e.Msg = fmt.Sprintf("%s cut short: %d of %d octets (%s stream cut short)", what, got, want, r.compKind())
		} else {
			e.Frame = 0
		}
		e.Err = err
		return e
	case gz:
		e := newError(ErrGzip, off, fn, "corrupt %s stream: %v", r.compKind(), err)
		e.Err = err
		return e
	default:
		e := newError(nil, off, fn, "read error: %v", err)
		e.Err = err
		return e
	}
}

// compKind names the compression in messages.
func (r *Reader) compKind() string {
	switch r.comp {
	case compZstd:
		return "zstd"
	case compLZ4:
		return "lz4"
	}
	return "gzip"
}

// errBadCount reports a source reader returning an impossible count.
var errBadCount = errors.New("invalid count from source reader")

// rawReader is the compressed input: the octets read while detecting the
// format, then the source. It remembers the source's error so that a read
// error is not mistaken for corruption, and turns a source that keeps
// returning nothing into an error (the decompressor would wait forever).
type rawReader struct {
	head   []byte
	r      io.Reader
	err    error
	stalls int
}

func (p *rawReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.r.Read(b)
	switch {
	case n < 0 || n > len(b):
		n, err = 0, errBadCount
	case n > 0 || err != nil || len(b) == 0:
		p.stalls = 0
	default:
		if p.stalls++; p.stalls >= maxStalls {
			err = io.ErrNoProgress
		}
	}
	if err != nil {
		p.err = err
	}
	return n, err
}

// u16, u32 and u64 decode in the byte order be (small enough to inline).
func u16(b []byte, be bool) uint16 {
	if be {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func u32(b []byte, be bool) uint32 {
	if be {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func u64(b []byte, be bool) uint64 {
	if be {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}
