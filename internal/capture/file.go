package capture

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// InputError is a problem reading one input; it names the input.
type InputError struct {
	Name string
	Err  error
}

func (e *InputError) Error() string {
	name := record.EscapeControl(e.Name) // one line, and nothing for the terminal to act on
	if name == "-" {
		name = "standard input"
	}
	return name + ": " + e.Err.Error()
}

func (e *InputError) Unwrap() error { return e.Err }

// File is the Source of one capture file, pcap or pcapng, gzip-compressed
// or not; "-" is stdin. It is opened at the first call of Next and read
// ahead in a goroutine of its own. With hash, its SHA-256 is computed for
// its Input: for a regular file on another core, for a stream as it is
// read. A damaged file ends at the damage with an *InputError naming the
// file, the frame and the offset.
func File(name string, stdin io.Reader, hash bool) Source {
	return &fileSource{in: record.Input{Name: name}, stdin: stdin, hash: hash}
}

// FileTee is File, with a copy of every octet read of the input (as
// stored: compressed if it is) written to tee, whose errors are its own
// to keep: what -w's second pass reads again of an input that cannot be
// read twice (standard input, a pipe, a FIFO).
func FileTee(name string, stdin io.Reader, hash bool, tee io.Writer) Source {
	return &fileSource{in: record.Input{Name: name}, stdin: stdin, hash: hash, tee: tee}
}

// Reread is a source that reads r (a copy FileTee made) as the input
// named name.
func Reread(name string, r io.Reader) Source {
	return &fileSource{in: record.Input{Name: name}, stdin: r, reread: true}
}

// fileSource is the state of File.
type fileSource struct {
	budget *budget.Budget
	in     record.Input
	stdin  io.Reader
	hash   bool
	tee    io.Writer // FileTee
	reread bool      // Reread: stdin is read, under the input's name
	opened bool
	frames int // frames handed on

	src        io.Reader
	stream     bool          // a pipe, FIFO or terminal: read as data arrives, and given up when ctx ends
	hashed     func() string // waits for the SHA-256
	closeSrc   func()
	rd         *Reader
	closed     bool
	release    func()      // SetRelease
	summer     Summer      // SetSummer
	sumsWanted func() bool // SetSummer
	faults     bool        // panics on memory faults were turned on for the mapping (mapped.go)
	oldFault   bool        // the setting before
}

// SetBudget has the file's reader charge the run's memory budget for the
// buffers of large records (ReaderOptions.Budget). The run loop calls it
// before the first call of Next, once it knows the budget.
func (s *fileSource) SetBudget(b *budget.Budget) { s.budget = b }

// SetRelease keeps the octets of the frames handed out valid until fn is
// called (Releaser): the reader calls it before it moves or lets go of
// them. Set before the first Next.
func (s *fileSource) SetRelease(fn func()) { s.release = fn }

// SetSummer has the frames read ahead carry the sums fn computes while
// wanted says so (Summed). Set before the first Next.
func (s *fileSource) SetSummer(fn Summer, wanted func() bool) { s.summer, s.sumsWanted = fn, wanted }

// A capture file keeps its frames until it says, and shows those to come.
var (
	_ Releaser = (*fileSource)(nil)
	_ Looker   = (*fileSource)(nil)
	_ Summed   = (*fileSource)(nil)
)

// Ahead shows the octets of the i-th frame after the one handed out last,
// as far as the reader holds them already (Reader.Ahead), or nil.
func (s *fileSource) Ahead(i int) []byte {
	if s.rd == nil {
		return nil
	}
	return s.rd.Ahead(i)
}

// maxLinkType bounds the LINKTYPE values: the registry has fewer than 300,
// and the USER values are 147 to 162.
const maxLinkType = 512

