// Package inet recomputes the checksums a frame's IP, UDP and TCP headers
// carry, and the ICRC of a RoCEv2 packet, after craft or crafttest edited
// the frame's octets in place (moved an address, inserted an extension
// header, cut a fragment). It is internal to craft so that craft and its
// test-support package share one copy without making it craft's API.
package inet

import (
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// FixTransport recomputes the ICRC of a RoCEv2 packet and the UDP or TCP
// checksum of the transport header at l4 (protocol proto) of the IP packet
// at l3.
func FixTransport(f []byte, l3, l4 int, proto uint8) {
	v6 := f[l3]>>4 == 6
	switch proto {
	case 17:
		ulen := int(binary.BigEndian.Uint16(f[l4+4:]))
		end := l4 + ulen
		if binary.BigEndian.Uint16(f[l4+2:]) == layers.RoCEv2Port && end <= len(f) && ulen >= 8+layers.BTHLen+layers.ICRCLen {
			icrc := layers.ICRCRoCEv2(f[l3:l4], f[l4:l4+8], f[l4+8:end-layers.ICRCLen])
			binary.LittleEndian.PutUint32(f[end-layers.ICRCLen:], icrc)
		}
		f[l4+6], f[l4+7] = 0, 0
		c := Checksum(f[l4:min(end, len(f))], pseudo(f, l3, v6, 17, ulen))
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(f[l4+6:], c)
	case 6:
		tlen := len(f) - l4
		f[l4+16], f[l4+17] = 0, 0
		binary.BigEndian.PutUint16(f[l4+16:], Checksum(f[l4:], pseudo(f, l3, v6, 6, tlen)))
	}
}

// pseudo is the sum of the pseudo-header of RFC 768 / RFC 8200 section 8.1.
func pseudo(f []byte, l3 int, v6 bool, proto uint8, n int) uint32 {
	var s uint32
	addr := f[l3+12 : l3+20]
	if v6 {
		addr = f[l3+8 : l3+40]
	}
	for i := 0; i+1 < len(addr); i += 2 {
		s += uint32(binary.BigEndian.Uint16(addr[i:]))
	}
	return s + uint32(proto) + uint32(n>>16) + uint32(n&0xffff)
}

// Checksum is the Internet checksum of b, starting from the sum s.
func Checksum(b []byte, s uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}
