package layers

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// The Sockets Direct Protocol (IBTA Vol 1, Annex A4; obsolete) opens a
// connection with a Hello message in the REQ's private data and answers
// with a HelloAck in the REP. Both start with the Base Sockets Direct
// Header. SDP's REQ has its own rdma_cm port space (Service ID
// 0x000000000001pppp) and no IP CM header: the Hello carries the port and
// addresses itself. Big-endian.

// SDPBSDH is the Base Sockets Direct Header (16 octets).
//
//	octet  0  MID: 0x00 Hello, 0x01 HelloAck   1 flags   2 buffers (2)
//	       4  length (4)   8 MSeq (4)   12 MSeqAck (4)
type SDPBSDH struct {
	MID     uint8
	Flags   uint8
	Bufs    uint16
	Len     uint32
	MSeq    uint32
	MSeqAck uint32
}

// SDPHello is the Hello message, the REQ's private data (BSDH and Hello
// Header, 64 octets used of the REQ's 92).
//
//	octet 16  major version (high nibble, 2), minor version (low)
//	      17  IP version (high nibble, 4 or 6), capabilities (low: 0x1
//	          Send With Invalidate supported, 0x2 extended max adverts)
//	      18  reserved   19 max adverts
//	      20  desired remote receive size (4)   24 local receive size (4)
//	      28  local port (2)   30 reserved (2)
//	      32  source address (16; IPv4 in the last 4)
//	      48  destination address (16)
type SDPHello struct {
	golayers.BaseLayer
	SDPBSDH
	MajorVersion   uint8
	MinorVersion   uint8
	IPVersion      uint8
	Capabilities   uint8
	MaxAdverts     uint8
	DesRemRcvSz    uint32
	LocalRcvSz     uint32
	LocalPort      uint16
	SrcAddr        netip.Addr
	DstAddr        netip.Addr
	rawSrc, rawDst [16]byte
}

// SDPHelloAck is the HelloAck message, the REP's private data (24 octets).
//
//	octet 16  major version (high nibble), minor version (low)
//	      17  IP version (high nibble), capabilities (low)
//	      18  reserved   19 extended max adverts   20 actual receive size (4)
type SDPHelloAck struct {
	golayers.BaseLayer
	SDPBSDH
	MajorVersion  uint8
	MinorVersion  uint8
	IPVersion     uint8
	Capabilities  uint8
	ExtMaxAdverts uint8
	ActRcvSz      uint32
}

// SDP constants.
const (
	SDPBSDHLen       = 16
	SDPHelloLen      = 64
	SDPHelloAckLen   = 24
	SDPMIDHello      = 0x00
	SDPMIDHelloAck   = 0x01
	SDPMajorVersion  = 2
	SDPCapInvalidate = 0x1
	SDPCapExtAdverts = 0x2
	// SDPPortSpace is rdma_cm's SDP port space: Service IDs 0x000000000001pppp.
	SDPPortSpace = 0x0001
)

// IsSDPServiceID reports whether a Service ID is in rdma_cm's SDP port
// space.
func IsSDPServiceID(sid uint64) bool { return sid>>16 == SDPPortSpace }

func (h *SDPBSDH) decode(b []byte) {
	be := binary.BigEndian
	h.MID, h.Flags, h.Bufs = b[0], b[1], be.Uint16(b[2:])
	h.Len, h.MSeq, h.MSeqAck = be.Uint32(b[4:]), be.Uint32(b[8:]), be.Uint32(b[12:])
}

func (h *SDPBSDH) encode(b []byte) {
	be := binary.BigEndian
	b[0], b[1] = h.MID, h.Flags
	be.PutUint16(b[2:], h.Bufs)
	be.PutUint32(b[4:], h.Len)
	be.PutUint32(b[8:], h.MSeq)
	be.PutUint32(b[12:], h.MSeqAck)
}

// sdpMIDNames names the message IDs of the two messages this package decodes.
var sdpMIDNames = map[uint8]string{SDPMIDHello: "Hello", SDPMIDHelloAck: "HelloAck"}

func (h *SDPBSDH) fields(f *fieldList) {
	f.hex("MID", "mid", 8, uint64(h.MID))
	f.note(sdpMIDNames[h.MID])
	f.hex("Flags", "flags", 8, uint64(h.Flags))
	f.dec("Buffers", "bufs", uint64(h.Bufs))
	f.dec("Length", "len", uint64(h.Len))
	f.hex("MSeq", "mseq", 32, uint64(h.MSeq))
	f.hex("MSeqAck", "mseq_ack", 32, uint64(h.MSeqAck))
}

