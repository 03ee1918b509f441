package datapath

import (
	"fmt"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/mpa"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The iWARP data path. The MPA framer follows the FPDUs of each connection
// after its MPA Request and Reply (dissect/mpa: framing, markers, CRC,
// DDP reassembly of Sends, RDMAP Read Requests and Terminates) and hands
// what it reads to an iwFlow, which feeds the same Checker as the
// InfiniBand family: inline thresholds, Send With Invalidate, STags,
// credits, header validity, RDMA_ERROR, and Reads outstanding against
// MPA revision 2's IRD and ORD.
//
// The tracker hands the established connection over (Established) when
// the MPA Reply is read, before the framer links the connection's traffic
// (IWARP): the Reply is emitted first, in the same call. The connection
// is found again by its Request: its initiator, responder and frame.

// iwKey names an iWARP connection by its MPA Request.
type iwKey struct {
	ini, res string
	frame    int
}

// iwFlow is one iWARP connection's traffic (mpa.Traffic).
type iwFlow struct {
	fl     *Follower
	conn   *record.Connection // nil when its setup was not seen (or accepted)
	chk    *Checker
	handed int // connection findings already on the handed-on record; -1 before
	send   Send
	closed bool
	// pending: the traffic was linked before its connection was set up
	// (a segment captured ahead of the MPA Reply); key finds it once it
	// is, and req is the Request's header.
	pending bool
	key     iwKey
	req     *record.MPAHeader
	sent    bool // a Send or Read Request was read
}

// iwSetup is an established iWARP connection waiting for its traffic.
type iwSetup struct {
	conn  *record.Connection
	reply *record.MPAHeader
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
		for k := range fl.iwSetups { // any: they wait only when no traffic follows
			delete(fl.iwSetups, k)
			break
		}
	}
	fl.iwSetups[iwKey{c.Initiator, c.Responder, c.RequestFrame}] = iwSetup{c, reply}
}

// IWARP gives the framer the Traffic of an iWARP connection whose FPDUs
// it is about to follow (decode.FollowIWARP).
func (fl *Follower) IWARP(p *mpa.Pair) mpa.Traffic {
	t := &iwFlow{fl: fl, handed: -1}
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
	c := s.conn
	t.conn = c
	n := Negotiated{Known: true, Connection: c.RequestFrame, RemoteInvalidation: c.RemoteInvalidation, Rule: Classify(c),
		InitiatorRPCRDMA: c.InitiatorRPCRDMA != nil, ResponderRPCRDMA: c.ResponderRPCRDMA != nil,
		InitiatorR: c.InitiatorRPCRDMA != nil && c.InitiatorRPCRDMA.RemoteInvalidate,
		ResponderR: c.ResponderRPCRDMA != nil && c.ResponderRPCRDMA.RemoteInvalidate, Conn: c}
	if c.Inline != nil {
		n.Inline = *c.Inline
	}
	iwReadLimits(&n, t.req, s.reply)
	if fl.iwByConn == nil {
		fl.iwByConn = map[*record.Connection]*iwFlow{}
	}
	fl.iwByConn[c] = t
	old := t.chk
	old.Close()
	t.chk = NewChecker(fl.out, n, old.peers, record.IWARP)
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
	set := func(side int, ord, ird uint16, why string) {
		if ord == noNegotiation || ird == noNegotiation {
			return
		}
		n.ReadLimit[side], n.HasReadLimit[side], n.ReadLimitWhy[side] = int(min(ord, ird)), true, why
	}
	set(0, req.ORD, rep.IRD, fmt.Sprintf("MPA Request ORD %d, MPA Reply IRD %d", req.ORD, rep.IRD))
	set(1, rep.ORD, req.IRD, fmt.Sprintf("MPA Reply ORD %d, MPA Request IRD %d", rep.ORD, req.IRD))
}

// Frame counts a TCP frame of the traffic.
func (t *iwFlow) Frame() {
	t.resolve()
	t.chk.Frame()
	if t.conn == nil {
		t.fl.OrphanFrames++
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
func (t *iwFlow) ReadRequest(side, frame int, _ time.Time, _ *layers.RDMAPReadRequest) {
	t.resolve()
	t.sent = true
	t.chk.ReadRequest(side, frame)
}

// ReadDone retires a Read of side.
func (t *iwFlow) ReadDone(side int) { t.chk.ReadDone(side) }

// Lost: frames of side are missing.
func (t *iwFlow) Lost(side int) { t.chk.Lost(side) }

// Finding is a connection finding of the FPDU follower.
func (t *iwFlow) Finding(f finding.Finding) { t.chk.Note(f) }

// Close ends the connection's traffic: its figures and findings go to its
// record, or to the notes when it was already handed on (or its setup was
// not seen).
func (t *iwFlow) Close() {
	if t.closed {
		return
	}
	t.closed = true
	fl := t.fl
	fs := t.chk.Findings()
	switch {
	case t.conn == nil:
		fl.noteOrphan(t, fs)
	case t.handed < 0:
		t.conn.Datapath = t.chk.Figures()
		t.conn.Findings = append(t.conn.Findings, fs...)
		delete(fl.iwByConn, t.conn)
	default:
		fl.noteConn(t.conn, fs[min(t.handed, len(fs)):])
		delete(fl.iwByConn, t.conn)
	}
	t.chk.Close()
}

// annotateIWARP adds an iWARP connection's figures and findings so far to
// its record, handed on before its traffic ended.
func (fl *Follower) annotateIWARP(c *record.Connection) bool {
	t := fl.iwByConn[c]
	if t == nil {
		return false
	}
	c.Datapath = t.chk.Figures()
	fs := t.chk.Findings()
	c.Findings = append(c.Findings, fs...)
	t.handed = len(fs)
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

// handover is the interface the tracker calls; the iWARP hand-over is
// checked at compile time here.
var _ conn.Handover = (*Follower)(nil)
var _ mpa.Traffic = (*iwFlow)(nil)
