package dissect

import (
	"os"
	"runtime/debug"
	"sync/atomic"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
)

// The data path's worker. Following RC traffic (the Follower's checks,
// the RPC decode, the "rpc" records handed to the sink) is the largest
// part of a RoCE capture's dissection after reading it. When asked
// (workerOn), it runs on a goroutine of its own, behind the run loop,
// which goes on reading and decoding the next frames meanwhile.
//
// The run loop decodes each RC frame as far as the data path needs
// (datapath.Packet) and queues it; the worker takes the queue a batch at a
// time, in order, and hands the Follower's records to the sink, exactly as
// the loop would. Anything else that touches the data path or the sink (a
// message, the iWARP traffic, a connection's record, making room in the
// budget, the end of a source) first waits until the worker has done every
// frame queued (syncDP): the Follower and the sink see the same calls in
// the same order as when one goroutine makes them all.
//
// The memory budget is split (budget.Split) between the run loop (the
// front) and the data path with the report (the back), and each side
// decides on what it holds and on a view of the other's share, set at
// points of the input, never of the timing:
//   - the back's view of the front is what the front held when it decoded
//     the frame being followed (queued with it), or what it holds now when
//     the worker is idle and the run loop calls the data path itself;
//   - the front's view of the back is what the back held at the end of the
//     batch of rcBatchLen RC frames before the last one completed (a
//     batch counted from the last sync), or at the last sync;
//   - at a sync, the front's view of the back is the back's exact share.
//
// So the output with the worker is the same at every GOMAXPROCS and
// whatever the timing (TestPipelineSameOutput, TestPipelineTiming). It is
// also the same as without the worker, unless the budget is full: the run
// loop alone decides on the data path's exact share, and with the worker on
// a view of it up to a batch old. A run without the worker (the default, a
// source that cannot keep its frames such as a live capture, or -w, whose
// writer keeps frames by what the data path says of them as they are read)
// follows the frames at once with the budget whole, as before the worker.
// (Splitting it there too, to make both runs the same under a full budget,
// let the hostile mix of TestAdversarialMemory hold 11 MB more: the views
// run ahead of what the data path gives back.)
//
// The frames' octets the queued Packets point into stay valid: the source
// (a capture.Releaser) calls drainDP before it moves or lets go of them,
// which waits for the worker without changing any view.

// rcBatchLen is how many RC frames make a batch: the worker's share at a
// time, and the step of the front's view of the back.
const rcBatchLen = 256

// workerOn says whether the data path runs on a worker: only when asked,
// with RDMACM_DATAPATH_WORKER=1 in the environment, for now. On this
// project's 2-core machine the other core already reads the file ahead
// (mapping its windows, or checking FPDU CRCs), and the worker only adds
// its hand-overs: the NFS-like workload takes 133 ms without it and 193
// ms with it (docs/performance.md). Whether it gains with more cores has
// not been measured yet.
var workerOn = os.Getenv("RDMACM_DATAPATH_WORKER") == "1"

// pipelined reports whether a run's data path should run on a worker.
func pipelined() bool { return workerOn }

// rcOp is one RC frame for the worker.
type rcOp struct {
	op       uint8
	qp, dst4 uint32
	last     bool // it ends a batch: the worker notes the back's figures after it
	pkt      datapath.Packet
	front    int64 // what the front held (budget.Front) when it decoded the frame
}

// rcBatch is some RC frames handed to the worker at once: a batch, or
// the part of one queued when the source had to let its frames go.
type rcBatch struct {
	ops []rcOp
	// fault is what stopped the worker in the batch: a memory fault in a
	// mapped file's frame (the file was cut short while it was read),
	// which the run loop raises again as its own (capture.CatchFaults).
	fault any
}

// setFront sets the front's view of the back, unless it is that already
// (a sync at every iWARP frame would otherwise store it every time).
func (w *dpWorker) setFront(used, held int64) {
	if w.set != [2]int64{used, held} {
		w.set = [2]int64{used, held}
		w.r.cfg.Budget.SetView(budget.Front, used, held)
	}
}

// backFigures is what the back of b holds, and the data path's share of it.
func backFigures(b *budget.Budget) (used, held int64) {
	return b.SideUsed(budget.Back), b.Held(budget.Datapath)
}

// exact sets the front's view of the back to its share, and starts
// counting batches again: at a sync, the worker idle. (The back sees what
// the front holds now whenever the worker is idle.)
func (w *dpWorker) exact() {
	w.n = 0
	w.used, w.held = backFigures(w.r.cfg.Budget)
	w.setFront(w.used, w.held)
}

// rcNow follows an RC frame at once (a run without the worker).
func (r *run) rcNow(f datapath.RCFrame) {
	r.dp.RC(f)
	r.rpcs()
}

