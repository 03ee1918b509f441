// Package craft builds RDMA connection-setup frames and writes them as
// capture files: the samples in pcaps/, the test inputs of this project, and
// demos. Every frame carries correct ICRCs (and VCRCs on native InfiniBand)
// unless asked otherwise.
package craft

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Transport names how a CM MAD travels.
type Transport string

// Transports craft can build.
const (
	RoCEv2     Transport = "rocev2"
	RoCEv1     Transport = "rocev1"
	InfiniBand Transport = "ib"
	IWARP      Transport = "iwarp"
)

// Link types of the files craft writes (gopacket's and layers' names).
const (
	LinkEthernet = uint16(golayers.LinkTypeEthernet)
	LinkIB       = uint16(layers.LinkTypeIB)
)

// Endpoint is one side of a connection.
type Endpoint struct {
	IP   netip.Addr       // RoCEv2 address; RoCE GIDs are derived from it
	MAC  net.HardwareAddr // Ethernet address
	LID  uint16           // native InfiniBand Local Identifier
	Port uint16           // UDP source port (RoCEv2) or TCP port (iWARP)
}

// GID is the endpoint's GID: its IPv6 address, or the IPv4-mapped form.
func (e Endpoint) GID() [16]byte { return e.IP.As16() }

// CM describes one CM MAD in one frame.
type CM struct {
	Transport Transport
	Src, Dst  Endpoint
	Msg       layers.CMMessage // the message body with its private data
	TID       uint64           // MAD TransactionID

	// Overrides for building faulty frames; zero values mean the usual.
	BaseVersion, ClassVersion uint8  // 1 and 2
	DestQP                    uint32 // 1
	QKey                      uint32 // 0x80010000
	CorruptICRC               bool   // flip the ICRC
	CorruptVCRC               bool   // flip the VCRC (native IB)
	GRH                       bool   // native IB: add a GRH
	VLAN                      uint16 // add an 802.1Q tag with this VLAN ID
	DstPort                   uint16 // RoCEv2 UDP destination port; 4791
}

// Frame builds the frame and returns it with its link type.
func (c *CM) Frame() ([]byte, uint16, error) {
	mad := &layers.MAD{
		BaseVersion: or8(c.BaseVersion, 1), MgmtClass: layers.MgmtClassCM, ClassVersion: or8(c.ClassVersion, 2),
		Method: layers.MethodSend, TransactionID: c.TID, AttributeID: c.Msg.AttributeID(),
	}
	bth := &layers.BTH{OpCode: layers.OpUDSendOnly, PKey: 0xffff, DestQP: or32(c.DestQP, 1), PSN: uint32(c.TID) & 0xffffff}
	deth := &layers.DETH{QKey: or32(c.QKey, layers.GSIQKey), SrcQP: 1}
	ib := []gopacket.SerializableLayer{bth, deth, mad, c.Msg}
	return c.build(ib)
}

