package dissect

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// LiveSource is an open capture on one interface (dissect/live.Handle).
type LiveSource interface {
	Name() string
	LinkType() uint16
	// Read waits up to a short poll interval for the next frame; it returns
	// ErrLiveTimeout (or any error wrapping a timeout, see IsTimeout) when
	// none came. The data is valid until the next call.
	Read() (data []byte, wireLen int, ts time.Time, err error)
	Close() error
}

// LiveOptions say when a live capture stops and where its frames go.
type LiveOptions struct {
	Count    int           // stop after this many frames (0: no limit)
	Duration time.Duration // stop after this long (0: no limit)
	// IsTimeout recognises the sources' "nothing yet" error.
	IsTimeout func(error) bool
	// Write, when set, receives every captured frame (the -w file), in the
	// order they are dissected; iface is the source's index.
	Write func(iface int, data []byte, wireLen int, ts time.Time) error
	// Flush, when set, writes out what Write buffered; it is called when
	// the capture has been idle for a poll interval, and at least every
	// FlushInterval while frames come.
	Flush func() error
}

// liveFrame is a frame handed from a reader goroutine to the dissector.
type liveFrame struct {
	src     int
	data    []byte
	wireLen int
	ts      time.Time
	err     error
}

// RunLive dissects frames captured from sources until ctx ends (Ctrl-C,
// SIGTERM), Count frames were captured, or Duration passed, then flushes
// everything as at the end of a file: pending MPA frames, the connection
// records, the summary. Messages and connection records are handed to sink
// as soon as they are known. Each source is read in a goroutine of its own;
// frames are numbered in the order they are dissected, which is the order of
// the -w file. A source that fails stops the capture with an error.
func RunLive(ctx context.Context, sources []LiveSource, cfg Config, lo LiveOptions, sink Sink) (*record.Summary, error) {
	cfg.Live = true
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.Name()
	}
	name := strings.Join(names, ",")
	r := &run{cfg: cfg, sink: sink, tracker: conn.NewTracker(true, cfg.MaxConnections),
		sum: record.NewSummary()}
	inputs := make([]record.Input, len(sources))
	for i, s := range sources {
		inputs[i] = record.Input{Name: s.Name(), Format: "live", LinkTypes: []uint16{s.LinkType()}}
	}

	stop := make(chan struct{})
	frames := make(chan liveFrame, 256)
	free := make(chan []byte, 512) // recycled frame buffers
	var wg sync.WaitGroup
	for i, s := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readLive(i, s, lo.IsTimeout, frames, free, stop)
		}()
	}
	var timer <-chan time.Time
	if lo.Duration > 0 {
		t := time.NewTimer(lo.Duration)
		defer t.Stop()
		timer = t.C
	}

	d := decode.New(name, cfg.decoder(), r.message)
	var fr decode.Frame
	var capErr error
	n := 0
	// The -w file is flushed when no frame came for a poll interval, and
	// at least every FlushInterval.
	dirty := false
	var lastFlush time.Time
	flush := func() bool {
		dirty, lastFlush = false, time.Now()
		if err := lo.Flush(); err != nil {
			capErr = fmt.Errorf("writing the capture file: %w", err)
			return false
		}
		return true
	}
	idle := time.NewTicker(liveIdle)
	defer idle.Stop()
	// take dissects one captured frame; false stops the run.
	take := func(f liveFrame) bool {
		if f.err != nil {
			capErr = fmt.Errorf("capture on %s failed: %w", sources[f.src].Name(), f.err)
			return false
		}
		n++
		in := &inputs[f.src]
		in.Frames++
		in.Size += int64(len(f.data))
		if in.First.IsZero() {
			in.First = f.ts
		}
		in.Last = f.ts
		if lo.Write != nil {
			if err := lo.Write(f.src, f.data, f.wireLen, f.ts); err != nil {
				capErr = fmt.Errorf("writing the capture file: %w", err)
				return false
			}
			if !dirty {
				dirty, lastFlush = true, time.Now()
			}
		}
		d.SetFile(sources[f.src].Name())
		fr = decode.Frame{Data: f.data, WireLen: f.wireLen, Time: f.ts, LinkType: sources[f.src].LinkType(), Index: n}
		d.Decode(&fr)
		select {
		case free <- f.data[:0]:
		default:
		}
		return r.err == nil && (lo.Count <= 0 || n < lo.Count)
	}
	halted := false // by the count, an error: nothing more, not even what is queued
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case <-timer:
			running = false
		case f := <-frames:
			halted = !take(f)
			running = !halted
			if running && dirty && lo.Flush != nil && time.Since(lastFlush) >= FlushInterval {
				halted = !flush()
				running = !halted
			}
		case <-idle.C:
			// Idle: nothing came since the last tick.
			if dirty && lo.Flush != nil && len(frames) == 0 {
				halted = !flush()
				running = !halted
			}
		}
	}
	close(stop)
	wg.Wait()
	for _, s := range sources {
		s.Close()
	}
	// Frames already captured when a signal or the timer stopped the run
	// are still dissected; a count limit is exact.
	for !halted {
		select {
		case f := <-frames:
			halted = !take(f)
		default:
			halted = true
		}
	}

	d.SetFile(name) // what is still pending when the capture stops
	d.Flush()
	r.sum.StateDrops += d.Dropped()
	r.sum.KeylessEvictions += d.KeylessEvictions()
	for _, f := range d.Notes() {
		r.sum.Note(f)
	}
	r.sum.Inputs = inputs
	r.sum.Frames = n
	if capErr != nil {
		r.sum.DecodeErrors++
	}
	r.connections()
	if err := r.finish(); err != nil {
		return r.sum, err
	}
	return r.sum, capErr
}

// liveIdle is how often the capture checks whether it is idle.
const liveIdle = 100 * time.Millisecond

// readLive reads one source until stop, handing copies of its frames on.
func readLive(i int, s LiveSource, isTimeout func(error) bool, out chan<- liveFrame, free chan []byte, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		data, wire, ts, err := s.Read()
		if err != nil {
			if isTimeout != nil && isTimeout(err) {
				continue
			}
			select {
			case out <- liveFrame{src: i, err: err}:
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
		case out <- liveFrame{src: i, data: buf, wireLen: wire, ts: ts}:
		case <-stop:
			return
		}
	}
}
