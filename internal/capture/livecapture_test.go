package capture_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	golayers "github.com/gopacket/gopacket/layers"
	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// fakeHandle hands out the frames it is given, then times out until it is
// closed, or fails with err once they are out.
type fakeHandle struct {
	name   string
	frames chan []byte
	err    error

	mu     sync.Mutex
	closed bool
}

func newFake(name string, err error, frames ...[]byte) *fakeHandle {
	h := &fakeHandle{name: name, frames: make(chan []byte, len(frames)), err: err}
	for _, f := range frames {
		h.frames <- f
	}
	return h
}

func (h *fakeHandle) Name() string     { return h.name }
func (h *fakeHandle) LinkType() uint16 { return uint16(golayers.LinkTypeEthernet) }

func (h *fakeHandle) Read() ([]byte, int, time.Time, error) {
	select {
	case f := <-h.frames:
		return f, len(f) + 4, time.Unix(1700000000, 0).UTC(), nil
	default:
	}
	if h.err != nil {
		return nil, 0, time.Time{}, h.err
	}
	time.Sleep(time.Millisecond)
	return nil, 0, time.Time{}, capture.ErrTimeout
}

func (h *fakeHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}

func (h *fakeHandle) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// drain reads c until it returns an error other than ErrIdle (or goes idle
// with want frames read), and returns copies of the frames.
func drain(t *testing.T, ctx context.Context, c *capture.Live, want int) (frames []dissect.Frame, inputs []record.Input, err error) {
	t.Helper()
	for {
		f, err := c.Next(ctx)
		if err == dissect.ErrIdle {
			if len(frames) >= want {
				return frames, c.Inputs(), errors.New("idle with every frame in")
			}
			continue
		}
		if err != nil {
			return frames, c.Inputs(), err
		}
		g := *f
		g.Data = append([]byte(nil), f.Data...)
		frames = append(frames, g)
	}
}

// TestCaptureEnds: the frames of all interfaces are numbered in the order
// they are handed on, each with its input; the interfaces' octets are
// counted; the capture ends at its duration with io.EOF and closes the
// interfaces.
func TestCaptureEnds(t *testing.T) {
	a := newFake("a", nil, []byte{1}, []byte{2, 2})
	b := newFake("b", nil, []byte{3, 3, 3})
	c := capture.NewLive([]capture.Handle{a, b}, 300*time.Millisecond)
	defer c.Close()
	var frames []dissect.Frame
	var err error
	for {
		var f *dissect.Frame
		f, err = c.Next(context.Background())
		if err == dissect.ErrIdle {
			continue
		}
		if err != nil {
			break
		}
		frames = append(frames, *f)
	}
	if err != io.EOF || len(frames) != 3 {
		t.Fatalf("%d frames, then %v", len(frames), err)
	}
	perInput := map[int]int{}
	for i, f := range frames {
		if f.Index != i+1 || f.LinkType != 1 || f.WireLen != len(f.Data)+4 {
			t.Errorf("frame %d: %+v", i+1, f)
		}
		perInput[f.Input] += len(f.Data)
	}
	in := c.Inputs()
	if len(in) != 2 || in[0].Name != "a" || in[0].Format != "live" || in[0].Size != 3 || in[1].Size != 3 ||
		perInput[0] != 3 || perInput[1] != 3 {
		t.Errorf("inputs %+v, octets by input %v", in, perInput)
	}
	if !a.isClosed() || !b.isClosed() {
		t.Error("interfaces left open")
	}
}

// TestCaptureCancel: when ctx ends, the frames already captured are still
// handed on, then ctx's error.
func TestCaptureCancel(t *testing.T) {
	a := newFake("a", nil, []byte{1}, []byte{2}, []byte{3})
	c := capture.NewLive([]capture.Handle{a}, 0)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	f, err := c.Next(ctx)
	for err == dissect.ErrIdle {
		f, err = c.Next(ctx)
	}
	if err != nil || f.Index != 1 {
		t.Fatalf("first frame: %v %v", f, err)
	}
	time.Sleep(50 * time.Millisecond) // the reader queues the other two
	cancel()
	frames, _, err := drain(t, ctx, c, 2)
	if !errors.Is(err, context.Canceled) || len(frames) != 2 || frames[1].Index != 3 {
		t.Errorf("after the cancel: %d frames, then %v", len(frames), err)
	}
}

// TestCaptureFails: an interface that fails ends the capture with an error
// naming it.
func TestCaptureFails(t *testing.T) {
	bad := newFake("bad0", errors.New("interface bad0 went down"), []byte{1})
	c := capture.NewLive([]capture.Handle{newFake("good0", nil), bad}, 0)
	defer c.Close()
	frames, _, err := drain(t, context.Background(), c, 5)
	if err == nil || err.Error() != "capture on bad0 failed: interface bad0 went down" || len(frames) != 1 {
		t.Errorf("%d frames, then %v", len(frames), err)
	}
	if f, err := c.Next(context.Background()); f != nil || err != io.EOF {
		t.Errorf("after the failure: %v %v", f, err)
	}
}

// countWriter counts what the run loop writes and flushes.
type countWriter struct{ frames, flushes int }

func (*countWriter) Source(string)                     {}
func (w *countWriter) WriteFrame(*dissect.Frame) error { w.frames++; return nil }
func (w *countWriter) Flush() error                    { w.flushes++; return nil }

// TestCaptureRun: through the run loop, a count limit is exact, every frame
// dissected is written first, and the writer is flushed when the capture
// goes idle.
func TestCaptureRun(t *testing.T) {
	var frames [][]byte
	for i := range 10 {
		frames = append(frames, []byte{byte(i)})
	}
	h := newFake("a", nil, frames...)
	var w countWriter
	c := capture.NewLive([]capture.Handle{h}, 0)
	sum, err := dissect.RunSources(context.Background(), []dissect.Source{c}, dissect.Config{Live: true, Count: 4, Writer: &w}, dissect.NopSink{})
	if err != nil || sum.Frames != 4 || w.frames != 4 || len(sum.Inputs) != 1 || sum.Inputs[0].Frames != 4 {
		t.Errorf("%v: %d frames, %d written, inputs %+v", err, sum.Frames, w.frames, sum.Inputs)
	}
	if !h.isClosed() {
		t.Error("interface left open")
	}

	w = countWriter{}
	c = capture.NewLive([]capture.Handle{newFake("a", nil, frames...)}, 500*time.Millisecond)
	if _, err := dissect.RunSources(context.Background(), []dissect.Source{c}, dissect.Config{Live: true, Writer: &w}, dissect.NopSink{}); err != nil {
		t.Fatal(err)
	}
	if w.frames != 10 || w.flushes == 0 {
		t.Errorf("%d written, %d flushes", w.frames, w.flushes)
	}
}