// build wraps the IB transport layers in the transport's headers and adds
// the CRCs.
func (c *CM) build(ib []gopacket.SerializableLayer) ([]byte, uint16, error) {
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	icrc := gopacket.Payload(make([]byte, layers.ICRCLen))
	var ls []gopacket.SerializableLayer
	var link uint16 = LinkEthernet
	switch c.Transport {
	case RoCEv2:
		eth, ip, ipl := c.ipHeaders()
		udp := &golayers.UDP{SrcPort: golayers.UDPPort(or16(c.Src.Port, 49152)), DstPort: golayers.UDPPort(or16(c.DstPort, layers.RoCEv2Port))}
		if err := udp.SetNetworkLayerForChecksum(ipl); err != nil {
			return nil, 0, err
		}
		ls = append(c.ether(eth), ip, udp)
	case RoCEv1:
		eth := &golayers.Ethernet{SrcMAC: c.Src.MAC, DstMAC: c.Dst.MAC, EthernetType: layers.EtherTypeRoCEv1}
		ls = append(c.ether(eth), c.grh())
	case InfiniBand:
		link = LinkIB
		lrh := &layers.LRH{VL: 0, LVer: 0, SL: 0, LNH: layers.LNHBTH, DLID: c.Dst.LID, SLID: c.Src.LID}
		ls = append(ls, lrh)
		if c.GRH {
			lrh.LNH = layers.LNHGRH
			ls = append(ls, c.grh())
		}
	default:
		return nil, 0, fmt.Errorf("craft: transport %q cannot carry CM MADs", c.Transport)
	}
	ls = append(ls, ib...)
	ls = append(ls, icrc)
	b, err := serialize(opts, ls)
	if err != nil {
		return nil, 0, err
	}
	// The ICRC covers everything but the variant fields (the UDP checksum
	// among them): compute it, then serialize again so that the UDP checksum
	// covers the final ICRC.
	c.fillICRC(b)
	copy(icrc, b[len(b)-layers.ICRCLen:])
	if b, err = serialize(opts, ls); err != nil {
		return nil, 0, err
	}
	if c.Transport == InfiniBand {
		v := layers.VCRC(b)
		if c.CorruptVCRC {
			v ^= 0xffff
		}
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b, link, nil
}

func serialize(opts gopacket.SerializeOptions, ls []gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (c *CM) ether(eth *golayers.Ethernet) []gopacket.SerializableLayer {
	if c.VLAN == 0 {
		return []gopacket.SerializableLayer{eth}
	}
	tag := &golayers.Dot1Q{VLANIdentifier: c.VLAN, Type: eth.EthernetType}
	eth.EthernetType = golayers.EthernetTypeDot1Q
	return []gopacket.SerializableLayer{eth, tag}
}

func (c *CM) ipHeaders() (*golayers.Ethernet, gopacket.SerializableLayer, gopacket.NetworkLayer) {
	eth := &golayers.Ethernet{SrcMAC: c.Src.MAC, DstMAC: c.Dst.MAC}
	if c.Src.IP.Is4() {
		eth.EthernetType = golayers.EthernetTypeIPv4
		ip := &golayers.IPv4{Version: 4, TTL: 64, Flags: golayers.IPv4DontFragment, Protocol: golayers.IPProtocolUDP,
			SrcIP: c.Src.IP.AsSlice(), DstIP: c.Dst.IP.AsSlice()}
		return eth, ip, ip
	}
	eth.EthernetType = golayers.EthernetTypeIPv6
	ip := &golayers.IPv6{Version: 6, HopLimit: 64, NextHeader: golayers.IPProtocolUDP,
		SrcIP: c.Src.IP.AsSlice(), DstIP: c.Dst.IP.AsSlice()}
	return eth, ip, ip
}

func (c *CM) grh() *layers.GRH {
	return &layers.GRH{IPVer: 6, NxtHdr: layers.NxtHdrIBA, HopLmt: 64, SGID: c.Src.GID(), DGID: c.Dst.GID()}
}

// l4Offset returns where the IP header and the UDP header start.
func (c *CM) l4Offset() (int, int) {
	l3 := 14
	if c.VLAN != 0 {
		l3 += 4
	}
	if c.Src.IP.Is4() {
		return l3, l3 + 20
	}
	return l3, l3 + 40
}

// fillICRC computes the ICRC over the finished frame and stores it in the
// last four octets.
func (c *CM) fillICRC(b []byte) {
	end := len(b) - layers.ICRCLen
	var crc uint32
	switch c.Transport {
	case RoCEv2:
		l3, l4 := c.l4Offset()
		crc = layers.ICRCRoCEv2(b[l3:l4], b[l4:l4+8], b[l4+8:end])
	case RoCEv1:
		g := 14
		if c.VLAN != 0 {
			g += 4
		}
		crc = layers.ICRCGRH(b[g:g+layers.GRHLen], b[g+layers.GRHLen:end])
	case InfiniBand:
		if c.GRH {
			crc = layers.ICRCGRH(b[layers.LRHLen:layers.LRHLen+layers.GRHLen], b[layers.LRHLen+layers.GRHLen:end])
		} else {
			crc = layers.ICRCLRH(b[:layers.LRHLen], b[layers.LRHLen:end])
		}
	}
	if c.CorruptICRC {
		crc = ^crc
	}
	binary.LittleEndian.PutUint32(b[end:], crc)
}

func or8(v, d uint8) uint8 {
	if v == 0 {
		return d
	}
	return v
}

func or16(v, d uint16) uint16 {
	if v == 0 {
		return d
	}
	return v
}

func or32(v, d uint32) uint32 {
	if v == 0 {
		return d
	}
	return v
}
