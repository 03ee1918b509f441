package datapath

import (
	"fmt"
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/mpa"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The iWARP data path. The MPA framer follows the FPDUs of each connection
// after its MPA Request and Reply (dissect/mpa: framing, markers, CRC,
// DDP reassembly of Sends, RDMAP Read Requests and Terminates, the tagged
// segments of RDMA Writes and Read Responses); what it
// reads of a connection reaches an iwFlow, which feeds the same Checker as
// the InfiniBand family: inline thresholds, Send With Invalidate, STags,
// credits, header validity, RDMA_ERROR, and Reads outstanding against MPA
// revision 2's IRD and ORD.
//
// The framer's calls come as events (IWARP), which the run loop hands over
// after the tracker took the messages of the same frame: the tracker's
// Established comes (Connection) when the MPA Reply is read, before the
// framer's link of the connection's traffic. The connection is found
// again by its Request: its initiator, responder and frame.

// iwKey names an iWARP connection by its MPA Request.
type iwKey struct {
	ini, res record.Endpoint
	frame    int
}

// iwFlow is one iWARP connection's traffic (mpa.Traffic).
type iwFlow struct {
	fl     *Follower
	id     int // the connection's Number; 0 when its setup was not seen (or accepted)
	chk    *Checker
	handed handed // what the handed-on record got
	send   Send
	closed bool
	// pending: the traffic was linked before its connection was set up
	// (a segment captured ahead of the MPA Reply); key finds it once it
	// is, and req is the Request's header.
	pending bool
	key     iwKey
	req     *record.MPAHeader
	sent    bool // a Send or Read Request was read
	ch      *iwChunks
}

// iwSetup is an established iWARP connection waiting for its traffic.
type iwSetup struct {
	id     int
	neg    Negotiated
	reply  record.MPAHeader
	has    bool   // the Reply's header is known
	handed handed // its record was handed on before its traffic came
}

// maxIWSetups bounds the established iWARP connections waiting for their
// traffic to be linked (normally at once: the Reply comes first).
const maxIWSetups = 4096

// establishedIWARP keeps an iWARP connection until the framer links its
// traffic (or, linked already, its traffic next shows).
func (fl *Follower) establishedIWARP(c *record.Connection, reply *record.MPAHeader) {
	if fl.iwSetups == nil {
		fl.iwSetups = map[iwKey]iwSetup{}
	}
	if len(fl.iwSetups) >= maxIWSetups {
		fl.dropOldestSetups()
	}
	s := iwSetup{id: c.Number, neg: negotiatedOf(c)}
	if reply != nil {
		s.reply, s.has = *reply, true
	}
	fl.iwSetups[iwKey{c.Initiator, c.Responder, c.RequestFrame}] = s
}

// dropOldestSetups forgets the eighth of the established iWARP connections
// waiting for their traffic that were numbered first: they wait only when
// no traffic follows (the framer did not follow it, and said why). The
// choice depends on the connections' Numbers alone, never on the map's
// order, so that every run gives up the same ones.
func (fl *Follower) dropOldestSetups() {
	ids := make([]int, 0, len(fl.iwSetups))
	for _, s := range fl.iwSetups {
		ids = append(ids, s.id)
	}
	slices.Sort(ids)
	cut := ids[max(1, len(ids)/8)-1]
	for k, s := range fl.iwSetups {
		if s.id <= cut {
			delete(fl.iwSetups, k)
		}
	}
}

// IWARP takes an event of the framer's traffic (mpa.Recorder): the link
// of a connection's traffic, or a call of the Traffic it was linked to.
func (fl *Follower) IWARP(e *mpa.TrafficEvent) {
	if e.Kind == mpa.TrafficLink {
		if fl.iwLinks == nil {
			fl.iwLinks = map[int]*iwFlow{}
		}
		fl.iwLinks[e.Conn] = fl.link(e.Pair)
		fl.iwLast = nil
		return
	}
	// The events of one connection come in runs (a frame, its pieces):
	// the last one looked up is kept.
	t := fl.iwLast
	if fl.iwLastConn != e.Conn || t == nil {
		t = fl.iwLinks[e.Conn]
		fl.iwLast, fl.iwLastConn = t, e.Conn
	}
	if t == nil {
		return
	}
	e.Replay(t)
	if e.Kind == mpa.TrafficClose {
		delete(fl.iwLinks, e.Conn)
		fl.iwLast = nil
	}
}

// link is the traffic of an iWARP connection whose FPDUs the framer is
// about to follow.
func (fl *Follower) link(p *mpa.Pair) *iwFlow {
	t := &iwFlow{fl: fl}
	var peers Peers
	switch {
	case p.Request != nil:
		peers = Peers{p.Request.Src, p.Request.Dst}
		t.key, t.req, t.pending = iwKey{p.Request.Src, p.Request.Dst, p.Request.Frame}, p.Request.MPAInfo, true
	case p.Reply != nil:
		peers = Peers{p.Reply.Dst, p.Reply.Src}
	}
	t.chk = NewChecker(fl.out, Negotiated{}, peers, record.IWARP)
	t.resolve()
	return t
}

// resolve ties the traffic to its connection once the tracker has set it
// up. What came before was read as traffic of no connection (its Sends'
// records name none); the connection's checker then counts it as lost,
// so that a Reply to a Call it did not see is not judged.
func (t *iwFlow) resolve() {
	if !t.pending {
		return
	}
	fl := t.fl
	s, ok := fl.iwSetups[t.key]
	if !ok {
		return
	}
	delete(fl.iwSetups, t.key)
	t.pending = false
	t.id, t.handed = s.id, s.handed
	n := s.neg
	if s.has {
		iwReadLimits(&n, t.req, &s.reply)
	}
	if fl.iwByConn == nil {
		fl.iwByConn = map[int]*iwFlow{}
	}
	fl.iwByConn[t.id] = t
	old := t.chk
	old.Close()
	t.chk = NewChecker(fl.out, n, old.peers, record.IWARP)
	for side, gone := range old.gone {
		if gone {
			t.chk.LostForGood(side)
		}
	}
	if old.touched {
		t.chk.fig.Frames = old.fig.Frames
		t.chk.touched = true
		if t.sent {
			t.chk.Lost(0)
			t.chk.Lost(1)
		}
	}
}

// iwReadLimits sets the Read limits of MPA revision 2 (RFC 6581, section
// 9.1): the Reads the initiator issues are bounded by its ORD and the
// responder's IRD, those of the responder by its ORD and the initiator's
// IRD. Revision 1 carries none, and 0x3FFF in either word of a side means
// it left the numbers to be negotiated otherwise: no limit that way.
func iwReadLimits(n *Negotiated, req, rep *record.MPAHeader) {
	if req == nil || rep == nil || !req.HasIRDORD || !rep.HasIRDORD {
		return
	}
	const noNegotiation = 0x3fff
	set := func(side int, ord, ird uint16, why uint8) {
		if ord == noNegotiation || ird == noNegotiation {
			return
		}
		n.ReadLimit[side], n.HasReadLimit[side], n.readWhy[side] = int(min(ord, ird)), true, readWhy{why, ord, ird}
	}
	set(0, req.ORD, rep.IRD, mpaReads)
	set(1, rep.ORD, req.IRD, mpaReads|mirrored)
}

// Frame counts a TCP frame of the traffic.
func (t *iwFlow) Frame(frame int) {
	t.resolve()
	t.chk.Frame()
	if t.id == 0 {
		t.fl.OrphanFrames++
	} else if ev := t.fl.out.Evidence; ev != nil {
		ev(t.id, frame)
	}
}

// Send takes an RDMAP Send.
func (t *iwFlow) Send(s *mpa.Send) {
	t.resolve()
	t.sent = true
	d := &t.send
	*d = Send{Side: s.Side, Opcode: s.Opcode, Invalidate: s.Invalidate, InvalidateSTag: s.InvalidateSTag,
		Length: s.Length, LengthKnown: s.LengthKnown, Complete: s.Complete, Frame: s.Frame, Frames: s.Frames,
		FramesDropped: s.FramesDropped, Time: s.Time, Head: s.Head, HeadWhole: s.HeadWhole, HeadCut: s.HeadCut}
	t.chk.Send(d)
	d.Frames, d.Head = nil, nil
}

// ReadRequest takes an RDMA Read Request of side.
func (t *iwFlow) ReadRequest(side, frame int, _ time.Time, rr *layers.RDMAPReadRequest) {
	t.resolve()
	t.sent = true
	t.chk.ReadRequest(side, frame)
	t.readChunk(side, frame, rr)
}

// ReadDone retires a Read of side.
func (t *iwFlow) ReadDone(side int) { t.chk.ReadDone(side) }

// Lost: the framer follows no more of side's traffic (its framing was
// lost, or the direction was given up): lost for good.
func (t *iwFlow) Lost(side int) { t.chk.LostForGood(side) }

// Finding is a connection finding of the FPDU follower.
func (t *iwFlow) Finding(f finding.Finding) { t.chk.Note(f) }

// Close ends the connection's traffic, with what its TCP showed: its
// figures and findings wait for
// its record, or come in an update when it was handed on already; those of
// traffic whose setup was not seen go to the notes.
func (t *iwFlow) Close(tcp *[2]mpa.TCPHealth) {
	if t.closed {
		return
	}
	t.closed = true
	if tcp != nil {
		t.resolve()
		t.chk.tcpEnded(tcp)
	}
	fl := t.fl
	if t.id == 0 {
		fl.noteOrphan(t, t.chk.Findings())
	} else {
		delete(fl.iwByConn, t.id)
		r := t.chk.result("the connection's end")
		fl.ended(t.id, &t.handed, t.chk.neg.Connection, record.IWARP, t.chk.peers, r)
	}
	t.chk.Close()
}

// annotateIWARP adds an iWARP connection's figures and findings so far to
// its record, handed on before its traffic ended.
func (fl *Follower) annotateIWARP(c *record.Connection) bool {
	t := fl.iwByConn[c.Number]
	if t == nil {
		// Its traffic has not come yet: an update brings it.
		k := iwKey{c.Initiator, c.Responder, c.RequestFrame}
		if s, ok := fl.iwSetups[k]; ok && s.id == c.Number {
			s.handed.handOn(c, 0)
			fl.iwSetups[k] = s
			return true
		}
		return false
	}
	r := t.chk.result(fl.endOfInput())
	c.Datapath = r.fig
	c.Findings = append(c.Findings, r.findings...)
	setEnd(c, r.end)
	t.handed.handOn(c, len(r.findings))
	return true
}

// noteOrphan keeps the connection findings of iWARP traffic whose setup
// was not seen, as findings about the run.
func (fl *Follower) noteOrphan(t *iwFlow, fs []finding.Finding) {
	for _, x := range fs {
		if len(fl.notes) == maxNotes {
			fl.notesCut++
			continue
		}
		x.Message = fmt.Sprintf("iWARP traffic %s → %s, whose setup was not seen: %s", t.chk.peers[0], t.chk.peers[1], x.Message)
		fl.notes = append(fl.notes, x)
	}
}

var _ mpa.Traffic = (*iwFlow)(nil)
