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
		if p := a.t4.firstSlot(a.ahead); p != nil {
			hint.Line((*byte)(unsafe.Pointer(p)))
		}
	}
}

// firstSlot is the slot where a look-up of a key hashed h starts, or nil
// while the table has no index.
func (t *table[K]) firstSlot(h uint64) *uint32 {
	if len(t.slots) == 0 {
		return nil
	}
	return &t.slots[h&uint64(len(t.slots)-1)]
}

// firstAt returns the state in the entry of the first slot a look-up of a
// key hashed h tries, when that slot's tag is the key's, or nil.
func (t *table[K]) firstAt(h uint64) *dirState {
	p := t.firstSlot(h)
	if p == nil {
		return nil
	}
	s := *p
	if s == slotEmpty || s == slotDeleted || s&^idxMask != tag(h) {
		return nil
	}
	i := s&idxMask - 1
	if c := int(i >> chunkBits); c >= len(t.chunks) || int(i&(chunkSize-1)) >= len(t.chunks[c]) {
		return nil
	}
	return &t.at(i).st
}

// hintVictim hints what giving up the direction that waits longest for
// its start will touch, when the next direction opened will give it up
// (EarlyFlows wait): its entry, its neighbour in the list, and the buffers
// the direction opened next takes over from it (ring.go's pool hands back
// the buffer put last). Its stream was hinted a direction earlier, when it
// came second in line, so that reading where those are waits for nothing;
// the stream of the one now second is hinted for the next time. A capture
// of many short mid-stream flows gives one up for every segment, 4096
// directions after it was last touched, when its lines have left the
// core's caches.
func (a *Assembler) hintVictim() {
	v := a.elru.lnext
	if a.unanchored < a.opt.EarlyFlows || v == nil || v == &a.elru {
		return
	}
	if v.ent != nil {
		hint.Line((*byte)(unsafe.Pointer(v.ent)))
	}
	if b := v.buf[:cap(v.buf)]; len(b) > 0 {
		for off := 0; off < min(len(b), victimBuf); off += 64 {
			hint.Line(&b[off])
		}
	}
	if g := v.got[:cap(v.got)]; len(g) > 0 {
		hint.Line((*byte)(unsafe.Pointer(&g[0])))
	}
	if e := v.early[:cap(v.early)]; len(e) > 0 {
		hint.Line((*byte)(unsafe.Pointer(&e[0])))
	}
	if n := v.lnext; n != nil && n != &a.elru {
		p := unsafe.Pointer(n)
		for off := uintptr(0); off < unsafe.Sizeof(stream{}); off += 64 {
			hint.Line((*byte)(unsafe.Add(p, off)))
		}
	}
}

// victimBuf is how much of the buffer of the direction given up next is
// hinted: a first message's span (the MPA limit, 532 octets) rounded up.
const victimBuf = 576
