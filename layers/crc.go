package layers

import (
	"hash/crc32"
)

// The Invariant CRC (IBTA Vol 1, 7.8.1; RoCE Annex A16/A17) is the IEEE CRC-32
// over the parts of a packet that no switch or router changes: the headers
// with their variant fields set to all ones, then everything up to the ICRC.
// In front comes the LRH, or 8 octets of 0xff standing for it when a GRH or
// an IP header is present. The ICRC is stored least-significant octet first.

// ones stands for the masked fields: slices of it replace them in the CRC
// input, so nothing is copied and nothing allocated.
var ones = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// octetValues holds every octet value, for feeding one computed octet to the CRC.
var octetValues = func() (b [256]byte) {
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

func upd(crc uint32, p []byte) uint32 { return crc32.Update(crc, crc32.IEEETable, p) }

// ICRCRoCEv2 computes the ICRC of a RoCEv2 packet: ip is the IPv4 or IPv6
// header, udp the 8-octet UDP header, ib the octets from the BTH up to the
// ICRC (excluding it).
func ICRCRoCEv2(ip, udp, ib []byte) uint32 {
	crc := upd(0, ones[:LRHLen])
	crc = updateMaskedIP(crc, ip)
	if len(udp) >= 8 {
		crc = upd(crc, udp[:6])
		crc = upd(crc, ones[:2]) // UDP checksum
		crc = upd(crc, udp[8:])
	} else {
		crc = upd(crc, udp)
	}
	return updateBTH(crc, ib)
}

// ICRCGRH computes the ICRC of a packet that starts with a GRH: RoCEv1, or
// native InfiniBand with LRH and GRH (the LRH is replaced by ones: routers
// rewrite it). grh is the 40-octet GRH, ib the octets from the BTH up to the
// ICRC.
func ICRCGRH(grh, ib []byte) uint32 {
	crc := upd(0, ones[:LRHLen])
	crc = updateMaskedIP(crc, grh)
	return updateBTH(crc, ib)
}

// ICRCLRH computes the ICRC of a native InfiniBand packet without GRH: the
// LRH with its VL nibble set to ones, then the octets from the BTH up to the
// ICRC.
func ICRCLRH(lrh, ib []byte) uint32 {
	var crc uint32
	if len(lrh) > 0 {
		v := lrh[0] | 0xf0 // VL
		crc = upd(crc, octetValues[v:int(v)+1])
		crc = upd(crc, lrh[1:])
	}
	return updateBTH(crc, ib)
}

// updateMaskedIP adds an IPv4 header (TOS, TTL and header checksum set to
// ones) or an IPv6 header or GRH (traffic class, flow label and hop limit set
// to ones), choosing by the version nibble.
func updateMaskedIP(crc uint32, h []byte) uint32 {
	switch {
	case len(h) == 0:
		return crc
	case h[0]>>4 == 4 && len(h) >= 12:
		crc = upd(crc, h[:1])
		crc = upd(crc, ones[:1]) // TOS
		crc = upd(crc, h[2:8])
		crc = upd(crc, ones[:1]) // TTL
		crc = upd(crc, h[9:10])
		crc = upd(crc, ones[:2]) // header checksum
		return upd(crc, h[12:])
	case h[0]>>4 != 4 && len(h) >= 8:
		v := h[0] | 0x0f // traffic class, high nibble
		crc = upd(crc, octetValues[v:int(v)+1])
		crc = upd(crc, ones[:3]) // traffic class, low nibble, and flow label
		crc = upd(crc, h[4:7])
		crc = upd(crc, ones[:1]) // hop limit
		return upd(crc, h[8:])
	}
	return upd(crc, h)
}

// updateBTH adds the BTH with its reserved octet (byte 4; FECN and BECN in
// RoCEv2) set to ones, then the rest of the packet.
func updateBTH(crc uint32, ib []byte) uint32 {
	if len(ib) < BTHLen {
		return upd(crc, ib)
	}
	crc = upd(crc, ib[:4])
	crc = upd(crc, ones[:1])
	return upd(crc, ib[5:])
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
