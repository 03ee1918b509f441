package crafttest

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/internal/inet"
)

// Encapsulations Wrap can put a frame in: what captures from port
// mirrors, overlays and MPLS cores look like.
type EncapKind string

// The encapsulations.
const (
	EncapVXLAN        EncapKind = "vxlan"         // VXLAN (UDP 4789) carrying the Ethernet frame
	EncapVXLANGPE     EncapKind = "vxlan-gpe"     // VXLAN-GPE (UDP 4790) carrying the IP packet
	EncapGeneve       EncapKind = "geneve"        // Geneve (UDP 6081) carrying the Ethernet frame
	EncapGRE          EncapKind = "gre"           // GRE carrying the IP packet
	EncapGREEthernet  EncapKind = "gre-ethernet"  // GRE (0x6558) carrying the Ethernet frame
	EncapERSPAN1      EncapKind = "erspan1"       // ERSPAN type I (GRE 0x88be, no sequence number)
	EncapERSPAN2      EncapKind = "erspan2"       // ERSPAN type II (GRE 0x88be with a sequence number)
	EncapERSPAN3      EncapKind = "erspan3"       // ERSPAN type III (GRE 0x22eb)
	EncapMPLS         EncapKind = "mpls"          // an MPLS label stack on Ethernet carrying the IP packet
	EncapMPLSEthernet EncapKind = "mpls-ethernet" // an Ethernet pseudowire (with a control word unless NoControlWord)
	EncapIPinIP       EncapKind = "ip-in-ip"      // the IP packet in an outer IPv4 or IPv6 header
)

// EncapKinds lists every encapsulation.
var EncapKinds = []EncapKind{EncapVXLAN, EncapVXLANGPE, EncapGeneve, EncapGRE, EncapGREEthernet, EncapERSPAN1,
	EncapERSPAN2, EncapERSPAN3, EncapMPLS, EncapMPLSEthernet, EncapIPinIP}

// Encap describes one encapsulation. Zero values mean the usual.
type Encap struct {
	Kind      EncapKind
	OuterIPv6 bool   // outer IPv6 (2001:db8:ffff::1 → ::2) instead of IPv4 (198.51.100.1 → .2)
	VNI       uint32 // VXLAN, VXLAN-GPE and Geneve
	Key       uint32 // GRE: a key (K bit) when nonzero
	Seq       uint32 // GRE: a sequence number (S bit) when nonzero; ERSPAN II and III always carry one
	Checksum  bool   // GRE: the checksum word (C bit)
	Session   uint16 // ERSPAN session ID (10 bits)
	Labels    []uint32
	// NoControlWord: an Ethernet pseudowire without the control word.
	NoControlWord bool
	GeneveOptions int  // octets of Geneve options (a multiple of 4)
	Platform      bool // ERSPAN III: the 8-octet platform-specific subheader
	// VLAN tags the carried Ethernet frame with an 802.1Q tag, and QinQ
	// with an outer 802.1ad tag as well.
	VLAN, QinQ uint16
}

// Outer addresses of the encapsulations Wrap builds.
var (
	OuterSrc4 = netip.MustParseAddr("198.51.100.1")
	OuterDst4 = netip.MustParseAddr("198.51.100.2")
	OuterSrc6 = netip.MustParseAddr("2001:db8:ffff::1")
	OuterDst6 = netip.MustParseAddr("2001:db8:ffff::2")
)

// Wrap returns the Ethernet frame f encapsulated as e describes, as an
// Ethernet frame from the tunnel's endpoints. f's own headers (and so its
// ICRC) are left as they are, but for the VLAN tags e adds.
func Wrap(f []byte, e Encap) ([]byte, error) {
	eth, err := tagFrame(f, e.VLAN, e.QinQ)
	if err != nil {
		return nil, err
	}
	build, ok := encapsulations[e.Kind]
	if !ok {
		return nil, fmt.Errorf("crafttest: unknown encapsulation %q", e.Kind)
	}
	in := inner{eth: eth}
	in.ipType, in.ip, in.ipErr = ipPacket(eth)
	t, err := build(e, in)
	if err != nil {
		return nil, err
	}
	return t.frame(e.OuterIPv6)
}

