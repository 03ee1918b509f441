package reassembly

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// The flow table remembers every direction exactly: a 4-tuple is found by
// comparing all of it, never by a hash alone. It is an open-addressing index
// of 32-bit slots over entries kept in fixed-size chunks, so that neither
// growing the index nor adding entries ever copies or doubles the entries
// themselves, and nothing in it holds a pointer the collector must scan.
// IPv4 directions use a 12-octet key, IPv6 ones a 36-octet key, each in a
// table of its own.

// key4 and key6 are the two shapes of a direction's 4-tuple.
type (
	key4 [12]byte
	key6 struct {
		src, dst     [16]byte
		sport, dport uint16
	}
)

// entry is what the table keeps of one direction.
type entry[K comparable] struct {
	key K
	st  dirState
}

// dirState is the per-direction state kept for every direction, followed or
// decided (32 octets with an IPv4 key).
type dirState struct {
	kind  uint8  // kindFollowed, kindDecided, kindStart, kindLost
	flags uint8  // flagAged, flagEnded, flagEarly
	lo    uint32 // the start, or the lowest sequence number seen when the start is not known
	end   uint32 // sequence number after the highest octet seen
	seen  uint32 // the assembler's segment count when this direction last had a segment
	slot  uint32 // kindFollowed: index of its stream
}

// Direction kinds.
const (
	kindFollowed = iota + 1 // a stream is following it
	kindDecided             // decided, start not known
	kindStart               // decided; its data started at lo
	kindLost                // given up at a limit before its reader saw anything of interest
)

// Direction flags.
const (
	// flagAged marks a kindStart given (by age or a limit) to a direction
	// that had shown its SYN and nothing else: it lost nothing, so a segment
	// that starts a direction at lo takes it up again.
	flagAged = 1 << iota
	// flagEnded: a FIN or an RST ended the direction's connection.
	flagEnded
	// flagEarly: a kindDecided whose octets before any start spanned more
	// than the early window. A start arriving later (below them: the
	// segments were reordered) is not taken up, and is counted as missed.
	flagEarly
)

const (
	chunkBits   = 12
	chunkSize   = 1 << chunkBits
	slotEmpty   = 0
	slotDeleted = ^uint32(0)
	// Slots hold an 8-bit tag of the hash above a 24-bit entry index + 1,
	// so that most mismatches are rejected without touching the entry.
	idxBits = 24
	idxMask = 1<<idxBits - 1
	// maxEntries bounds a table (the index needs idxBits).
	maxEntries = idxMask - 1
)

type table[K comparable] struct {
	hash   func(*K) uint64
	slots  []uint32
	chunks [][]entry[K]
	free   []uint32 // entry indexes to reuse
	used   int      // entries in use
	filled int      // slots not empty (in use or deleted)
	bytes  int      // the capacity of slots and chunks, in octets
}

func newTable[K comparable](hash func(*K) uint64) *table[K] { return &table[K]{hash: hash} }

func (t *table[K]) at(i uint32) *entry[K] { return &t.chunks[i>>chunkBits][i&(chunkSize-1)] }

func tag(h uint64) uint32 { return uint32(h>>56) << idxBits }

// find returns the state of k, whose hash is h, or nil. (The caller
// hashes: a call through t.hash would make k escape.)
func (t *table[K]) find(k *K, h uint64) *dirState {
	if t.used == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	tg := tag(h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		switch {
		case s == slotEmpty:
			return nil
		case s != slotDeleted && s&^idxMask == tg:
			if e := t.at(s&idxMask - 1); e.key == *k {
				return &e.st
			}
		}
	}
}

