package datapath

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The records of the Output wait in one queue, in capture order, so that a
// Call's record can carry the frame of its Reply (reply_frame): it is held
// until the Reply comes, the Call is given up, or its connection ends, and
// the records after it wait behind it. So do the run loop's own records
// (messages, connection records) while anything waits (Defer), so that the
// sink still gets everything in capture order.
//
// A Call held too long would hold everything: one held past holdFrames
// frames, or when the queue is full (maxQueued), goes without its Reply's
// frame. Both bounds count frames and records, never time, so that every
// run gives the same output.

// holdFrames is how many frames a Call's record waits for its Reply.
const holdFrames = 65536

// maxQueued bounds the records waiting (some 300 octets each).
const maxQueued = 8192

// Item is what the queue hands on: an rpc record, or what the run loop
// deferred.
type Item struct {
	RPC   *record.RPC
	Other any
}

type queued struct {
	Item
	held int // the things it waits for: its Call's Reply, a Long Call's read chunk
	cost int // what a deferred record holds, charged to the budget while it waits
}

// add queues an rpc record and returns its place, for hold and release.
func (o *Output) add(rec *record.RPC) uint64 {
	o.queue = append(o.queue, queued{Item: Item{RPC: rec}})
	o.bound(rec.Frame)
	return o.qbase + uint64(len(o.queue)) // from 1: 0 names none
}

// hold keeps the record at place seq (from add) until it is released as
// often as it was held.
func (o *Output) hold(seq uint64) {
	if q := o.at(seq); q != nil {
		if q.held == 0 {
			o.nheld++
		}
		q.held++
	}
}

// release lets the record at place seq go, once nothing else holds it,
// with the frame of the Reply that answers its Call when reply is not 0.
func (o *Output) release(seq uint64, reply int) {
	q := o.at(seq)
	if q == nil || q.held == 0 {
		return
	}
	if reply != 0 && q.RPC.Message != nil {
		q.RPC.Message.ReplyFrame = reply
	}
	if q.held--; q.held == 0 {
		o.nheld--
	}
}

// waiting is the record at place seq while it is held, else nil.
func (o *Output) waiting(seq uint64) *record.RPC {
	if q := o.at(seq); q != nil && q.held > 0 {
		return q.RPC
	}
	return nil
}

// at is the queue's entry at place seq, nil when it has gone.
func (o *Output) at(seq uint64) *queued {
	if seq <= o.qbase || seq > o.qbase+uint64(len(o.queue)) {
		return nil
	}
	return &o.queue[seq-o.qbase-1]
}

// bound releases the oldest held records past the bounds, as of frame:
// the records waiting, the frames since the record, and the memory budget
// (what waits behind a held record is charged to it).
func (o *Output) bound(frame int) {
	for i := 0; i < len(o.queue) && o.nheld > 0; i++ {
		q := &o.queue[i]
		if q.held == 0 {
			continue
		}
		if len(o.queue) <= maxQueued && frame-q.RPC.Frame <= holdFrames && !o.Limits.Budget.OverFor(budget.Datapath) {
			break
		}
		q.held = 0
		o.nheld--
	}
}

// releaseAll lets every record go (the end of the input).
func (o *Output) releaseAll() {
	for i := range o.queue {
		o.queue[i].held = 0
	}
	o.nheld = 0
}

// Holding reports whether records wait in the queue: the run loop's own
// records must then wait too (Defer).
func (o *Output) Holding() bool { return len(o.queue) > 0 }

// Defer queues a record of the run loop's behind those waiting: of frame,
// holding cost octets (charged to the budget until it is taken).
func (o *Output) Defer(x any, frame, cost int) {
	o.queue = append(o.queue, queued{Item: Item{Other: x}, cost: cost})
	o.Limits.Budget.Force(budget.Datapath, cost)
	o.bound(frame)
}

// TakeItems returns what no held record holds back any more, in order;
// the slice is valid until the next call.
func (o *Output) TakeItems() []Item {
	if len(o.queue) == 0 {
		return nil
	}
	n := 0
	for n < len(o.queue) && o.queue[n].held == 0 {
		n++
	}
	o.items = o.items[:0]
	for i := range o.queue[:n] {
		o.items = append(o.items, o.queue[i].Item)
		if c := o.queue[i].cost; c > 0 {
			o.Limits.Budget.Release(budget.Datapath, c)
		}
	}
	clear(o.queue[:n])
	o.queue = o.queue[n:]
	o.qbase += uint64(n)
	if len(o.queue) == 0 && cap(o.queue) > 2*maxQueued {
		o.queue = nil // a burst does not pin its room
	}
	return o.items
}

// Take returns the "rpc" records no held record holds back any more, in
// capture order (what the run loop deferred is not among them); the slice
// is valid until the next call.
func (o *Output) Take() []*record.RPC {
	items := o.TakeItems()
	o.recs = o.recs[:0]
	for _, it := range items {
		if it.RPC != nil {
			o.recs = append(o.recs, it.RPC)
		}
	}
	return o.recs
}
