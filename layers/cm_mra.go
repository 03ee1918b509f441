package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

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