// insert adds k, whose hash is h and which must not be in the table, and
// returns its state, whose kind the caller sets (an entry of kind 0 is
// free).
func (t *table[K]) insert(k *K, h uint64) *dirState {
	if (t.filled+1)*4 > len(t.slots)*3 {
		t.rehash(max(64, 1<<bits.Len(uint(t.used*2))))
	}
	var idx uint32
	if n := len(t.free); n > 0 {
		idx, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if len(t.chunks) == 0 || len(t.chunks[len(t.chunks)-1]) == chunkSize {
			t.chunks = append(t.chunks, make([]entry[K], 0, chunkSize))
			t.bytes += chunkSize * int(unsafe.Sizeof(entry[K]{}))
		}
		c := &t.chunks[len(t.chunks)-1]
		idx = uint32(len(t.chunks)-1)<<chunkBits | uint32(len(*c))
		*c = append(*c, entry[K]{})
	}
	e := t.at(idx)
	*e = entry[K]{key: *k}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if s := t.slots[i]; s == slotEmpty || s == slotDeleted {
			if s == slotEmpty {
				t.filled++
			}
			t.slots[i] = tag(h) | (idx + 1)
			break
		}
	}
	t.used++
	return &e.st
}

// remove forgets k, whose hash is h.
func (t *table[K]) remove(k *K, h uint64) {
	mask := uint64(len(t.slots) - 1)
	tg := tag(h)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == slotEmpty {
			return
		}
		if s != slotDeleted && s&^idxMask == tg {
			idx := s&idxMask - 1
			if e := t.at(idx); e.key == *k {
				*e = entry[K]{}
				t.vacate(i, idx)
				return
			}
		}
	}
}

// vacate empties slot i, which held the entry idx (cleared already), and
// frees the entry. An empty slot may end a probe run only where the next
// slot is empty too; otherwise the slot is marked deleted.
func (t *table[K]) vacate(i uint64, idx uint32) {
	if t.slots[(i+1)&uint64(len(t.slots)-1)] == slotEmpty {
		t.slots[i] = slotEmpty
		t.filled--
	} else {
		t.slots[i] = slotDeleted
	}
	t.free = append(t.free, idx)
	t.used--
}

// drop names an entry to remove: its key's hash and its index.
type drop struct {
	h   uint64
	idx uint32
}

// dropSeenBelow removes the entries of directions not followed that were
// last seen before below, in the order of the entries (as remove would
// one by one), and reports how many; scratch is room for the list, given
// back for the next call. A slot is found by the entry's index, never by
// comparing keys: the entries are read in order once, not again at random.
func (t *table[K]) dropSeenBelow(below uint32, scratch []drop) ([]drop, int) {
	ds := scratch[:0]
	for c, chunk := range t.chunks {
		for j := range chunk {
			if e := &chunk[j]; e.st.kind != 0 && e.st.kind != kindFollowed && e.st.seen < below {
				ds = append(ds, drop{t.hash(&e.key), uint32(c)<<chunkBits | uint32(j)})
				*e = entry[K]{}
			}
		}
	}
	mask := uint64(len(t.slots) - 1)
	for _, d := range ds {
		want := tag(d.h) | (d.idx + 1)
		for i := d.h & mask; ; i = (i + 1) & mask {
			s := t.slots[i]
			if s == slotEmpty {
				break // not in the index: cannot be
			}
			if s == want {
				t.vacate(i, d.idx)
				break
			}
		}
	}
	return ds[:0], len(ds)
}

// growth is how many octets inserting one more entry would add to the
// table: a chunk when no entry is free, a larger index when it is full.
func (t *table[K]) growth() int {
	n := 0
	if len(t.free) == 0 && (len(t.chunks) == 0 || len(t.chunks[len(t.chunks)-1]) == chunkSize) {
		n += chunkSize * int(unsafe.Sizeof(entry[K]{}))
	}
	if (t.filled+1)*4 > len(t.slots)*3 {
		if m := max(64, 1<<bits.Len(uint(t.used*2))); m > len(t.slots) {
			n += 4 * (m - len(t.slots))
		}
	}
	return n
}

