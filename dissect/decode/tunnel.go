package decode

import (
	"encoding/binary"

	golayers "github.com/gopacket/gopacket/layers"
)

// Decapsulation on the fast path. RoCE from hardware NICs is captured where
// it can be seen: a switch mirror (ERSPAN over GRE), an overlay (VXLAN,
// Geneve), an MPLS core, an IP tunnel. The classifier comes here from the
// few places where it sees an EtherType, an IP protocol or a UDP port that
// announces an encapsulation; everything else costs it nothing more than
// before. Each encapsulation stepped into is pushed on the Decoder's tunnel
// stack (its offsets only: nothing is decoded or copied), so that the
// message record can show the outer endpoints and identifiers, and the
// classification goes on with the inner frame or packet, whose offsets end
// up in frameInfo as for a frame that was never encapsulated. At most
// MaxTunnelDepth encapsulations are stepped into; a frame nested deeper is
// counted (a state-limit-reached note of the run).

// MaxTunnelDepth bounds the encapsulations the classifier steps into in one
// frame.
const MaxTunnelDepth = 8

// MaxIPv6ExtHeaders bounds the IPv6 extension headers the classifier steps
// over in one header chain (RFC 8200 lets each appear once, the Destination
// Options header twice: a legal chain has fewer). A longer chain is counted
// (an ipv6-chain-too-long note of the run), not looked into.
const MaxIPv6ExtHeaders = 16

// Bits of frameInfo.odd: what the classifier gave up looking into.
const (
	oddTooDeep   = 1 << iota // nested deeper than MaxTunnelDepth
	oddLongChain             // an IPv6 chain of more than MaxIPv6ExtHeaders extension headers
)

// isIPv6Ext reports whether an IPv6 Next Header value is an extension
// header the chain goes on after (the IANA registry of IPv6 Extension
// Header Types, less ESP, whose content is encrypted): one bit test.
func isIPv6Ext(nh uint8) bool { return ipv6Ext[nh>>6]&(1<<(nh&63)) != 0 }

var ipv6Ext = func() (s [4]uint64) {
	for _, nh := range []uint8{protoHopByHop, protoRouting, protoFragment, protoDestOpts, protoAH, 135, 139, 140, 253, 254} {
		s[nh>>6] |= 1 << (nh & 63)
	}
	return s
}()

// maxMPLSLabels bounds the label stack entries read in one MPLS
// encapsulation.
const maxMPLSLabels = 16

// Encapsulations, as the tunnel stack records them.
const (
	encapVXLAN    uint8 = iota + 1 // VXLAN (RFC 7348), UDP 4789
	encapVXLANGPE                  // VXLAN Generic Protocol Extension, UDP 4790
	encapGeneve                    // Geneve (RFC 8926), UDP 6081
	encapGRE                       // GRE (RFC 2784, with the key and sequence number of RFC 2890)
	encapERSPAN1                   // ERSPAN type I: GRE 0x88be without a sequence number, no ERSPAN header
	encapERSPAN2                   // ERSPAN type II: GRE 0x88be with a sequence number, 8-octet header
	encapERSPAN3                   // ERSPAN type III: GRE 0x22eb, 12-octet header (and an optional 8-octet subheader)
	encapMPLS                      // an MPLS label stack (RFC 3032)
	encapIPinIP                    // IPv4 or IPv6 in IPv4 or IPv6 (RFC 2003, RFC 4213, RFC 2473)
)

// Numbers the decapsulation compares.
const (
	portVXLAN    = 4789
	portVXLANGPE = 4790
	portGeneve   = 6081

	protoIPinIP   = uint8(golayers.IPProtocolIPv4) // 4
	protoIPv6inIP = uint8(golayers.IPProtocolIPv6) // 41
	protoGRE      = uint8(golayers.IPProtocolGRE)  // 47
	protoMPLSinIP = 137                            // RFC 4023

	etherMPLS      = uint16(golayers.EthernetTypeMPLSUnicast)
	etherMPLSMcast = uint16(golayers.EthernetTypeMPLSMulticast)
	etherTEB       = uint16(golayers.EthernetTypeTransparentEthernetBridging) // 0x6558: an Ethernet frame follows
	etherERSPAN    = uint16(golayers.EthernetTypeERSPAN)                      // 0x88be: ERSPAN type I or II
	etherERSPAN3   = 0x22eb                                                   // ERSPAN type III

	greHeaderLen    = 4
	vxlanHeaderLen  = 8
	geneveHeaderLen = 8
	erspan2Len      = 8
	erspan3Len      = 12
	erspan3SubLen   = 8
)

