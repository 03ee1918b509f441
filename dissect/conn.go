package dissect

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Connections: messages paired into connection attempts, and what each
// attempt negotiated under RFC 8797.

// State is where a connection attempt ended up.
type State string

// Connection states, as they appear in the JSON output.
const (
	Established State = "established" // an accepting reply was seen
	Rejected    State = "rejected"    // REJ, or an MPA Reply with R set
	NoReply     State = "no-reply"    // nothing answered by the end of the capture
)

// Connection is one connection attempt.
type Connection struct {
	File      string
	Transport Transport
	Initiator string
	Responder string
	// The service: the REQ's Service ID (InfiniBand family) or the
	// responder's TCP port (iWARP).
	ServiceID    uint64
	HasServiceID bool
	Port         uint16
	HasPort      bool

	RequestFrame int
	ReplyFrame   int // 0: no reply
	Retries      int // repeated REQs (CM retries) of the same attempt
	State        State
	RejectReason string // REJ reason or "MPA Reply with R set"

	InitiatorRPCRDMA *RPCRDMA // what the initiator advertised, nil when nothing usable
	ResponderRPCRDMA *RPCRDMA
	// Inline is what the two sides agreed (nil without a reply).
	Inline *InlineThresholds
	// RemoteInvalidation: the responder may reply with Send With Invalidate
	// (both sides set R).
	RemoteInvalidation bool

	Findings []Finding

	seq     int // order of the request
	input   int // position of its input in the run
	reqID   uint32
	tid     uint64 // the REQ's Transaction ID
	rtu     bool   // the RTU (MPA: the Reply) completed the handshake
	closed  bool   // a DREQ or DREP was seen
	emitted bool
	hist    *histUndo // what remember replaced

	partialReply int // an MPA Reply that ended before its flags
}

// InlineThresholds are the largest RDMA Sends each way (RFC 8797, section
// 3.1): the sender's Send Size against the receiver's Receive Size.
type InlineThresholds struct {
	InitiatorToResponder int
	ResponderToInitiator int
}

// Negotiate computes what two sides agree from their RFC 8797 messages; a
// side without one counts as Send Size 1024, Receive Size 1024, R=0.
func Negotiate(ini, res *RPCRDMA) (InlineThresholds, bool) {
	send := func(r *RPCRDMA) int {
		if r == nil {
			return layers.DefaultInline
		}
		return r.SendSize
	}
	recv := func(r *RPCRDMA) int {
		if r == nil {
			return layers.DefaultInline
		}
		return r.ReceiveSize
	}
	inv := func(r *RPCRDMA) bool { return r != nil && r.RemoteInvalidate }
	return InlineThresholds{
		InitiatorToResponder: min(send(ini), recv(res)),
		ResponderToInitiator: min(send(res), recv(ini)),
	}, inv(ini) && inv(res)
}

// ServiceString names the service of a connection for people.
func (c *Connection) ServiceString() string {
	switch {
	case c.HasPort:
		return fmt.Sprintf("port %d", c.Port)
	case c.HasServiceID:
		return fmt.Sprintf("0x%016x", c.ServiceID)
	}
	return "?"
}

// Attempts are looked up by the input they came from (its position in the
// run, so that one file named twice is two inputs) and their endpoints.
type reqKey struct {
	input    int
	ini, res string
	id       uint32
}

type tcpConnKey struct {
	input    int
	ini, res string
}

type serviceKey struct {
	input    int
	ini, res string
	svc      uint64
}

type negotiated struct {
	inline InlineThresholds
	inv    bool
	frame  int
	seq    int // when it was recorded, to evict the oldest
}

type histEntry struct {
	k   serviceKey
	seq int
}

// Tracker pairs messages into connection attempts. In live mode it hands
// each attempt on as soon as its state is known; otherwise all come out at
// the end, in the order of their requests.
type Tracker struct {
	live    bool
	max     int // attempts tracked at once
	seq     int
	input   int
	open    []*Connection // not yet handed on, in request order
	done    []*Connection // live: handed on, still recognised (CM retries, REJ of a REP)
	byReq   map[reqKey]*Connection
	byTCP   map[tcpConnKey]*Connection
	history map[serviceKey]negotiated
	hOrder  []histEntry // history in the order it was recorded
	dropped int
	forgot  int // history entries evicted at the limit
}

// DefaultMaxConnections bounds the attempts tracked at once: about 1 KB
// each, 64 MiB at most.
const DefaultMaxConnections = 65536

// maxDone bounds the attempts a live tracker still recognises after it
// handed them on, so that a CM retry of a REQ that was answered, or a REJ
// of a REP, joins its attempt rather than opening a new one.
const maxDone = 4096

