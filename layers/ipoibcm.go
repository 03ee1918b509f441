package layers

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// IPoIBCMData is the private data of IP over InfiniBand connected mode (RFC
// 4755; Linux drivers/infiniband/ulp/ipoib/ipoib_cm.c, struct
// ipoib_cm_data), in the REQ and the REP: the sender's UD QP number and the
// largest packet it receives on the connection. The Service ID is
// 0x1000000000000000 | the listening QP number. Big-endian.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                             QPN                               |
//	+---------------------------------------------------------------+
//	|                             MTU                               |
//	+---------------------------------------------------------------+
type IPoIBCMData struct {
	golayers.BaseLayer
	QPN uint32
	MTU uint32
}

// IPoIB connected mode constants.
const (
	IPoIBCMDataLen     = 8
	IPoIBCMServiceBase = 0x1000000000000000 // IPOIB_CM_IETF_ID
)

// IsIPoIBCMServiceID reports whether a Service ID is IPoIB connected mode's:
// 0x1000000000000000 | a 24-bit QP number.
func IsIPoIBCMServiceID(sid uint64) bool { return sid&^0xffffff == IPoIBCMServiceBase }

func (m *IPoIBCMData) LayerType() gopacket.LayerType     { return LayerTypeIPoIBCM }
func (m *IPoIBCMData) CanDecode() gopacket.LayerClass    { return LayerTypeIPoIBCM }
func (m *IPoIBCMData) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }

// DecodeFromBytes decodes the 8 octets.
func (m *IPoIBCMData) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = IPoIBCMData{}
	if err := need("ipoib cm data", data, IPoIBCMDataLen); err != nil {
		df.SetTruncated()
		return err
	}
	m.QPN, m.MTU = binary.BigEndian.Uint32(data[0:]), binary.BigEndian.Uint32(data[4:])
	m.Contents, m.Payload = split(data, IPoIBCMDataLen)
	return nil
}

// Problem: a QP number has 24 bits.
func (m *IPoIBCMData) Problem() string {
	if m.QPN > 0xffffff {
		return fmt.Sprintf("QPN 0x%08x has more than 24 bits", m.QPN)
	}
	return ""
}

// Fields lists the two fields.
func (m *IPoIBCMData) Fields() []Field {
	f := make(fieldList, 0, 2)
	f.hex("QPN", "qpn", 24, uint64(m.QPN))
	f.dec("MTU", "mtu", uint64(m.MTU))
	return f
}

// Summary is "IPoIB-CM qpn=0x000405 mtu=65524".
func (m *IPoIBCMData) Summary() string {
	return fmt.Sprintf("IPoIB-CM qpn=0x%06x mtu=%d", m.QPN, m.MTU)
}

// Encode writes the 8 octets into b.
func (m *IPoIBCMData) Encode(b []byte) {
	binary.BigEndian.PutUint32(b[0:], m.QPN)
	binary.BigEndian.PutUint32(b[4:], m.MTU)
}

func decodeIPoIBCM(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&IPoIBCMData{}, data, p)
}
