package crafttest

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// ERF wraps a frame in an ERF record of type typ (link type 197), with n
// extension headers. An Ethernet type keeps the frame (after 2 octets of
// offset and pad); IPv4 and IPv6 types keep only its IP packet;
// InfiniBand keeps the frame as it is (a native InfiniBand packet).
func ERF(f craft.Frame, typ uint8, n int) (craft.Frame, error) {
	var pkt []byte
	switch {
	case layers.ERFEthernet(typ):
		pkt = append([]byte{0, 0}, f.Data...)
	case typ == layers.ERFTypeIPv4 || typ == layers.ERFTypeIPv6:
		_, ip, err := ipPacket(f.Data)
		if err != nil {
			return craft.Frame{}, fmt.Errorf("crafttest: ERF type %d: %w", typ, err)
		}
		pkt = ip
	case typ == layers.ERFTypeInfiniBand:
		pkt = f.Data
	default:
		return craft.Frame{}, fmt.Errorf("crafttest: ERF type %d carries nothing craft builds", typ)
	}
	h := make([]byte, layers.ERFHeaderLen+8*n)
	ts := uint64(f.Time.Unix())<<32 | uint64(f.Time.Nanosecond())<<32/1e9
	binary.LittleEndian.PutUint64(h, ts)
	h[8] = typ
	if n > 0 {
		h[8] |= 0x80
	}
	h[9] = 0x04 // varying record length
	rlen := len(h) + len(pkt)
	binary.BigEndian.PutUint16(h[10:], uint16(rlen))
	wlen := len(f.Data)
	if !layers.ERFEthernet(typ) {
		wlen = len(pkt)
	}
	binary.BigEndian.PutUint16(h[14:], uint16(wlen))
	for i := 0; i < n; i++ {
		e := h[layers.ERFHeaderLen+8*i:]
		e[0] = 4 // InterceptID
		if i < n-1 {
			e[0] |= 0x80
		}
		binary.BigEndian.PutUint16(e[2:], uint16(0x100+i))
	}
	return craft.Frame{Data: append(h, pkt...), Time: f.Time, LinkType: uint16(layers.LinkTypeERF)}, nil
}