// NewTracker makes a tracker holding at most max attempts at once (0: the
// default).
func NewTracker(live bool, max int) *Tracker {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	return &Tracker{live: live, max: max, byReq: map[reqKey]*Connection{},
		byTCP: map[tcpConnKey]*Connection{}, history: map[serviceKey]negotiated{}}
}

// NextInput starts a new input: attempts never pair across inputs, so
// call Finish first to hand on those of the input before.
func (t *Tracker) NextInput() {
	t.input++
	clear(t.history)
	t.hOrder = nil
}

// Dropped counts attempts handed on early because of the tracking limit.
func (t *Tracker) Dropped() int { return t.dropped }

// Forgotten counts established connections whose negotiated properties
// were forgotten at the tracking limit, so that a later reconnection could
// not be compared with them.
func (t *Tracker) Forgotten() int { return t.forgot }

// Message takes the next message and returns the attempts it makes ready
// (live mode, or attempts pushed out by the limit).
func (t *Tracker) Message(m *Message) []*Connection {
	if m.Transport == IWARP {
		return t.mpa(m)
	}
	return t.cm(m)
}

// byLocal finds the attempt a message belongs to from its sender's side:
// the initiator's messages carry the REQ's Local Communication ID as their
// own, the responder's carry it as the Remote Communication ID.
func (t *Tracker) byLocal(m *Message) (c *Connection, fromInitiator bool) {
	if c = t.byReq[reqKey{t.input, m.Src, m.Dst, m.LocalCommID}]; c != nil {
		return c, true
	}
	return t.byReq[reqKey{t.input, m.Dst, m.Src, m.RemoteCommID}], false
}

func (t *Tracker) cm(m *Message) []*Connection {
	switch m.AttributeID {
	case layers.AttrREQ:
		k := reqKey{t.input, m.Src, m.Dst, m.LocalCommID}
		if c := t.byReq[k]; c != nil {
			// A CM retry of the same attempt: the REQ again before any
			// reply, or with the same Transaction ID after one (the reply
			// was lost on its way). A REQ that reuses the Communication ID
			// of an answered or disconnected attempt is a new attempt.
			if c.ReplyFrame == 0 || (!c.closed && m.TransactionID == c.tid) {
				c.Retries++
				return nil
			}
			t.unindex(c)
		}
		c := &Connection{File: m.File, Transport: m.Transport, Initiator: m.Src, Responder: m.Dst,
			ServiceID: m.ServiceID, HasServiceID: m.HasServiceID, RequestFrame: m.Frame, State: NoReply,
			InitiatorRPCRDMA: m.RPCRDMA, reqID: m.LocalCommID, tid: m.TransactionID, input: t.input}
		t.byReq[k] = c
		return t.add(c)
	case layers.AttrREP:
		c := t.byReq[reqKey{t.input, m.Dst, m.Src, m.RemoteCommID}]
		if c == nil || c.ReplyFrame != 0 {
			return nil // a reply to a REQ outside the capture, or a repeated reply
		}
		return t.settle(c, m, Established, "")
	case layers.AttrREJ:
		c, fromInitiator := t.byLocal(m)
		switch {
		case c == nil || c.closed || c.rtu || c.State == Rejected:
			return nil // outside the capture, too late, or repeated
		case fromInitiator && c.ReplyFrame == 0:
			return nil // the initiator cannot reject its own REQ
		case c.ReplyFrame == 0:
			return t.settle(c, m, Rejected, rejReason(m))
		}
		// A REJ of the REP, instead of an RTU: from the initiator (it did
		// not accept the REP) or from the responder (the RTU never came).
		who := "the responder"
		if fromInitiator {
			who = "the initiator"
		}
		return t.rejectLate(c, fmt.Sprintf("%s rejected the REP in frame %d: %s", who, m.Frame, rejReason(m)))
	case layers.AttrRTU:
		if c, fromInitiator := t.byLocal(m); c != nil && fromInitiator && c.State == Established && !c.rtu {
			c.rtu = true
			return t.emit(c)
		}
	case layers.AttrDREQ, layers.AttrDREP:
		if c, _ := t.byLocal(m); c != nil && c.ReplyFrame != 0 {
			c.closed = true
		}
	}
	// MRA, LAP, APR, SIDR: nothing in them changes what was negotiated.
	return nil
}

func rejReason(m *Message) string {
	for _, f := range m.CM {
		if f.Key == "reason" {
			name := layers.RejectReasonName(uint16(f.Value))
			if name == "" {
				return fmt.Sprintf("REJ reason %d", f.Value)
			}
			return fmt.Sprintf("REJ reason %d (%s)", f.Value, name)
		}
	}
	return "REJ"
}

