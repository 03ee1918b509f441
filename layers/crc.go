package layers

import (
	"hash/crc32"
)

// The Invariant CRC (IBTA Vol 1, 7.8.1; RoCE Annex A16/A17) is the IEEE CRC-32
// over the parts of a packet that no switch or router changes: the headers
// with their variant fields set to all ones, then everything up to the ICRC.
// In front comes the LRH, or 8 octets of 0xff standing for it when a GRH or
// an IP header is present. The ICRC is stored least-significant octet first.

var lrhOnes = [LRHLen]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ICRCRoCEv2 computes the ICRC of a RoCEv2 packet: ip is the IPv4 or IPv6
// header, udp the 8-octet UDP header, ib the octets from the BTH up to the
// ICRC (excluding it).
func ICRCRoCEv2(ip, udp, ib []byte) uint32 {
	crc := crc32.Update(0, crc32.IEEETable, lrhOnes[:])
	crc = updateMaskedIP(crc, ip)
	var u [8]byte
	copy(u[:], udp)
	u[6], u[7] = 0xff, 0xff // UDP checksum
	crc = crc32.Update(crc, crc32.IEEETable, u[:])
	return updateBTH(crc, ib)
}

// ICRCGRH computes the ICRC of a packet that starts with a GRH: RoCEv1, or
// native InfiniBand with LRH and GRH (the LRH is replaced by ones: routers
// rewrite it). grh is the 40-octet GRH, ib the octets from the BTH up to the
// ICRC.
func ICRCGRH(grh, ib []byte) uint32 {
	crc := crc32.Update(0, crc32.IEEETable, lrhOnes[:])
	crc = updateMaskedIP(crc, grh)
	return updateBTH(crc, ib)
}

// ICRCLRH computes the ICRC of a native InfiniBand packet without GRH: the
// LRH with its VL nibble set to ones, then the octets from the BTH up to the
// ICRC.
func ICRCLRH(lrh, ib []byte) uint32 {
	var l [LRHLen]byte
	copy(l[:], lrh)
	l[0] |= 0xf0 // VL
	crc := crc32.Update(0, crc32.IEEETable, l[:])
	return updateBTH(crc, ib)
}

// updateMaskedIP adds an IPv4 header (TOS, TTL and header checksum set to
// ones) or an IPv6 header or GRH (traffic class, flow label and hop limit set
// to ones), choosing by the version nibble.
func updateMaskedIP(crc uint32, ip []byte) uint32 {
	var h [60]byte
	n := copy(h[:], ip)
	if n == 0 {
		return crc
	}
	if h[0]>>4 == 4 {
		h[1] = 0xff // TOS
		if n >= 12 {
			h[8] = 0xff               // TTL
			h[10], h[11] = 0xff, 0xff // header checksum
		}
	} else if n >= 8 {
		h[0] |= 0x0f                        // traffic class, high nibble
		h[1], h[2], h[3] = 0xff, 0xff, 0xff // traffic class, low nibble, and flow label
		h[7] = 0xff                         // hop limit
	}
	return crc32.Update(crc, crc32.IEEETable, h[:n])
}

// updateBTH adds the BTH with its reserved octet (byte 4; FECN and BECN in
// RoCEv2) set to ones, then the rest of the packet.
func updateBTH(crc uint32, ib []byte) uint32 {
	if len(ib) < BTHLen {
		return crc32.Update(crc, crc32.IEEETable, ib)
	}
	var b [BTHLen]byte
	copy(b[:], ib)
	b[4] = 0xff
	crc = crc32.Update(crc, crc32.IEEETable, b[:])
	return crc32.Update(crc, crc32.IEEETable, ib[BTHLen:])
}

// VCRC computes the Variant CRC (IBTA Vol 1, 7.8.2) over a native InfiniBand
// packet from the LRH through the ICRC: CRC-16 with polynomial 0x100b, initial
// value 0xffff and final complement, bits taken least-significant first.
func VCRC(packet []byte) uint16 {
	crc := uint16(0xffff)
	for _, c := range packet {
		crc = vcrcTable[byte(crc)^c] ^ crc>>8
	}
	return ^crc
}

// vcrcTable holds the reflected CRC-16 (0x100b, reflected 0xd008) of every
// octet value.
var vcrcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xd008
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()
