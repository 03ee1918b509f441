package decode

import (
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// rcRig is a decoder with the data path on, whose events go where the run
// loop sends them: its messages to a tracker, whose connection events go to
// the follower with the RC frames.
type rcRig struct {
	d       *Decoder
	tracker *conn.Tracker
	fl      *datapath.Follower
	out     *datapath.Output
	recs    int
	n       int
}

func newRCRig(mode datapath.Mode) *rcRig {
	r := &rcRig{tracker: conn.NewTracker(false, 0)}
	r.out = datapath.NewOutput(mode, datapath.Limits{}, "t")
	r.fl = datapath.NewFollower(r.out)
	r.d = New("t", Config{Datapath: true})
	return r
}

func (r *rcRig) decode(f craft.Frame) {
	r.n++
	r.frame(&capture.Frame{Data: f.Data, WireLen: len(f.Data), LinkType: f.LinkType, Time: f.Time, Index: r.n})
}

// frame decodes f and hands its events on.
func (r *rcRig) frame(f *capture.Frame) {
	for _, e := range r.d.Decode(f) {
		switch {
		case e.Message != nil:
			for _, ce := range r.tracker.Message(e.Message) {
				if ce.Kind != conn.HandedOn {
					r.fl.Connection(&ce)
				}
			}
		case e.RC != nil:
			r.fl.RC(e.RC)
		case e.Traffic != nil:
			r.fl.IWARP(e.Traffic)
		}
		r.recs += len(r.fl.Take())
	}
}

// nfsRounds builds a connection's setup and then rounds of NFS-like
// traffic: each a READ (a Call with a write chunk, the RDMA WRITE of 8 KiB,
// the Reply With Invalidate) and a multi-packet Call with its Reply.
func nfsRounds(t testing.TB, tr craft.Transport, rounds int) (setup []craft.Frame, perRound [][]craft.Frame) {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := craft.Exchange{Transport: tr, Initiator: p, Responder: p}
	c, err := x.Connect()
	if err != nil {
		t.Fatal(err)
	}
	n := craft.NFS{C: c, XID: 1, Credits: 32}
	prev, _ := c.Frames()
	setup = prev
	for i := range rounds {
		w := craft.RPCMessage{Size: 200, WriteList: []layers.RPCRDMAChunk{{{Handle: uint32(0x100 + i), Length: 8192}}}}
		xid := n.Call(w)
		c.Write(craft.Responder, uint32(0x100+i), 0, 8192)
		n.Reply(xid, craft.RPCMessage{Size: 120}, craft.SendOpts{WithInv: true, Invalidate: uint32(0x100 + i)})
		n.Reply(n.Call(craft.RPCMessage{Size: 2500}), craft.RPCMessage{}, craft.SendOpts{})
		all, err := c.Frames()
		if err != nil {
			t.Fatal(err)
		}
		perRound = append(perRound, all[len(prev):])
		prev = all
	}
	return setup, perRound
}

// RC traffic of an established connection costs no allocation per frame
// once the connection is running (its first frames set up its state), in
// the default mode (records only for findings), on each transport.
func TestRCFramesNoAllocs(t *testing.T) {
	for _, tr := range []craft.Transport{craft.RoCEv2, craft.RoCEv1, craft.InfiniBand} {
		t.Run(string(tr), func(t *testing.T) {
			setup, rounds := nfsRounds(t, tr, 120)
			r := newRCRig(datapath.ModeFindings)
			for _, f := range setup {
				r.decode(f)
			}
			for _, f := range rounds[0] {
				r.decode(f)
			}
			i := 1
			n := testing.AllocsPerRun(100, func() {
				for _, f := range rounds[i] {
					r.decode(f)
				}
				i++
			})
			if n != 0 {
				t.Errorf("%v allocations per round of %d frames", n, len(rounds[1]))
			}
			if r.recs != 0 || r.out.RPCMessages != 4*(i) {
				t.Errorf("%d records, %d RPC-over-RDMA messages after %d rounds", r.recs, r.out.RPCMessages, i)
			}
		})
	}
}

// RC frames of no connection seen (the bulk of a capture without its
// setup) cost nothing either.
func TestRCOrphansNoAllocs(t *testing.T) {
	_, rounds := nfsRounds(t, craft.RoCEv2, 2)
	r := newRCRig(datapath.ModeFindings)
	var write craft.Frame
	for _, f := range rounds[0] {
		if f.Data[42] == 0x07 { // RDMA WRITE Middle
			write = f
		}
	}
	f := &capture.Frame{Data: write.Data, WireLen: len(write.Data), LinkType: write.LinkType, Index: 1}
	if n := testing.AllocsPerRun(1000, func() { r.frame(f) }); n != 0 {
		t.Errorf("%v allocations per frame", n)
	}
	if r.fl.OrphanFrames != 1001 {
		t.Errorf("%d orphan frames counted", r.fl.OrphanFrames)
	}
}

// BenchmarkRCData is the cost of an RC data frame with the data path on:
// an RDMA WRITE Middle of an established connection (its PSN advancing),
// and one of no connection seen (the mixed workload's).
func BenchmarkRCData(b *testing.B) {
	setup, rounds := nfsRounds(b, craft.RoCEv2, 1)
	var write craft.Frame
	for _, f := range rounds[0] {
		if f.Data[42] == 0x07 {
			write = f
		}
	}
	b.Run("connection", func(b *testing.B) {
		r := newRCRig(datapath.ModeFindings)
		for _, f := range setup {
			r.decode(f)
		}
		data := append([]byte(nil), write.Data...)
		f := &capture.Frame{Data: data, WireLen: len(data), LinkType: write.LinkType}
		psn := uint32(0x2000)
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			data[42+9], data[42+10], data[42+11] = byte(psn>>16), byte(psn>>8), byte(psn)
			psn++
			f.Index++
			r.frame(f)
		}
	})
	b.Run("no connection", func(b *testing.B) {
		r := newRCRig(datapath.ModeFindings)
		f := &capture.Frame{Data: write.Data, WireLen: len(write.Data), LinkType: write.LinkType}
		b.ReportAllocs()
		b.SetBytes(int64(len(write.Data)))
		for b.Loop() {
			r.frame(f)
		}
	})
}