func (s *fileSource) Next(ctx context.Context) (*Frame, error) {
	if s.rd == nil {
		if s.opened {
			return nil, io.EOF // failed before, or closed
		}
		s.opened = true
		if err := s.open(ctx); err != nil {
			if ctx.Err() != nil && (s.stream || errors.Is(err, ctx.Err())) {
				return nil, ctx.Err() // interrupted while waiting for a writer, or for the file header
			}
			return nil, s.fail(err)
		}
	}
	if s.frames&1023 == 0 && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	f, err := s.rd.Next()
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		if ctx.Err() != nil && s.stream {
			return nil, ctx.Err() // interrupted while the stream was idle: not damage
		}
		return nil, s.fail(err)
	}
	if f.LinkType >= maxLinkType {
		// Not a LINKTYPE value at all: a damaged header, not a capture of
		// something else.
		return nil, s.fail(&Error{Offset: f.Offset, Frame: f.Index, Msg: fmt.Sprintf(
			"link type %d is not a LINKTYPE value: the file (or interface) header is damaged", f.LinkType)})
	}
	s.frames++
	return f, nil // the reader's own: valid until the next call, as a Source's frame is
}

// fail records what stopped the file and returns it naming the file.
func (s *fileSource) fail(err error) error {
	s.in.Err = err
	return &InputError{Name: s.in.Name, Err: err}
}

func (s *fileSource) open(ctx context.Context) error {
	name := s.in.Name
	if s.reread {
		name = "-"
	}
	src, size, hashed, closeSrc, err := openInput(ctx, name, s.stdin, s.hash)
	if err != nil {
		return err
	}
	s.src, s.hashed, s.closeSrc = src, hashed, closeSrc
	s.in.Size = size
	// Standard input redirected from a regular file never waits for data:
	// it is read in large chunks, as a file is.
	s.stream = size < 0 && !(name == "-" && regularFile(s.stdin))
	if s.tee != nil {
		src = io.TeeReader(src, s.tee) // never mapped, so that the copy sees every octet
	}
	rd, err := NewReader(src, ReaderOptions{Readahead: true, Map: true, Stream: s.stream, Budget: s.budget, Release: s.release, Summer: s.summer, SumsWanted: s.sumsWanted})
	if err != nil {
		return err
	}
	s.rd = rd
	if rd.Mapped() {
		s.faults, s.oldFault = true, mapFaults(true)
	}
	s.in.Format = rd.Format()
	s.in.Compressed = rd.Compressed()
	s.in.Compression = rd.Compression()
	return nil
}

func (s *fileSource) Inputs() []record.Input { return []record.Input{s.in} }

// Close stops the read-ahead and the hashing, and completes the Input.
func (s *fileSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.rd != nil {
		s.in.LinkTypes = s.rd.LinkTypes()
	}
	if s.hashed != nil {
		s.in.SHA256 = s.hashed()
	}
	if s.rd != nil {
		s.rd.Close() // stops the read-ahead goroutine
		s.rd = nil
	}
	if s.faults {
		mapFaults(s.oldFault)
		s.faults = false
	}
	if s.closeSrc != nil {
		s.closeSrc()
	}
	// A stream's size is what was read of it, whatever the way out.
	if cr, ok := s.src.(*countingReader); ok {
		s.in.Size = cr.n
	}
	return nil
}

