package decode

import (
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
)

// LooksAhead reports whether the run loop should show the Decoder the
// frame two records ahead (Ahead): the flow table has outgrown the
// caches (reassembly.Assembler.Wide).
func (d *Decoder) LooksAhead() bool { return d.asm.Wide() }

// Ahead is shown the octets of the frame two records ahead of the one
// decoded last (nil: not known), with its link type, and hints the flow
// table's lines for it and for the next frame (reassembly.Assembler.Ahead).
// Nothing is decided on what it shows.
func (d *Decoder) Ahead(link uint16, b []byte) {
	if f, ok := aheadFlow(link, b); ok {
		d.asm.Ahead(&f)
	} else {
		d.asm.Ahead(nil)
	}
}

// aheadFlow reads the direction of the TCP segment in a frame shown ahead:
// a plain Ethernet frame with an IPv4 TCP segment, not a fragment, only
// (the bulk of a capture of many flows). It is the direction parseTCP
// would read from the frame.
func aheadFlow(link uint16, b []byte) (f reassembly.Flow, ok bool) {
	l4, _, v6, ok := plainTCP(link, b)
	if !ok || v6 || len(b) < l4+4 {
		return f, false
	}
	const eth = 14
	copy(f.Src[12:], b[eth+12:eth+16])
	copy(f.Dst[12:], b[eth+16:eth+20])
	f.SrcPort = binary.BigEndian.Uint16(b[l4 : l4+2])
	f.DstPort = binary.BigEndian.Uint16(b[l4+2 : l4+4])
	return f, true
}

// plainTCP finds the TCP segment of a plain Ethernet frame (no VLAN tag,
// no tunnel) that holds an IPv4 datagram, not a fragment, or an IPv6 one
// whose next header is TCP: the offset of its TCP header, and where the
// datagram ends by its IP length (past b when the capture cut the frame;
// before the TCP header when that length is 0, as segmentation offload
// leaves it). For anything else, ok is false. The looks ahead of the run
// loop (aheadFlow) and of the read-ahead (FPDUSums) read no more than
// this; the Decoder's classifier reads every frame.
func plainTCP(link uint16, b []byte) (l4, end int, v6, ok bool) {
	const eth = 14
	if link != linkEthernet || len(b) < eth+20 {
		return 0, 0, false, false
	}
	switch binary.BigEndian.Uint16(b[12:14]) {
	case 0x0800:
		if b[eth]>>4 != 4 || b[eth+9] != 6 || binary.BigEndian.Uint16(b[eth+6:eth+8])&0x3fff != 0 {
			return 0, 0, false, false
		}
		l4 = eth + int(b[eth]&0x0f)*4
		if l4 < eth+20 {
			return 0, 0, false, false
		}
		return l4, eth + int(binary.BigEndian.Uint16(b[eth+2:eth+4])), false, true
	case 0x86dd:
		if len(b) < eth+40 || b[eth]>>4 != 6 || b[eth+6] != 6 {
			return 0, 0, false, false
		}
		return eth + 40, eth + 40 + int(binary.BigEndian.Uint16(b[eth+4:eth+6])), true, true
	}
	return 0, 0, false, false
}
