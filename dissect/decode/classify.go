package decode

import (
	"encoding/binary"

	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The fast path: decide from a few octets whether a frame can hold a
// connection message, without decoding it. Almost every frame of a real
// capture is RDMA data or unrelated traffic, so this runs once per frame and
// must neither allocate nor do more than a handful of comparisons.

// frameKind is what classify found.
type frameKind uint8

const (
	kindNone     frameKind = iota // nothing for us
	kindCM                        // an InfiniBand-family packet carrying a CM MAD
	kindTCP                       // a TCP segment with payload (MPA candidate)
	kindFragment                  // an IP fragment, for reassembly
	kindRC                        // a Reliable Connected data frame, for the data path (rc.go)
)

// Link, EtherType and protocol numbers as the classifier compares them
// (gopacket's names; the InfiniBand and ERF link types are in layers).
const (
	linkNull     = uint16(golayers.LinkTypeNull)
	linkEthernet = uint16(golayers.LinkTypeEthernet)
	linkRaw      = uint16(golayers.LinkTypeRaw)
	linkLoop     = uint16(golayers.LinkTypeLoop)
	linkSLL      = uint16(golayers.LinkTypeLinuxSLL)
	linkIPv4     = uint16(golayers.LinkTypeIPv4)
	linkIPv6     = uint16(golayers.LinkTypeIPv6)
	linkSLL2     = uint16(golayers.LinkTypeLinuxSLL2)
	linkERF      = uint16(layers.LinkTypeERF)
	linkIB       = uint16(layers.LinkTypeIB)

	etherIPv4  = uint16(golayers.EthernetTypeIPv4)
	etherIPv6  = uint16(golayers.EthernetTypeIPv6)
	etherDot1Q = uint16(golayers.EthernetTypeDot1Q)
	etherQinQ  = uint16(golayers.EthernetTypeQinQ)
	// The legacy QinQ tags (layers registers them with gopacket).
	etherQinQ9100 = layers.EtherTypeQinQ9100
	etherQinQ9200 = layers.EtherTypeQinQ9200

	protoUDP       = uint8(golayers.IPProtocolUDP)
	protoTCP       = uint8(golayers.IPProtocolTCP)
	protoHopByHop  = uint8(golayers.IPProtocolIPv6HopByHop)
	protoRouting   = uint8(golayers.IPProtocolIPv6Routing)
	protoFragment  = uint8(golayers.IPProtocolIPv6Fragment)
	protoDestOpts  = uint8(golayers.IPProtocolIPv6Destination)
	protoAH        = uint8(golayers.IPProtocolAH)
	tcpMinHeader   = 20
	ipv4MinHeader  = 20
	ipv6HeaderLen  = 40
	ipv6FragHdrLen = 8
)

// frameInfo locates the parts of a candidate frame. Offsets are into the
// frame's data; ibEnd is where the IB packet ends by its own length fields
// (after the ICRC) and may lie beyond the captured octets.
type frameInfo struct {
	kind      frameKind
	tunnels   uint8     // encapsulations stepped into: the first entries of the Decoder's tunnel stack (tunnel.go)
	odd       uint8     // oddTooDeep, oddLongChain: what the classifier could not look into, counted (tunnel.go)
	fragFirst bool      // kindFragment: the fragment at offset 0, whose transport header starts a CM MAD or an MPA frame
	lenZero   bool      // kindTCP: the IP length field is 0 (TSO), the segment's end was taken from the frame
	class     dataClass // a data frame's transport class (countData, hosts.go)
	transport record.Transport
	l3, l4    int // IP header and UDP or TCP header (RoCEv2, TCP)
	grh       int // GRH offset, or -1
	lrh       int // LRH offset, or -1
	bth       int // BTH offset
	ibEnd     int
	ipv6      bool
}

// classify finds a candidate in a frame of link type lt.
func (d *Decoder) classify(lt uint16, b []byte) frameInfo {
	fi := frameInfo{grh: -1, lrh: -1}
	var etype uint16
	off := 0
	switch lt {
	case linkEthernet:
		etype, off = etherType(b, 0)
	case linkSLL:
		if len(b) < 16 {
			return fi
		}
		etype, off = binary.BigEndian.Uint16(b[14:16]), 16
		etype, off = vlanTags(b, off, etype)
	case linkSLL2:
		if len(b) < 20 {
			return fi
		}
		etype, off = binary.BigEndian.Uint16(b[0:2]), 20
		etype, off = vlanTags(b, off, etype)
	case linkRaw:
		if len(b) < 1 {
			return fi
		}
		switch b[0] >> 4 {
		case 4:
			etype = etherIPv4
		case protoTCP:
			etype = etherIPv6
		}
	case linkIPv4:
		etype = etherIPv4
	case linkIPv6:
		etype = etherIPv6
	case linkNull, linkLoop:
		if len(b) < 4 {
			return fi
		}
		fam := binary.LittleEndian.Uint32(b[0:4])
		if lt == linkLoop || fam > 0xffff {
			fam = binary.BigEndian.Uint32(b[0:4])
		}
		switch fam {
		case 2:
			etype = etherIPv4
		case 10, 24, 28, 30:
			etype = etherIPv6
		}
		off = 4
	case linkIB:
		d.classifyIB(&fi, b, 0)
		return fi
	case linkERF:
		n, typ := erfHeader(b)
		switch typ {
		case layers.ERFTypeInfiniBand:
			d.classifyIB(&fi, b, n)
		case layers.ERFTypeEthernet, layers.ERFTypeColorEthernet, layers.ERFTypeDSMColorEthernet, layers.ERFTypeColorHashEthernet:
			etype, off = etherType(b, n+2)
			d.classifyEther(&fi, b, etype, off)
		case layers.ERFTypeIPv4:
			d.classifyIPv4(&fi, b, n)
		case layers.ERFTypeIPv6:
			d.classifyIPv6(&fi, b, n)
		}
		return fi
	default:
		return fi
	}
	d.classifyEther(&fi, b, etype, off)
	return fi
}

// classifyEther goes on from an EtherType at offset off.
func (d *Decoder) classifyEther(fi *frameInfo, b []byte, etype uint16, off int) {
	switch etype {
	case layers.EtherTypeRoCEv1:
		d.classifyGRH(fi, b, off)
		if fi.kind == kindCM || fi.kind == kindRC {
			fi.transport = record.RoCEv1
		}
		if fi.kind != kindCM && fi.bth != 0 {
			d.data.rocev1++
			d.countData(fi, b)
		}
	case etherIPv4:
		d.classifyIPv4(fi, b, off)
	case etherIPv6:
		d.classifyIPv6(fi, b, off)
	case etherMPLS, etherMPLSMcast:
		d.decapMPLS(fi, b, off, -1, false)
	}
}

func etherType(b []byte, off int) (uint16, int) {
	if len(b) < off+14 {
		return 0, off
	}
	et := binary.BigEndian.Uint16(b[off+12 : off+14])
	return vlanTags(b, off+14, et)
}

// vlanTags skips 802.1Q and 802.1ad tags, and the legacy QinQ tags 0x9100
// and 0x9200 (layers registers them with gopacket, so that the full decode
// follows the same path).
func vlanTags(b []byte, off int, et uint16) (uint16, int) {
	for (et == etherDot1Q || et == etherQinQ || et == etherQinQ9100 || et == etherQinQ9200) && len(b) >= off+4 {
		et = binary.BigEndian.Uint16(b[off+2 : off+4])
		off += 4
	}
	return et, off
}

// erfHeader returns the size of the ERF header with its extension headers
// and the record type, or type 0 when the header is cut short.
func erfHeader(b []byte) (int, uint8) {
	if len(b) < layers.ERFHeaderLen {
		return 0, 0
	}
	n := layers.ERFHeaderLen
	for more := b[8]&0x80 != 0; more; {
		if len(b) < n+8 {
			return 0, 0
		}
		more = b[n]&0x80 != 0
		n += 8
	}
	return n, b[8] & 0x7f
}

func (d *Decoder) classifyIPv4(fi *frameInfo, b []byte, off int) {
	if len(b) < off+ipv4MinHeader || b[off]>>4 != 4 {
		return
	}
	ihl := int(b[off]&0x0f) * 4
	if ihl < ipv4MinHeader || len(b) < off+ihl {
		return
	}
	// Fragments go to IP reassembly (dissect/ipfrag), which classifies the
	// datagram once whole. The fragment at offset 0 is marked when its
	// transport header starts a CM MAD or an MPA frame, so that what the
	// reassembly limits give up of those is reported.
	fi.l3 = off
	if frag := binary.BigEndian.Uint16(b[off+6 : off+8]); frag&0x3fff != 0 {
		fi.kind = kindFragment
		if frag&0x1fff == 0 {
			d.classifyFragment(fi, b, b[off+9], off+ihl)
		}
		return
	}
	d.classifyL4(fi, b, b[off+9], off+ihl)
}

func (d *Decoder) classifyIPv6(fi *frameInfo, b []byte, off int) {
	if len(b) < off+ipv6HeaderLen || b[off]>>4 != 6 {
		return
	}
	fi.l3 = off
	fi.ipv6 = true
	nh := b[off+6]
	p := off + ipv6HeaderLen
	for i := 0; ; i++ {
		if !isIPv6Ext(nh) {
			d.classifyL4(fi, b, nh, p)
			return
		}
		if i == MaxIPv6ExtHeaders {
			fi.odd |= oddLongChain // counted: the run says so
			return
		}
		if len(b) < p+8 {
			return
		}
		switch nh {
		case protoFragment:
			// An atomic fragment (offset 0, M clear: RFC 6946) is a whole
			// datagram; any other goes to reassembly, the one at offset 0
			// marked when it starts a CM MAD or an MPA frame.
			if fo := binary.BigEndian.Uint16(b[p+2 : p+4]); fo&0xfff9 != 0 {
				fi.kind = kindFragment
				fi.l4 = p
				if fo&0xfff8 == 0 {
					d.classifyFragment(fi, b, b[p], p+ipv6FragHdrLen)
				}
				return
			}
			nh = b[p]
			p += ipv6FragHdrLen
		case protoAH: // RFC 4302: Payload Len in 4-octet words, minus 2
			nh = b[p]
			p += (int(b[p+1]) + 2) * 4
		default:
			nh = b[p]
			p += (int(b[p+1]) + 1) * 8
		}
	}
}

func (d *Decoder) classifyL4(fi *frameInfo, b []byte, proto uint8, off int) {
	switch proto {
	case protoUDP:
		if len(b) < off+8 {
			return
		}
		if port := binary.BigEndian.Uint16(b[off+2 : off+4]); !d.rocePorts.has(port) {
			if d.tunnelPort(port) {
				d.decapUDP(fi, b, off, port)
			}
			return
		}
		fi.l4 = off
		fi.bth = off + 8
		fi.ibEnd = off + int(binary.BigEndian.Uint16(b[off+4:off+6]))
		if isCM(b, fi.bth) {
			fi.kind = kindCM
			fi.transport = record.RoCEv2
		} else {
			d.data.rocev2++ // RDMA traffic other than CM
			d.countData(fi, b)
			if d.datapath && isRC(b, fi.bth) {
				fi.kind, fi.transport = kindRC, record.RoCEv2
			}
		}
	case protoTCP:
		if len(b) < off+20 {
			return
		}
		hl := int(b[off+12]>>4) * 4
		// Segments with payload, and SYN, FIN and RST (they start and end a
		// direction); pure ACKs are of no interest.
		if hl < tcpMinHeader || (len(b) <= off+hl && b[off+13]&0x07 == 0) {
			return
		}
		fi.l4 = off
		fi.kind = kindTCP
		fi.transport = record.IWARP
	default:
		if proto == protoGRE || proto == protoIPinIP || proto == protoIPv6inIP || proto == protoMPLSinIP {
			d.decapIP(fi, b, proto, off)
		}
	}
}

// classifyFragment marks the fragment at offset 0 of an IP datagram whose
// transport header at off starts a CM MAD (UDP to a RoCEv2 port) or an MPA
// frame (TCP payload starting with the key's common prefix).
func (d *Decoder) classifyFragment(fi *frameInfo, b []byte, proto uint8, off int) {
	switch proto {
	case protoUDP:
		if len(b) >= off+8 && d.rocePorts.has(binary.BigEndian.Uint16(b[off+2:off+4])) && isCM(b, off+8) {
			fi.fragFirst = true
		}
	case protoTCP:
		if len(b) < off+20 {
			return
		}
		p := off + int(b[off+12]>>4)*4
		if len(b) >= p+len(mpaKeyPrefix) && string(b[p:p+len(mpaKeyPrefix)]) == mpaKeyPrefix {
			fi.fragFirst = true
		}
	}
}

// mpaKeyPrefix is what the Request and Reply keys share.
const mpaKeyPrefix = layers.MPAKeyStem

// classifyGRH handles a packet that starts with a GRH (RoCEv1, or native IB
// after an LRH with LNH 3).
func (d *Decoder) classifyGRH(fi *frameInfo, b []byte, off int) {
	if len(b) < off+layers.GRHLen || b[off+6] != layers.NxtHdrIBA {
		return
	}
	fi.grh = off
	fi.bth = off + layers.GRHLen
	fi.ibEnd = fi.bth + int(binary.BigEndian.Uint16(b[off+4:off+6]))
	if isCM(b, fi.bth) {
		fi.kind = kindCM
	} else if d.datapath && isRC(b, fi.bth) {
		fi.kind = kindRC
	}
}

// classifyIB handles a native InfiniBand packet starting with its LRH.
func (d *Decoder) classifyIB(fi *frameInfo, b []byte, off int) {
	if len(b) < off+layers.LRHLen {
		return
	}
	fi.lrh = off
	end := off + int(binary.BigEndian.Uint16(b[off+4:off+6])&0x07ff)*4
	switch b[off+1] & 0x03 {
	case layers.LNHBTH:
		fi.bth = off + layers.LRHLen
		if isCM(b, fi.bth) {
			fi.kind = kindCM
		} else if d.datapath && isRC(b, fi.bth) {
			fi.kind = kindRC
		}
	case layers.LNHGRH:
		d.classifyGRH(fi, b, off+layers.LRHLen)
	default:
		return
	}
	fi.ibEnd = end
	if fi.kind == kindCM || fi.kind == kindRC {
		fi.transport = record.InfiniBand
	}
	if fi.kind != kindCM && fi.bth != 0 {
		d.data.ib++
		d.countData(fi, b)
	}
}

// isCM reports whether a BTH at off starts a UD SEND carrying a
// Communication Manager MAD. The management class is the MAD's second octet;
// a capture cut inside the MAD header still counts, to be reported as such.
func isCM(b []byte, off int) bool {
	const mad = layers.BTHLen + layers.DETHLen
	return len(b) >= off+mad+2 &&
		b[off] == layers.OpUDSendOnly && b[off+mad+1] == layers.MgmtClassCM
}

// portSet is a set of UDP ports, one bit each.
type portSet [1024]uint64

func (s *portSet) add(p uint16)      { s[p>>6] |= 1 << (p & 63) }
func (s *portSet) has(p uint16) bool { return s[p>>6]&(1<<(p&63)) != 0 }
