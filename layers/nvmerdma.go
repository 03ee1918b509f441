package layers

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// The NVMe over Fabrics RDMA transport's CM private data (NVM Express RDMA
// Transport Specification 1.0, section 3.1, Figures 5, 6 and 7; status
// values in section 3.5, Figure 11). Every field is little-endian. The
// controller listens on the RDMA IP CM service, TCP port space, port 4420 by
// default (the discovery controller too).

// NVMeRDMACMReq is the host's RDMA_CM_REQUEST private data (Figure 5),
// 32 octets.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------------------------------+-------------------------------+
//	|     RECFMT (little-endian)    |      QID (little-endian)      |
//	+-------------------------------+-------------------------------+
//	|    HRQSIZE (little-endian)    |    HSQSIZE (little-endian)    |
//	+-------------------------------+-------------------------------+
//	|     CNTLID (little-endian)    |                               |
//	+-------------------------------+                               +
//	|                   Reserved (octets 10 to 31)                  |
//	+---------------------------------------------------------------+
type NVMeRDMACMReq struct {
	golayers.BaseLayer
	RecFmt  uint16 // Record Format: 0
	QID     uint16 // Queue ID: 0 for the Admin Queue
	HRQSize uint16 // RDMA QP Host Receive Queue Size
	HSQSize uint16 // RDMA QP Host Send Queue Size, 0's based (the SQSIZE of Connect)
	CntlID  uint16 // Controller ID, for an I/O queue; 0 for the Admin Queue
}

// NVMeRDMACMRep is the controller's RDMA_CM_ACCEPT private data (Figure 6),
// 32 octets on the wire of the spec, 8 as Linux sends it.
//
//	+-------------------------------+-------------------------------+
//	|     RECFMT (little-endian)    |    CRQSIZE (little-endian)    |
//	+-------------------------------+-------------------------------+
//	|                   Reserved (octets 4 to 31)                   |
type NVMeRDMACMRep struct {
	golayers.BaseLayer
	RecFmt  uint16 // Record Format: 0
	CRQSize uint16 // RDMA QP Controller Receive Queue Size
}

// NVMeRDMACMRej is the controller's RDMA_CM_REJECT private data (Figure 7),
// 4 octets.
//
//	+-------------------------------+-------------------------------+
//	|     RECFMT (little-endian)    |      STS (little-endian)      |
//	+-------------------------------+-------------------------------+
type NVMeRDMACMRej struct {
	golayers.BaseLayer
	RecFmt uint16 // Record Format: 0
	Status uint16 // Status: Figure 11
}

// Sizes of the NVMe-oF RDMA private data.
const (
	NVMeRDMAReqLen    = 32 // the REQ's private data as the spec lays it out
	NVMeRDMAReqMinLen = 10 // through CNTLID
	NVMeRDMARepLen    = 32 // the spec's REP; Linux sends 8
	NVMeRDMARepMinLen = 4  // through CRQSIZE
	NVMeRDMARejLen    = 4
	NVMeRDMAPort      = 4420 // IANA: NVMe over Fabrics, TCP and UDP
)

// NVMeRDMAStatusName names an RDMA_CM_REJECT status (Figure 11), or "".
func NVMeRDMAStatusName(s uint16) string {
	if int(s) < len(nvmeRDMAStatusNames) {
		return nvmeRDMAStatusNames[s]
	}
	return ""
}

var nvmeRDMAStatusNames = [...]string{
	1: "RDMA Invalid Private Data Length",
	2: "RDMA Invalid RECFMT",
	3: "RDMA Invalid QID",
	4: "RDMA Invalid HSQSIZE",
	5: "RDMA Invalid HRQSIZE",
	6: "RDMA No Resources",
	7: "RDMA Invalid IRD",
	8: "RDMA Invalid ORD",
	9: "RDMA Invalid CNTLID",
}

