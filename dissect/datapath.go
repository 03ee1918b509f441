package dissect

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
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
	}
}

// rpcs hands the "rpc" records the data path made to the sink, then the
// updates of connection records handed on before their traffic ended.
func (r *run) rpcs() {
	for _, rec := range r.dp.Take() {
		if r.err != nil {
			return
		}
		r.sum.Count(rec.Findings)
		rec.InputStart = r.start
		r.err = r.sink.RPC(rec)
	}
	for _, u := range r.dp.TakeUpdates() {
		if r.err != nil {
			return
		}
		r.sum.Count(u.Findings)
		r.err = r.sink.Update(u)
	}
}

// flushDataPath hands on the Sends still in progress at the end of the
// source.
func (r *run) flushDataPath(name string) {
	if r.dp != nil {
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