func (t *Tracker) mpa(m *Message) []*Connection {
	switch m.Name {
	case "MPA_REQ":
		// One TCP connection carries one MPA Request (the reassembler hands
		// on each stream's once), so a Request on a 4-tuple already seen is
		// a new TCP connection that reuses it.
		k := tcpConnKey{t.input, m.Src, m.Dst}
		if old := t.byTCP[k]; old != nil {
			t.unindex(old)
		}
		c := &Connection{File: m.File, Transport: IWARP, Initiator: m.Src, Responder: m.Dst, RequestFrame: m.Frame,
			State: NoReply, InitiatorRPCRDMA: m.RPCRDMA, input: t.input}
		if port, ok := portOf(m.Dst); ok {
			c.Port, c.HasPort = port, true
		}
		t.byTCP[k] = c
		return t.add(c)
	case "MPA_REP":
		c := t.byTCP[tcpConnKey{t.input, m.Dst, m.Src}]
		if c == nil || c.ReplyFrame != 0 {
			return nil
		}
		reject, known := false, false
		for _, f := range m.MPA {
			if f.Key == "reject" {
				reject, known = f.Value != 0, true
			}
		}
		switch {
		case !known:
			c.partialReply = m.Frame // the stream ended before the Reply's flags: it settles nothing
			return nil
		case reject:
			return t.settle(c, m, Rejected, "MPA Reply with R set")
		}
		// MPA has no third message: the Reply establishes the connection.
		c.rtu = true
		return t.settle(c, m, Established, "")
	}
	return nil
}

// portOf reads the port of "addr:port" or "[addr]:port".
func portOf(s string) (uint16, bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return 0, false
	}
	var p uint16
	_, err := fmt.Sscan(s[i+1:], &p)
	return p, err == nil
}

// hostOf strips the port of an iWARP endpoint, so that a reconnection from a
// new port is the same initiator.
func hostOf(s string) string {
	if i := strings.LastIndexByte(s, ':'); i >= 0 && (strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1) {
		return strings.Trim(s[:i], "[]")
	}
	return s
}

func (t *Tracker) add(c *Connection) []*Connection {
	t.seq++
	c.seq = t.seq
	t.open = append(t.open, c)
	if len(t.open) <= t.max {
		return nil
	}
	// Over the limit: hand on the oldest attempt now, as far as it is known.
	old := t.open[0]
	t.open = t.open[1:]
	t.dropped++
	t.unindex(old)
	old.Findings = append(old.Findings, newFinding("state-limit-reached",
		"more than %d connection attempts were tracked at once; this one was reported before its end", t.max))
	old.emitted = true
	return []*Connection{old}
}

// unindex stops later messages from finding c (a newer attempt may already
// have taken its place).
func (t *Tracker) unindex(c *Connection) {
	k := reqKey{c.input, c.Initiator, c.Responder, c.reqID}
	if c.Transport == IWARP {
		tk := tcpConnKey{c.input, c.Initiator, c.Responder}
		if t.byTCP[tk] == c {
			delete(t.byTCP, tk)
		}
	} else if t.byReq[k] == c {
		delete(t.byReq, k)
	}
}

// settle records the reply and works out the negotiation and findings.
func (t *Tracker) settle(c *Connection, m *Message, st State, reason string) []*Connection {
	c.State = st
	c.ReplyFrame = m.Frame
	c.RejectReason = reason
	c.ResponderRPCRDMA = m.RPCRDMA
	in, inv := Negotiate(c.InitiatorRPCRDMA, c.ResponderRPCRDMA)
	c.Inline, c.RemoteInvalidation = &in, inv && st == Established
	c.Findings = append(c.Findings, t.checks(c)...)
	if st == Established {
		t.remember(c)
	}
	if st == Rejected || c.rtu {
		return t.emit(c)
	}
	// A REP: the RTU (or a REJ of the REP) settles it for good.
	return nil
}

// rejectLate turns an attempt whose REP was seen into a rejected one.
func (t *Tracker) rejectLate(c *Connection, reason string) []*Connection {
	c.State, c.RejectReason, c.RemoteInvalidation = Rejected, reason, false
	if c.hist != nil {
		t.forgetHistory(c)
	}
	kept := c.Findings[:0]
	for _, f := range c.Findings {
		if f.Code == "state-limit-reached" {
			kept = append(kept, f)
		}
	}
	c.Findings = append(kept, t.checks(c)...)
	return t.emit(c)
}

// emit hands c on in live mode. A live tracker still recognises it for a
// while, so that its RTU, a CM retry or a late REJ does not open a new
// attempt.
func (t *Tracker) emit(c *Connection) []*Connection {
	if !t.live || c.emitted {
		return nil
	}
	c.emitted = true
	t.dropEmitted()
	t.done = append(t.done, c)
	if len(t.done) > maxDone {
		t.unindex(t.done[0])
		t.done = t.done[1:]
	}
	return []*Connection{c}
}