func (m *SDPHello) LayerType() gopacket.LayerType        { return LayerTypeSDPHello }
func (m *SDPHello) CanDecode() gopacket.LayerClass       { return LayerTypeSDPHello }
func (m *SDPHello) NextLayerType() gopacket.LayerType    { return nextPayload(m.Payload) }
func (m *SDPHelloAck) LayerType() gopacket.LayerType     { return LayerTypeSDPHelloAck }
func (m *SDPHelloAck) CanDecode() gopacket.LayerClass    { return LayerTypeSDPHelloAck }
func (m *SDPHelloAck) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }

// DecodeFromBytes decodes the Hello.
func (m *SDPHello) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = SDPHello{}
	if err := need("sdp hello", data, SDPHelloLen); err != nil {
		df.SetTruncated()
		return err
	}
	be := binary.BigEndian
	m.SDPBSDH.decode(data)
	m.MajorVersion, m.MinorVersion = data[16]>>4, data[16]&0x0f
	m.IPVersion, m.Capabilities = data[17]>>4, data[17]&0x0f
	m.MaxAdverts = data[19]
	m.DesRemRcvSz, m.LocalRcvSz = be.Uint32(data[20:]), be.Uint32(data[24:])
	m.LocalPort = be.Uint16(data[28:])
	copy(m.rawSrc[:], data[32:48])
	copy(m.rawDst[:], data[48:64])
	m.SrcAddr, m.DstAddr = sdpAddr(m.IPVersion, &m.rawSrc), sdpAddr(m.IPVersion, &m.rawDst)
	m.Contents, m.Payload = split(data, SDPHelloLen)
	return nil
}

func sdpAddr(ipv uint8, a *[16]byte) netip.Addr {
	if ipv == 4 {
		return netip.AddrFrom4([4]byte(a[12:16]))
	}
	return netip.AddrFrom16(*a)
}

// DecodeFromBytes decodes the HelloAck.
func (m *SDPHelloAck) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = SDPHelloAck{}
	if err := need("sdp helloack", data, SDPHelloAckLen); err != nil {
		df.SetTruncated()
		return err
	}
	m.SDPBSDH.decode(data)
	m.MajorVersion, m.MinorVersion = data[16]>>4, data[16]&0x0f
	m.IPVersion, m.Capabilities = data[17]>>4, data[17]&0x0f
	m.ExtMaxAdverts = data[19]
	m.ActRcvSz = binary.BigEndian.Uint32(data[20:])
	m.Contents, m.Payload = split(data, SDPHelloAckLen)
	return nil
}

// Problem: the MID of a Hello, major version 2, IP version 4 or 6.
func (m *SDPHello) Problem() string {
	switch {
	case m.MID != SDPMIDHello:
		return fmt.Sprintf("MID 0x%02x is not Hello (0x00)", m.MID)
	case m.MajorVersion != SDPMajorVersion:
		return fmt.Sprintf("major version %d is not 2", m.MajorVersion)
	case m.IPVersion != 4 && m.IPVersion != 6:
		return fmt.Sprintf("IP version %d is neither 4 nor 6", m.IPVersion)
	}
	return ""
}

// Problem: the MID of a HelloAck and major version 2.
func (m *SDPHelloAck) Problem() string {
	switch {
	case m.MID != SDPMIDHelloAck:
		return fmt.Sprintf("MID 0x%02x is not HelloAck (0x01)", m.MID)
	case m.MajorVersion != SDPMajorVersion:
		return fmt.Sprintf("major version %d is not 2", m.MajorVersion)
	}
	return ""
}

func sdpCapNote(c uint8) string {
	switch {
	case c&SDPCapInvalidate != 0 && c&SDPCapExtAdverts != 0:
		return "Send With Invalidate, extended max adverts"
	case c&SDPCapInvalidate != 0:
		return "Send With Invalidate"
	case c&SDPCapExtAdverts != 0:
		return "extended max adverts"
	}
	return ""
}

