package crafttest

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/internal/inet"
)

// IPv6 extension headers and IP fragments, inserted into frames craft
// built: what RoCEv2 and iWARP look like behind IPsec AH, routing headers,
// tunnels with a small MTU.

// IPv6 extension header types InsertIPv6Ext inserts.
const (
	ExtHopByHop   = 0
	ExtRouting    = 43
	ExtFragment   = 44 // an atomic fragment: offset 0, M clear (RFC 6946)
	ExtAH         = 51
	ExtDestOpts   = 60
	ExtMobility   = 135
	ExtExperiment = 253
)

// ExtHeader is one IPv6 extension header to insert: its type and its
// length in octets (a multiple of 8, at least 8; AH: a multiple of 4, at
// least 12; the fragment header is always 8).
type ExtHeader struct {
	Type uint8
	Len  int
}

// InsertIPv6Ext inserts extension headers, in order, after the IPv6 header
// of an Ethernet frame (no VLAN tag) built by craft, and fixes the lengths,
// the ICRC of a RoCEv2 packet and the UDP or TCP checksum.
func InsertIPv6Ext(f []byte, hdrs ...ExtHeader) ([]byte, error) {
	const l3 = 14
	if len(f) < l3+40 || binary.BigEndian.Uint16(f[12:]) != 0x86dd {
		return nil, fmt.Errorf("crafttest: not an IPv6 frame")
	}
	nh := f[l3+6]
	var ext []byte
	types := []uint8{}
	for _, h := range hdrs {
		types = append(types, h.Type)
	}
	for i, h := range hdrs {
		next := nh
		if i+1 < len(hdrs) {
			next = types[i+1]
		}
		var b []byte
		switch h.Type {
		case ExtFragment:
			b = []byte{next, 0, 0, 0, 0, 0, 0x12, 0x34}
		case ExtAH:
			if h.Len < 12 || h.Len%4 != 0 {
				return nil, fmt.Errorf("crafttest: AH of %d octets", h.Len)
			}
			b = make([]byte, h.Len)
			b[0], b[1] = next, byte(h.Len/4-2)
			binary.BigEndian.PutUint32(b[4:], 0x100) // SPI
			binary.BigEndian.PutUint32(b[8:], 1)     // sequence number
		default:
			if h.Len < 8 || h.Len%8 != 0 || h.Len > 2048 {
				return nil, fmt.Errorf("crafttest: extension header of %d octets", h.Len)
			}
			b = make([]byte, h.Len)
			b[0], b[1] = next, byte(h.Len/8-1)
			switch h.Type {
			case ExtRouting:
				b[2] = 4 // Segment Routing, Segments Left 0: the destination stays the final one
			default: // options: PadN over the rest
				b[2], b[3] = 1, byte(h.Len-4)
			}
		}
		ext = append(ext, b...)
	}
	if len(hdrs) > 0 {
		f = append(append(append([]byte(nil), f[:l3+40]...), ext...), f[l3+40:]...)
		f[l3+6] = hdrs[0].Type
	}
	binary.BigEndian.PutUint16(f[l3+4:], uint16(len(f)-l3-40))
	l4 := l3 + 40 + len(ext)
	inet.FixTransport(f, l3, l4, nh)
	return f, nil
}

// Fragment splits the IP packet of an Ethernet frame built by craft (no
// VLAN tag, no IPv6 extension header) into fragments of at most size
// octets of payload (rounded down to a multiple of 8), with IPv4
// Identification (or IPv6 Fragment header Identification) id. An IPv4
// packet has Don't Fragment cleared first (and its ICRC fixed, which
// covers the flags).
func Fragment(f []byte, size int, id uint32) ([][]byte, error) {
	const l3 = 14
	if len(f) < l3+20 {
		return nil, fmt.Errorf("crafttest: frame too short to fragment")
	}
	size &^= 7
	if size <= 0 {
		return nil, fmt.Errorf("crafttest: fragments of %d octets", size)
	}
	f = append([]byte(nil), f...)
	var out [][]byte
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		ihl := int(f[l3]&0x0f) * 4
		f[l3+6] &^= 0x40 // DF
		binary.BigEndian.PutUint16(f[l3+4:], uint16(id))
		f[l3+10], f[l3+11] = 0, 0
		binary.BigEndian.PutUint16(f[l3+10:], inet.Checksum(f[l3:l3+ihl], 0))
		inet.FixTransport(f, l3, l3+ihl, f[l3+9])
		payload := f[l3+ihl:]
		for off := 0; off < len(payload); off += size {
			end := min(off+size, len(payload))
			fr := append(append([]byte(nil), f[:l3+ihl]...), payload[off:end]...)
			binary.BigEndian.PutUint16(fr[l3+2:], uint16(ihl+end-off))
			binary.BigEndian.PutUint16(fr[l3+4:], uint16(id))
			fo := uint16(off / 8)
			if end < len(payload) {
				fo |= 0x2000
			}
			binary.BigEndian.PutUint16(fr[l3+6:], fo)
			fr[l3+10], fr[l3+11] = 0, 0
			binary.BigEndian.PutUint16(fr[l3+10:], inet.Checksum(fr[l3:l3+ihl], 0))
			out = append(out, fr)
		}
	case 0x86dd:
		nh := f[l3+6]
		payload := f[l3+40:]
		for off := 0; off < len(payload); off += size {
			end := min(off+size, len(payload))
			fr := append([]byte(nil), f[:l3+40]...)
			fr[l3+6] = ExtFragment
			fo := uint16(off)
			if end < len(payload) {
				fo |= 1
			}
			fh := []byte{nh, 0, byte(fo >> 8), byte(fo), byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
			fr = append(append(fr, fh...), payload[off:end]...)
			binary.BigEndian.PutUint16(fr[l3+4:], uint16(len(fr)-l3-40))
			out = append(out, fr)
		}
	default:
		return nil, fmt.Errorf("crafttest: not an IP frame")
	}
	return out, nil
}
