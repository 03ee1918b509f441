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

	seq       int // order of the request
	reqID     uint32
	repID     uint32
	hasRep    bool
	emitted   bool
	lastFrame int
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

type reqKey struct {
	file, ini, res string
	id             uint32
}

type tcpConnKey struct{ file, ini, res string }

type serviceKey struct {
	file, ini, res string
	svc            uint64
}

type negotiated struct {
	inline InlineThresholds
	inv    bool
	frame  int
	iniR   *RPCRDMA
	resR   *RPCRDMA
}

// Tracker pairs messages into connection attempts. In live mode it hands
// each attempt on as soon as its state is known; otherwise all come out at
// the end, in the order of their requests.
type Tracker struct {
	live    bool
	max     int // attempts tracked at once
	seq     int
	open    []*Connection // not yet handed on, in request order
	byReq   map[reqKey]*Connection
	byRep   map[reqKey]*Connection
	byTCP   map[tcpConnKey]*Connection
	history map[serviceKey]negotiated
	dropped int
}

// DefaultMaxConnections bounds the attempts tracked at once: about 1 KB
// each, 64 MiB at most.
const DefaultMaxConnections = 65536

// NewTracker makes a tracker holding at most max attempts at once (0: the
// default).
func NewTracker(live bool, max int) *Tracker {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	return &Tracker{live: live, max: max, byReq: map[reqKey]*Connection{}, byRep: map[reqKey]*Connection{},
		byTCP: map[tcpConnKey]*Connection{}, history: map[serviceKey]negotiated{}}
}

// Dropped counts attempts handed on early because of the tracking limit.
func (t *Tracker) Dropped() int { return t.dropped }

// Message takes the next message and returns the attempts it makes ready
// (live mode, or attempts pushed out by the limit).
func (t *Tracker) Message(m *Message) []*Connection {
	var ready []*Connection
	switch {
	case m.Transport == IWARP:
		ready = t.mpa(m)
	default:
		ready = t.cm(m)
	}
	return ready
}

func (t *Tracker) cm(m *Message) []*Connection {
	switch m.AttributeID {
	case layers.AttrREQ:
		k := reqKey{m.File, m.Src, m.Dst, m.LocalCommID}
		if c := t.byReq[k]; c != nil {
			c.Retries++ // a CM retry of the same attempt
			return nil
		}
		c := &Connection{File: m.File, Transport: m.Transport, Initiator: m.Src, Responder: m.Dst,
			ServiceID: m.ServiceID, HasServiceID: m.HasServiceID, RequestFrame: m.Frame, State: NoReply,
			InitiatorRPCRDMA: m.RPCRDMA, reqID: m.LocalCommID}
		t.byReq[k] = c
		return t.add(c)
	case layers.AttrREP, layers.AttrREJ:
		c := t.byReq[reqKey{m.File, m.Dst, m.Src, m.RemoteCommID}]
		if c == nil && m.AttributeID == layers.AttrREJ {
			// The initiator rejecting the REP: its own Local Communication ID.
			if c = t.byReq[reqKey{m.File, m.Src, m.Dst, m.LocalCommID}]; c != nil {
				return t.settle(c, m, Rejected, "the initiator rejected the REP: "+rejReason(m), false)
			}
			return nil
		}
		if c == nil || c.ReplyFrame != 0 {
			return nil // a reply to a REQ outside the capture, or a repeated reply
		}
		c.repID, c.hasRep = m.LocalCommID, true
		t.byRep[reqKey{m.File, m.Src, m.Dst, m.LocalCommID}] = c
		if m.AttributeID == layers.AttrREJ {
			return t.settle(c, m, Rejected, rejReason(m), true)
		}
		return t.settle(c, m, Established, "", true)
	default:
		// RTU, MRA, DREQ, DREP, LAP, APR belong to an attempt already seen;
		// nothing in them changes what was negotiated.
		return nil
	}
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
		k := tcpConnKey{m.File, m.Src, m.Dst}
		if t.byTCP[k] != nil {
			return nil
		}
		c := &Connection{File: m.File, Transport: IWARP, Initiator: m.Src, Responder: m.Dst, RequestFrame: m.Frame,
			State: NoReply, InitiatorRPCRDMA: m.RPCRDMA}
		if port, ok := portOf(m.Dst); ok {
			c.Port, c.HasPort = port, true
		}
		t.byTCP[k] = c
		return t.add(c)
	case "MPA_REP":
		c := t.byTCP[tcpConnKey{m.File, m.Dst, m.Src}]
		if c == nil || c.ReplyFrame != 0 {
			return nil
		}
		for _, f := range m.MPA {
			if f.Key == "reject" && f.Value != 0 {
				return t.settle(c, m, Rejected, "MPA Reply with R set", true)
			}
		}
		return t.settle(c, m, Established, "", true)
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
	t.forget(old)
	old.Findings = append(old.Findings, newFinding("state-limit-reached",
		"more than %d connection attempts were tracked at once; this one was reported before its end", t.max))
	old.emitted = true
	return []*Connection{old}
}

func (t *Tracker) forget(c *Connection) {
	delete(t.byReq, reqKey{c.File, c.Initiator, c.Responder, c.reqID})
	if c.hasRep {
		delete(t.byRep, reqKey{c.File, c.Responder, c.Initiator, c.repID})
	}
	delete(t.byTCP, tcpConnKey{c.File, c.Initiator, c.Responder})
}

// settle records the reply and works out the negotiation and findings.
func (t *Tracker) settle(c *Connection, m *Message, st State, reason string, fromResponder bool) []*Connection {
	c.State = st
	c.ReplyFrame = m.Frame
	c.RejectReason = reason
	if fromResponder {
		c.ResponderRPCRDMA = m.RPCRDMA
	}
	in, inv := Negotiate(c.InitiatorRPCRDMA, c.ResponderRPCRDMA)
	c.Inline, c.RemoteInvalidation = &in, inv
	if st != Established {
		c.RemoteInvalidation = false
	}
	c.Findings = append(c.Findings, t.checks(c, in, inv)...)
	if !t.live {
		return nil
	}
	t.forget(c)
	c.emitted = true
	t.dropEmitted()
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

// checks are the connection rules.
func (t *Tracker) checks(c *Connection, in InlineThresholds, inv bool) []Finding {
	var out []Finding
	if c.State == Rejected {
		out = append(out, newFinding("connection-rejected", "%s", c.RejectReason))
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
	if c.State == Established {
		svc := c.ServiceID
		if c.HasPort {
			svc = uint64(c.Port)
		}
		k := serviceKey{c.File, hostOf(c.Initiator), hostOf(c.Responder), svc}
		if prev, ok := t.history[k]; ok && (prev.inline != in || prev.inv != inv) {
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
		if len(t.history) < t.max {
			t.history[k] = negotiated{inline: in, inv: inv, frame: c.RequestFrame}
		}
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
		if c.State == NoReply {
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
