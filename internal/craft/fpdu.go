package craft

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// FPDUUnit is one DDP segment to frame as an MPA FPDU.
type FPDUUnit struct {
	DDP     layers.DDP
	Payload []byte // what follows the DDP header (and the RDMAP header of a Read Request or Terminate)
	BadCRC  bool   // flip a bit of its CRC
	ZeroCRC bool   // a zero CRC field, although CRC is in use
	// BadMarker: the first marker inside this FPDU points elsewhere.
	BadMarker bool
}

// FPDUStream frames units as one direction of an iWARP connection after
// its MPA frame: markers every 512 octets from the first FPDU on when
// markers is set, and CRC32c fields when crc is set. starts holds where
// each FPDU begins in the result (its end is the next start).
func FPDUStream(units []FPDUUnit, markers, crc bool) (out []byte, starts []int) {
	var plain []byte
	var pstart, pcrc []int
	for i := range units {
		u := &units[i]
		buf := gopacket.NewSerializeBuffer()
		ddp := u.DDP
		ddp.Version, ddp.RDMAPVersion = or8(ddp.Version, layers.DDPVersion), or8(ddp.RDMAPVersion, layers.RDMAPVersion)
		_ = gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, &layers.FPDU{}, &ddp, gopacket.Payload(u.Payload))
		pstart = append(pstart, len(plain))
		plain = append(plain, buf.Bytes()...)
		pcrc = append(pcrc, len(plain)-layers.FPDUCRCLen)
	}
	// Insert the markers, keeping where each FPDU and CRC field went.
	starts = make([]int, len(units))
	at := make([]int, len(plain)) // where each octet of plain went
	out = make([]byte, 0, len(plain)+len(plain)/layers.MarkerInterval*layers.MarkerLen+layers.MarkerLen)
	fi := 0
	badDone := make([]bool, len(units))
	for i := 0; i <= len(plain); i++ {
		atStart := fi < len(pstart) && pstart[fi] == i
		if markers && len(out)%layers.MarkerInterval == 0 && i < len(plain) {
			// FPDUPTR: back to the start of the FPDU the marker is in; 0
			// when an FPDU starts right after it.
			ptr := 0
			if !atStart {
				ptr = len(out) - starts[fi-1]
				if units[fi-1].BadMarker && !badDone[fi-1] {
					ptr += 4
					badDone[fi-1] = true
				}
			}
			out = append(out, 0, 0, byte(ptr>>8), byte(ptr))
		}
		if atStart {
			starts[fi] = len(out)
			fi++
		}
		if i < len(plain) {
			at[i] = len(out)
			out = append(out, plain[i])
		}
	}
	for k := range units {
		// The CRC covers the FPDU up to its CRC field, markers in it
		// included (a marker may also sit inside the field, uncovered).
		// A marker right before the ULPDU_Length is the FPDU's too.
		from := starts[k]
		if markers && from >= layers.MarkerLen && (from-layers.MarkerLen)%layers.MarkerInterval == 0 {
			from -= layers.MarkerLen
		}
		var c uint32
		if crc && !units[k].ZeroCRC {
			c = layers.FPDUCRC(out[from:at[pcrc[k]]])
		}
		if units[k].BadCRC {
			c ^= 1
		}
		var f [layers.FPDUCRCLen]byte
		binary.LittleEndian.PutUint32(f[:], c)
		for j := range f {
			out[at[pcrc[k]+j]] = f[j]
		}
	}
	return out, starts
}