// Fields lists the Hello's fields.
func (m *SDPHello) Fields() []Field {
	f := make(fieldList, 0, 16)
	m.SDPBSDH.fields(&f)
	f.dec("Major Version", "major_version", uint64(m.MajorVersion))
	f.dec("Minor Version", "minor_version", uint64(m.MinorVersion))
	f.dec("IP Version", "ip_version", uint64(m.IPVersion))
	f.hex("Capabilities", "capabilities", 4, uint64(m.Capabilities))
	f.note(sdpCapNote(m.Capabilities))
	f.dec("Max Adverts", "max_adverts", uint64(m.MaxAdverts))
	f.dec("Desired Remote Receive Size", "des_rem_rcv_sz", uint64(m.DesRemRcvSz))
	f.dec("Local Receive Size", "local_rcv_sz", uint64(m.LocalRcvSz))
	f.dec("Local Port", "local_port", uint64(m.LocalPort))
	if m.IPVersion == 4 || m.IPVersion == 6 {
		f.addr("Source Address", "src", m.SrcAddr.AsSlice())
		f.addr("Destination Address", "dst", m.DstAddr.AsSlice())
	} else {
		f.blob("Source Address", "src", m.rawSrc[:])
		f.blob("Destination Address", "dst", m.rawDst[:])
	}
	return f
}

// Summary is "SDP Hello v2.2 local_rcv_sz=32768 des_rem_rcv_sz=65536 port=5002".
func (m *SDPHello) Summary() string {
	return fmt.Sprintf("SDP Hello v%d.%d local_rcv_sz=%d des_rem_rcv_sz=%d port=%d",
		m.MajorVersion, m.MinorVersion, m.LocalRcvSz, m.DesRemRcvSz, m.LocalPort)
}

// Fields lists the HelloAck's fields.
func (m *SDPHelloAck) Fields() []Field {
	f := make(fieldList, 0, 12)
	m.SDPBSDH.fields(&f)
	f.dec("Major Version", "major_version", uint64(m.MajorVersion))
	f.dec("Minor Version", "minor_version", uint64(m.MinorVersion))
	f.dec("IP Version", "ip_version", uint64(m.IPVersion))
	f.hex("Capabilities", "capabilities", 4, uint64(m.Capabilities))
	f.note(sdpCapNote(m.Capabilities))
	f.dec("Extended Max Adverts", "ext_max_adverts", uint64(m.ExtMaxAdverts))
	f.dec("Actual Receive Size", "act_rcv_sz", uint64(m.ActRcvSz))
	return f
}

// Summary is "SDP HelloAck v2.2 act_rcv_sz=32768".
func (m *SDPHelloAck) Summary() string {
	return fmt.Sprintf("SDP HelloAck v%d.%d act_rcv_sz=%d", m.MajorVersion, m.MinorVersion, m.ActRcvSz)
}

// Encode writes the Hello's 64 octets into b; the addresses in the layout
// of the IP version.
func (m *SDPHello) Encode(b []byte) {
	clear(b[:SDPHelloLen])
	be := binary.BigEndian
	m.SDPBSDH.encode(b)
	b[16] = m.MajorVersion<<4 | m.MinorVersion&0x0f
	b[17] = m.IPVersion<<4 | m.Capabilities&0x0f
	b[19] = m.MaxAdverts
	be.PutUint32(b[20:], m.DesRemRcvSz)
	be.PutUint32(b[24:], m.LocalRcvSz)
	be.PutUint16(b[28:], m.LocalPort)
	put := func(at []byte, a netip.Addr) {
		if a.Is4() {
			v := a.As4()
			copy(at[12:16], v[:])
		} else if a.IsValid() {
			v := a.As16()
			copy(at, v[:])
		}
	}
	put(b[32:48], m.SrcAddr)
	put(b[48:64], m.DstAddr)
}

// Encode writes the HelloAck's 24 octets into b.
func (m *SDPHelloAck) Encode(b []byte) {
	clear(b[:SDPHelloAckLen])
	m.SDPBSDH.encode(b)
	b[16] = m.MajorVersion<<4 | m.MinorVersion&0x0f
	b[17] = m.IPVersion<<4 | m.Capabilities&0x0f
	b[19] = m.ExtMaxAdverts
	binary.BigEndian.PutUint32(b[20:], m.ActRcvSz)
}

func decodeSDPHello(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&SDPHello{}, data, p)
}

func decodeSDPHelloAck(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&SDPHelloAck{}, data, p)
}
