package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// CMRej is the Communication Manager REJ message (IBTA Vol 1, 12.6.7, table
// 108): a REQ, REP or LAP is refused. 84 octets of fixed fields, then 148
// octets of private data.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  Message REJected:2 reserved:6 | Reject Info Length:7 reserved:1 | Reason (2)
//	      12  Additional Reject Information (72)
//	      84  Private Data (148)
type CMRej struct {
	cmBase
	LocalCommID      uint32   // Local Communication ID
	RemoteCommID     uint32   // Remote Communication ID
	MessageRejected  uint8    // Message REJected (2 bits): 0 REQ, 1 REP, 2 other
	RejectInfoLength uint8    // Reject Info Length (7 bits)
	Reason           uint16   // Reason
	ARI              [72]byte // Additional Reject Information
}

// REJ reasons this package names (IBTA Vol 1, table 109).
const (
	RejReasonNoQP             = 1
	RejReasonTimeout          = 4
	RejReasonInvalidServiceID = 8
	RejReasonStaleConn        = 10
	RejReasonConsumerReject   = 28
)

func (m *CMRej) LayerType() gopacket.LayerType     { return LayerTypeCMRej }
func (m *CMRej) CanDecode() gopacket.LayerClass    { return LayerTypeCMRej }
func (m *CMRej) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMRej) AttributeID() uint16               { return AttrREJ }
func (m *CMRej) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMRej) PrivateDataOffset() int            { return 84 }
func (m *CMRej) PrivateDataSize() int              { return 148 }

// DecodeFromBytes decodes a REJ from the 232-octet MAD data.
func (m *CMRej) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMRej{}
	if err := m.split("cm rej", d, AttrREJ, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	m.MessageRejected = d[8] >> 6
	m.RejectInfoLength = d[9] >> 1
	m.Reason = binary.BigEndian.Uint16(d[10:12])
	copy(m.ARI[:], d[12:84])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a REJ.
func (m *CMRej) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrREJ, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
		d[8] = m.MessageRejected << 6
		d[9] = m.RejectInfoLength << 1
		binary.BigEndian.PutUint16(d[10:12], m.Reason)
		copy(d[12:84], m.ARI[:])
	})
}

// Fields lists the REJ's fields for display.
func (m *CMRej) Fields() []Field {
	f := make(fieldList, 0, 8)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	f.dec("Message REJected", "message_rejected", uint64(m.MessageRejected))
	f.dec("Reject Info Length", "reject_info_length", uint64(m.RejectInfoLength))
	f.dec("Reason", "reason", uint64(m.Reason))
	f.note(RejectReasonName(m.Reason))
	n := int(m.RejectInfoLength)
	if n > len(m.ARI) {
		n = len(m.ARI)
	}
	f.blob("Additional Reject Information", "ari", m.ARI[:n])
	return f
}

// RejectReasonName names a REJ reason code (IBTA Vol 1, table 109), or "".
func RejectReasonName(r uint16) string {
	if int(r) < len(rejReasons) {
		return rejReasons[r]
	}
	return ""
}

// rejReasons names the REJ reasons by code; 34 is not defined.
var rejReasons = [...]string{
	1:  "No QP available",
	2:  "No EEC available",
	3:  "No resources available",
	4:  "Timeout",
	5:  "Unsupported request",
	6:  "Invalid Communication ID",
	7:  "Invalid Communication Instance",
	8:  "Invalid Service ID",
	9:  "Invalid Transport Service Type",
	10: "Stale connection",
	11: "RDC does not exist",
	12: "Primary Remote Port GID rejected",
	13: "Primary Remote Port LID rejected",
	14: "Invalid Primary SL",
	15: "Invalid Primary Traffic Class",
	16: "Invalid Primary Hop Limit",
	17: "Invalid Primary Packet Rate",
	18: "Alternate Remote Port GID rejected",
	19: "Alternate Remote Port LID rejected",
	20: "Invalid Alternate SL",
	21: "Invalid Alternate Traffic Class",
	22: "Invalid Alternate Hop Limit",
	23: "Invalid Alternate Packet Rate",
	24: "Port CM redirection",
	25: "Port redirection",
	26: "Invalid Path MTU",
	27: "Insufficient Responder Resources",
	28: "Consumer reject",
	29: "RNR Retry Count rejected",
	30: "Duplicate Local Comm ID",
	31: "Unsupported class version",
	32: "Invalid Flow Label",
	33: "Invalid Alternate Flow Label",
	35: "Vendor option not supported",
}
