package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

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
	f := make(fieldList, 0, 2)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	return f
}
