package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Live is a live capture on one or more interfaces, read together: the
// Source of a live run. Each interface is read in a goroutine of its own
// from the first call of Next; frames are handed on in the order they
// arrive, and numbered in that order, which is the order of the -w file. The capture ends when ctx ends (Ctrl-C, SIGTERM) or its duration
// passed: the frames already captured are still handed on, then Next
// returns ctx.Err() or io.EOF. An interface that fails ends it at once.
type Live struct {
	handles  []Handle
	duration time.Duration
	inputs   []record.Input

	frames chan frame    // from the readers
	free   chan []byte   // frame buffers to reuse
	stop   chan struct{} // closed to stop the readers
	wg     sync.WaitGroup
	timer  *time.Timer  // the duration; nil without one
	idle   *time.Ticker // how often Next checks for idleness

	started bool
	stopped bool   // the readers were stopped; what they queued is still handed on
	end     error  // what Next returns once the queue is empty
	n       int    // frames handed on
	cur     Frame  // the last one
	buf     []byte // its buffer, reused once the next one is asked for
}

// frame is a frame handed from a reader goroutine to Next.
type frame struct {
	src     int
	data    []byte
	wireLen int
	ts      time.Time
	err     error
}

// OpenLive opens a capture on each interface (see OpenInterface) to be read
// together, for at most duration (0: until ctx ends). When one cannot be
// opened, those opened before are closed.
func OpenLive(ifaces []string, opts LiveOptions, duration time.Duration) (*Live, error) {
	var hs []Handle
	for _, name := range ifaces {
		h, err := OpenInterface(name, opts)
		if err != nil {
			for _, h := range hs {
				h.Close()
			}
			return nil, err
		}
		hs = append(hs, h)
	}
	return NewLive(hs, duration), nil
}

// NewLive reads handles already open together, for at most duration
// (0: until ctx ends). The capture owns them: Close closes them.
func NewLive(handles []Handle, duration time.Duration) *Live {
	c := &Live{handles: handles, duration: duration}
	for _, h := range handles {
		c.inputs = append(c.inputs, record.Input{Name: h.Name(), Format: "live", LinkTypes: []uint16{h.LinkType()}})
	}
	return c
}

// Names lists the interfaces, in order.
func (c *Live) Names() []string {
	names := make([]string, len(c.handles))
	for i, h := range c.handles {
		names[i] = h.Name()
	}
	return names
}

// Inputs describes the interfaces: their names, link types, and the octets
// captured on each.
func (c *Live) Inputs() []record.Input { return append([]record.Input(nil), c.inputs...) }

// start starts a reader on each interface, and the clock.
func (c *Live) start() {
	c.started = true
	c.frames = make(chan frame, 256)
	c.free = make(chan []byte, 512)
	c.stop = make(chan struct{})
	for i, h := range c.handles {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			read(i, h, c.frames, c.free, c.stop)
		}()
	}
	if c.duration > 0 {
		c.timer = time.NewTimer(c.duration)
	}
	c.idle = time.NewTicker(PollInterval)
}

// Next returns the next frame captured, ErrIdle when none came for
// a poll interval, and what ended the capture once the frames captured
// before its end were handed on.
func (c *Live) Next(ctx context.Context) (*Frame, error) {
	if !c.started && !c.stopped {
		c.start()
	}
	if c.buf != nil { // the previous frame is done with
		select {
		case c.free <- c.buf[:0]:
		default:
		}
		c.buf = nil
	}
	var timer <-chan time.Time
	if c.timer != nil {
		timer = c.timer.C
	}
	for {
		if c.stopped {
			select {
			case f := <-c.frames:
				return c.take(f)
			default:
				return nil, c.end
			}
		}
		select {
		case <-ctx.Done():
			c.halt(ctx.Err())
		case <-timer:
			c.halt(io.EOF)
		case f := <-c.frames:
			return c.take(f)
		case <-c.idle.C:
			// Idle: nothing came since the last tick.
			if len(c.frames) == 0 {
				return nil, ErrIdle
			}
		}
	}
}

// take hands on a frame from a reader, or the failure of its interface,
// which ends the capture at once: what is queued is not handed on.
func (c *Live) take(f frame) (*Frame, error) {
	if f.err != nil {
		c.halt(io.EOF)
		c.frames = nil // nothing more
		return nil, fmt.Errorf("capture on %s failed: %w", c.handles[f.src].Name(), f.err)
	}
	c.n++
	c.inputs[f.src].Size += int64(len(f.data))
	fr := &c.cur
	fr.Data, fr.WireLen, fr.Time = f.data, f.wireLen, f.ts
	fr.LinkType, fr.Index, fr.Input = c.handles[f.src].LinkType(), c.n, f.src
	c.buf = f.data
	return fr, nil
}

// halt stops the readers and closes the interfaces; end is what Next
// returns once the frames they queued were handed on.
func (c *Live) halt(end error) {
	if c.stopped {
		return
	}
	c.stopped, c.end = true, end
	if c.started {
		close(c.stop)
		c.wg.Wait()
		if c.timer != nil {
			c.timer.Stop()
		}
		c.idle.Stop()
	}
	for _, h := range c.handles {
		h.Close()
	}
}

// Close ends the capture, if it has not ended; the frames it queued are
// dropped. It may be called more than once.
func (c *Live) Close() error {
	c.halt(io.EOF)
	c.frames = nil
	return nil
}

// read reads one interface until stop, handing copies of its frames on.
func read(i int, h Handle, out chan<- frame, free chan []byte, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		data, wire, ts, err := h.Read()
		if err != nil {
			if errors.Is(err, ErrTimeout) {
				continue
			}
			select {
			case out <- frame{src: i, err: err}:
			case <-stop:
			}
			return
		}
		var buf []byte
		select {
		case buf = <-free:
		default:
		}
		buf = append(buf[:0], data...)
		select {
		case out <- frame{src: i, data: buf, wireLen: wire, ts: ts}:
		case <-stop:
			return
		}
	}
}

// LiveFile is the capture file (-w) a live capture writes as it goes: a
// FrameWriter, buffered, which the run loop flushes when the capture is
// idle and at least every FlushInterval, so that a capture that is killed
// leaves its frames.
type LiveFile struct {
	path string
	f    *os.File
	w    *Writer
}

// CreateFile starts the capture file at path for the frames of c: pcapng
// (one interface per capture interface), or pcap for a ".pcap" name. It
// refuses before creating the file, which would empty it, when a pcap file
// cannot hold the interfaces' link types. Its errors name the file.
func (c *Live) CreateFile(path string) (*LiveFile, error) {
	pcapng := !strings.HasSuffix(strings.ToLower(path), ".pcap")
	links := make([]uint16, len(c.handles))
	for i, h := range c.handles {
		links[i] = h.LinkType()
	}
	err := CanWrite(pcapng, links)
	var f *os.File
	if err == nil {
		f, err = os.Create(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w, err := NewWriter(f, pcapng, c.Names(), links, 0)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &LiveFile{path: path, f: f, w: w}, nil
}

// Source does nothing: a live capture is one source, and each frame names
// its input.
func (f *LiveFile) Source(string) {}

// WriteFrame writes one frame, on the interface of its input.
func (f *LiveFile) WriteFrame(fr *Frame) error {
	return f.w.Write(fr.Input, fr.Data, fr.WireLen, fr.Time)
}

// Flush writes out what is buffered.
func (f *LiveFile) Flush() error { return f.w.Flush() }

// Close writes out what is buffered and closes the file; its error names
// the file.
func (f *LiveFile) Close() error {
	err := f.w.Flush()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}