// inner is the frame an encapsulation carries: the Ethernet frame (with
// the VLAN tags Wrap added) and its IP packet, for the encapsulations that
// carry only that.
type inner struct {
	eth    []byte
	ipType golayers.EthernetType
	ip     []byte
	ipErr  error // why the frame has no IP packet
}

// packet is the IP packet of the frame, or the error that encapsulation k
// cannot carry the frame without one.
func (in inner) packet(k EncapKind) ([]byte, error) {
	if in.ipErr != nil {
		return nil, fmt.Errorf("crafttest: %s carries an IP packet: %w", k, in.ipErr)
	}
	return in.ip, nil
}

// tunnel is what an encapsulation puts after the outer headers, and what
// those are: UDP to udpPort, IP with protocol proto, or (etherType set)
// no IP at all.
type tunnel struct {
	body      []byte
	udpPort   uint16
	proto     golayers.IPProtocol
	etherType uint16
}

// encapsulations builds each kind's tunnel: one function per kind.
var encapsulations = map[EncapKind]func(Encap, inner) (tunnel, error){
	EncapVXLAN:        vxlan,
	EncapVXLANGPE:     vxlanGPE,
	EncapGeneve:       geneve,
	EncapGRE:          greIP,
	EncapGREEthernet:  greEthernet,
	EncapERSPAN1:      erspan1,
	EncapERSPAN2:      erspan2,
	EncapERSPAN3:      erspan3,
	EncapMPLS:         mplsIP,
	EncapMPLSEthernet: mplsEthernet,
	EncapIPinIP:       ipInIP,
}

// vxlan is the VXLAN header (RFC 7348, I flag and the VNI), then the
// Ethernet frame.
func vxlan(e Encap, in inner) (tunnel, error) {
	h := []byte{0x08, 0, 0, 0, byte(e.VNI >> 16), byte(e.VNI >> 8), byte(e.VNI), 0}
	return tunnel{body: append(h, in.eth...), udpPort: 4789}, nil
}

// vxlanGPE is the VXLAN-GPE header with its Next Protocol (1 IPv4, 2
// IPv6), then the IP packet.
func vxlanGPE(e Encap, in inner) (tunnel, error) {
	ip, err := in.packet(e.Kind)
	if err != nil {
		return tunnel{}, err
	}
	np := byte(1)
	if in.ipType == golayers.EthernetTypeIPv6 {
		np = 2
	}
	h := []byte{0x0c, 0, 0, np, byte(e.VNI >> 16), byte(e.VNI >> 8), byte(e.VNI), 0}
	return tunnel{body: append(h, ip...), udpPort: 4790}, nil
}

// geneve is the Geneve header (RFC 8926, protocol 0x6558), the options
// asked for, then the Ethernet frame.
func geneve(e Encap, in inner) (tunnel, error) {
	if e.GeneveOptions%4 != 0 || e.GeneveOptions > 252 {
		return tunnel{}, fmt.Errorf("crafttest: Geneve options of %d octets (a multiple of 4, at most 252)", e.GeneveOptions)
	}
	h := []byte{byte(e.GeneveOptions / 4), 0, 0x65, 0x58, byte(e.VNI >> 16), byte(e.VNI >> 8), byte(e.VNI), 0}
	opts := make([]byte, e.GeneveOptions)
	for i := 0; i+4 <= len(opts); i += 4 { // class 0x0103 (experimental), type 1, no data
		opts[i], opts[i+1], opts[i+2] = 0x01, 0x03, 0x01
	}
	return tunnel{body: append(append(h, opts...), in.eth...), udpPort: 6081}, nil
}

// greIP is GRE carrying the IP packet (the protocol type is its EtherType).
func greIP(e Encap, in inner) (tunnel, error) {
	ip, err := in.packet(e.Kind)
	if err != nil {
		return tunnel{}, err
	}
	return gre(e, uint16(in.ipType), nil, ip), nil
}

// greEthernet is GRE carrying the Ethernet frame (Transparent Ethernet
// Bridging, 0x6558).
func greEthernet(e Encap, in inner) (tunnel, error) {
	return gre(e, 0x6558, nil, in.eth), nil
}

