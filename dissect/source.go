package dissect

import (
	"context"
	"io"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// The sources of frames, and the frames themselves, are the capture
// package's (internal/capture): the reader of capture files and the live
// capture make them, the run loop and the Decoder read them. They keep
// their names here, as the API's.

// Frame is one captured frame, as a Source hands it to the run loop: what
// the Decoder reads (Data, valid until the next call of Next; WireLen,
// Time, LinkType, and Index, its number as the records show it, with what
// the capture record says of its lengths), and which input it came from.
type Frame = capture.Frame

// Source is where the run loop reads frames from: one capture file
// (File), or the interfaces of a live capture read together. A source is
// one pairing scope: the messages of its inputs may pair into
// connections, those of different sources never do. See capture.Source.
type Source = capture.Source

// FrameWriter receives every frame the run loop reads, in the order it
// dissects them (the -w file). See capture.FrameWriter.
type FrameWriter = capture.FrameWriter

// ErrIdle is what Source.Next returns when no frame came within a poll
// interval: the run loop uses the pause to flush its FrameWriter.
var ErrIdle = capture.ErrIdle

// FlushInterval bounds how long a frame stays in a FrameWriter's buffer
// while frames keep coming.
const FlushInterval = capture.FlushInterval

// InputError is a problem reading one input; it names the input.
type InputError = capture.InputError

// File is the Source of one capture file, pcap or pcapng, gzip-compressed
// or not; "-" is stdin. It is opened at the first call of Next and read
// ahead in a goroutine of its own. With hash, its SHA-256 is computed for
// its Input: for a regular file on another core, for a stream as it is
// read. A damaged file ends at the damage with an *InputError naming the
// file, the frame and the offset.
func File(name string, stdin io.Reader, hash bool) Source { return capture.File(name, stdin, hash) }

// releasers reports whether every source keeps its frames' octets until
// it says (capture.Releaser): the data path can then run on a worker.
func releasers(sources []Source) bool {
	for _, s := range sources {
		if _, ok := s.(capture.Releaser); !ok {
			return false
		}
	}
	return len(sources) > 0
}

// budgeted is a Source whose reader charges the run's memory budget.
type budgeted interface{ SetBudget(*budget.Budget) }

// readSource is read, with a memory fault in the mapping of a file turned
// into the source's error (capture.CatchFaults).
func (r *run) readSource(ctx context.Context, src Source, p *pass) error {
	return capture.CatchFaults(src, func() error {
		err := r.read(ctx, src, p)
		// The checks aside and the data path's worker read the frames'
		// octets: done before Close lets them go.
		p.d.Settle()
		r.drainDP()
		return err
	})
}
