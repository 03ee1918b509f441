package reassembly

import (
	"unsafe"

	"github.com/rdmacm-pd/rdmacm-pd/internal/hint"
)

// Looking ahead. With many directions the flow table is larger than the
// processor's caches, and a segment's look-up waits for memory twice: for
// its index slot, then for its entry. The run loop can see the frame two
// records ahead in the capture file's buffer; for each frame it hands the
// assembler the direction of that frame's TCP segment (Ahead), whose slot
// is hinted, and the assembler hints the entry of the segment right ahead,
// whose slot was hinted a frame earlier. A hint changes nothing the
// assembler decides: a wrong one (the frame was not what it looked like,
// the table changed meanwhile) costs a line read for nothing.

// wideTable is the number of IPv4 directions from which the table no
// longer fits the caches (about 1 MiB of entries and slots) and looking
// ahead pays for itself.
const wideTable = 1 << 15

// Wide reports whether looking ahead is worth it: the IPv4 flow table
// holds more than wideTable directions.
func (a *Assembler) Wide() bool { return a.t4.used > wideTable }

// Ahead hints the flow table's lines for the next two segments: the entry
// of the one expected next (the direction given to the previous call),
// then the slot of the direction f given now (nil: the frame two ahead is
// not known, or not a TCP segment). Only IPv4 directions are hinted.
func (a *Assembler) Ahead(f *Flow) {
	if a.aheadOK {
		if st := a.t4.firstAt(a.ahead); st != nil {
			hint.Line((*byte)(unsafe.Pointer(st)))
		}
	}
	a.aheadOK = f != nil && !f.V6
	if a.aheadOK {
		_, a.ahead = key4Of(f)
		if len(a.t4.slots) > 0 {
			hint.Line((*byte)(unsafe.Pointer(&a.t4.slots[a.ahead&uint64(len(a.t4.slots)-1)])))
		}
	}
}

// firstAt returns the state in the entry of the first slot a look-up of a
// key hashed h tries, when that slot's tag is the key's, or nil.
func (t *table[K]) firstAt(h uint64) *dirState {
	if len(t.slots) == 0 {
		return nil
	}
	s := t.slots[h&uint64(len(t.slots)-1)]
	if s == slotEmpty || s == slotDeleted || s&^idxMask != tag(h) {
		return nil
	}
	i := s&idxMask - 1
	if c := int(i >> chunkBits); c >= len(t.chunks) || int(i&(chunkSize-1)) >= len(t.chunks[c]) {
		return nil
	}
	return &t.at(i).st
}
