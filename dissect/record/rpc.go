package record

import (
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
)

// Direction names which way a data-path message went on its connection.
type Direction string

// Directions, as the JSON output spells them. NoDirection: the connection
// setup was not seen, so which side is the initiator is not known.
const (
	InitiatorToResponder Direction = "initiator_to_responder"
	ResponderToInitiator Direction = "responder_to_initiator"
	NoDirection          Direction = ""
)

// RPC is one RPC-over-RDMA message: a whole RDMA Send on a connection that
// carries RPC-over-RDMA, with its transport header.
type RPC struct {
	File      string
	Frame     int   // the frame that completes the Send
	Frames    []int // every frame of it, in order (the first copy of a retransmitted packet)
	Time      time.Time
	Transport Transport
	Src, Dst  Endpoint
	// InputStart is the capture time of the first frame of its input, for
	// relative times (as Message.InputStart).
	InputStart time.Time

	// Connection is the request frame of its connection, and Conn its
	// Number (as Message.Conn); 0 when the connection setup was not seen.
	Connection int
	Conn       int
	Direction  Direction

	Opcode         string // the BTH opcode (or RDMAP opcode) that completes it: SEND_ONLY, SEND_LAST_WITH_INVALIDATE, ...
	Invalidate     bool   // a Send With Invalidate
	InvalidateRKey uint32 // the R_Key (STag) it invalidates
	Length         int    // octets of the whole Send
	LengthKnown    bool   // false when a packet of it is missing from the capture

	// Header is the RPC-over-RDMA transport header; nil when the Send is
	// shorter than its 16-octet fixed part, or its first octets were not
	// kept.
	Header *RPCRDMAHeader

	Findings []finding.Finding
}

// RPCRDMAHeader is a decoded RPC-over-RDMA version 1 transport header (RFC
// 8166, section 4).
type RPCRDMAHeader struct {
	XID     uint32
	Vers    uint32
	Credits uint32
	Proc    uint32
	// The lists, for RDMA_MSG, RDMA_NOMSG and RDMA_MSGP (as far as kept).
	ReadList      []ReadSegment
	WriteList     [][]Segment
	ReplyChunk    []Segment
	HasReplyChunk bool
	// Align and Thresh of RDMA_MSGP.
	Align, Thresh uint32
	// Error is the body of an RDMA_ERROR.
	Error *RPCRDMAError
}

// Segment is an RDMA segment: handle (R_Key, STag), length, offset.
type Segment struct {
	Handle uint32
	Length uint32
	Offset uint64
}

// ReadSegment is a read list entry: its XDR position and segment.
type ReadSegment struct {
	Position uint32
	Segment
}

// RPCRDMAError is an RDMA_ERROR body: ERR_VERS with the versions the
// responder supports, or ERR_CHUNK.
type RPCRDMAError struct {
	Code     uint32
	Low      uint32 // ERR_VERS only
	High     uint32
	HasRange bool
}

// Datapath is what the data path saw of a connection's reliable-connected
// traffic, each pair indexed by side: 0 the initiator, 1 the responder.
type Datapath struct {
	RPCMessages   [2]int // RPC-over-RDMA messages sent by that side
	LargestInline [2]int // the longest of them (a whole Send), 0 when none
	// SendWithInvalidate counts the Sends With Invalidate of either side.
	SendWithInvalidate  int
	MaxOutstandingCalls int
	// CreditsGranted is the latest grant (rdma_credit of a Reply), when
	// HasCredits.
	CreditsGranted int
	HasCredits     bool
	// RDMAReadLimit is how many RDMA Reads (and atomics) each side may have
	// outstanding by its connection setup; HasReadLimit says whether the
	// setup says it.
	RDMAReadLimit           [2]int
	HasReadLimit            [2]bool
	MaxOutstandingRDMAReads [2]int
	// Frames counts the frames of the connection's traffic.
	Frames int
	// Rule says which rule decided that the connection carries
	// RPC-over-RDMA ("" when none did), for people; see datapath.Rule.
	Rule string
}
