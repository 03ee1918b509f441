package dissect

import (
	"context"
	"fmt"
	"runtime/debug"
)

// A capture file read through a memory mapping (capture.ReaderOptions.Map) that
// another program truncates while it is read faults where the missing
// octets are read, in the run loop's goroutine. The source turns on
// debug.SetPanicOnFault while it is mapped, and readSource turns such a
// fault into the source's error, like damage: what came before is handed
// on, the other inputs are still read.

// faulter is a Source that can be told its input faulted.
type faulter interface {
	faulted(addr uintptr) error
}

// readSource is read, with memory faults of a mapped input turned into the
// source's error.
func (r *run) readSource(ctx context.Context, src Source, p *pass) (err error) {
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
	return r.read(ctx, src, p)
}

// mapFaults turns panics on faults on or off for the calling goroutine
// while a mapped file is read; it returns the previous setting.
func mapFaults(on bool) bool { return debug.SetPanicOnFault(on) }

// faulted ends a mapped file whose mapping faulted.
func (s *fileSource) faulted(addr uintptr) error {
	return s.fail(fmt.Errorf("the file changed while it was read (a memory fault at %#x, after frame %d): it ends there", addr, s.frames))
}
