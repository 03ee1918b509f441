package record

import (
	"fmt"
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
)

// State is where a connection attempt ended up.
type State string

// Connection states, as they appear in the JSON output.
const (
	Established State = "established" // an accepting reply was seen
	Rejected    State = "rejected"    // REJ, or an MPA Reply with R set
	NoReply     State = "no-reply"    // nothing answered by the end of the capture
	// Cut: nothing answered before the input ended early (damage, or the
	// -c frame count), so whether a reply came is not known.
	Cut State = "cut"
)

// States lists the states in the order the summary counts them.
var States = []State{Established, Rejected, NoReply, Cut}

// How the capture shows an established connection's end (Connection.End):
// the text and the Markdown show it as its state; the JSON state keeps
// "established".
const (
	Disconnected State = "disconnected" // a DREQ or DREP
	Terminated   State = "terminated"   // an RDMAP Terminate (iWARP)
)

// Connection is one connection attempt: a request, its reply if any, and
// what the two sides agreed.
type Connection struct {
	// Number counts the attempts of a run from 1, in the order of their
	// requests; messages of the attempt carry it as Message.Conn.
	Number    int
	File      string
	Transport Transport
	Initiator Endpoint
	Responder Endpoint
	// The service: the REQ's Service ID (InfiniBand family) or the
	// responder's TCP port (iWARP).
	ServiceID    uint64
	HasServiceID bool
	Port         uint16
	HasPort      bool
	// RemoteInvalidation: the responder may reply with Send With Invalidate
	// (RPC-over-RDMA: both sides set R; iSER: the initiator did not say it
	// does not support it). (Beside the flags above: the
	// tracker holds 65536 of these, and 8 octets each count.)
	RemoteInvalidation bool

	RequestFrame int
	ReplyFrame   int // 0: no reply
	Retries      int // repeated REQs (CM retries) of the same attempt
	State        State
	RejectReason string // REJ reason or "MPA Reply with R set"
	// End is how the capture shows an established connection's end:
	// Disconnected, Terminated, or "" when it does not.
	End State

	// PrivateDataCut: the capture cut a side's private data short (a small
	// snap length): what it advertised is not known, so neither are the
	// inline thresholds nor remote invalidation.
	PrivateDataCut bool

	InitiatorRPCRDMA *RPCRDMA // what the initiator advertised, nil when nothing usable
	ResponderRPCRDMA *RPCRDMA
	// Inline is what the two sides agreed (nil without a reply).
	Inline *InlineThresholds

	// ULP is the connection's upper layer ("" when unknown) and ULPEvidence
	// what decided it; InitiatorULP and ResponderULP are what each side's
	// private data said of it (nil when nothing).
	ULP         ULPName
	ULPEvidence ULPEvidence
	// RPCRDMARules: RPC-over-RDMA's rules apply (dissect/conn decides):
	// its upper layer is RPC-over-RDMA, or it is unknown and the service
	// is a TCP-port-space one, which NFS/RDMA may be. Only then do the
	// 1024/1024 defaults, the inline thresholds, remote invalidation under
	// RFC 8797 and the RPC-over-RDMA findings apply.
	RPCRDMARules bool
	InitiatorULP *ULP
	ResponderULP *ULP
	// Datapath is what was seen of the connection's RC traffic; nil when
	// none was (or the data path is off).
	Datapath *Datapath

	Findings []finding.Finding
}

// TrafficNotRPCRDMA reports whether RPC-over-RDMA's rules applied to the
// connection's setup only for want of knowing better (its upper layer is
// unknown, its service a TCP-port-space one: rping, perftest with rdma_cm)
// and its traffic then showed no RPC-over-RDMA: the data path saw it and
// decided nothing (Datapath.Rule is empty). Its inline thresholds and
// remote invalidation are then defaults that nothing uses: the text and
// the Markdown show "-" for them; the JSON keeps what the rules said.
func (c *Connection) TrafficNotRPCRDMA() bool {
	return c.RPCRDMARules && c.ULP == "" && c.Datapath != nil && c.Datapath.Rule == ""
}

// InlineThresholds are the largest RDMA Sends each way (RFC 8797, section
// 3.1): the sender's Send Size against the receiver's Receive Size.
type InlineThresholds struct {
	InitiatorToResponder int
	ResponderToInitiator int
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

// Clone is a copy of c that shares nothing its maker may reuse: a Sink
// that keeps a connection record keeps its Clone.
func (c *Connection) Clone() *Connection {
	x := *c
	x.Findings = slices.Clone(c.Findings)
	for _, p := range []**RPCRDMA{&x.InitiatorRPCRDMA, &x.ResponderRPCRDMA} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	if c.Inline != nil {
		v := *c.Inline
		x.Inline = &v
	}
	if c.Datapath != nil {
		v := *c.Datapath
		x.Datapath = &v
	}
	return &x
}

// ConnectionUpdate is what the data path saw of a connection after its
// record was handed on: a record handed on early (at --max-connections, for
// the memory budget, or at once in live capture) carries what was known
// then, and the rest follows in an update when the connection's traffic
// ends (or its input does). Nothing the data path finds is lost because
// the record went first.
type ConnectionUpdate struct {
	// Number and RequestFrame name the connection, as its record does.
	Number       int
	RequestFrame int
	File         string
	Transport    Transport
	Initiator    Endpoint
	Responder    Endpoint
	// Datapath is the connection's data-path figures as they are now (they
	// replace the record's); Findings are the connection findings the
	// record did not have.
	Datapath *Datapath
	Findings []finding.Finding
	// End: the traffic showed the connection's end (Connection.End).
	End State
}

// Shown is the state the text and the Markdown show: an established
// connection's End, when the capture shows it, else its State.
func (c *Connection) Shown() State {
	if c.State == Established && c.End != "" {
		return c.End
	}
	return c.State
}

// Apply brings a kept copy of the connection's record up to date.
func (u *ConnectionUpdate) Apply(c *Connection) {
	if u.End != "" && c.End == "" {
		c.End = u.End
	}
	if u.Datapath != nil {
		v := *u.Datapath
		c.Datapath = &v
	}
	c.Findings = append(c.Findings, u.Findings...)
}