func (m *NVMeRDMACMReq) LayerType() gopacket.LayerType     { return LayerTypeNVMeRDMAReq }
func (m *NVMeRDMACMReq) CanDecode() gopacket.LayerClass    { return LayerTypeNVMeRDMAReq }
func (m *NVMeRDMACMReq) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }
func (m *NVMeRDMACMRep) LayerType() gopacket.LayerType     { return LayerTypeNVMeRDMARep }
func (m *NVMeRDMACMRep) CanDecode() gopacket.LayerClass    { return LayerTypeNVMeRDMARep }
func (m *NVMeRDMACMRep) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }
func (m *NVMeRDMACMRej) LayerType() gopacket.LayerType     { return LayerTypeNVMeRDMARej }
func (m *NVMeRDMACMRej) CanDecode() gopacket.LayerClass    { return LayerTypeNVMeRDMARej }
func (m *NVMeRDMACMRej) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }

// DecodeFromBytes decodes the REQ's private data; the reserved octets that
// are there belong to Contents, whatever they hold.
func (m *NVMeRDMACMReq) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = NVMeRDMACMReq{}
	if err := need("nvme-rdma cm req", data, NVMeRDMAReqMinLen); err != nil {
		df.SetTruncated()
		return err
	}
	le := binary.LittleEndian
	m.RecFmt, m.QID = le.Uint16(data[0:]), le.Uint16(data[2:])
	m.HRQSize, m.HSQSize, m.CntlID = le.Uint16(data[4:]), le.Uint16(data[6:]), le.Uint16(data[8:])
	m.Contents, m.Payload = split(data, NVMeRDMAReqLen)
	return nil
}

// DecodeFromBytes decodes the REP's private data.
func (m *NVMeRDMACMRep) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = NVMeRDMACMRep{}
	if err := need("nvme-rdma cm rep", data, NVMeRDMARepMinLen); err != nil {
		df.SetTruncated()
		return err
	}
	m.RecFmt, m.CRQSize = binary.LittleEndian.Uint16(data[0:]), binary.LittleEndian.Uint16(data[2:])
	m.Contents, m.Payload = split(data, NVMeRDMARepLen)
	return nil
}

// DecodeFromBytes decodes the REJ's private data.
func (m *NVMeRDMACMRej) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = NVMeRDMACMRej{}
	if err := need("nvme-rdma cm rej", data, NVMeRDMARejLen); err != nil {
		df.SetTruncated()
		return err
	}
	m.RecFmt, m.Status = binary.LittleEndian.Uint16(data[0:]), binary.LittleEndian.Uint16(data[2:])
	m.Contents, m.Payload = split(data, NVMeRDMARejLen)
	return nil
}

// Problem: the record format must be 0 and the host must offer a receive
// queue.
func (m *NVMeRDMACMReq) Problem() string {
	switch {
	case m.RecFmt != 0:
		return fmt.Sprintf("RECFMT is %d, not 0", m.RecFmt)
	case m.HRQSize == 0:
		return "HRQSIZE is 0"
	}
	return ""
}

// Plausible reports whether the sizes look like a host's: a receive queue
// at least as deep as the send queue (Linux and SPDK send HRQSIZE =
// HSQSIZE + 1). With a valid record format, this is what recognises NVMe-oF
// private data without its port.
func (m *NVMeRDMACMReq) Plausible() bool {
	return m.Problem() == "" && int(m.HSQSize) < int(m.HRQSize)
}

// Problem: the record format must be 0.
func (m *NVMeRDMACMRep) Problem() string {
	if m.RecFmt != 0 {
		return fmt.Sprintf("RECFMT is %d, not 0", m.RecFmt)
	}
	return ""
}

// Problem: the record format must be 0 and the status one of Figure 11.
func (m *NVMeRDMACMRej) Problem() string {
	switch {
	case m.RecFmt != 0:
		return fmt.Sprintf("RECFMT is %d, not 0", m.RecFmt)
	case NVMeRDMAStatusName(m.Status) == "":
		return fmt.Sprintf("STS %d is reserved", m.Status)
	}
	return ""
}

