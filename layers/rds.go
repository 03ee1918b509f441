package layers

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// RDSConnect is the private data of a Linux RDS (Reliable Datagram
// Sockets) connection over InfiniBand or RoCE (net/rds/ib.h, struct
// rds_ib_connect_private and rds6_ib_connect_private), in the REQ after the
// IP CM header and at the start of the REP. RDS listens on rdma_cm TCP port
// 18634 (and 16385). Its addresses repeat the connection's: in the REQ
// those of the IP CM header, in the REP the responder's own first. Big-endian.
//
//	IPv4 (28 octets)                      IPv6 (52 octets)
//	 0  source address (4)                 0  source address (16)
//	 4  destination address (4)           16  destination address (16)
//	 8  protocol major (3 or 4)           32  protocol major
//	 9  protocol minor                    33  protocol minor
//	10  protocol minor mask (2)           34  protocol minor mask (2)
//	12  type of service                   36  type of service
//	13  reserved                          37  reserved
//	14  fragment size (2; Oracle UEK,     38  fragment size (2)
//	    reserved in mainline Linux)
//	16  ack sequence (8)                  40  ack sequence (8)
//	24  credit (4): non-zero enables      48  credit (4)
//	    flow control
type RDSConnect struct {
	golayers.BaseLayer
	IPv6          bool
	SrcAddr       netip.Addr
	DstAddr       netip.Addr
	ProtocolMajor uint8
	ProtocolMinor uint8
	MinorMask     uint16
	TOS           uint8
	FragSize      uint16
	AckSeq        uint64
	Credit        uint32
}

// RDS sizes and ports.
const (
	RDSConnectLen   = 28
	RDS6ConnectLen  = 52
	RDSPort         = 18634
	RDSCMPort       = 16385
	rdsIPv6Offset   = 24 // how much further the common part sits in the IPv6 layout
	rdsCommonOffset = 8
)

// RDSConnectIPv6 is the IPv6 layout of RDSConnect, a layer of its own.
type RDSConnectIPv6 struct{ RDSConnect }

func (m *RDSConnect) LayerType() gopacket.LayerType         { return LayerTypeRDS }
func (m *RDSConnect) CanDecode() gopacket.LayerClass        { return LayerTypeRDS }
func (m *RDSConnect) NextLayerType() gopacket.LayerType     { return nextPayload(m.Payload) }
func (m *RDSConnectIPv6) LayerType() gopacket.LayerType     { return LayerTypeRDS6 }
func (m *RDSConnectIPv6) CanDecode() gopacket.LayerClass    { return LayerTypeRDS6 }
func (m *RDSConnectIPv6) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }

// DecodeFromBytes decodes the IPv4 layout.
func (m *RDSConnect) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = RDSConnect{}
	return m.decode(data, df, false)
}

// DecodeFromBytes decodes the IPv6 layout.
func (m *RDSConnectIPv6) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	m.RDSConnect = RDSConnect{}
	return m.decode(data, df, true)
}

func (m *RDSConnect) decode(data []byte, df gopacket.DecodeFeedback, v6 bool) error {
	n, layer := RDSConnectLen, "rds connect"
	if v6 {
		n, layer = RDS6ConnectLen, "rds6 connect"
	}
	if err := need(layer, data, n); err != nil {
		df.SetTruncated()
		return err
	}
	c := rdsCommonOffset
	m.IPv6 = v6
	if v6 {
		m.SrcAddr, m.DstAddr = netip.AddrFrom16([16]byte(data[0:16])), netip.AddrFrom16([16]byte(data[16:32]))
		c += rdsIPv6Offset
	} else {
		m.SrcAddr, m.DstAddr = netip.AddrFrom4([4]byte(data[0:4])), netip.AddrFrom4([4]byte(data[4:8]))
	}
	be := binary.BigEndian
	m.ProtocolMajor, m.ProtocolMinor = data[c], data[c+1]
	m.MinorMask = be.Uint16(data[c+2:])
	m.TOS = data[c+4]
	m.FragSize = be.Uint16(data[c+6:])
	m.AckSeq = be.Uint64(data[c+8:])
	m.Credit = be.Uint32(data[c+16:])
	m.Contents, m.Payload = split(data, n)
	return nil
}

// Problem: the protocol major version must be 3 or 4.
func (m *RDSConnect) Problem() string {
	if m.ProtocolMajor != 3 && m.ProtocolMajor != 4 {
		return fmt.Sprintf("protocol major version %d is neither 3 nor 4", m.ProtocolMajor)
	}
	return ""
}

// Repeats reports whether the addresses are src and dst, as RDS puts them:
// what recognises RDS private data.
func (m *RDSConnect) Repeats(src, dst netip.Addr) bool {
	if !src.IsValid() || !dst.IsValid() {
		return false
	}
	if !m.IPv6 {
		src, dst = src.Unmap(), dst.Unmap()
	}
	return m.SrcAddr == src && m.DstAddr == dst
}

// Fields lists the fields.
func (m *RDSConnect) Fields() []Field {
	f := make(fieldList, 0, 9)
	f.addr("Source Address", "src", m.SrcAddr.AsSlice())
	f.addr("Destination Address", "dst", m.DstAddr.AsSlice())
	f.dec("Protocol Major", "protocol_major", uint64(m.ProtocolMajor))
	f.dec("Protocol Minor", "protocol_minor", uint64(m.ProtocolMinor))
	f.hex("Protocol Minor Mask", "protocol_minor_mask", 16, uint64(m.MinorMask))
	f.dec("Type of Service", "tos", uint64(m.TOS))
	f.dec("Fragment Size", "frag_size", uint64(m.FragSize))
	f.id64("Ack Sequence", "ack_seq", m.AckSeq)
	f.dec("Credit", "credit", uint64(m.Credit))
	return f
}

// Summary is "RDS 4.1 credit=0".
func (m *RDSConnect) Summary() string {
	s := fmt.Sprintf("RDS %d.%d credit=%d", m.ProtocolMajor, m.ProtocolMinor, m.Credit)
	if m.FragSize != 0 {
		s += fmt.Sprintf(" frag_size=%d", m.FragSize)
	}
	return s
}

// Encode writes the 28 (IPv4) or 52 (IPv6) octets into b.
func (m *RDSConnect) Encode(b []byte) {
	c := rdsCommonOffset
	if m.IPv6 {
		clear(b[:RDS6ConnectLen])
		s, d := m.SrcAddr.As16(), m.DstAddr.As16()
		copy(b[0:16], s[:])
		copy(b[16:32], d[:])
		c += rdsIPv6Offset
	} else {
		clear(b[:RDSConnectLen])
		s, d := m.SrcAddr.As4(), m.DstAddr.As4()
		copy(b[0:4], s[:])
		copy(b[4:8], d[:])
	}
	be := binary.BigEndian
	b[c], b[c+1] = m.ProtocolMajor, m.ProtocolMinor
	be.PutUint16(b[c+2:], m.MinorMask)
	b[c+4] = m.TOS
	be.PutUint16(b[c+6:], m.FragSize)
	be.PutUint64(b[c+8:], m.AckSeq)
	be.PutUint32(b[c+16:], m.Credit)
}

func decodeRDS(data []byte, p gopacket.PacketBuilder) error { return decodeULP(&RDSConnect{}, data, p) }
func decodeRDS6(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&RDSConnectIPv6{}, data, p)
}
