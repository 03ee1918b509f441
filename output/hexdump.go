package output

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// hexDump writes private data 16 octets a line, with the octets of the
// RFC 8797 message marked: highlighted in colour, and by a line of ^ beneath
// in any case, so the mark survives copying into a bug report. Repeated
// lines collapse into "*", as hexdump -C does. zeroed says --anonymize
// zeroed the octets of addresses in pd: the heading says so.
func (r *textRenderer) hexDump(pd []byte, rp *record.RPCRDMA, zeroed bool) {
	if len(pd) == 0 {
		return
	}
	lo, hi := -1, -1
	if rp != nil {
		lo, hi = rp.Offset, rp.Offset+layers.RPCRDMALen
	}
	note := ""
	if zeroed {
		note = " (the octets of addresses zeroed: --anonymize)"
	}
	fmt.Fprintf(r.w, "%s%s%s\n", indent, r.p.bold.Sprint("Private Data"), note)
	starred := false
	for line := 0; line < len(pd); line += 16 {
		end := min(line+16, len(pd))
		marked := lo < end && hi > line
		if line > 0 && !marked && end-line == 16 && string(pd[line:end]) == string(pd[line-16:line]) &&
			!(lo < line && hi > line-16) {
			if !starred {
				fmt.Fprintf(r.w, "%s*\n", indent)
				starred = true
			}
			continue
		}
		starred = false
		var hexPart, marks, ascii strings.Builder
		for i := line; i < line+16; i++ {
			if i == line+8 {
				hexPart.WriteByte(' ')
				marks.WriteByte(' ')
			}
			if i >= len(pd) {
				hexPart.WriteString("   ")
				continue
			}
			cell := fmt.Sprintf("%02x", pd[i])
			if i >= lo && i < hi {
				hexPart.WriteString(r.p.mark.Sprint(cell) + " ")
				marks.WriteString("^^ ")
			} else {
				hexPart.WriteString(cell + " ")
				marks.WriteString("   ")
			}
			if pd[i] >= 0x20 && pd[i] < 0x7f {
				ascii.WriteByte(pd[i])
			} else {
				ascii.WriteByte('.')
			}
		}
		// 80 columns: the offset at the indent, one space before the
		// ASCII column.
		fmt.Fprintf(r.w, "%s%04x  %s|%s|\n", indent, line, hexPart.String(), ascii.String())
		if marked {
			fmt.Fprintf(r.w, "%s      %s\n", indent, strings.TrimRight(marks.String(), " "))
		}
	}
	if len(pd)%16 == 0 && starred {
		fmt.Fprintf(r.w, "%s%04x\n", indent, len(pd))
	}
}
