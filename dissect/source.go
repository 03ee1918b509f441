package dissect

import (
	"context"
	"errors"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Frame is one captured frame, as a Source hands it to the run loop: what
// the Decoder reads (Data, valid until the next call of Next; WireLen, Time,
// LinkType, and Index, its number as the records show it), and which input
// it came from.
type Frame struct {
	decode.Frame
	Input int // an index into the Source's Inputs
}

// Source is where the run loop reads frames from: one capture file
// (File), or the interfaces of a live capture read together
// (dissect/live). A source is one pairing scope: the messages of its
// inputs may pair into connections, those of different sources never do.
type Source interface {
	// Next returns the next frame; it belongs to the source, and is valid
	// until the next call. Its errors: io.EOF after the last frame;
	// ErrIdle when no frame came for a while (a live capture: call Next
	// again); ctx.Err() when ctx ended the reading early. Any other error
	// ends the source: it says what stopped it and names the input (an
	// *InputError for a file).
	Next(ctx context.Context) (*Frame, error)
	// Inputs describes the source's inputs, in the order of Frame.Input:
	// their names at any time, and after Close all that the source knows
	// of them (format, size, SHA-256, link types, what stopped them). The
	// frame counts and times are the run loop's to fill in.
	Inputs() []record.Input
	// Close ends the source; it may be called more than once.
	Close() error
}

// ErrIdle is what Source.Next returns when no frame came within a poll
// interval: the run loop uses the pause to flush its FrameWriter.
var ErrIdle = errors.New("dissect: no frame within the poll interval")

// FrameWriter receives every frame the run loop reads, in the order it
// dissects them (the -w file of a live capture). The loop calls Flush when
// the source is idle, and at least every FlushInterval while frames come.
type FrameWriter interface {
	WriteFrame(f *Frame) error
	Flush() error
}

// FlushInterval bounds how long a frame stays in a FrameWriter's buffer
// while frames keep coming.
const FlushInterval = time.Second
