package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

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
	f := make(fieldList, 0, 2)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	return f
}
