package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

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
	f := make(fieldList, 0, 3)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	f.hex("Remote QPN/EECN", "remote_qpn", 24, uint64(m.RemoteQPNEECN))
	return f
}