// encap is one encapsulation of a frame, by its offsets in the frame.
type encap struct {
	kind  uint8
	ipv6  bool  // the outer IP header is IPv6
	ip    int32 // the outer IP header that carries it, or -1 (MPLS on Ethernet, ERSPAN in its GRE)
	hdr   int32 // its own header: the UDP header (VXLAN, Geneve), GRE, ERSPAN, the first label, the inner IP header (IP in IP)
	inner int32 // where the encapsulated frame or packet starts
	ether bool  // what it carries is an Ethernet frame (whose VLAN tags the record lists)
}

// push records an encapsulation; it reports false when the frame is nested
// deeper than MaxTunnelDepth, which is counted and ends the classification.
func (d *Decoder) push(fi *frameInfo, e encap) bool {
	if int(fi.tunnels) >= MaxTunnelDepth {
		fi.odd |= oddTooDeep
		return false
	}
	d.tun[fi.tunnels] = e
	fi.tunnels++
	return true
}

// outerIP is the IP header the classifier is in when it sees an IP protocol
// or a UDP port: fi.l3, which the inner classification then moves on.
func outerIP(fi *frameInfo) (int32, bool) { return int32(fi.l3), fi.ipv6 }

// tunnelPort reports whether a UDP destination port is a tunnel's (VXLAN,
// VXLAN-GPE, Geneve): a shift and a compare for most ports.
func (d *Decoder) tunnelPort(p uint16) bool {
	return p>>6 == tunnelPortWord && tunnelPortBits&(1<<(p&63)) != 0 || p == portGeneve
}

// The tunnel ports 4789, 4790 and 6081 share no 64-port word: the test is
// on 4789 and 4790 (word 74); Geneve's 6081 is compared apart.
const (
	tunnelPortWord        = portVXLAN >> 6
	tunnelPortBits uint64 = 1<<(portVXLAN&63) | 1<<(portVXLANGPE&63)
)

// decapUDP goes on inside a UDP datagram at off to a tunnel port (VXLAN,
// VXLAN-GPE, Geneve) that is not a RoCEv2 port: the classifier compares
// the port with the three before it calls this.
func (d *Decoder) decapUDP(fi *frameInfo, b []byte, off int, port uint16) {
	ip, v6 := outerIP(fi)
	h := off + 8
	switch port {
	case portVXLAN:
		in := h + vxlanHeaderLen
		if len(b) < in || !d.push(fi, encap{kind: encapVXLAN, ip: ip, ipv6: v6, hdr: int32(off), inner: int32(in), ether: true}) {
			return
		}
		d.innerEther(fi, b, in)
	case portVXLANGPE:
		in := h + vxlanHeaderLen
		if len(b) < in {
			return
		}
		next := uint8(3) // Ethernet, when the P bit says no Next Protocol is given
		if b[h]&0x04 != 0 {
			next = b[h+3]
		}
		var et uint16
		switch next {
		case 1:
			et = etherIPv4
		case 2:
			et = etherIPv6
		case 3:
			et = etherTEB
		case 5:
			et = etherMPLS
		default:
			return
		}
		if !d.push(fi, encap{kind: encapVXLANGPE, ip: ip, ipv6: v6, hdr: int32(off), inner: int32(in), ether: et == etherTEB}) {
			return
		}
		d.innerType(fi, b, et, in)
	case portGeneve:
		if len(b) < h+geneveHeaderLen || b[h]>>6 != 0 {
			return // Geneve version 0 only
		}
		in := h + geneveHeaderLen + int(b[h]&0x3f)*4
		et := binary.BigEndian.Uint16(b[h+2 : h+4])
		if len(b) < in || !d.push(fi, encap{kind: encapGeneve, ip: ip, ipv6: v6, hdr: int32(off), inner: int32(in), ether: et == etherTEB}) {
			return
		}
		d.innerType(fi, b, et, in)
	}
}

// decapIP goes on inside an IP packet whose protocol is an encapsulation:
// IP in IP, GRE, MPLS in IP.
func (d *Decoder) decapIP(fi *frameInfo, b []byte, proto uint8, off int) {
	ip, v6 := outerIP(fi)
	switch proto {
	case protoIPinIP, protoIPv6inIP:
		if !d.push(fi, encap{kind: encapIPinIP, ip: ip, ipv6: v6, hdr: int32(off), inner: int32(off)}) {
			return
		}
		if proto == protoIPinIP {
			d.innerType(fi, b, etherIPv4, off)
		} else {
			d.innerType(fi, b, etherIPv6, off)
		}
	case protoMPLSinIP:
		d.decapMPLS(fi, b, off, ip, v6)
	case protoGRE:
		d.decapGRE(fi, b, off, ip, v6)
	}
}