// erspan1 is ERSPAN type I: GRE 0x88be with no optional word and no
// ERSPAN header, then the mirrored frame.
func erspan1(e Encap, in inner) (tunnel, error) {
	e.Seq, e.Key, e.Checksum = 0, 0, false
	return gre(e, 0x88be, nil, in.eth), nil
}

// erspan2 is ERSPAN type II: GRE 0x88be with a sequence number, the
// 8-octet ERSPAN header (version 1, the frame's VLAN, the session), then
// the mirrored frame.
func erspan2(e Encap, in inner) (tunnel, error) {
	e.Seq = max(e.Seq, 1)
	h := make([]byte, 8)
	binary.BigEndian.PutUint32(h, 1<<28|uint32(e.VLAN&0xfff)<<16|uint32(e.Session&0x3ff))
	binary.BigEndian.PutUint32(h[4:], 7) // Index
	return gre(e, 0x88be, h, in.eth), nil
}

// erspan3 is ERSPAN type III: GRE 0x22eb with a sequence number, the
// 12-octet ERSPAN header (and the platform-specific subheader when asked
// for), then the mirrored frame.
func erspan3(e Encap, in inner) (tunnel, error) {
	e.Seq = max(e.Seq, 1)
	h := make([]byte, 12)
	binary.BigEndian.PutUint32(h, 2<<28|uint32(e.VLAN&0xfff)<<16|uint32(e.Session&0x3ff))
	binary.BigEndian.PutUint32(h[4:], 0x12345678) // timestamp
	binary.BigEndian.PutUint16(h[8:], 0x0042)     // SGT
	w3 := uint16(5<<4 | 1<<3 | 3<<1)              // hardware ID 5, egress, granularity 3
	if e.Platform {
		w3 |= 1
		h = append(h, 0x08, 0, 0, 0, 0, 0, 0, 0) // platform ID 1, in the first 6 bits
	}
	binary.BigEndian.PutUint16(h[10:], w3)
	return gre(e, 0x22eb, h, in.eth), nil
}

// gre is a GRE tunnel: the GRE header for proto, sub (an ERSPAN header or
// nothing), the payload, and the GRE checksum over all of it when e asks
// for one.
func gre(e Encap, proto uint16, sub, payload []byte) tunnel {
	body := append(append(greHeader(e, proto), sub...), payload...)
	if e.Checksum {
		binary.BigEndian.PutUint16(body[4:], inet.Checksum(body, 0))
	}
	return tunnel{body: body, proto: golayers.IPProtocolGRE}
}

// mplsIP is an MPLS label stack on Ethernet carrying the IP packet.
func mplsIP(e Encap, in inner) (tunnel, error) {
	ip, err := in.packet(e.Kind)
	if err != nil {
		return tunnel{}, err
	}
	return tunnel{body: append(labelStack(e.Labels), ip...), etherType: 0x8847}, nil
}

// mplsEthernet is an Ethernet pseudowire (RFC 4448): the label stack, the
// control word unless e leaves it out, then the Ethernet frame.
func mplsEthernet(e Encap, in inner) (tunnel, error) {
	body := labelStack(e.Labels)
	if !e.NoControlWord {
		body = append(body, 0, 0, 0, 0)
	}
	return tunnel{body: append(body, in.eth...), etherType: 0x8847}, nil
}

// labelStack encodes MPLS labels (16 and 17 when none are given), TTL 64,
// the bottom of stack bit on the last.
func labelStack(labels []uint32) []byte {
	if len(labels) == 0 {
		labels = []uint32{16, 17}
	}
	var b []byte
	for i, l := range labels {
		w := l<<12 | 64
		if i == len(labels)-1 {
			w |= 0x100
		}
		b = binary.BigEndian.AppendUint32(b, w)
	}
	return b
}

// ipInIP is the IP packet in an outer IP header (protocol 4 or 41).
func ipInIP(e Encap, in inner) (tunnel, error) {
	ip, err := in.packet(e.Kind)
	if err != nil {
		return tunnel{}, err
	}
	proto := golayers.IPProtocolIPv4
	if in.ipType == golayers.EthernetTypeIPv6 {
		proto = golayers.IPProtocolIPv6
	}
	return tunnel{body: ip, proto: proto}, nil
}

