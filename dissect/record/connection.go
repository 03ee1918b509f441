package record

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
)

// State is where a connection attempt ended up.
type State string

// Connection states, as they appear in the JSON output.
const (
	Established State = "established" // an accepting reply was seen
	Rejected    State = "rejected"    // REJ, or an MPA Reply with R set
	NoReply     State = "no-reply"    // nothing answered by the end of the capture
)

// States lists the states in the order the summary counts them.
var States = []State{Established, Rejected, NoReply}

// Connection is one connection attempt: a request, its reply if any, and
// what the two sides agreed.
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

	// Datapath is what was seen of the connection's RC traffic; nil when
	// none was (or the data path is off).
	Datapath *Datapath

	Findings []finding.Finding
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
