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
	// Message is the ONC RPC message the Send carries; nil when it
	// carries none (RDMA_NOMSG, RDMA_ERROR) or it did not decode.
	Message *RPCMessage

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

// RPCMessage is the ONC RPC message (RFC 5531) an rpc record's Send
// carries, as far as it decoded: names are the RFCs' without their
// prefixes ("NFS", "READ", "SEQUENCE"), statuses with theirs ("NFS3_OK");
// "" means not known. Only the header, the names and the operation list
// are decoded: arguments and results are never kept.
type RPCMessage struct {
	Type string // "call" or "reply"
	XID  uint32
	// Program, Version and Procedure, when HasProgram: a Call's own, a
	// Reply's from the Call it answers.
	Program, Version, Procedure uint32
	HasProgram                  bool
	ProgramName, ProcedureName  string
	// Operations are the operations of an NFSv4 COMPOUND or CB_COMPOUND,
	// in order (a Reply's up to the first that failed); nil for other
	// procedures. OpsEnd says why the list ends before its count: "",
	// "unknown-op", "bad-layout", "max-ops", "truncated".
	Operations []string
	OpsEnd     string
	// MinorVersion of an NFSv4 COMPOUND, when HasMinorVersion.
	MinorVersion    uint32
	HasMinorVersion bool
	// AuthFlavor (a Call's credential: AUTH_NONE, AUTH_SYS, AUTH_DH,
	// RPCSEC_GSS) and, for RPCSEC_GSS, AuthService: none, integrity,
	// privacy. Encrypted: privacy hides the arguments or results.
	AuthFlavor  string
	AuthService string
	Encrypted   bool
	// A Reply's statuses: ReplyStatus MSG_ACCEPTED or MSG_DENIED, then
	// AcceptStatus, or RejectStatus and AuthStatus; NFSStatus the first
	// status of an NFS (or MOUNT, NLM) result, a COMPOUND's status.
	ReplyStatus, AcceptStatus, RejectStatus, AuthStatus string
	NFSStatus                                           string
	// ReplyFrame (a Call) and CallFrame (a Reply) pair them; 0: not seen.
	// ResponseTime is the Reply's frame time minus the Call's, when
	// HasResponseTime.
	ReplyFrame, CallFrame int
	ResponseTime          time.Duration
	HasResponseTime       bool
	// CarriedIn says where the message travelled: "send" (inline).
	CarriedIn string
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

	// The RPC layer: the procedures called and answered, in order of
	// program, version and procedure; the NFSv4 operations, each of each
	// COMPOUND (and callback operations), by name; the Calls never
	// answered by the connection's end, and the Calls the responder sent
	// (the backchannel, RFC 8167).
	RPCProcedures   []RPCProcedure
	NFSOperations   []NFSOperation
	UnansweredCalls int
	ReverseCalls    int

	// Chunks, by the side that sent the message or moved the octets:
	// LongMessages are the Long Calls and Long Replies; InlineNeeded the
	// smallest inline threshold RFC 8797 can express that would have
	// carried them all inline (0: none went long; 262145: none can);
	// ExplicitRDMAOctets the octets moved in chunks (pushed by RDMA Write,
	// or pulled from it by RDMA Read); ChunkViolations the RDMA operations
	// and Replies outside what the Calls offered.
	LongMessages       [2]int
	InlineNeeded       [2]int
	ExplicitRDMAOctets [2]int64
	ChunkViolations    int
	// Health is what the traffic showed of its transport (health.go); nil
	// when the data path does not follow it.
	Health *Health
}

// RPCProcedure counts the Calls of one procedure and their Replies.
type RPCProcedure struct {
	Program, Version, Procedure uint32
	ProgramName, ProcedureName  string
	Calls, Replies              int
	// Errors counts the Replies that were denied, or accepted without
	// SUCCESS; NFSErrors the NFS statuses other than OK, by name.
	Errors    int
	NFSErrors []StatusCount
	// The response times of the Replies paired with their Calls
	// (Timed of them).
	Timed                                  int
	MinResponse, MeanResponse, MaxResponse time.Duration
}

