package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// CMRep is the Communication Manager REP message (IBTA Vol 1, 12.6.8, table
// 110): the passive side accepts a REQ. 36 octets of fixed fields, then 196
// octets of private data.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  Local Q_Key (4)                12  Local QPN (3) | reserved
//	      16  Local EE Context Number (3) | reserved
//	      20  Starting PSN (3) | reserved
//	      24  Responder Resources | Initiator Depth | Target ACK Delay:5 Failover Accepted:2 End-to-End Flow Control:1 | RNR Retry Count:3 SRQ:1 reserved:4
//	      28  Local CA GUID (8)              36  Private Data (196)
type CMRep struct {
	cmBase
	LocalCommID         uint32 // Local Communication ID
	RemoteCommID        uint32 // Remote Communication ID: the REQ's Local Communication ID
	LocalQKey           uint32 // Local Q_Key
	LocalQPN            uint32 // Local QPN (24 bits)
	LocalEECN           uint32 // Local EE Context Number (24 bits)
	StartingPSN         uint32 // Starting PSN (24 bits)
	ResponderResources  uint8  // Responder Resources
	InitiatorDepth      uint8  // Initiator Depth
	TargetACKDelay      uint8  // Target ACK Delay (5 bits)
	FailoverAccepted    uint8  // Failover Accepted (2 bits)
	EndToEndFlowControl bool   // End-to-End Flow Control
	RNRRetryCount       uint8  // RNR Retry Count (3 bits)
	SRQ                 bool   // SRQ
	LocalCAGUID         uint64 // Local CA GUID
}

func (m *CMRep) LayerType() gopacket.LayerType     { return LayerTypeCMRep }
func (m *CMRep) CanDecode() gopacket.LayerClass    { return LayerTypeCMRep }
func (m *CMRep) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMRep) AttributeID() uint16               { return AttrREP }
func (m *CMRep) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMRep) PrivateDataOffset() int            { return 36 }
func (m *CMRep) PrivateDataSize() int              { return 196 }

// DecodeFromBytes decodes a REP from the 232-octet MAD data.
func (m *CMRep) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMRep{}
	if err := m.split("cm rep", d, AttrREP, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	m.LocalQKey = binary.BigEndian.Uint32(d[8:12])
	m.LocalQPN = uint24(d[12:15])
	m.LocalEECN = uint24(d[16:19])
	m.StartingPSN = uint24(d[20:23])
	m.ResponderResources = d[24]
	m.InitiatorDepth = d[25]
	m.TargetACKDelay = d[26] >> 3
	m.FailoverAccepted = d[26] >> 1 & 0x03
	m.EndToEndFlowControl = d[26]&0x01 != 0
	m.RNRRetryCount = d[27] >> 5
	m.SRQ = d[27]&0x10 != 0
	m.LocalCAGUID = binary.BigEndian.Uint64(d[28:36])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a REP.
func (m *CMRep) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrREP, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
		binary.BigEndian.PutUint32(d[8:12], m.LocalQKey)
		putUint24(d[12:15], m.LocalQPN)
		putUint24(d[16:19], m.LocalEECN)
		putUint24(d[20:23], m.StartingPSN)
		d[24] = m.ResponderResources
		d[25] = m.InitiatorDepth
		d[26] = m.TargetACKDelay<<3 | (m.FailoverAccepted&0x03)<<1 | bit(m.EndToEndFlowControl, 0x01)
		d[27] = m.RNRRetryCount<<5 | bit(m.SRQ, 0x10)
		binary.BigEndian.PutUint64(d[28:36], m.LocalCAGUID)
	})
}

// Fields lists the REP's fields for display.
func (m *CMRep) Fields() []Field {
	f := make(fieldList, 0, 14)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	f.hex("Local Q_Key", "local_q_key", 32, uint64(m.LocalQKey))
	f.hex("Local QPN", "local_qpn", 24, uint64(m.LocalQPN))
	f.hex("Local EE Context Number", "local_eecn", 24, uint64(m.LocalEECN))
	f.dec("Starting PSN", "starting_psn", uint64(m.StartingPSN))
	f.dec("Responder Resources", "responder_resources", uint64(m.ResponderResources))
	f.dec("Initiator Depth", "initiator_depth", uint64(m.InitiatorDepth))
	f.dec("Target ACK Delay", "target_ack_delay", uint64(m.TargetACKDelay))
	f.dec("Failover Accepted", "failover_accepted", uint64(m.FailoverAccepted))
	f.flag("End-to-End Flow Control", "end_to_end_flow_control", m.EndToEndFlowControl)
	f.dec("RNR Retry Count", "rnr_retry_count", uint64(m.RNRRetryCount))
	f.flag("SRQ", "srq", m.SRQ)
	f.id64("Local CA GUID", "local_ca_guid", m.LocalCAGUID)
	return f
}
