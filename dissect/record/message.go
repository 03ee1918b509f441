// Package record holds the plain values the dissector hands to its sinks:
// messages, connections, the summary and its inputs. Renderers read them;
// nothing in them refers back to the capture or to the dissector's own
// bookkeeping, which lives in unexported types of the packages that keep it.
package record

import (
	"fmt"
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Transport names the carrier of a connection message.
type Transport string

// Transports, as they appear in the JSON output.
const (
	RoCEv2     Transport = "rocev2"
	RoCEv1     Transport = "rocev1"
	InfiniBand Transport = "infiniband"
	IWARP      Transport = "iwarp"
)

// Kind is what a connection message is.
type Kind uint8

// Message kinds. KindCM is a CM MAD whose header the capture cut, so that
// which message it is cannot be told; KindCMOther a CM MAD of an attribute
// that is none of the messages.
const (
	KindCM Kind = iota
	KindCMOther
	KindREQ
	KindMRA
	KindREJ
	KindREP
	KindRTU
	KindDREQ
	KindDREP
	KindSIDRReq
	KindSIDRRep
	KindLAP
	KindAPR
	KindMPARequest
	KindMPAReply
)

var kindNames = [...]string{"CM", "CM", "REQ", "MRA", "REJ", "REP", "RTU", "DREQ", "DREP", "SIDR_REQ", "SIDR_REP",
	"LAP", "APR", "MPA_REQ", "MPA_REP"}

// String is the kind's name as the JSON output spells it (REQ, SIDR_REQ,
// MPA_REQ, ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// KindOfAttribute is the kind of the CM message a MAD attribute carries.
func KindOfAttribute(attr uint16) Kind {
	if attr >= layers.AttrREQ && attr <= layers.AttrAPR {
		return KindREQ + Kind(attr-layers.AttrREQ)
	}
	return KindCMOther
}

// IsMPA reports whether the kind is an MPA frame.
func (k Kind) IsMPA() bool { return k == KindMPARequest || k == KindMPAReply }

// Message is one decoded connection message: a CM message in the
// InfiniBand family, or an MPA Request or Reply in iWARP.
type Message struct {
	File      string    // the input as given on the command line
	Frame     int       // 1-based frame number within File (the frame that completes it)
	Frames    []int     // iWARP: every frame that carried part of the MPA frame
	Time      time.Time // capture time of Frame, UTC; zero when the frame has none
	Transport Transport
	Src, Dst  Endpoint // IP address, GID or LID; iWARP: IP address and TCP port
	Kind      Kind
	// Tunnel lists the encapsulations the frame travelled in, outermost
	// first; nil when it travelled in none.
	Tunnel []Encapsulation

	// IB is what the InfiniBand family's transport headers showed: their
	// CRCs; nil for iWARP.
	IB *IBHeaders
	// Octets are the layers' octets, whose fields Layers decodes.
	Octets Octets

	// What the tracker and renderers read, typed.
	CMInfo  *CMInfo    // InfiniBand family, when the CM message body decoded
	MPAInfo *MPAHeader // iWARP

	// PrivateData is the private data as captured; PrivateDataSize is its
	// size on the wire (fixed for CM messages, PD_Length for MPA).
	PrivateData     []byte
	PrivateDataSize int
	// PrivateDataCut: the capture's snap length cut the private data
	// short, so what it held (RFC 8797 data or not) is not known.
	PrivateDataCut bool
	// AddressesZeroed: --anonymize zeroed the octets of addresses in
	// PrivateData.
	AddressesZeroed bool

	// RPCRDMA is the usable RFC 8797 message, or nil.
	RPCRDMA *RPCRDMA
	// ExpectedOffset is where the carrier puts the RFC 8797 message.
	ExpectedOffset int
	// Held are findings raised on the message that apply only where
	// RPC-over-RDMA's rules do (rpcrdma-absent; pd-capacity-too-small when
	// it is about room for the RFC 8797 message): the connection rules put
	// each into Findings where it was raised, or drop it.
	Held []HeldFinding
	// ULP is the private data read as another upper layer's, or nil.
	ULP *ULP

	Findings []finding.Finding

	// Conn is the Number of the connection attempt the message belongs
	// to, as far as it is known when the message is handed on (0: none,
	// such as a SIDR message or a reply before its request).
	Conn int
	// InputStart is the capture time of the first frame of the message's
	// source that has a timestamp (for times relative to it).
	InputStart time.Time

	// Identity used to pair messages into connections.
	AttributeID   uint16
	LocalCommID   uint32
	RemoteCommID  uint32
	ServiceID     uint64
	HasServiceID  bool
	TransactionID uint64
}

// Name is the message's name as shown: REQ, REP, ..., MPA_REQ, MPA_REP;
// "CM attribute 0x0020" for an attribute that is no CM message, "CM" when
// the capture cut the MAD header.
func (m *Message) Name() string {
	if m.Kind == KindCMOther {
		return fmt.Sprintf("CM attribute 0x%04x", m.AttributeID)
	}
	return m.Kind.String()
}

// CMInfo holds the fields of a CM message that pairing, negotiation and
// the data path read. Fields a message does not carry are zero.
type CMInfo struct {
	// REQ and REP
	LocalQPN           uint32
	StartingPSN        uint32
	ResponderResources uint8
	InitiatorDepth     uint8
	// REQ: the path MTU code (1 = 256 ... 5 = 4096)
	PathMTU uint8
	// REQ and REP in native InfiniBand: the LRH's source and destination
	// LIDs (the data path matches native IB traffic on them)
	SLID, DLID uint16
	// REJ
	RejectReason uint16
	ARI          []byte // Additional Reject Information, as long as its length says
	// Cut says which of the fields above the capture's snap length cut
	// away from a REQ (its Local Communication ID and Service ID came):
	// they are zero and unknown.
	Cut CMCut
}

// CMCut names fields of a REQ a capture cut away.
type CMCut uint8

// The fields a cut REQ may lack.
const (
	CutQPN         CMCut = 1 << iota // Local QPN: the data path cannot follow its traffic
	CutDepths                        // Responder Resources, Initiator Depth: no Read limits
	CutStartingPSN                   // Starting PSN: learnt from the first packet of the traffic
	CutPathMTU                       // the path MTU: Send packets are not judged against it
)

// MPAHeader is what an MPA frame's header says, as far as it arrived.
type MPAHeader struct {
	Request bool
	// HasFlags: the frame reached its flags octet (16); HasRev its Rev
	// (17); HasPDLength its PD_Length (18-19).
	HasFlags    bool
	Marker      bool
	CRC         bool
	Reject      bool
	Enhanced    bool
	HasRev      bool
	Rev         uint8
	HasPDLength bool
	PDLength    uint16
	// Revision 2: the IRD and ORD words, when the private data holds them.
	HasIRDORD bool
	IRD, ORD  uint16
}

// IBHeaders is what the InfiniBand transport headers of a message showed
// beyond their fields (Message.Layers): the ICRC and, over native
// InfiniBand, the VCRC, when the capture holds them.
type IBHeaders struct {
	ICRC *CRCCheck
	VCRC *CRCCheck
}

// CRCCheck is a CRC as captured and whether it matched the packet.
// Computed is what the packet's octets give.
type CRCCheck struct {
	Value    uint32
	Computed uint32
	Valid    bool
}

// RPCRDMA is a decoded RFC 8797 message with where it was found.
type RPCRDMA struct {
	Offset             int
	FormatIdentifier   uint32
	Version            uint8
	Reserved           uint8
	RemoteInvalidate   bool
	SendSize           int
	ReceiveSize        int
	SendSizeEncoded    uint8
	ReceiveSizeEncoded uint8
}

// RPCRDMAOf is a decoded RFC 8797 message found at off.
func RPCRDMAOf(m *layers.RPCRDMAPrivateData, off int) RPCRDMA {
	return RPCRDMA{
		Offset:             off,
		FormatIdentifier:   m.FormatIdentifier,
		Version:            m.Version,
		Reserved:           m.Reserved,
		RemoteInvalidate:   m.RemoteInvalidate,
		SendSize:           m.SendSize(),
		ReceiveSize:        m.ReceiveSize(),
		SendSizeEncoded:    m.SendSizeEncoded,
		ReceiveSizeEncoded: m.ReceiveSizeEncoded,
	}
}

// Clone is a copy of m that shares nothing that m's maker may reuse: a
// Sink or the tracker that keeps a message keeps its Clone.
func (m *Message) Clone() *Message {
	c := *m
	c.Frames = slices.Clone(m.Frames)
	c.Tunnel = slices.Clone(m.Tunnel)
	c.PrivateData = slices.Clone(m.PrivateData)
	c.Octets.IB, c.Octets.MPA = slices.Clone(m.Octets.IB), slices.Clone(m.Octets.MPA)
	if m.IB != nil {
		c.IB = &IBHeaders{}
		if m.IB.ICRC != nil {
			v := *m.IB.ICRC
			c.IB.ICRC = &v
		}
		if m.IB.VCRC != nil {
			v := *m.IB.VCRC
			c.IB.VCRC = &v
		}
	}
	c.Findings = slices.Clone(m.Findings)
	c.Held = slices.Clone(m.Held)
	if m.RPCRDMA != nil {
		v := *m.RPCRDMA
		c.RPCRDMA = &v
	}
	if m.CMInfo != nil {
		v := *m.CMInfo
		v.ARI = slices.Clone(v.ARI)
		c.CMInfo = &v
	}
	if m.MPAInfo != nil {
		v := *m.MPAInfo
		c.MPAInfo = &v
	}
	return &c
}

// DropLayers forgets what the message keeps for display only: its layers'
// octets and CRCs.
func (m *Message) DropLayers() {
	m.IB, m.Octets = nil, Octets{}
}
