package dissect

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The data path of a source: its Follower takes the RC frames and the
// iWARP traffic from the Decoder's events and the established and ended
// connections from the Tracker's, and its "rpc" records go to the sink in
// capture order among the messages.

// startDataPath makes the data path of a source, unless it is off.
func (r *run) startDataPath(name string) {
	r.dp = nil
	if r.cfg.Datapath != datapath.ModeOff {
		out := datapath.NewOutput(r.cfg.Datapath, r.cfg.DatapathLimits, name)
		out.Evidence = r.cfg.Evidence
		r.dp = datapath.NewFollower(out)
		r.startWorker()
	}
}

// rpcs hands the "rpc" records the data path made to the sink, with the
// run loop's records that waited behind them, then the updates of
// connection records handed on before their traffic ended.
func (r *run) rpcs() {
	for _, it := range r.dp.TakeItems() {
		if r.err != nil {
			return
		}
		switch x := it.Other.(type) {
		case nil:
			r.sum.Count(it.RPC.Findings)
			it.RPC.InputStart = r.start
			r.err = r.sink.RPC(it.RPC)
		case *record.Message:
			r.err = r.sink.Message(x)
		case *record.Connection:
			r.err = r.sink.Connection(x)
		case *record.ConnectionUpdate:
			r.err = r.sink.Update(x)
		}
	}
	for _, u := range r.dp.TakeUpdates() {
		if r.err != nil {
			return
		}
		r.sum.Count(u.Findings)
		if r.dp.Holding() {
			r.dp.Defer(u, u.RequestFrame, 512)
			continue
		}
		r.err = r.sink.Update(u)
	}
}

// waits reports whether the run loop's records must wait behind rpc
// records held for their Calls' Replies (they are then deferred, as
// copies: the decoder and tracker reuse theirs).
func (r *run) waits() bool { return r.dp != nil && r.dp.Holding() }

// flushDataPath hands on the Sends still in progress at the end of the
// source.
func (r *run) flushDataPath(name string) {
	if r.dp != nil {
		r.syncDP()
		r.dp.SetFile(name)
		r.dp.Flush()
		r.rpcs()
	}
}

// endDataPath counts what the data path saw of the source, after its
// connection records were handed on.
func (r *run) endDataPath() {
	dp := r.dp
	if dp == nil {
		return
	}
	if r.w != nil {
		r.w.stop()
		r.w = nil
	}
	dp.Finish()
	r.rpcs()
	r.sum.RPCMessages += dp.RPCMessages()
	r.sum.DatapathOrphanFrames += dp.OrphanFrames
	dp.Drops(r.sum.Drop)
	dp.Close()
	for _, n := range dp.Notes() {
		r.sum.Note(n)
	}
	r.dp = nil
}