// compact moves the entries in use to as few chunks as hold them, in the
// order they were in, and rebuilds the index to fit: the octets of
// entries forgotten go back. moved is told each entry that moved (its
// state's new place), before the old chunks go.
func (t *table[K]) compact(moved func(old, now *dirState)) {
	old := t.chunks
	t.chunks, t.free, t.bytes = nil, nil, 0
	for _, chunk := range old {
		for j := range chunk {
			e := &chunk[j]
			if e.st.kind == 0 {
				continue
			}
			if len(t.chunks) == 0 || len(t.chunks[len(t.chunks)-1]) == chunkSize {
				t.chunks = append(t.chunks, make([]entry[K], 0, chunkSize))
				t.bytes += chunkSize * int(unsafe.Sizeof(entry[K]{}))
			}
			c := &t.chunks[len(t.chunks)-1]
			*c = append(*c, *e)
			moved(&e.st, &(*c)[len(*c)-1].st)
		}
	}
	t.slots = nil
	t.rehash(max(64, 1<<bits.Len(uint(t.used*2))))
}

// rehash rebuilds the index with n slots (a power of two), dropping the
// deleted ones.
func (t *table[K]) rehash(n int) {
	for n*3 < (t.used+1)*4 {
		n *= 2
	}
	t.bytes += 4 * (n - len(t.slots))
	t.slots = make([]uint32, n)
	t.filled = 0
	mask := uint64(n - 1)
	for c, chunk := range t.chunks {
		for j := range chunk {
			e := &chunk[j]
			if e.st.kind == 0 {
				continue
			}
			idx := uint32(c)<<chunkBits | uint32(j)
			h := t.hash(&e.key)
			for i := h & mask; ; i = (i + 1) & mask {
				if t.slots[i] == slotEmpty {
					t.slots[i] = tag(h) | (idx + 1)
					t.filled++
					break
				}
			}
		}
	}
}

// each calls f for every entry in use; f must not add or remove entries.
func (t *table[K]) each(f func(k *K, st *dirState)) {
	for _, chunk := range t.chunks {
		for j := range chunk {
			if e := &chunk[j]; e.st.kind != 0 {
				f(&e.key, &e.st)
			}
		}
	}
}

// The hashes are fixed (no random seed) so that a run is deterministic.
func hash4(k *key4) uint64 {
	return hash4Words(binary.LittleEndian.Uint64(k[0:8]), binary.LittleEndian.Uint32(k[8:12]))
}

// hash4Words is hash4 of the key whose octets, read little-endian, are a
// (the first eight) and b (the last four).
func hash4Words(a uint64, b uint32) uint64 {
	return mix64(a ^ mix64(uint64(b)^0x9e3779b97f4a7c15))
}

// key4Of is the IPv4 key of f and its hash. Both are worked out a word at
// a time: a key written an octet at a time and then read a word at a time
// (to hash it) makes the processor wait for the stores to land, for every
// segment (18 ns a segment in a profile of 100 000 flows).
func key4Of(f *Flow) (key4, uint64) {
	a := uint64(binary.LittleEndian.Uint32(f.Src[12:16])) | uint64(binary.LittleEndian.Uint32(f.Dst[12:16]))<<32
	b := uint32(bits.ReverseBytes16(f.SrcPort)) | uint32(bits.ReverseBytes16(f.DstPort))<<16
	var k key4
	binary.LittleEndian.PutUint64(k[0:8], a)
	binary.LittleEndian.PutUint32(k[8:12], b)
	return k, hash4Words(a, b)
}

func hash6(k *key6) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range [5]uint64{
		binary.LittleEndian.Uint64(k.src[0:8]), binary.LittleEndian.Uint64(k.src[8:16]),
		binary.LittleEndian.Uint64(k.dst[0:8]), binary.LittleEndian.Uint64(k.dst[8:16]),
		uint64(k.sport)<<16 | uint64(k.dport),
	} {
		h = mix64(h ^ w)
	}
	return h
}

// mix64 is SplitMix64's finaliser.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
