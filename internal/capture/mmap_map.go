//go:build linux || darwin || freebsd || netbsd || openbsd

package capture

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// Reading a regular file through a memory mapping (ReaderOptions.Map), on the
// systems where x/sys/unix maps files: the file is mapped a window at a
// time and records are slices of the window, so nothing is copied.
//
// A goroutine of its own maps the windows ahead of the parser, up to
// mapAhead of them besides the one it is mapping, and fills each window's
// page tables as it maps it (MAP_POPULATE on Linux; elsewhere it touches
// a word of each page), so that the page faults are taken on the other
// core and the parser meets none. Windows overlap by mapOverlap octets, so
// that a record cut by a window's end is usually whole in the next one; a
// longer record is mapped on its own when needed, as it is when no window
// mapped ahead holds it. When the parser takes a window it hands the one
// before to the goroutine to unmap (a frame is valid only until the next
// call of Next in any case), so that the mapping adds about mapAhead+2
// windows to the resident memory.
//
// Before the parser takes a window the file's size is checked: a file
// that shrank ends there. A file truncated while a window is in use
// faults when the window is read: the caller turns the fault into an
// error (debug.SetPanicOnFault). The goroutine ignores the faults of its
// own touches: the parser meets the same fault at the same place.

// mapWindow is the size of a window; windows overlap by mapOverlap (so
// that a record cut by a window's end is whole in the next), and up to
// mapAhead are mapped ahead of the one in use (variables for the tests).
var (
	mapWindow  = 2 << 20
	mapOverlap = 64 << 10
	mapAhead   = 2
)

// A file is mapped when its records average at least mapMinRecord octets
// over its first mapSample octets. Read through a mapping, the parser waits
// for memory at each record's first touch and at each octet it reads,
// which the read-ahead goroutine's copy would have brought into the cache
// from the other core; but the copy moves every octet, and on a 2-core
// machine the copy's core is the one the rest of the work shares. The copy
// costs more than the waits once a record holds more than a few headers
// the parser reads. Interleaved runs of the workloads of
// docs/performance.md on 2026-12-02, copied against mapped: mixed (1.1
// KiB a record: RoCEv2, TCP and small UDP) 253 against 198 ms, its 64 MiB
// cut 24 against 18 ms; the iWARP one (1.4 KiB, every octet read for the
// CRC) 478 against 477 ms; 1M TCP flows of 400-octet segments (470 octets
// a record) 567 against 598 ms; REQ+REP pairs (300 octets) 1665 against
// 1619 ms. Records that small gain nothing, and the mapping's windows (see
// mapWindow) take more memory than the read-ahead's chunks. (Variables for
// the tests.)
var (
	mapMinRecord = 1024
	mapSample    = 4 << 20
)

// worthMapping reports whether the capture in f is worth mapping, by its
// first mapSample octets (pcap and pcapng; false for anything else, or
// when no whole record is there). A file of whose sampled records a
// quarter or more get sums from summer (when set: FPDUs whose CRCs the
// read-ahead computes, sums.go) is read ahead instead, whatever their
// length: the sums take the CRCs off the parser's core, which a mapping
// cannot.
func worthMapping(f *os.File, size int64, summer Summer) bool {
	b := make([]byte, min(int64(mapSample), size))
	n, _ := f.ReadAt(b, 0)
	b = b[:n]
	if len(b) < 28 {
		return false
	}
	// The records are followed as the read-ahead follows them (sums.go),
	// the whole sample one chunk, its sums counted.
	sc := &sumScan{fn: summer, limit: hardMaxRecord}
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		sc.link = uint16(binary.LittleEndian.Uint32(b[20:]))
	case 0xd4c3b2a1, 0x4d3cb2a1:
		sc.be, sc.link = true, uint16(binary.BigEndian.Uint32(b[20:]))
	case 0x0a0d0d0a: // pcapng: its first section's header gives the byte order
		sc.ng = true
	default:
		return false
	}
	if !sc.ng {
		sc.off, sc.next, sc.wholeEnd = pcapHeaderLen, pcapHeaderLen, pcapHeaderLen
	}
	var out *sums
	if summer != nil {
		out = &sums{count: true}
	}
	sc.scan(b[sc.off:], out)
	if !sc.ng {
		sc.wholeEnd -= pcapHeaderLen // the records' octets, not the file header's
	}
	p := sc.packets
	return p > 0 && sc.wholeEnd >= int64(mapMinRecord*p) && sc.summed*4 < p
}

// errShrank ends a mapped file that became shorter while it was read.
var errShrank = errors.New("the file became shorter while it was read")

// A view is one window: b maps the file from offset base.
type view struct {
	b    []byte
	base int64
}

type mapping struct {
	f    *os.File
	size int64 // the file's size when it was opened
	win  []byte

	ahead   chan view     // windows mapped ahead, in file order
	release chan []byte   // windows the parser is done with, for the goroutine to unmap
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the goroutine has returned
	pending view          // a window taken from ahead that is not yet of use (b nil: none)
}