// Fields lists the REQ's fields.
func (m *NVMeRDMACMReq) Fields() []Field {
	f := make(fieldList, 0, 5)
	f.dec("Record Format", "recfmt", uint64(m.RecFmt))
	f.dec("Queue ID", "qid", uint64(m.QID))
	f.dec("Host Receive Queue Size", "hrqsize", uint64(m.HRQSize))
	f.dec("Host Send Queue Size (0's based)", "hsqsize", uint64(m.HSQSize))
	f.dec("Controller ID", "cntlid", uint64(m.CntlID))
	return f
}

// Fields lists the REP's fields.
func (m *NVMeRDMACMRep) Fields() []Field {
	f := make(fieldList, 0, 2)
	f.dec("Record Format", "recfmt", uint64(m.RecFmt))
	f.dec("Controller Receive Queue Size", "crqsize", uint64(m.CRQSize))
	return f
}

// Fields lists the REJ's fields; the status carries its name.
func (m *NVMeRDMACMRej) Fields() []Field {
	f := make(fieldList, 0, 2)
	f.dec("Record Format", "recfmt", uint64(m.RecFmt))
	f.dec("Status", "status", uint64(m.Status))
	f.note(NVMeRDMAStatusName(m.Status))
	return f
}

// Summary is "NVMe-oF qid=0 hrqsize=32 hsqsize=31", with the controller ID
// of an I/O queue.
func (m *NVMeRDMACMReq) Summary() string {
	s := fmt.Sprintf("NVMe-oF qid=%d hrqsize=%d hsqsize=%d", m.QID, m.HRQSize, m.HSQSize)
	if m.CntlID != 0 {
		s += fmt.Sprintf(" cntlid=%d", m.CntlID)
	}
	return s
}

// Summary is "NVMe-oF crqsize=33".
func (m *NVMeRDMACMRep) Summary() string { return fmt.Sprintf("NVMe-oF crqsize=%d", m.CRQSize) }

// Summary is "NVMe-oF status=6 (RDMA No Resources)".
func (m *NVMeRDMACMRej) Summary() string {
	s := fmt.Sprintf("NVMe-oF status=%d", m.Status)
	if n := NVMeRDMAStatusName(m.Status); n != "" {
		s += " (" + n + ")"
	}
	return s
}

// Encode writes the REQ's 32 octets (reserved zero) into b.
func (m *NVMeRDMACMReq) Encode(b []byte) {
	clear(b[:NVMeRDMAReqLen])
	le := binary.LittleEndian
	le.PutUint16(b[0:], m.RecFmt)
	le.PutUint16(b[2:], m.QID)
	le.PutUint16(b[4:], m.HRQSize)
	le.PutUint16(b[6:], m.HSQSize)
	le.PutUint16(b[8:], m.CntlID)
}

// Encode writes the REP's 32 octets (reserved zero) into b.
func (m *NVMeRDMACMRep) Encode(b []byte) {
	clear(b[:NVMeRDMARepLen])
	binary.LittleEndian.PutUint16(b[0:], m.RecFmt)
	binary.LittleEndian.PutUint16(b[2:], m.CRQSize)
}

// Encode writes the REJ's 4 octets into b.
func (m *NVMeRDMACMRej) Encode(b []byte) {
	binary.LittleEndian.PutUint16(b[0:], m.RecFmt)
	binary.LittleEndian.PutUint16(b[2:], m.Status)
}

func decodeNVMeRDMAReq(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&NVMeRDMACMReq{}, data, p)
}

func decodeNVMeRDMARep(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&NVMeRDMACMRep{}, data, p)
}

func decodeNVMeRDMARej(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&NVMeRDMACMRej{}, data, p)
}