// frame puts the tunnel in its outer headers: Ethernet between the
// tunnel's endpoints, then the EtherType alone, or IPv4 or IPv6 (outerIPv6)
// and UDP when the tunnel has a port, with correct lengths and checksums.
func (t tunnel) frame(outerIPv6 bool) ([]byte, error) {
	eth := &golayers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0xff, 1}, DstMAC: []byte{2, 0, 0, 0, 0xff, 2}}
	if t.etherType != 0 {
		return append(etherHeader(eth, t.etherType), t.body...), nil
	}
	proto := t.proto
	if t.udpPort != 0 {
		proto = golayers.IPProtocolUDP
	}
	var ip gopacket.SerializableLayer
	var nl gopacket.NetworkLayer
	if outerIPv6 {
		eth.EthernetType = golayers.EthernetTypeIPv6
		ip6 := &golayers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: OuterSrc6.AsSlice(), DstIP: OuterDst6.AsSlice()}
		ip, nl = ip6, ip6
	} else {
		eth.EthernetType = golayers.EthernetTypeIPv4
		ip4 := &golayers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: OuterSrc4.AsSlice(), DstIP: OuterDst4.AsSlice()}
		ip, nl = ip4, ip4
	}
	ls := []gopacket.SerializableLayer{eth, ip}
	if t.udpPort != 0 {
		udp := &golayers.UDP{SrcPort: 49999, DstPort: golayers.UDPPort(t.udpPort)}
		if err := udp.SetNetworkLayerForChecksum(nl); err != nil {
			return nil, err
		}
		ls = append(ls, udp)
	}
	ls = append(ls, gopacket.Payload(t.body))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// greHeader builds a GRE header (version 0) with the words e asks for.
func greHeader(e Encap, proto uint16) []byte {
	var flags byte
	h := []byte{0, 0, byte(proto >> 8), byte(proto)}
	if e.Checksum {
		flags |= 0x80
		h = append(h, 0, 0, 0, 0) // filled by gre
	}
	if e.Key != 0 {
		flags |= 0x20
		h = binary.BigEndian.AppendUint32(h, e.Key)
	}
	if e.Seq != 0 {
		flags |= 0x10
		h = binary.BigEndian.AppendUint32(h, e.Seq)
	}
	h[0] = flags
	return h
}

func etherHeader(eth *golayers.Ethernet, et uint16) []byte {
	h := append(append([]byte(nil), eth.DstMAC...), eth.SrcMAC...)
	return binary.BigEndian.AppendUint16(h, et)
}

// tagFrame inserts an 802.1Q tag (vlan) and an outer 802.1ad tag (qinq)
// after the MAC addresses of an Ethernet frame.
func tagFrame(f []byte, vlan, qinq uint16) ([]byte, error) {
	if len(f) < 14 {
		return nil, fmt.Errorf("crafttest: a frame of %d octets is no Ethernet frame", len(f))
	}
	if vlan == 0 && qinq == 0 {
		return f, nil
	}
	out := append([]byte(nil), f[:12]...)
	if qinq != 0 {
		out = append(out, 0x88, 0xa8, byte(qinq>>8)&0x0f, byte(qinq))
	}
	if vlan != 0 {
		out = append(out, 0x81, 0x00, byte(vlan>>8)&0x0f, byte(vlan))
	}
	return append(out, f[12:]...), nil
}

// ipPacket returns the EtherType and the IP packet of an Ethernet frame
// (after its VLAN tags).
func ipPacket(f []byte) (golayers.EthernetType, []byte, error) {
	p := 12
	for p+4 <= len(f) {
		switch et := binary.BigEndian.Uint16(f[p:]); et {
		case 0x8100, 0x88a8:
			p += 4
			continue
		case uint16(golayers.EthernetTypeIPv4), uint16(golayers.EthernetTypeIPv6):
			return golayers.EthernetType(et), f[p+2:], nil
		default:
			return 0, nil, fmt.Errorf("EtherType 0x%04x is not IP", et)
		}
	}
	return 0, nil, fmt.Errorf("a frame of %d octets is too short", len(f))
}
