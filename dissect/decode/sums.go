package decode

import (
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// FPDUSums is the capture.Summer of a run that follows iWARP traffic: on
// the read-ahead goroutine it computes the CRC32c of each FPDU a TCP
// segment seems to hold whole, from the first octet of its payload on,
// one after the other while their ULPDU_Lengths fit: an MPA sender aligns
// FPDUs with segments (RFC 5044, section 4.1), and a segment of an iWARP
// connection that checks CRCs then holds one FPDU or more, whole. Each sum
// covers the octets an FPDU's CRC covers: all of it but its CRC field. It
// knows no connection and decides nothing: the framer takes a sum only
// for an FPDU whose octets are exactly those it names (mpa.Framer.Lend),
// and computes the CRC itself otherwise. A plain Ethernet frame with an
// IPv4 or IPv6 TCP segment, not a fragment, is looked into (plainTCP);
// nothing else.
func FPDUSums(link uint16, b []byte, out []capture.Sum) []capture.Sum {
	l4, end, _, ok := plainTCP(link, b)
	if !ok || len(b) < l4+20 || end > len(b) {
		return out
	}
	at := l4 + int(b[l4+12]>>4)*4
	for n := 0; n < maxFPDUSums && at+layers.FPDUHeaderLen <= end; n++ {
		ulpdu := int(binary.BigEndian.Uint16(b[at:]))
		size := layers.FPDULen(ulpdu)
		if ulpdu < layers.DDPTaggedLen || at+size > end {
			break
		}
		covered := size - layers.FPDUCRCLen
		out = append(out, capture.Sum{At: int32(at), N: int32(covered), Value: layers.UpdateFPDUCRC(0, b[at:at+covered])})
		at += size
	}
	return out
}

// SumsWanted reports whether FPDUSums is worth running over the frames
// read ahead: once a direction whose FPDUs carry a CRC is followed
// (mpa.Framer.CRCInUse). Before, and in a capture whose iWARP
// connections all agreed on no CRC, the sums would be computed for
// nothing. Safe to call from any goroutine.
func (d *Decoder) SumsWanted() bool { return d.mpa.CRCInUse() }

// maxFPDUSums bounds the FPDUs of a segment summed.
const maxFPDUSums = 8
