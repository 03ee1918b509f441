//go:build linux || darwin || freebsd || netbsd || openbsd

package pcapfile

import (
	"encoding/binary"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Reading a regular file through a memory mapping (Options.Map), on the
// systems where x/sys/unix maps files: the file is mapped a window at a
// time and records are slices of the window, so nothing is copied; this
// saves the copy out of the page cache, which is most of the cost of a
// capture of large frames. A window is unmapped when the next is taken (a
// frame is valid only until the next call of Next in any case), so that
// the mapping adds about a window to the resident memory. Before each new
// window the file's size is checked: a file that shrank ends there. A file truncated while a window is in use faults when
// the window is read: the caller turns the fault into an error
// (debug.SetPanicOnFault).

// mapWindow is the size of a window (a variable for the tests).
var mapWindow = 1 << 20

// A file is mapped only when its records are large: at least
// mapMinRecord octets on average over the first mapSample octets. Reading
// through a mapping leaves each record's first touch to the parser, which
// then waits for memory; copying, the read-ahead goroutine pays for that on
// the other core, but it copies every octet. The copy costs more once most
// octets of a record are never looked at (bulk data behind a few headers),
// which is the case from about 2 KiB a record: on the 2-core machine of
// docs/performance.md the 1 GiB mixed workload (1.1 KiB a record) reads in
// 0.20 s copied and 0.27 s mapped, the NFS-like one (2.8 KiB) in 0.16 s
// copied and 0.12 s mapped. (Variables for the tests.)
var (
	mapMinRecord = 2048
	mapSample    = 4 << 20
)

// largeRecords reports whether the records of the capture in f average
// mapMinRecord octets or more over its first mapSample octets (pcap and
// pcapng; false for anything else, or when no whole record is there).
func largeRecords(f *os.File, size int64) bool {
	b := make([]byte, min(int64(mapSample), size))
	n, _ := f.ReadAt(b, 0)
	b = b[:n]
	if len(b) < 28 {
		return false
	}
	var order binary.ByteOrder
	off, records := 0, 0
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		order = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		order = binary.BigEndian
	case 0x0a0d0d0a: // pcapng: the byte-order magic of the first section
		order = binary.LittleEndian
		if binary.LittleEndian.Uint32(b[8:]) != 0x1a2b3c4d {
			order = binary.BigEndian
		}
		for off+12 <= len(b) {
			l := int(order.Uint32(b[off+4:]))
			if l < 12 || off+l > len(b) {
				break
			}
			if t := order.Uint32(b[off:]); t == 6 || t == 3 { // EPB, SPB
				records++
			}
			off += l
		}
		return records > 0 && off >= mapMinRecord*records
	default:
		return false
	}
	for off = 24; off+16 <= len(b); records++ {
		l := int(order.Uint32(b[off+8:]))
		if l < 0 || off+16+l > len(b) {
			break
		}
		off += 16 + l
	}
	return records > 0 && off-24 >= mapMinRecord*records
}

// errShrank ends a mapped file that became shorter while it was read.
var errShrank = errors.New("the file became shorter while it was read")

type mapping struct {
	f    *os.File
	size int64 // the file's size when it was opened
	win  []byte
}

// mapFile starts mapping src when it is a regular file that is not empty
// and does not start with the gzip magic; nil otherwise, and nothing of src
// is consumed.
func mapFile(src io.Reader) *mapping {
	f, ok := src.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 {
		return nil
	}
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); compressionOf(magic[:n]) != compNone || !largeRecords(f, st.Size()) {
		return nil
	}
	return &mapping{f: f, size: st.Size()}
}

// window maps at least n octets from the page that holds file offset pos
// (all that is left of the file when fewer), and returns the window and its
// offset.
func (m *mapping) window(pos int64, n int) ([]byte, int64, error) {
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
	if m.win != nil {
		_ = unix.Munmap(m.win)
	}
	m.win = b
	return b, base, nil
}

func (m *mapping) close() {
	if m.win != nil {
		_ = unix.Munmap(m.win)
		m.win = nil
	}
}
