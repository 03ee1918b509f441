package capture

import (
	"errors"
	"fmt"
)

// Error reports a problem with a capture file.
type Error struct {
	// Offset is the offset, in the decompressed stream, of the record or
	// block concerned (of the file header for problems with it).
	Offset int64
	// Frame is the 1-based number of the packet record concerned, or 0 when
	// the problem is not inside a packet record.
	Frame int
	// Msg says what is wrong, in lower case.
	Msg string
	// Err is the underlying read or decompression error, if any.
	Err error

	kind error // one of the Err* classes below, or nil
}

func (e *Error) Error() string {
	if e.Frame > 0 {
		return fmt.Sprintf("frame %d at offset %d: %s", e.Frame, e.Offset, e.Msg)
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns the underlying read or decompression error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the class of e (ErrTruncated and so on).
func (e *Error) Is(target error) bool { return e.kind != nil && target == e.kind }

// Classes of *Error, for use with errors.Is.
var (
	// ErrEmpty: the input (after decompression) holds no octet at all.
	ErrEmpty = errors.New("capture: empty file")
	// ErrNotCapture: the input is neither pcap nor pcapng, compressed or not.
	ErrNotCapture = errors.New("capture: not a capture file")
	// ErrTruncated: the input ends inside a header, record or block.
	ErrTruncated = errors.New("capture: capture cut short")
	// ErrTooLarge: a captured length or block length is over the limit.
	ErrTooLarge = errors.New("capture: record over the limit")
	// ErrMalformed: a header, record or block is inconsistent.
	ErrMalformed = errors.New("capture: malformed capture")
	// ErrGzip: the compressed stream (gzip, zstd or lz4) is corrupt.
	ErrGzip = errors.New("capture: corrupt gzip stream")
)

// errClosed is returned by Next after Close.
var errClosed = errors.New("capture: reader closed")

// newError builds an *Error of the given class.
func newError(kind error, off int64, frame int, format string, args ...any) *Error {
	return &Error{Offset: off, Frame: frame, Msg: fmt.Sprintf(format, args...), kind: kind}
}
