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

// An RC packet's length comes from what the wire carried: its length
// fields, unless one claims more than the frame on the wire (the record's
// original length, which a snap length cuts in the capture, not on the
// wire), which the packet then says (LengthLie, the rule and words of CM
// messages' length-mismatch). A frame exactly an ICRC short of its fields
// was captured without its ICRC: no lie.
func TestRCLengthFromWire(t *testing.T) {
	send := func(tr craft.Transport) craft.Frame {
		c, err := (&craft.Exchange{Transport: tr}).Connect()
		if err != nil {
			t.Fatal(err)
		}
		c.Send(craft.Initiator, make([]byte, 100), craft.SendOpts{})
		fs, err := c.Frames()
		if err != nil {
			t.Fatal(err)
		}
		return fs[len(fs)-1]
	}
	v2, ib := send(craft.RoCEv2), send(craft.InfiniBand)
	set16 := func(b []byte, off int, v uint16) []byte {
		c := append([]byte(nil), b...)
		c[off], c[off+1] = byte(v>>8), byte(v)
		return c
	}
	// RoCEv2/IPv4: IPv4 at 14, UDP at 34; a frame of 14+20+8+12+100+4 = 158
	// octets. Native IB: LRH PktLen at 4, the frame LRH..VCRC (8+12+100+4+2).
	for _, tc := range []struct {
		name    string
		link    uint16
		data    []byte
		wire    int // 0: len(data)
		payload int
		lie     string
	}{
		{name: "honest", link: 1, data: v2.Data, payload: 100},
		{name: "UDP Length 65535", link: 1, data: set16(v2.Data, 38, 65535), payload: 100,
			lie: "UDP Length 65535 puts the end of the packet 65411 octets beyond the end of the frame, which the capture did not cut"},
		{name: "IPv4 Total Length 1000", link: 1, data: set16(v2.Data, 16, 1000), payload: 100,
			lie: "IPv4 Total Length 1000 puts the end of the packet 856 octets beyond the end of the frame, which the capture did not cut"},
		{name: "both, the UDP Length further", link: 1, data: set16(set16(v2.Data, 16, 1000), 38, 2000), payload: 100,
			lie: "UDP Length 2000 puts the end of the packet 1876 octets beyond the end of the frame, which the capture did not cut"},
		{name: "cut by the capture", link: 1, data: v2.Data[:60], wire: len(v2.Data), payload: 100},
		{name: "cut by the capture, and a lie", link: 1, data: set16(v2.Data, 38, 65535)[:60], wire: len(v2.Data), payload: 100,
			lie: "UDP Length 65535 puts the end of the packet 65411 octets beyond the end of the frame, which was 158 octets on the wire (the capture kept 60)"},
		{name: "captured without its ICRC", link: 1, data: v2.Data[:len(v2.Data)-4], payload: 100},
		{name: "a short UDP Length decides", link: 1, data: set16(v2.Data, 38, 8+12+40+4), payload: 40},
		{name: "native IB", link: layers.LinkTypeIB, data: ib.Data, payload: 100},
		{name: "native IB, LRH PktLen 2047", link: layers.LinkTypeIB, data: set16(ib.Data, 4, 2047), payload: 100,
			lie: "LRH PktLen 2047 (4-octet words) puts the end of the packet 8062 octets beyond the end of the frame, which the capture did not cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire := tc.wire
			if wire == 0 {
				wire = len(tc.data)
			}
			d := New("t", Config{Datapath: true})
			var p *datapath.Packet
			for _, e := range d.Decode(&capture.Frame{Data: tc.data, WireLen: wire, LinkType: tc.link, Index: 1}) {
				if e.RC != nil {
					p = e.RC.Packet()
				}
			}
			if p == nil {
				t.Fatal("no RC frame")
			}
			if p.PayloadLen != tc.payload || p.LengthLie != tc.lie {
				t.Errorf("payload %d, lie %q; want %d, %q", p.PayloadLen, p.LengthLie, tc.payload, tc.lie)
			}
		})
	}
}
