package capture

import (
	"fmt"
	"runtime/debug"
)

// A capture file read through a memory mapping (ReaderOptions.Map) that
// another program truncates while it is read faults where the missing
// octets are read: not in Next, but wherever the frame's octets are read,
// in the run loop's goroutine. The source turns on debug.SetPanicOnFault
// while it is mapped, and CatchFaults, around the run loop, turns such a
// fault into the source's error, like damage: what came before is handed
// on, the other inputs are still read.

// faulter is a Source that can be told its input faulted.
type faulter interface {
	faulted(addr uintptr) error
}

// CatchFaults calls read, which reads the frames of src and dissects them,
// and turns a memory fault in the mapping of a file src reads into src's
// error (an *InputError). Any other panic goes on.
func CatchFaults(src Source, read func() error) (err error) {
	defer func() {
		e := recover()
		if e == nil {
			return
		}
		fault, ok := e.(interface{ Addr() uintptr })
		fs, mapped := src.(faulter)
		if !ok || !mapped {
			panic(e)
		}
		err = fs.faulted(fault.Addr())
	}()
	return read()
}

// mapFaults turns panics on faults on or off for the calling goroutine
// while a mapped file is read; it returns the previous setting.
func mapFaults(on bool) bool { return debug.SetPanicOnFault(on) }

// faulted ends a mapped file whose mapping faulted.
func (s *fileSource) faulted(addr uintptr) error {
	return s.fail(fmt.Errorf("the file changed while it was read (a memory fault at %#x, after frame %d): it ends there", addr, s.frames))
}
