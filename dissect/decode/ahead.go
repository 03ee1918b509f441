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
	const eth = 14
	if link != linkEthernet || len(b) < eth+20 || binary.BigEndian.Uint16(b[12:14]) != 0x0800 ||
		b[eth]>>4 != 4 || b[eth+9] != 6 || binary.BigEndian.Uint16(b[eth+6:eth+8])&0x3fff != 0 {
		return f, false
	}
	l4 := eth + int(b[eth]&0x0f)*4
	if l4 < eth+20 || len(b) < l4+4 {
		return f, false
	}
	copy(f.Src[12:], b[eth+12:eth+16])
	copy(f.Dst[12:], b[eth+16:eth+20])
	f.SrcPort = binary.BigEndian.Uint16(b[l4 : l4+2])
	f.DstPort = binary.BigEndian.Uint16(b[l4+2 : l4+4])
	return f, true
}
