package decode

import (
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
)

// minEtherFrame is the smallest Ethernet frame, without its FCS: a shorter
// one is padded to it.
const minEtherFrame = 60

// parseTCP reads the TCP segment at fi.l4 of a frame classified as TCP
// into s. It does not allocate.
func parseTCP(b []byte, fi *frameInfo, s *reassembly.Segment) bool {
	l3, l4 := fi.l3, fi.l4
	if len(b) < l4+20 {
		return false
	}
	*s = reassembly.Segment{}
	var ipLen, ipEnd int
	if fi.ipv6 {
		copy(s.Flow.Src[:], b[l3+8:l3+24])
		copy(s.Flow.Dst[:], b[l3+24:l3+40])
		ipLen = int(binary.BigEndian.Uint16(b[l3+4 : l3+6]))
		ipEnd = l3 + 40 + ipLen
		s.Flow.V6 = true
	} else {
		copy(s.Flow.Src[12:], b[l3+12:l3+16])
		copy(s.Flow.Dst[12:], b[l3+16:l3+20])
		ipLen = int(binary.BigEndian.Uint16(b[l3+2 : l3+4]))
		ipEnd = l3 + ipLen
	}
	if ipLen == 0 {
		// Segmentation offload (TSO, GSO, LRO, GRO) leaves the IP length 0
		// in captures taken on the host: the segment runs to the end of
		// the frame (the message it completes says so: ip-length-zero),
		// unless the frame is no longer than the smallest Ethernet frame,
		// whose tail may be padding.
		ipEnd = l4 + int(b[l4+12]>>4)*4
		if len(b) > minEtherFrame {
			ipEnd = len(b)
		}
		fi.lenZero = true
	}
	s.Flow.SrcPort = binary.BigEndian.Uint16(b[l4 : l4+2])
	s.Flow.DstPort = binary.BigEndian.Uint16(b[l4+2 : l4+4])
	s.Seq = binary.BigEndian.Uint32(b[l4+4 : l4+8])
	hl := int(b[l4+12]>>4) * 4
	flags := b[l4+13]
	s.FIN, s.SYN, s.RST, s.ACK = flags&0x01 != 0, flags&0x02 != 0, flags&0x04 != 0, flags&0x10 != 0
	s.Ack = binary.BigEndian.Uint32(b[l4+8 : l4+12])
	s.Window = binary.BigEndian.Uint16(b[l4+14 : l4+16])
	start := l4 + hl
	if ipEnd < start {
		ipEnd = start
	}
	s.WireLen = ipEnd - start
	if end := min(ipEnd, len(b)); start <= end {
		s.Payload = b[start:end]
	}
	return true
}
