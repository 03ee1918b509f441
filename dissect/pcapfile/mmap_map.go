//go:build linux || darwin || freebsd || netbsd || openbsd

package pcapfile

import (
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
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 2 && magic[0] == gzipMagic0 && magic[1] == gzipMagic1 {
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