// dpWorker is the worker and its queue.
type dpWorker struct {
	r        *run
	work     chan *rcBatch
	back     chan *rcBatch
	cur      *rcBatch // being filled
	inflight *rcBatch // with the worker (nil: the worker is idle)
	spare    []*rcBatch
	failed   atomic.Bool // the sink failed on the worker's goroutine
	// The back's figures after the last frame that ended a batch (the
	// worker's, read by the run loop once the batch came back), or at the
	// last sync (the run loop's).
	used, held int64
	n          int      // RC frames queued since the last sync (the run loop's)
	set        [2]int64 // the front's view as last set (setFront)
}

// workerPause, when set (tests), is called by the worker before each frame:
// it shuffles the two goroutines' timing.
var workerPause func()

func newWorker(r *run) *dpWorker {
	w := &dpWorker{r: r, work: make(chan *rcBatch, 1), back: make(chan *rcBatch, 1)}
	go w.loop()
	return w
}

// rc queues an RC frame; at the end of a batch the front's view of the
// back becomes the back's figures at the end of the batch before.
func (w *dpWorker) rc(f datapath.RCFrame) {
	if w.cur == nil {
		if n := len(w.spare); n > 0 {
			w.cur, w.spare = w.spare[n-1], w.spare[:n-1]
		} else {
			w.cur = &rcBatch{ops: make([]rcOp, 0, rcBatchLen)}
		}
	}
	w.n++
	w.cur.ops = append(w.cur.ops, rcOp{front: w.r.cfg.Budget.SideUsed(budget.Front), last: w.n%rcBatchLen == 0})
	o := &w.cur.ops[len(w.cur.ops)-1]
	o.op, o.qp, o.dst4 = f.Key()
	o.pkt = *f.Packet()
	if o.last {
		w.wait() // it did the end of the batch before (or a sync set the figures)
		w.setFront(w.used, w.held)
		w.send()
	}
}

// send hands what is queued to the worker, once it is idle.
func (w *dpWorker) send() {
	w.wait()
	w.inflight, w.cur = w.cur, nil
	w.work <- w.inflight
}

// wait waits until the worker has done what it has, if anything.
func (w *dpWorker) wait() {
	if w.inflight == nil {
		return
	}
	b := <-w.back
	w.inflight = nil
	if f := b.fault; f != nil {
		// The frames queued point into the same mapping: they go too.
		b.fault, w.cur = nil, nil
		panic(f)
	}
	clear(b.ops)
	b.ops = b.ops[:0]
	w.spare = append(w.spare, b) // two at most: the one filled and the one with the worker
}

// drain waits until the worker has done every frame queued, and changes
// no view: the source is about to let their octets go.
func (w *dpWorker) drain() {
	if w.cur != nil && len(w.cur.ops) > 0 {
		w.send()
	}
	w.wait()
}

// stop ends the worker, once it is idle.
func (w *dpWorker) stop() {
	w.drain()
	close(w.work)
}

// halted reports whether the sink failed: the run loop then stops reading.
func (w *dpWorker) halted() bool {
	if w.inflight == nil {
		return w.r.err != nil
	}
	return w.failed.Load()
}

// loop is the worker's goroutine.
func (w *dpWorker) loop() {
	debug.SetPanicOnFault(true) // this goroutine only: see rcBatch.fault
	b := w.r.cfg.Budget
	for batch := range w.work {
		b.BackViews(true)
		batch.fault = w.do(batch)
		b.BackViews(false)
		if w.r.err != nil {
			w.failed.Store(true)
		}
		w.back <- batch
	}
}

// do follows a batch's frames; it returns the panic that stopped it.
func (w *dpWorker) do(batch *rcBatch) (stopped any) {
	defer func() { stopped = recover() }()
	r := w.r
	b := r.cfg.Budget
	for i := range batch.ops {
		if r.err != nil {
			break
		}
		if workerPause != nil {
			workerPause()
		}
		o := &batch.ops[i]
		b.SetView(budget.Back, o.front, 0)
		if r.dp.Wants(o.op, o.qp, o.dst4) {
			r.dp.Packet(&o.pkt)
		}
		r.rpcs()
		if o.last {
			w.used, w.held = backFigures(b)
		}
	}
	return nil
}

// startWorker starts the data path's worker of a source when the run is
// pipelined.
func (r *run) startWorker() {
	if r.pipeline {
		r.w = newWorker(r)
		r.w.exact()
	}
}

// syncDP waits until the data path's worker has done every frame queued
// (the data path and the sink are then the run loop's), and sets the
// front's view of the budget to the back's share.
func (r *run) syncDP() {
	if r.w == nil {
		return
	}
	r.w.drain()
	r.w.exact()
}

// drainDP waits for the worker, and changes no view (the source's release:
// its timing depends on how the input is read).
func (r *run) drainDP() {
	if r.w != nil {
		r.w.drain()
	}
}

// rc hands an RC frame to the data path: to the worker, or at once.
func (r *run) rc(f datapath.RCFrame) {
	if r.w != nil {
		r.w.rc(f)
		return
	}
	r.rcNow(f)
}

// sinkFailed reports whether the sink failed (the data path's worker may
// still have some of its frames).
func (r *run) sinkFailed() bool {
	if r.w != nil {
		return r.w.halted()
	}
	return r.err != nil
}
