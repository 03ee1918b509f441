package mpa

import (
	"runtime/debug"
	"unsafe"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Checking FPDU CRCs aside (Framer.CheckAside).
//
// The CRC32c over every octet is the largest single cost of following
// iWARP traffic. A CRC's verdict changes no framing: a direction only
// counts its FPDUs with a CRC problem, and describes the first of each
// kind, when it ends (reportCounts). So an FPDU that lies whole in the
// octets of the frame being decoded (the usual case: MPA senders align
// FPDUs with TCP segments) has its CRC checked apart from its framing, in
// one pass over its octets, in batches: by a worker goroutine while the
// framer goes on, or by the framer as each batch fills. The verdicts are
// joined back in the order the FPDUs ended (Framer.Settle) before
// anything reads the counts, and before the frames whose octets the checks
// read are let go. The problems a direction counts, and the first of each
// kind, are then those a check made at once would have counted: the output
// does not depend on where or when the checks ran.
//
// The worker pays only with a core to spare. Each batch handed over wakes
// it, and on a 2-core virtual machine a wake-up across cores costs more
// than the batch's CRCs; the second core is busy already with the capture
// reader's read-ahead or mapping. The run loop (dissect/run.go) asks for
// the worker above two cores.
//
// A file read ahead needs neither: the read-ahead goroutine computes the
// CRC of each FPDU a segment holds whole as it reads the chunk
// (decode.FPDUSums, internal/capture/sums.go), where the octets are in its
// core's cache, and the framer takes the sum that names exactly the
// FPDU's octets (Lend). Only the FPDUs without one (a mapped file's, those
// of segments cut by a chunk's end) are checked here.

// asideBatch is how many checks are made at once (go to the worker at
// once).
const asideBatch = 64

// asideJob is one FPDU's CRC check, or (data nil) a problem found at once
// that must be counted after the checks before it.
type asideJob struct {
	fol      *followed
	data     []byte // the octets the CRC covers, lent by a frame
	field    uint32
	computed uint32 // the worker's result, or the problem's
	mismatch bool   // a problem found at once: its kind
	frame    int
	skip     bool // the worker met a memory fault in data: no verdict
}

type asideBatchT struct {
	jobs [asideBatch]asideJob
	n    int
	done chan struct{}
}

// aside is the worker and the checks not yet joined.
type aside struct {
	work    chan *asideBatchT
	cur     *asideBatchT   // being filled
	sent    []*asideBatchT // with the worker, in order
	free    []*asideBatchT
	count   int  // checks not yet joined
	inline  bool // batches are checked by the framer, not the worker
	checked int  // FPDUs handed to the worker, in all (tests)
}

// CheckAside makes the framer check the CRCs of the FPDUs that lie whole
// in the frame being decoded apart from the framing, in batches: on
// another goroutine with worker, else by the framer itself as each batch
// fills (one pass over each FPDU's octets rather than a sum carried
// through its pieces as they are framed). The caller must then name that
// frame's octets (Lend) before each frame, and call Settle before those
// octets are moved, reused or let go; the octets of frames must stay
// valid until then.
func (f *Framer) CheckAside(worker bool) {
	if f.aside == nil {
		f.aside = &aside{}
	}
	f.aside.inline = !worker
}

// Lend names the octets of the frame about to be decoded (nil: none, the
// octets delivered are the reassembler's own, which it may reuse), and
// the sums computed over them as the file was read ahead
// (decode.FPDUSums): an FPDU that lies whole in the frame, where a sum
// names exactly its octets, takes that sum for its CRC.
func (f *Framer) Lend(b []byte, sums []capture.Sum) {
	f.lent, f.sums = b, sums
}

// CRCInUse reports whether a direction has been followed whose FPDUs
// carry a CRC (its peers' MPA frames said so, or its CRC fields matched):
// only then are the CRCs worth computing ahead (decode.Decoder.SumsWanted).
// Safe to call from any goroutine.
func (f *Framer) CRCInUse() bool { return f.crcSeen.Load() }

// noteCRC notes that a direction followed carries CRCs.
func (f *Framer) noteCRC() {
	if !f.crcSeen.Load() {
		f.crcSeen.Store(true)
	}
}

// summed is the CRC of the FPDU whose covered octets are data, when a sum
// computed ahead names exactly those.
func (r *reader) summed(data []byte) (uint32, bool) {
	f := r.f
	if len(f.sums) == 0 || !capture.Lends(f.lent, data) {
		return 0, false
	}
	at := int32(uintptr(unsafe.Pointer(unsafe.SliceData(data))) - uintptr(unsafe.Pointer(unsafe.SliceData(f.lent))))
	for _, s := range f.sums {
		if s.At == at && int(s.N) == len(data) {
			return s.Value, true
		}
	}
	return 0, false
}

// Settle waits for the checks handed to the worker and counts their
// verdicts, in order. Afterwards the octets they read may go.
func (f *Framer) Settle() {
	if a := f.aside; a != nil && a.count > 0 {
		a.settle()
	}
}

// Stop ends the worker (after Settle); checking aside starts it again.
func (f *Framer) Stop() {
	if a := f.aside; a != nil {
		if a.count > 0 {
			a.settle()
		}
		if a.work != nil {
			close(a.work)
			a.work = nil
		}
	}
}

// take adds a job, and hands the batch to the worker when it is full.
func (a *aside) take(j asideJob) {
	if a.cur == nil {
		if n := len(a.free); n > 0 {
			a.cur, a.free = a.free[n-1], a.free[:n-1]
		} else {
			a.cur = &asideBatchT{done: make(chan struct{}, 1)}
		}
	}
	a.cur.jobs[a.cur.n] = j
	a.cur.n++
	a.count++
	j.fol.aside++
	if j.data != nil {
		a.checked++
	}
	if a.cur.n == asideBatch {
		if a.inline {
			a.cur.check()
			a.count -= a.cur.n
			a.join(a.cur) // every batch before it was joined already
			a.cur = nil
			return
		}
		if a.work == nil {
			a.work = make(chan *asideBatchT, 8)
			go checkBatches(a.work)
		}
		a.work <- a.cur
		a.sent = append(a.sent, a.cur)
		a.cur = nil
	}
}

// settle joins every verdict, in order: those of the batches sent, then
// those of the batch being filled (checked here: waiting for the worker
// would take longer).
func (a *aside) settle() {
	for _, b := range a.sent {
		<-b.done
		a.join(b)
	}
	clear(a.sent)
	a.sent = a.sent[:0]
	if b := a.cur; b != nil {
		b.check()
		a.join(b)
		a.cur = nil
	}
	a.count = 0
}

// crcProblem counts the FPDUs with a CRC problem; the first of each kind
// is described in the finding the direction's end reports. While checks
// of the direction wait for their verdicts (crc.go), the problem waits
// behind them.
func (r *reader) crcProblem(off int, mismatch bool, field, computed uint32) {
	frame, _ := r.frameAt(r.fol.pos - 1)
	if r.fol.aside > 0 {
		r.f.aside.take(asideJob{fol: r.fol, field: field, computed: computed, mismatch: mismatch, frame: frame})
		return
	}
	r.fol.crcProblem(frame, mismatch, field, computed)
}

// checkAside puts the check of a whole FPDU's CRC in the batch of checks
// aside, when the framer checks aside and the octets are the frame's.
func (r *reader) checkAside(data []byte, field uint32) bool {
	a := r.f.aside
	if a == nil || !capture.Lends(r.f.lent, data) {
		return false
	}
	frame, _ := r.frameAt(r.fol.pos - 1)
	a.take(asideJob{fol: r.fol, data: data, field: field, frame: frame})
	return true
}

// crcProblem counts a problem the FPDU that ended in frame had.
func (f *followed) crcProblem(frame int, mismatch bool, field, computed uint32) {
	p := &f.crcMissing
	if mismatch {
		p = &f.crcMismatch
	}
	if p.n == 0 {
		p.frame, p.field, p.computed = frame, field, computed
	}
	p.n++
}

// join counts a batch's problems and recycles it.
func (a *aside) join(b *asideBatchT) {
	for i := range b.jobs[:b.n] {
		j := &b.jobs[i]
		j.fol.aside--
		switch {
		case j.skip:
		case j.data == nil:
			j.fol.crcProblem(j.frame, j.mismatch, j.field, j.computed)
		case j.computed != j.field:
			j.fol.crcProblem(j.frame, j.field != 0, j.field, j.computed)
		}
		*j = asideJob{}
	}
	b.n = 0
	a.free = append(a.free, b)
}

// checkBatches is the worker: it computes the CRCs of each batch it is
// handed. A memory fault (a mapped file cut short while it is read) skips
// the check: the reader meets the same fault where it reads on.
func checkBatches(work chan *asideBatchT) {
	debug.SetPanicOnFault(true)
	for b := range work {
		b.check()
		b.done <- struct{}{}
	}
}

func (b *asideBatchT) check() {
	for i := range b.jobs[:b.n] {
		if j := &b.jobs[i]; j.data != nil {
			j.computed, j.skip = crcOf(j.data)
		}
	}
}

// crcOf is the CRC of data; skip when reading it faulted.
func crcOf(data []byte) (sum uint32, skip bool) {
	defer func() {
		if recover() != nil {
			skip = true
		}
	}()
	return layers.UpdateFPDUCRC(0, data), false
}
