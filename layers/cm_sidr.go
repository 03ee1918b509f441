package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// CMSidrReq is the Communication Manager SIDR_REQ message (IBTA Vol 1,
// 12.11.1, table 119): Service ID Resolution Request, for UD services. Like a
// REQ, its private data starts with the IP CM header when the Service ID
// carries the IP CM prefix.
//
//	octet  0  Request ID (4)                  4  Partition Key (2) | reserved (2)
//	       8  Service ID (8)                 16  Private Data (216)
type CMSidrReq struct {
	cmBase
	RequestID    uint32 // Request ID
	PartitionKey uint16 // Partition Key
	ServiceID    uint64 // Service ID
}

func (m *CMSidrReq) LayerType() gopacket.LayerType  { return LayerTypeCMSidrReq }
func (m *CMSidrReq) CanDecode() gopacket.LayerClass { return LayerTypeCMSidrReq }
func (m *CMSidrReq) AttributeID() uint16            { return AttrSIDRREQ }
func (m *CMSidrReq) CommIDs() (uint32, uint32)      { return m.RequestID, 0 }
func (m *CMSidrReq) PrivateDataOffset() int         { return 16 }
func (m *CMSidrReq) PrivateDataSize() int           { return 216 }

// NextLayerType is the IP CM header when the Service ID carries the IP CM
// prefix, otherwise the RFC 8797 message if it starts the private data.
func (m *CMSidrReq) NextLayerType() gopacket.LayerType {
	if IsIPCMServiceID(m.ServiceID) && len(m.PrivateData) > 0 {
		return LayerTypeIPCM
	}
	return m.next()
}

// DecodeFromBytes decodes a SIDR_REQ from the 232-octet MAD data.
func (m *CMSidrReq) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMSidrReq{}
	if err := m.split("cm sidr_req", d, AttrSIDRREQ, df); err != nil {
		return err
	}
	m.RequestID = binary.BigEndian.Uint32(d[0:4])
	m.PartitionKey = binary.BigEndian.Uint16(d[4:6])
	m.ServiceID = binary.BigEndian.Uint64(d[8:16])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a SIDR_REQ.
func (m *CMSidrReq) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrSIDRREQ, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.RequestID)
		binary.BigEndian.PutUint16(d[4:6], m.PartitionKey)
		binary.BigEndian.PutUint64(d[8:16], m.ServiceID)
	})
}

// Fields lists the SIDR_REQ's fields for display.
func (m *CMSidrReq) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Request ID", "request_id", 32, uint64(m.RequestID))
	f.hex("Partition Key", "partition_key", 16, uint64(m.PartitionKey))
	f.id64("Service ID", "service_id", m.ServiceID)
	f.note(ServiceIDNote(m.ServiceID))
	return f
}

// CMSidrRep is the Communication Manager SIDR_REP message (IBTA Vol 1,
// 12.11.2, table 120): Service ID Resolution Response. The offsets follow
// the IBTA table (and Linux's ib_cm): QPN at 8, Service ID at 12, Q_Key at 20.
//
//	octet  0  Request ID (4)                  4  Status | Additional Information Length | reserved (2)
//	       8  QPN (3) | reserved             12  Service ID (8)
//	      20  Q_Key (4)                      24  Additional Information (72)
//	      96  Private Data (136)
type CMSidrRep struct {
	cmBase
	RequestID      uint32   // Request ID
	Status         uint8    // Status: 0 valid, 1 service ID not supported, 2 rejected, 3 no QP, 4 redirect, 5 unsupported version
	AddInfoLength  uint8    // Additional Information Length
	QPN            uint32   // QPN (24 bits)
	ServiceID      uint64   // Service ID
	QKey           uint32   // Q_Key
	AdditionalInfo [72]byte // Additional Information (ClassPortInfo on redirect)
}

func (m *CMSidrRep) LayerType() gopacket.LayerType     { return LayerTypeCMSidrRep }
func (m *CMSidrRep) CanDecode() gopacket.LayerClass    { return LayerTypeCMSidrRep }
func (m *CMSidrRep) NextLayerType() gopacket.LayerType { return m.next() }
func (m *CMSidrRep) AttributeID() uint16               { return AttrSIDRREP }
func (m *CMSidrRep) CommIDs() (uint32, uint32)         { return m.RequestID, 0 }
func (m *CMSidrRep) PrivateDataOffset() int            { return 96 }
func (m *CMSidrRep) PrivateDataSize() int              { return 136 }

// DecodeFromBytes decodes a SIDR_REP from the 232-octet MAD data.
func (m *CMSidrRep) DecodeFromBytes(d []byte, df gopacket.DecodeFeedback) error {
	*m = CMSidrRep{}
	if err := m.split("cm sidr_rep", d, AttrSIDRREP, df); err != nil {
		return err
	}
	m.RequestID = binary.BigEndian.Uint32(d[0:4])
	m.Status = d[4]
	m.AddInfoLength = d[5]
	m.QPN = uint24(d[8:11])
	m.ServiceID = binary.BigEndian.Uint64(d[12:20])
	m.QKey = binary.BigEndian.Uint32(d[20:24])
	copy(m.AdditionalInfo[:], d[24:96])
	return nil
}

// SerializeTo writes the whole 232-octet MAD data of a SIDR_REP.
func (m *CMSidrRep) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	return m.serialize(b, AttrSIDRREP, func(d []byte) {
		binary.BigEndian.PutUint32(d[0:4], m.RequestID)
		d[4] = m.Status
		d[5] = m.AddInfoLength
		putUint24(d[8:11], m.QPN)
		binary.BigEndian.PutUint64(d[12:20], m.ServiceID)
		binary.BigEndian.PutUint32(d[20:24], m.QKey)
		copy(d[24:96], m.AdditionalInfo[:])
	})
}

// Fields lists the SIDR_REP's fields for display.
func (m *CMSidrRep) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.hex("Request ID", "request_id", 32, uint64(m.RequestID))
	f.dec("Status", "status", uint64(m.Status))
	f.dec("Additional Information Length", "add_info_length", uint64(m.AddInfoLength))
	f.hex("QPN", "qpn", 24, uint64(m.QPN))
	f.id64("Service ID", "service_id", m.ServiceID)
	f.note(ServiceIDNote(m.ServiceID))
	f.hex("Q_Key", "q_key", 32, uint64(m.QKey))
	n := int(m.AddInfoLength)
	if n > len(m.AdditionalInfo) {
		n = len(m.AdditionalInfo)
	}
	f.blob("Additional Information", "additional_info", m.AdditionalInfo[:n])
	return f
}