// dropEmitted removes handed-on attempts from the front of the queue.
func (t *Tracker) dropEmitted() {
	i := 0
	for i < len(t.open) && t.open[i].emitted {
		i++
	}
	t.open = t.open[i:]
}

// remember records what an established attempt negotiated, to compare the
// next connection of the same initiator, responder and service with it.
func (t *Tracker) remember(c *Connection) {
	k := c.serviceKey()
	prev, had := t.history[k]
	for !had && len(t.history) >= t.max && len(t.hOrder) > 0 {
		old := t.hOrder[0]
		t.hOrder = t.hOrder[1:]
		if cur, ok := t.history[old.k]; ok && cur.seq == old.seq {
			delete(t.history, old.k)
			t.forgot++
		}
	}
	c.hist = &histUndo{prev: prev, had: had}
	t.seq++
	t.history[k] = negotiated{inline: *c.Inline, inv: c.RemoteInvalidation, frame: c.RequestFrame, seq: t.seq}
	t.hOrder = append(t.hOrder, histEntry{k, t.seq})
}

// forgetHistory undoes remember for an attempt that turned out rejected.
func (t *Tracker) forgetHistory(c *Connection) {
	k := c.serviceKey()
	if cur, ok := t.history[k]; ok && cur.frame == c.RequestFrame {
		if c.hist.had {
			t.history[k] = c.hist.prev
		} else {
			delete(t.history, k)
		}
	}
	c.hist = nil
}

type histUndo struct {
	prev negotiated
	had  bool
}

func (c *Connection) serviceKey() serviceKey {
	svc := c.ServiceID
	if c.HasPort {
		svc = uint64(c.Port)
	}
	return serviceKey{c.input, hostOf(c.Initiator), hostOf(c.Responder), svc}
}

// checks are the connection rules. Whether one side sent RFC 8797 data
// or set R matters only for a connection that was accepted.
func (t *Tracker) checks(c *Connection) []Finding {
	var out []Finding
	if c.State == Rejected {
		return append(out, newFinding("connection-rejected", "%s", c.RejectReason))
	}
	ini, res := c.InitiatorRPCRDMA != nil, c.ResponderRPCRDMA != nil
	if ini != res {
		who, other := "initiator", "responder"
		if res {
			who, other = "responder", "initiator"
		}
		out = append(out, newFinding("rpcrdma-one-sided",
			"only the %s sent RPC-over-RDMA private data; the %s counts as Send Size 1024, Receive Size 1024, R=0", who, other))
	}
	iniR := ini && c.InitiatorRPCRDMA.RemoteInvalidate
	resR := res && c.ResponderRPCRDMA.RemoteInvalidate
	if iniR != resR {
		who, other := "the initiator", "the responder"
		if resR {
			who, other = "the responder", "the initiator"
		}
		out = append(out, newFinding("remote-invalidation-one-sided",
			"%s set R, %s did not: replies use plain Send, never Send With Invalidate", who, other))
	}
	in, inv := *c.Inline, c.RemoteInvalidation
	if prev, ok := t.history[c.serviceKey()]; ok && (prev.inline != in || prev.inv != inv) {
		var what []string
		if prev.inline.InitiatorToResponder != in.InitiatorToResponder {
			what = append(what, fmt.Sprintf("initiator→responder %d → %d", prev.inline.InitiatorToResponder, in.InitiatorToResponder))
		}
		if prev.inline.ResponderToInitiator != in.ResponderToInitiator {
			what = append(what, fmt.Sprintf("responder→initiator %d → %d", prev.inline.ResponderToInitiator, in.ResponderToInitiator))
		}
		if prev.inv != inv {
			what = append(what, fmt.Sprintf("remote invalidation %s → %s", onOff(prev.inv), onOff(inv)))
		}
		out = append(out, newFinding("properties-changed-on-reconnect", "since the connection of frame %d: %s",
			prev.frame, strings.Join(what, ", ")))
	}
	return out
}

// Finish returns the attempts not yet handed on, in request order, with
// those that got no reply marked so.
func (t *Tracker) Finish() []*Connection {
	var out []*Connection
	for _, c := range t.open {
		if c.emitted {
			continue
		}
		switch {
		case c.State == NoReply && c.partialReply != 0:
			c.Findings = append(c.Findings, newFinding("reply-missing",
				"the MPA Reply of frame %d ended before its flags: whether it accepted the request of frame %d is not known",
				c.partialReply, c.RequestFrame))
		case c.State == NoReply:
			c.Findings = append(c.Findings, newFinding("reply-missing",
				"no reply to the request of frame %d by the end of the capture", c.RequestFrame))
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	t.open = nil
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
