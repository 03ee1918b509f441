package capture

import (
	"context"
	"errors"
	"time"
	"unsafe"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Frame is one captured frame, as a Source hands it out: the Reader of a
// capture file fills it in from a record, the live capture from a frame of
// one of its interfaces, and the run loop and the Decoder read it. It
// belongs to what handed it out, and so do the octets of Data: both are
// valid until the next call (of Next), and nothing is copied on the way.
type Frame struct {
	// Data are the captured octets: len(Data) is the captured length.
	// Its capacity is its length, so that appending to it never writes
	// into the reader's buffer.
	Data     []byte
	WireLen  int       // the original length on the wire (>= len(Data) unless Issue has OverWire)
	Time     time.Time // UTC; zero when the record has none (pcapng Simple Packet Block) or it is out of range
	LinkType uint16    // LINKTYPE_* of the capturing interface (1 Ethernet, 113 SLL, 276 SLL2, 197 ERF, 247 InfiniBand...)
	Index    int       // 1-based number of the frame within its source, as the records show it
	Input    int       // the input it came from: an index into the Source's Inputs (a file has one, a live capture one per interface)

	// Issue says how the capture record disagrees with its file (0 when
	// it agrees): such a record is still handed out as captured, and the
	// reading goes on with the next one. SnapLen is the snap length in
	// force (the file's, or the pcapng interface's), 0 when none is given.
	Issue   RecordIssue
	SnapLen uint32

	// Where a file's record came from: Offset is that of its header in
	// the (decompressed) stream, which the errors name; Interface is the
	// pcapng interface number, counted across all the sections of the
	// file (0 for pcap, and for a live capture, whose interfaces are its
	// inputs).
	Offset    int64
	Interface int

	// Sums are values computed over some of Data's octets as the file was
	// read ahead (Summed), valid until the next call; nil when none.
	Sums []Sum
}

// Lends reports whether b lies in the octets frame (a Frame's Data): the
// octets a stage lends for a call are then the frame's, valid as long as
// it is, not a copy that stage may reuse at once.
func Lends(frame, b []byte) bool {
	if len(b) == 0 || len(frame) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	return p >= lo && p-lo+uintptr(len(b)) <= uintptr(len(frame))
}

// Releaser is a Source whose frames' octets can be kept valid after the
// next call of Next: after SetRelease(fn), they stay valid until the
// source calls fn (in a later Next, or in Close), which it does before it
// moves, reuses or lets go of the octets of any frame it handed out. The
// run loop has a stage that reads frames' octets on another goroutine
// wait for it there.
type Releaser interface {
	SetRelease(fn func())
}

// Looker is a Source that can show the octets of a frame to come without
// handing it out (a capture file: Reader.Ahead). What it shows is for
// hints only (the run loop asks the flow table for the lines that frame's
// segment will read): it may be cut short, it is valid only until the next
// call of Next, and it decides nothing.
type Looker interface {
	Ahead(i int) []byte
}

// RecordIssue flags how a capture record disagrees with its file. The
// Reader hands such a record out as its captured length says and goes on
// with the next one: its extent in the file is known (tshark and tcpdump
// read it too). The Decoder reports it, on the message the frame carries
// and, for every such frame, on the run.
type RecordIssue uint8

// Bits of RecordIssue.
const (
	OverSnap RecordIssue = 1 << iota // the captured length exceeds the snap length
	OverWire                         // the captured length exceeds the original length (WireLen)
	// TimeOutOfRange: the timestamp (pcapng: with the interface's
	// if_tsresol and if_tsoffset) is outside the years 1970 to 9999, which
	// no capture was made in. Time is then zero, as for a record without
	// a timestamp, rather than a wrapped value.
	TimeOutOfRange
)

// Source is where the run loop reads frames from: one capture file
// (File), or the interfaces of a live capture read together (Live). A
// source is one pairing scope: the messages of its inputs may pair into
// connections, those of different sources never do.
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
var ErrIdle = errors.New("capture: no frame within the poll interval")

// FrameWriter receives every frame the run loop reads, in the order it
// dissects them (the -w file: of a live capture, or -w's second pass over
// files). The loop calls Source before the first frame of each source,
// with the names of its inputs joined by commas; Flush when the source is
// idle, and at least every FlushInterval while frames come.
type FrameWriter interface {
	Source(name string)
	WriteFrame(f *Frame) error
	Flush() error
}

// FlushInterval bounds how long a frame stays in a FrameWriter's buffer
// while frames keep coming.
const FlushInterval = time.Second
