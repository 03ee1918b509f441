package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// CMLap is the Communication Manager LAP message (IBTA Vol 1, 12.8.1, table
// 115): Load Alternate Path.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  reserved (4)                   12  Remote QPN/EECN (3) | Remote CM Response Timeout:5 reserved:3
//	      16  reserved (4)                   20  Alternate Local Port LID (2) | Alternate Remote Port LID (2)
//	      24  Alternate Local Port GID (16)  40  Alternate Remote Port GID (16)
//	      56  Alternate Flow Label:20 reserved:4 | Alternate Traffic Class
//	      60  Alternate Hop Limit | Alternate Packet Rate:6 reserved:2 | Alternate SL:4 Subnet Local:1 reserved:3 | Local ACK Timeout:5 reserved:3
//	      64  Private Data (168)
type CMLap struct {
	cmBase
	LocalCommID             uint32   // Local Communication ID
	RemoteCommID            uint32   // Remote Communication ID
	RemoteQPNEECN           uint32   // Remote QPN/EECN (24 bits)
	RemoteCMResponseTimeout uint8    // Remote CM Response Timeout (5 bits)
	AltLocalPortLID         uint16   // Alternate Local Port LID
	AltRemotePortLID        uint16   // Alternate Remote Port LID
	AltLocalPortGID         [16]byte // Alternate Local Port GID
	AltRemotePortGID        [16]byte // Alternate Remote Port GID
	AltFlowLabel            uint32   // Alternate Flow Label (20 bits)
	AltTrafficClass         uint8    // Alternate Traffic Class
	AltHopLimit             uint8    // Alternate Hop Limit
	AltPacketRate           uint8    // Alternate Packet Rate (6 bits)
	AltSL                   uint8    // Alternate SL (4 bits)
	AltSubnetLocal          bool     // Alternate Subnet Local
	AltLocalACKTimeout      uint8    // Alternate Local ACK Timeout (5 bits)
}

func (m *CMLap) LayerType() gopacket.LayerType     { return LayerTypeCMLap }
func (m *CMLap) CanDecode() gopacket.LayerClass    { return LayerTypeCMLap }
func (m *CMLap) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMLap) AttributeID() uint16               { return AttrLAP }
func (m *CMLap) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMLap) PrivateDataOffset() int            { return 64 }
func (m *CMLap) PrivateDataSize() int              { return 168 }

// DecodeFromBytes decodes a LAP from the 232-octet MAD data.
func (m *CMLap) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMLap{}
	if err := m.split("cm lap", d, AttrLAP, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	m.RemoteQPNEECN = uint24(d[12:15])
	m.RemoteCMResponseTimeout = d[15] >> 3
	m.AltLocalPortLID = binary.BigEndian.Uint16(d[20:22])
	m.AltRemotePortLID = binary.BigEndian.Uint16(d[22:24])
	copy(m.AltLocalPortGID[:], d[24:40])
	copy(m.AltRemotePortGID[:], d[40:56])
	m.AltFlowLabel = binary.BigEndian.Uint32(d[56:60]) >> 12
	m.AltTrafficClass = d[59]
	m.AltHopLimit = d[60]
	m.AltPacketRate = d[61] & 0x3f
	m.AltSL = d[62] >> 4
	m.AltSubnetLocal = d[62]&0x08 != 0
	m.AltLocalACKTimeout = d[63] >> 3
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a LAP.
func (m *CMLap) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrLAP, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
		putUint24(d[12:15], m.RemoteQPNEECN)
		d[15] = m.RemoteCMResponseTimeout << 3
		binary.BigEndian.PutUint16(d[20:22], m.AltLocalPortLID)
		binary.BigEndian.PutUint16(d[22:24], m.AltRemotePortLID)
		copy(d[24:40], m.AltLocalPortGID[:])
		copy(d[40:56], m.AltRemotePortGID[:])
		binary.BigEndian.PutUint32(d[56:60], m.AltFlowLabel<<12)
		d[59] = m.AltTrafficClass
		d[60] = m.AltHopLimit
		d[61] = m.AltPacketRate & 0x3f
		d[62] = m.AltSL<<4 | bit(m.AltSubnetLocal, 0x08)
		d[63] = m.AltLocalACKTimeout << 3
	})
}

// Fields lists the LAP's fields for display.
func (m *CMLap) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	f.hex("Remote QPN/EECN", "remote_qpn", 24, uint64(m.RemoteQPNEECN))
	f.dec("Remote CM Response Timeout", "remote_cm_response_timeout", uint64(m.RemoteCMResponseTimeout))
	f.hex("Alternate Local Port LID", "alternate_local_lid", 16, uint64(m.AltLocalPortLID))
	f.hex("Alternate Remote Port LID", "alternate_remote_lid", 16, uint64(m.AltRemotePortLID))
	f.gid("Alternate Local Port GID", "alternate_local_gid", m.AltLocalPortGID)
	f.gid("Alternate Remote Port GID", "alternate_remote_gid", m.AltRemotePortGID)
	f.hex("Alternate Flow Label", "alternate_flow_label", 20, uint64(m.AltFlowLabel))
	f.hex("Alternate Traffic Class", "alternate_traffic_class", 8, uint64(m.AltTrafficClass))
	f.dec("Alternate Hop Limit", "alternate_hop_limit", uint64(m.AltHopLimit))
	f.dec("Alternate Packet Rate", "alternate_packet_rate", uint64(m.AltPacketRate))
	f.dec("Alternate SL", "alternate_sl", uint64(m.AltSL))
	f.flag("Alternate Subnet Local", "alternate_subnet_local", m.AltSubnetLocal)
	f.dec("Alternate Local ACK Timeout", "alternate_local_ack_timeout", uint64(m.AltLocalACKTimeout))
	return f
}