// openInput opens a capture file (or standard input) and starts its SHA-256
// when asked: for a regular file in a goroutine of its own that reads the
// file a second time (from the page cache), so that it runs on another core;
// for a stream through the reader itself. hashed waits for the result.
func openInput(ctx context.Context, name string, stdin io.Reader, hash bool) (src io.Reader, size int64, hashed func() string, closeSrc func(), err error) {
	none := func() string { return "" }
	if name == "-" {
		var in io.Reader = stdin
		done := func() {}
		if !regularFile(stdin) {
			cr := newCtxReader(ctx, stdin)
			in, done = cr, cr.close
		}
		if !hash {
			return &countingReader{r: in}, -1, none, done, nil
		}
		h := sha256.New()
		return &countingReader{r: io.TeeReader(in, h)}, -1, func() string { return hex.EncodeToString(h.Sum(nil)) }, done, nil
	}
	f, err := openFile(ctx, name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name is said once, by InputError
		}
		return nil, 0, nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, 0, nil, nil, errors.New("is a directory")
	}
	size = st.Size()
	if !st.Mode().IsRegular() {
		in := newCtxReader(ctx, f)
		done := func() {
			in.close()
			f.Close()
		}
		if !hash {
			return &countingReader{r: in}, -1, none, done, nil
		}
		h := sha256.New()
		return &countingReader{r: io.TeeReader(in, h)}, -1, func() string { return hex.EncodeToString(h.Sum(nil)) }, done, nil
	}
	if !hash {
		return f, size, none, func() { f.Close() }, nil
	}
	result := make(chan string, 1)
	hctx, cancel := context.WithCancel(ctx)
	go func() { result <- hashFile(hctx, name) }()
	var sum string
	got := false
	return f, size, func() string {
			if !got {
				sum, got = <-result, true
			}
			return sum
		}, func() {
			cancel()
			f.Close()
		}, nil
}

// hashFile returns the SHA-256 of a file, or "" when it cannot be read or
// ctx ends first.
func hashFile(ctx context.Context, name string) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if ctx.Err() != nil {
			return ""
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil))
		}
		if err != nil {
			return ""
		}
	}
}

// countingReader counts the octets of a stream whose size is not known
// beforehand.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ctxReader reads a stream (standard input, a FIFO) in a goroutine of its
// own, so that a read waiting for data that may never come gives up as soon
// as ctx ends (SIGINT, SIGTERM): Read then returns ctx.Err(). The goroutine
// reads into a buffer of its own, never into the caller's, and is left
// blocked in its read when abandoned (the process is about to end; close
// stops it otherwise).
type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	started bool
	res     chan ctxRead
	next    chan struct{} // the buffer is free: read again
	done    chan struct{}
	left    []byte // of the last read, not yet returned
	err     error  // of the last read, returned once left is empty
	closed  bool
}

type ctxRead struct {
	b   []byte
	err error
}

// ctxReadSize is the goroutine's buffer: a pipe holds 64 KiB.
const ctxReadSize = 64 << 10

func newCtxReader(ctx context.Context, r io.Reader) *ctxReader {
	return &ctxReader{ctx: ctx, r: r, res: make(chan ctxRead), next: make(chan struct{}, 1), done: make(chan struct{})}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.left) == 0 && c.err == nil {
		if err := c.ctx.Err(); err != nil {
			return 0, err
		}
		if !c.started {
			c.started = true
			go c.loop()
		} else {
			c.next <- struct{}{}
		}
		select {
		case got := <-c.res:
			c.left, c.err = got.b, got.err
		case <-c.ctx.Done():
			c.err = c.ctx.Err()
			return 0, c.err
		}
	}
	n := copy(p, c.left)
	c.left = c.left[n:]
	if len(c.left) > 0 || n > 0 && c.err == nil {
		return n, nil
	}
	return n, c.err
}

func (c *ctxReader) loop() {
	buf := make([]byte, ctxReadSize)
	for {
		n, err := c.r.Read(buf)
		if n < 0 || n > len(buf) {
			n, err = 0, errors.New("invalid count from the input's reader")
		}
		select {
		case c.res <- ctxRead{buf[:n], err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
		select {
		case <-c.next:
		case <-c.done:
			return
		}
	}
}

// close stops the goroutine once its current read returns.
func (c *ctxReader) close() {
	if !c.closed {
		c.closed = true
		close(c.done)
	}
}

// regularFile reports whether r is an open regular file (standard input
// redirected from one), which never waits for data.
func regularFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// openFile opens a file for reading. Opening a FIFO waits for its writer:
// that wait gives up when ctx ends (SIGINT, SIGTERM), and a FIFO opened
// after all is closed again.
func openFile(ctx context.Context, name string) (*os.File, error) {
	if st, err := os.Stat(name); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return os.Open(name)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(name)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