// mapFile starts mapping src when it is a regular file that is not empty
// and does not start with the gzip magic; nil otherwise, and nothing of src
// is consumed.
func mapFile(src io.Reader, summer Summer) *mapping {
	f, ok := src.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 {
		return nil
	}
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); compressionOf(magic[:n]) != compNone || !worthMapping(f, st.Size(), summer) {
		return nil
	}
	m := &mapping{f: f, size: st.Size(), ahead: make(chan view, mapAhead), release: make(chan []byte, mapAhead+2),
		stop: make(chan struct{}), done: make(chan struct{})}
	go m.mapWindows()
	return m
}

// mapWindows maps the windows of the file in order and warms them, until
// the file ends, a mapping fails or close stops it, and unmaps those the
// parser releases until close.
func (m *mapping) mapWindows() {
	defer close(m.done)
	defer close(m.ahead)
	debug.SetPanicOnFault(true) // this goroutine only
	step := int64(mapWindow)
	for base := int64(0); base < m.size; base += step {
		length := min(step+int64(mapOverlap), m.size-base)
		b, err := unix.Mmap(int(m.f.Fd()), base, int(length), unix.PROT_READ, unix.MAP_SHARED|mapPopulate)
		if err != nil {
			return // the parser maps it itself, and meets the error
		}
		warm(b)
		for sent := false; !sent; {
			select {
			case m.ahead <- view{b: b, base: base}:
				sent = true
			case old := <-m.release:
				_ = unix.Munmap(old)
			case <-m.stop:
				_ = unix.Munmap(b)
				return
			}
		}
	}
	for {
		select {
		case old := <-m.release:
			_ = unix.Munmap(old)
		case <-m.stop:
			return
		}
	}
}

// warm makes sure that the pages of the window b are mapped, where mmap
// did not populate them: it touches a word of each page. A fault (the file
// was truncated) ends it.
func warm(b []byte) {
	if mapPopulate != 0 {
		return
	}
	defer func() { _ = recover() }()
	touchPages(b)
}

func touchPages(b []byte) {
	var x byte
	for i := 0; i < len(b); i += 4096 {
		x += b[i]
	}
	runtime.KeepAlive(x) // the loads are the point
}

// window returns a window that holds at least n octets from file offset
// pos (all that is left of the file when fewer), and its offset: the
// next window mapped ahead when it holds them, else one mapped now from
// the page that holds pos.
func (m *mapping) window(pos int64, n int) ([]byte, int64, error) {
	for {
		v, ok := m.next()
		if !ok || v.base > pos {
			break // none mapped ahead holds pos: every later one starts after it
		}
		if end := v.base + int64(len(v.b)); end >= pos+int64(n) || end == m.size {
			m.pending = view{}
			if st, err := m.f.Stat(); err != nil || st.Size() < end {
				_ = unix.Munmap(v.b)
				return nil, 0, errShrank
			}
			m.use(v.b)
			return v.b, v.base, nil
		}
		// Too short for a long record: a later one may start before pos.
		m.pending = view{}
		_ = unix.Munmap(v.b)
	}
	page := int64(os.Getpagesize())
	base := pos &^ (page - 1)
	length := max(int64(mapWindow), pos-base+int64(n))
	length = min(length, m.size-base)
	if length <= 0 {
		return nil, 0, io.EOF
	}
	if st, err := m.f.Stat(); err != nil || st.Size() < base+length {
		return nil, 0, errShrank
	}
	b, err := unix.Mmap(int(m.f.Fd()), base, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, 0, err
	}
	_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
	m.use(b)
	return b, base, nil
}

// next returns the pending window, or the next one mapped ahead (which
// becomes pending); false when the goroutine mapped its last.
func (m *mapping) next() (view, bool) {
	if m.pending.b != nil {
		return m.pending, true
	}
	v, ok := <-m.ahead
	if !ok {
		return view{}, false
	}
	m.pending = v
	return v, true
}

// use makes b the window in use, unmapping the previous one.
func (m *mapping) use(b []byte) {
	if m.win != nil {
		m.unmap(m.win)
	}
	m.win = b
}

// unmap hands a window the parser is done with to the goroutine, which
// unmaps it (so that the parser does not wait for the munmap); when the
// goroutine has returned, or is behind, it is unmapped here.
func (m *mapping) unmap(b []byte) {
	select {
	case m.release <- b:
	default:
		_ = unix.Munmap(b)
	}
}

func (m *mapping) close() {
	close(m.stop)
	<-m.done
	for len(m.release) > 0 {
		_ = unix.Munmap(<-m.release)
	}
	for v := range m.ahead {
		_ = unix.Munmap(v.b)
	}
	if m.pending.b != nil {
		_ = unix.Munmap(m.pending.b)
		m.pending = view{}
	}
	if m.win != nil {
		_ = unix.Munmap(m.win)
		m.win = nil
	}
}
