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
	inner, err := tagFrame(f, e.VLAN, e.QinQ)
	if err != nil {
		return nil, err
	}
	ipType, ip, err := ipPacket(inner)
	var body []byte
	var proto golayers.IPProtocol
	var udpPort uint16
	outerEther := uint16(0) // an EtherType on the outer Ethernet instead of an IP header
	needIP := func() error {
		if err != nil {
			return fmt.Errorf("crafttest: %s carries an IP packet: %w", e.Kind, err)
		}
		return nil
	}
	switch e.Kind {
	case EncapVXLAN:
		udpPort = 4789
		body = append([]byte{0x08, 0, 0, 0, byte(e.VNI >> 16), byte(e.VNI >> 8), byte(e.VNI), 0}, inner...)
	case EncapVXLANGPE:
		if err := needIP(); err != nil {
			return nil, err
		}
		np := byte(1)
		if ipType == golayers.EthernetTypeIPv6 {
			np = 2
		}
		udpPort = 4790
		body = append([]byte{0x0c, 0, 0, np, byte(e.VNI >> 16), byte(e.VNI >> 8), byte(e.VNI), 0}, ip...)
	case EncapGeneve:
		if e.GeneveOptions%4 != 0 || e.GeneveOptions > 252 {
			return nil, fmt.Errorf("crafttest: Geneve options of %d octets (a multiple of 4, at most 252)", e.GeneveOptions)
		}
		udpPort = 6081
		h := []byte{byte(e.GeneveOptions / 4), 0, 0x65, 0x58, byte(e.VNI >> 16), byte(e.VNI >> 8), byte(e.VNI), 0}
		opts := make([]byte, e.GeneveOptions)
		for i := 0; i+4 <= len(opts); i += 4 { // class 0x0103 (experimental), type 1, no data
			opts[i], opts[i+1], opts[i+2] = 0x01, 0x03, 0x01
		}
		body = append(append(h, opts...), inner...)
	case EncapGRE:
		if err := needIP(); err != nil {
			return nil, err
		}
		proto = golayers.IPProtocolGRE
		body = append(greHeader(e, uint16(ipType)), ip...)
	case EncapGREEthernet:
		proto = golayers.IPProtocolGRE
		body = append(greHeader(e, 0x6558), inner...)
	case EncapERSPAN1:
		proto = golayers.IPProtocolGRE
		e.Seq, e.Key, e.Checksum = 0, 0, false
		body = append(greHeader(e, 0x88be), inner...)
	case EncapERSPAN2:
		proto = golayers.IPProtocolGRE
		e.Seq = max(e.Seq, 1)
		h := make([]byte, 8)
		binary.BigEndian.PutUint32(h, 1<<28|uint32(e.VLAN&0xfff)<<16|uint32(e.Session&0x3ff))
		binary.BigEndian.PutUint32(h[4:], 7) // Index
		body = append(append(greHeader(e, 0x88be), h...), inner...)
	case EncapERSPAN3:
		proto = golayers.IPProtocolGRE
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
		body = append(append(greHeader(e, 0x22eb), h...), inner...)
	case EncapMPLS, EncapMPLSEthernet:
		labels := e.Labels
		if len(labels) == 0 {
			labels = []uint32{16, 17}
		}
		for i, l := range labels {
			w := l<<12 | 64
			if i == len(labels)-1 {
				w |= 0x100
			}
			body = binary.BigEndian.AppendUint32(body, w)
		}
		if e.Kind == EncapMPLS {
			if err := needIP(); err != nil {
				return nil, err
			}
			body = append(body, ip...)
		} else {
			if !e.NoControlWord {
				body = append(body, 0, 0, 0, 0)
			}
			body = append(body, inner...)
		}
		outerEther = 0x8847
	case EncapIPinIP:
		if err := needIP(); err != nil {
			return nil, err
		}
		proto = golayers.IPProtocolIPv4
		if ipType == golayers.EthernetTypeIPv6 {
			proto = golayers.IPProtocolIPv6
		}
		body = ip
	default:
		return nil, fmt.Errorf("crafttest: unknown encapsulation %q", e.Kind)
	}
	if proto == golayers.IPProtocolGRE && e.Checksum {
		binary.BigEndian.PutUint16(body[4:], inet.Checksum(body, 0))
	}
	eth := &golayers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0xff, 1}, DstMAC: []byte{2, 0, 0, 0, 0xff, 2}}
	if outerEther != 0 {
		return append(etherHeader(eth, outerEther), body...), nil
	}
	src, dst := OuterSrc4, OuterDst4
	if e.OuterIPv6 {
		src, dst = OuterSrc6, OuterDst6
	}
	var ls []gopacket.SerializableLayer
	var nl gopacket.NetworkLayer
	if e.OuterIPv6 {
		eth.EthernetType = golayers.EthernetTypeIPv6
		ip6 := &golayers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		ls, nl = []gopacket.SerializableLayer{eth, ip6}, ip6
	} else {
		eth.EthernetType = golayers.EthernetTypeIPv4
		ip4 := &golayers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
		ls, nl = []gopacket.SerializableLayer{eth, ip4}, ip4
	}
	if udpPort != 0 {
		udp := &golayers.UDP{SrcPort: 49999, DstPort: golayers.UDPPort(udpPort)}
		if err := udp.SetNetworkLayerForChecksum(nl); err != nil {
			return nil, err
		}
		switch v := ls[1].(type) {
		case *golayers.IPv4:
			v.Protocol = golayers.IPProtocolUDP
		case *golayers.IPv6:
			v.NextHeader = golayers.IPProtocolUDP
		}
		ls = append(ls, udp)
	}
	ls = append(ls, gopacket.Payload(body))
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
		h = append(h, 0, 0, 0, 0) // filled by Wrap
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
