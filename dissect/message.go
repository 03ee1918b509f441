package dissect

import (
	"time"

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

// Message is one decoded connection message: a CM message in the
// InfiniBand family, or an MPA Request or Reply in iWARP. It is a plain
// value: renderers read it, nothing in it refers back to the capture.
type Message struct {
	File      string    // the input as given on the command line
	Frame     int       // 1-based frame number within File (the frame that completes it)
	Frames    []int     // iWARP: every frame that carried part of the MPA frame
	Time      time.Time // capture time of Frame, UTC
	Transport Transport
	Src, Dst  string // addresses as shown: IP, GID, "LID n"; iWARP with port
	Name      string // REQ, REP, ..., MPA_REQ, MPA_REP

	IB  *IBHeaders     // InfiniBand family: the transport headers and CRCs
	MAD []layers.Field // the MAD header
	CM  []layers.Field // the CM message body, without its private data

	IPCM []layers.Field // the IP CM header, when the Service ID announces one

	MPA []layers.Field // iWARP: the MPA frame's header (and revision 2 IRD/ORD)

	// PrivateData is the private data as captured; PrivateDataSize is its
	// size on the wire (fixed for CM messages, PD_Length for MPA).
	PrivateData     []byte
	PrivateDataSize int

	// RPCRDMA is the usable RFC 8797 message, or nil.
	RPCRDMA *RPCRDMA
	// ExpectedOffset is where the carrier puts the RFC 8797 message.
	ExpectedOffset int

	Findings []Finding

	// Identity used to pair messages into connections.
	AttributeID   uint16
	LocalCommID   uint32
	RemoteCommID  uint32
	ServiceID     uint64
	HasServiceID  bool
	TransactionID uint64
}

// IBHeaders holds the InfiniBand transport headers of a message.
type IBHeaders struct {
	LRH  []layers.Field
	GRH  []layers.Field
	BTH  []layers.Field
	DETH []layers.Field
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

// NewRPCRDMA copies a decoded RFC 8797 message found at off.
func NewRPCRDMA(m *layers.RPCRDMAPrivateData, off int) *RPCRDMA {
	return &RPCRDMA{
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

// MaxSeverity is the highest severity among the findings, 0 when none.
func MaxSeverity(fs []Finding) Severity {
	var s Severity
	for _, f := range fs {
		if f.Severity > s {
			s = f.Severity
		}
	}
	return s
}