// decapGRE steps over a GRE header (version 0) at off: the optional
// checksum, key and sequence number words (RFC 2784, RFC 2890; the routing
// field of RFC 1701 is not followed), then what its Protocol Type carries.
func (d *Decoder) decapGRE(fi *frameInfo, b []byte, off int, ip int32, v6 bool) {
	if len(b) < off+greHeaderLen || b[off+1]&0x07 != 0 || b[off]&0x40 != 0 {
		return // not version 0, or with RFC 1701 routing
	}
	flags := b[off]
	in := off + greHeaderLen
	if flags&0x80 != 0 { // C: checksum and reserved
		in += 4
	}
	if flags&0x20 != 0 { // K: key
		in += 4
	}
	seq := flags&0x10 != 0
	if seq { // S: sequence number
		in += 4
	}
	if len(b) < in {
		return
	}
	et := binary.BigEndian.Uint16(b[off+2 : off+4])
	if !d.push(fi, encap{kind: encapGRE, ip: ip, ipv6: v6, hdr: int32(off), inner: int32(in), ether: et == etherTEB}) {
		return
	}
	switch et {
	case etherERSPAN:
		if !seq { // type I: the mirrored frame follows at once
			if d.push(fi, encap{kind: encapERSPAN1, ip: -1, hdr: int32(in), inner: int32(in), ether: true}) {
				d.innerEther(fi, b, in)
			}
			return
		}
		e := in + erspan2Len
		if len(b) < e || b[in]>>4 != 1 {
			return
		}
		if d.push(fi, encap{kind: encapERSPAN2, ip: -1, hdr: int32(in), inner: int32(e), ether: true}) {
			d.innerEther(fi, b, e)
		}
	case etherERSPAN3:
		e := in + erspan3Len
		if len(b) < e || b[in]>>4 != 2 {
			return
		}
		if b[in+11]&0x01 != 0 { // O: a platform-specific subheader follows
			e += erspan3SubLen
		}
		if len(b) < e || (b[in+10]>>2)&0x1f != 0 { // frame type 0: Ethernet
			return
		}
		if d.push(fi, encap{kind: encapERSPAN3, ip: -1, hdr: int32(in), inner: int32(e), ether: true}) {
			d.innerEther(fi, b, e)
		}
	default:
		d.innerType(fi, b, et, in)
	}
}

// decapMPLS steps over an MPLS label stack at off, then guesses what its
// bottom entry carries by the first nibble, as MPLS itself does not say:
// 4 is IPv4, 6 is IPv6, 0 is a pseudowire control word (RFC 4385) before an
// Ethernet frame; anything else is taken for an Ethernet pseudowire
// without a control word.
func (d *Decoder) decapMPLS(fi *frameInfo, b []byte, off int, ip int32, v6 bool) {
	p := off
	for n := 0; ; n++ {
		if n == maxMPLSLabels || len(b) < p+4 {
			return
		}
		bottom := b[p+2]&0x01 != 0
		p += 4
		if bottom {
			break
		}
	}
	if len(b) < p+1 {
		return
	}
	var et uint16
	in := p
	switch b[p] >> 4 {
	case 4:
		et = etherIPv4
	case 6:
		et = etherIPv6
	case 0:
		et, in = etherTEB, p+4
	default:
		et = etherTEB
	}
	if !d.push(fi, encap{kind: encapMPLS, ip: ip, ipv6: v6, hdr: int32(off), inner: int32(in), ether: et == etherTEB}) {
		return
	}
	d.innerType(fi, b, et, in)
}

// innerType goes on with what an encapsulation carries, by EtherType: an
// Ethernet frame (Transparent Ethernet Bridging), IPv4, IPv6, MPLS, or
// RoCEv1's GRH.
func (d *Decoder) innerType(fi *frameInfo, b []byte, et uint16, off int) {
	if et == etherTEB {
		d.innerEther(fi, b, off)
	} else {
		d.inner(fi, b, et, off)
	}
}

// innerEther goes on with an Ethernet frame at off, with its 802.1Q and
// 802.1ad tags.
func (d *Decoder) innerEther(fi *frameInfo, b []byte, off int) {
	et, p := etherType(b, off)
	if p == off {
		return // too short for an Ethernet header
	}
	d.inner(fi, b, et, p)
}

// inner classifies an inner packet of EtherType et at off, as the outer
// one was: the IP fields of frameInfo are reset first, so that they end up
// describing the innermost headers.
func (d *Decoder) inner(fi *frameInfo, b []byte, et uint16, off int) {
	fi.l3, fi.l4, fi.ipv6 = 0, 0, false
	d.classifyEther(fi, b, et, off)
}
