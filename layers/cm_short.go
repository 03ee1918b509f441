package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// The short CM messages: MRA, RTU, DREQ and DREP. Each starts with the
// Local and Remote Communication IDs.

// CMMra is the Communication Manager MRA message (IBTA Vol 1, 12.6.6, table
// 107): Message Receipt Acknowledgement, asking the peer to wait longer.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  Message MRAed:2 reserved:6 | Service Timeout:5 reserved:3
//	      10  Private Data (222)
type CMMra struct {
	cmBase
	LocalCommID    uint32 // Local Communication ID
	RemoteCommID   uint32 // Remote Communication ID
	MessageMRAed   uint8  // Message MRAed (2 bits): 0 REQ, 1 REP, 2 LAP
	ServiceTimeout uint8  // Service Timeout (5 bits)
}

func (m *CMMra) LayerType() gopacket.LayerType     { return LayerTypeCMMra }
func (m *CMMra) CanDecode() gopacket.LayerClass    { return LayerTypeCMMra }
func (m *CMMra) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMMra) AttributeID() uint16               { return AttrMRA }
func (m *CMMra) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMMra) PrivateDataOffset() int            { return 10 }
func (m *CMMra) PrivateDataSize() int              { return 222 }

// DecodeFromBytes decodes an MRA from the 232-octet MAD data.
func (m *CMMra) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMMra{}
	if err := m.split("cm mra", d, AttrMRA, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	m.MessageMRAed = d[8] >> 6
	m.ServiceTimeout = d[9] >> 3
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of an MRA.
func (m *CMMra) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrMRA, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
		d[8] = m.MessageMRAed << 6
		d[9] = m.ServiceTimeout << 3
	})
}

// Fields lists the MRA's fields for display.
func (m *CMMra) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	f.dec("Message MRAed", "message_mraed", uint64(m.MessageMRAed))
	f.dec("Service Timeout", "service_timeout", uint64(m.ServiceTimeout))
	return f
}

// CMRtu is the Communication Manager RTU message (IBTA Vol 1, 12.6.9, table
// 111): Ready To Use, the active side's answer to a REP.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  Private Data (224)
type CMRtu struct {
	cmBase
	LocalCommID  uint32 // Local Communication ID
	RemoteCommID uint32 // Remote Communication ID
}

func (m *CMRtu) LayerType() gopacket.LayerType     { return LayerTypeCMRtu }
func (m *CMRtu) CanDecode() gopacket.LayerClass    { return LayerTypeCMRtu }
func (m *CMRtu) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMRtu) AttributeID() uint16               { return AttrRTU }
func (m *CMRtu) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMRtu) PrivateDataOffset() int            { return 8 }
func (m *CMRtu) PrivateDataSize() int              { return 224 }

// DecodeFromBytes decodes an RTU from the 232-octet MAD data.
func (m *CMRtu) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMRtu{}
	if err := m.split("cm rtu", d, AttrRTU, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of an RTU.
func (m *CMRtu) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrRTU, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
	})
}

// Fields lists the RTU's fields for display.
func (m *CMRtu) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	return f
}

// CMDreq is the Communication Manager DREQ message (IBTA Vol 1, 12.6.10,
// table 112): Disconnection REQuest.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  Remote QPN/EECN (3) | reserved  12  Private Data (220)
type CMDreq struct {
	cmBase
	LocalCommID   uint32 // Local Communication ID
	RemoteCommID  uint32 // Remote Communication ID
	RemoteQPNEECN uint32 // Remote QPN/EECN (24 bits)
}

func (m *CMDreq) LayerType() gopacket.LayerType     { return LayerTypeCMDreq }
func (m *CMDreq) CanDecode() gopacket.LayerClass    { return LayerTypeCMDreq }
func (m *CMDreq) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMDreq) AttributeID() uint16               { return AttrDREQ }
func (m *CMDreq) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMDreq) PrivateDataOffset() int            { return 12 }
func (m *CMDreq) PrivateDataSize() int              { return 220 }

// DecodeFromBytes decodes a DREQ from the 232-octet MAD data.
func (m *CMDreq) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMDreq{}
	if err := m.split("cm dreq", d, AttrDREQ, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	m.RemoteQPNEECN = uint24(d[8:11])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a DREQ.
func (m *CMDreq) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrDREQ, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
		putUint24(d[8:11], m.RemoteQPNEECN)
	})
}

// Fields lists the DREQ's fields for display.
func (m *CMDreq) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	f.hex("Remote QPN/EECN", "remote_qpn", 24, uint64(m.RemoteQPNEECN))
	return f
}

// CMDrep is the Communication Manager DREP message (IBTA Vol 1, 12.6.11,
// table 113): Disconnection REPly.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  Private Data (224)
type CMDrep struct {
	cmBase
	LocalCommID  uint32 // Local Communication ID
	RemoteCommID uint32 // Remote Communication ID
}

func (m *CMDrep) LayerType() gopacket.LayerType     { return LayerTypeCMDrep }
func (m *CMDrep) CanDecode() gopacket.LayerClass    { return LayerTypeCMDrep }
func (m *CMDrep) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMDrep) AttributeID() uint16               { return AttrDREP }
func (m *CMDrep) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMDrep) PrivateDataOffset() int            { return 8 }
func (m *CMDrep) PrivateDataSize() int              { return 224 }

// DecodeFromBytes decodes a DREP from the 232-octet MAD data.
func (m *CMDrep) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMDrep{}
	if err := m.split("cm drep", d, AttrDREP, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a DREP.
func (m *CMDrep) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrDREP, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
	})
}

// Fields lists the DREP's fields for display.
func (m *CMDrep) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	return f
}