// StatusCount is how often a status came.
type StatusCount struct {
	Status string
	Count  int
}

// NFSOperation counts one NFSv4 operation (or callback operation) over
// every COMPOUND, and the Replies in which it failed.
type NFSOperation struct {
	Operation     string
	Count, Errors int
}

// Fingerprint is a hash of every figure (FNV-1a; for updates, made once
// per connection at most): equal figures give equal fingerprints, and a
// connection keeps this in place of its figures. It allocates nothing.
func (d *Datapath) Fingerprint() uint64 {
	h := fingerprint(14695981039346656037)
	h.ints(d.RPCMessages[:])
	h.ints(d.LargestInline[:])
	h.ints([]int{d.SendWithInvalidate, d.MaxOutstandingCalls, d.CreditsGranted, d.Frames,
		d.UnansweredCalls, d.ReverseCalls, d.ChunkViolations})
	h.bools(d.HasCredits, d.HasReadLimit[0], d.HasReadLimit[1])
	h.ints(d.RDMAReadLimit[:])
	h.ints(d.MaxOutstandingRDMAReads[:])
	h.str(d.Rule)
	h.add(uint64(len(d.RPCProcedures)))
	for i := range d.RPCProcedures {
		p := &d.RPCProcedures[i]
		h.add(uint64(p.Program)<<32 | uint64(p.Version))
		h.add(uint64(p.Procedure))
		h.str(p.ProgramName)
		h.str(p.ProcedureName)
		h.ints([]int{p.Calls, p.Replies, p.Errors, p.Timed})
		h.add(uint64(p.MinResponse))
		h.add(uint64(p.MeanResponse))
		h.add(uint64(p.MaxResponse))
		h.add(uint64(len(p.NFSErrors)))
		for _, e := range p.NFSErrors {
			h.str(e.Status)
			h.add(uint64(e.Count))
		}
	}
	h.add(uint64(len(d.NFSOperations)))
	for _, o := range d.NFSOperations {
		h.str(o.Operation)
		h.ints([]int{o.Count, o.Errors})
	}
	h.ints(d.LongMessages[:])
	h.ints(d.InlineNeeded[:])
	h.add(uint64(d.ExplicitRDMAOctets[0]))
	h.add(uint64(d.ExplicitRDMAOctets[1]))
	if x := d.Health; x != nil {
		h.add(1)
		h.str(x.Kind)
		for side := range 2 {
			h.ints([]int{x.ACKs[side], x.RNRNAKs[side], x.Retransmitted[side], x.Missing[side], x.CNPs[side],
				x.ECNCE[side], x.FECN[side], x.BECN[side], x.TCPRetransmitted[side], x.TCPMissing[side],
				x.TCPZeroWindows[side], x.TCPResets[side]})
			h.ints(x.NAKs[side][:])
			h.add(uint64(x.RetransmitMin[side]))
			h.add(uint64(x.RetransmitMax[side]))
			for _, o := range x.Octets[side] {
				h.add(uint64(o))
			}
			h.bools(x.HasRetransmitDelay[side], x.HasDSCP[side])
			h.add(uint64(x.DSCP[side]))
		}
		h.bools(x.HasCNPDSCP)
		h.add(uint64(x.CNPDSCP))
	}
	return uint64(h)
}

// fingerprint is an FNV-1a hash being made.
type fingerprint uint64

func (h *fingerprint) add(v uint64) {
	for range 8 {
		*h ^= fingerprint(v & 0xff)
		*h *= 1099511628211
		v >>= 8
	}
}

func (h *fingerprint) ints(vs []int) {
	for _, v := range vs {
		h.add(uint64(v))
	}
}

func (h *fingerprint) bools(bs ...bool) {
	var v uint64
	for i, b := range bs {
		if b {
			v |= 1 << i
		}
	}
	h.add(v)
}

func (h *fingerprint) str(s string) {
	h.add(uint64(len(s)))
	for i := 0; i < len(s); i++ {
		*h ^= fingerprint(s[i])
		*h *= 1099511628211
	}
}
