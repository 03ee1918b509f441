package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// MAD is the common header of a Management Datagram (IBTA Vol 1, 13.4.2).
// A MAD is 256 octets: this 24-octet header, then 232 octets of class data,
// which for the Communication Manager class (0x07) is one CM message.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------+---------------+---------------+-+-------------+
//	|  BaseVersion  |   MgmtClass   | ClassVersion  |R|   Method    |
//	+---------------+---------------+---------------+-+-------------+
//	|            Status             |         ClassSpecific         |
//	+-------------------------------+-------------------------------+
//	|                   TransactionID (8 octets)                    |
//	+-------------------------------+-------------------------------+
//	|          AttributeID          |           Reserved            |
//	+-------------------------------+-------------------------------+
//	|                       AttributeModifier                       |
//	+---------------------------------------------------------------+
type MAD struct {
	golayers.BaseLayer
	BaseVersion       uint8  // 1
	MgmtClass         uint8  // management class: 0x07 Communication Manager
	ClassVersion      uint8  // 2 for the CM class
	Method            uint8  // including the R (response) bit 0x80; CM uses 0x03 Send
	Status            uint16 // MAD status
	ClassSpecific     uint16
	TransactionID     uint64
	AttributeID       uint16 // for CM: which message the data holds
	Reserved          uint16
	AttributeModifier uint32
}

// Sizes of a MAD, its header and its data.
const (
	MADHeaderLen = 24
	MADLen       = 256
	MADDataLen   = MADLen - MADHeaderLen
)

// Management classes and methods this package names.
const (
	MgmtClassSubnLID = 0x01
	MgmtClassSubnDR  = 0x81
	MgmtClassSA      = 0x03
	MgmtClassPerf    = 0x04
	MgmtClassCM      = 0x07
	MethodSend       = 0x03
)

func (m *MAD) LayerType() gopacket.LayerType  { return LayerTypeMAD }
func (m *MAD) CanDecode() gopacket.LayerClass { return LayerTypeMAD }

// NextLayerType is the CM message the AttributeID names, for the CM class.
func (m *MAD) NextLayerType() gopacket.LayerType {
	if m.MgmtClass == MgmtClassCM {
		if lt, ok := cmLayerType(m.AttributeID); ok {
			return lt
		}
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes the MAD header. The payload is the class data, at
// most 232 octets (anything after the 256-octet MAD is not the MAD's).
func (m *MAD) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = MAD{}
	if err := need("mad", data, MADHeaderLen); err != nil {
		df.SetTruncated()
		return err
	}
	m.BaseVersion = data[0]
	m.MgmtClass = data[1]
	m.ClassVersion = data[2]
	m.Method = data[3]
	m.Status = binary.BigEndian.Uint16(data[4:6])
	m.ClassSpecific = binary.BigEndian.Uint16(data[6:8])
	m.TransactionID = binary.BigEndian.Uint64(data[8:16])
	m.AttributeID = binary.BigEndian.Uint16(data[16:18])
	m.Reserved = binary.BigEndian.Uint16(data[18:20])
	m.AttributeModifier = binary.BigEndian.Uint32(data[20:24])
	m.Contents = data[:MADHeaderLen]
	end := len(data)
	if end > MADLen {
		end = MADLen
	}
	m.Payload = data[MADHeaderLen:end]
	return nil
}

// SerializeTo writes the MAD header.
func (m *MAD) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(MADHeaderLen)
	if err != nil {
		return err
	}
	h[0] = m.BaseVersion
	h[1] = m.MgmtClass
	h[2] = m.ClassVersion
	h[3] = m.Method
	binary.BigEndian.PutUint16(h[4:6], m.Status)
	binary.BigEndian.PutUint16(h[6:8], m.ClassSpecific)
	binary.BigEndian.PutUint64(h[8:16], m.TransactionID)
	binary.BigEndian.PutUint16(h[16:18], m.AttributeID)
	binary.BigEndian.PutUint16(h[18:20], m.Reserved)
	binary.BigEndian.PutUint32(h[20:24], m.AttributeModifier)
	return nil
}

// Fields lists the MAD header's fields for display.
func (m *MAD) Fields() []Field {
	f := make(fieldList, 0, 9)
	f.dec("Base Version", "base_version", uint64(m.BaseVersion))
	f.hex("Management Class", "mgmt_class", 8, uint64(m.MgmtClass))
	if m.MgmtClass == MgmtClassCM {
		f.note("Communication Manager")
	}
	f.dec("Class Version", "class_version", uint64(m.ClassVersion))
	f.hex("Method", "method", 8, uint64(m.Method))
	f.hex("Status", "status", 16, uint64(m.Status))
	f.hex("Class Specific", "class_specific", 16, uint64(m.ClassSpecific))
	f.id64("Transaction ID", "transaction_id", m.TransactionID)
	f.hex("Attribute ID", "attribute_id", 16, uint64(m.AttributeID))
	f.note(CMMessageName(m.AttributeID))
	f.hex("Attribute Modifier", "attribute_modifier", 32, uint64(m.AttributeModifier))
	return f
}

func decodeMAD(data []byte, p gopacket.PacketBuilder) error {
	m := &MAD{}
	if err := m.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(m)
	return p.NextDecoder(m.NextLayerType())
}
