package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// CMApr is the Communication Manager APR message (IBTA Vol 1, 12.8.2, table
// 116): Alternate Path Response, the answer to a LAP.
//
//	octet  0  Local Communication ID (4)      4  Remote Communication ID (4)
//	       8  Additional Info Length | AP Status | reserved (2)
//	      12  Additional Information (72)    84  Private Data (148)
type CMApr struct {
	cmBase
	LocalCommID    uint32   // Local Communication ID
	RemoteCommID   uint32   // Remote Communication ID
	AddInfoLength  uint8    // Additional Information Length
	APStatus       uint8    // AP Status: 0 loaded, 1 invalid QPN/EECN, ...
	AdditionalInfo [72]byte // Additional Information
}

func (m *CMApr) LayerType() gopacket.LayerType     { return LayerTypeCMApr }
func (m *CMApr) CanDecode() gopacket.LayerClass    { return LayerTypeCMApr }
func (m *CMApr) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMApr) AttributeID() uint16               { return AttrAPR }
func (m *CMApr) CommIDs() (uint32, uint32)         { return m.LocalCommID, m.RemoteCommID }
func (m *CMApr) PrivateDataOffset() int            { return 84 }
func (m *CMApr) PrivateDataSize() int              { return 148 }

// DecodeFromBytes decodes an APR from the 232-octet MAD data.
func (m *CMApr) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMApr{}
	if err := m.split("cm apr", d, AttrAPR, df); err != nil {
		return err
	}
	m.LocalCommID = binary.BigEndian.Uint32(d[0:4])
	m.RemoteCommID = binary.BigEndian.Uint32(d[4:8])
	m.AddInfoLength = d[8]
	m.APStatus = d[9]
	copy(m.AdditionalInfo[:], d[12:84])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of an APR.
func (m *CMApr) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrAPR, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.LocalCommID)
		binary.BigEndian.PutUint32(d[4:8], m.RemoteCommID)
		d[8] = m.AddInfoLength
		d[9] = m.APStatus
		copy(d[12:84], m.AdditionalInfo[:])
	})
}

// Fields lists the APR's fields for display.
func (m *CMApr) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Local Communication ID", "local_comm_id", 32, uint64(m.LocalCommID))
	f.hex("Remote Communication ID", "remote_comm_id", 32, uint64(m.RemoteCommID))
	f.dec("Additional Information Length", "add_info_length", uint64(m.AddInfoLength))
	f.dec("AP Status", "ap_status", uint64(m.APStatus))
	n := int(m.AddInfoLength)
	if n > len(m.AdditionalInfo) {
		n = len(m.AdditionalInfo)
	}
	f.blob("Additional Information", "additional_info", m.AdditionalInfo[:n])
	return f
}
