package dissect

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// RPCSink is a Sink that also takes the data path's "rpc" records: one for
// each RPC-over-RDMA message that has a finding (Config.Datapath findings,
// the default) or for every one (all), in capture order among the
// messages. A Sink that is no RPCSink gets none; the run still counts
// their findings.
type RPCSink interface {
	RPC(*record.RPC) error
}

// startDataPath sets up the data path of a source: its Follower takes the
// RC frames from the Decoder and the established connections from the
// Tracker, and writes its records through r.rpc.
func (r *run) startDataPath(p *pass, name string) {
	r.dp, r.dpOut = nil, nil
	r.tracker.SetHandover(nil)
	if r.cfg.Datapath == datapath.ModeOff {
		return
	}
	r.dpOut = datapath.NewOutput(r.cfg.Datapath, r.cfg.DatapathLimits, name, r.rpc)
	r.dp = datapath.NewFollower(r.dpOut)
	p.d.SetDataPath(r.dp)
	p.d.FollowIWARP(r.dp.IWARP)
	r.tracker.SetHandover(r.dp)
}

// flushDataPath hands on the Sends still in progress at the end of the
// source.
func (r *run) flushDataPath(name string) {
	if r.dp != nil {
		r.dp.SetFile(name)
		r.dp.Flush()
	}
}

// endDataPath counts what the data path saw of the source, after its
// connection records were handed on.
func (r *run) endDataPath() {
	if r.dp == nil {
		return
	}
	r.sum.RPCMessages += r.dpOut.RPCMessages
	r.sum.DatapathOrphanFrames += r.dp.OrphanFrames
	r.sum.StateDrops += r.dp.OrphanEvictions + r.dpOut.CallsUntracked + r.dp.HeadsRefused + r.dp.ConnectionsRetired
	r.dp.Close()
	for _, n := range r.dp.Notes() {
		r.sum.Note(n)
	}
	r.dp, r.dpOut = nil, nil
	r.tracker.SetHandover(nil)
}

// rpc hands an "rpc" record to the sink.
func (r *run) rpc(rec *record.RPC) {
	if r.err != nil {
		return
	}
	r.sum.Count(rec.Findings)
	rec.InputStart = r.start
	if s, ok := r.sink.(RPCSink); ok {
		r.err = s.RPC(rec)
	}
}

// annotate adds the data path's figures and findings to a connection
// record before it is handed on.
func (r *run) annotate(c *record.Connection) {
	if r.dp != nil {
		r.dp.Annotate(c)
	}
}
