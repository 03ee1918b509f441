package reassembly

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The flow table against a map: random inserts, finds and removes, with
// keys that collide in the index, agree with it exactly, whatever the
// rehashes and deleted slots.
func TestTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// A poor hash puts many keys in few slots: probing and deletion are
	// exercised hard.
	tb := newTable(func(k *key4) uint64 { return uint64(k[0] % 7) })
	want := map[key4]uint32{}
	for i := range 200000 {
		var k key4
		k[0] = byte(rng.IntN(64))
		k[1] = byte(rng.IntN(64))
		h := tb.hash(&k)
		switch rng.IntN(3) {
		case 0:
			if _, ok := want[k]; !ok {
				st := tb.insert(&k, h)
				st.kind, st.lo = kindDecided, uint32(i)
				want[k] = uint32(i)
			}
		case 1:
			tb.remove(&k, h)
			delete(want, k)
		}
		st := tb.find(&k, h)
		if w, ok := want[k]; ok != (st != nil) || ok && st.lo != w {
			t.Fatalf("step %d: key %v: found %v, want %v", i, k, st != nil, ok)
		}
	}
	if tb.used != len(want) {
		t.Fatalf("%d entries, want %d", tb.used, len(want))
	}
	n := 0
	tb.each(func(k *key4, st *dirState) {
		if want[*k] != st.lo {
			t.Fatalf("entry %v", *k)
		}
		n++
	})
	if n != len(want) {
		t.Fatalf("each saw %d of %d", n, len(want))
	}
}

// The flow hashes are fixed (no random seed): the same capture gives the
// same table, so a run is deterministic. The values are pinned.
func TestHashDeterministic(t *testing.T) {
	k := key4{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	var k6 key6
	k6.sport = 1
	if h4, h6 := hash4(&k), hash6(&k6); h4 != 0xc4ad378d3b66624 || h6 != 0xfca085b803cda59b {
		t.Fatalf("hashes %#x %#x", h4, h6)
	}
}

// key4Of builds the key a word at a time: the same octets as the addresses
// and ports on the wire, and the hash of that key.
func TestKey4Of(t *testing.T) {
	var f Flow
	copy(f.Src[12:], []byte{192, 0, 2, 1})
	copy(f.Dst[12:], []byte{198, 51, 100, 7})
	f.SrcPort, f.DstPort = 0x1234, 20049
	k, h := key4Of(&f)
	if want := (key4{192, 0, 2, 1, 198, 51, 100, 7, 0x12, 0x34, 0x4e, 0x51}); k != want {
		t.Fatalf("key % x, want % x", k, want)
	}
	if h != hash4(&k) {
		t.Fatalf("hash %#x, want %#x", h, hash4(&k))
	}
}

// Entries never move: a pointer to one stays valid while the table grows.
func TestTableEntriesStay(t *testing.T) {
	tb := newTable(hash4)
	first := key4{9}
	st := tb.insert(&first, hash4(&first))
	st.kind, st.lo = kindDecided, 42
	for i := range 100000 {
		k := key4{byte(i), byte(i >> 8), byte(i >> 16), 1}
		tb.insert(&k, hash4(&k)).kind = kindDecided
	}
	if got := tb.find(&first, hash4(&first)); got != st || got.lo != 42 {
		t.Fatal("the entry moved")
	}
}

// dropSeenBelow leaves the table exactly as removing the same entries one
// by one, in entry order, would: the same slots (empty or deleted), free
// list and counts, so that what follows (rehashes, the entries new
// directions take) does not depend on which way they went.
func TestDropSeenBelowAsRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	poor := func(k *key4) uint64 { return uint64(k[0]%13) * 0x9e3779b97f4a7c15 }
	for _, hash := range []func(*key4) uint64{poor, hash4} {
		a, b := newTable(hash), newTable(hash)
		for i := range 5000 {
			k := key4{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(i), byte(i >> 8)}
			if a.find(&k, hash(&k)) != nil {
				continue
			}
			seen, kind := uint32(rng.IntN(1000)), uint8(kindDecided)
			if rng.IntN(10) == 0 {
				kind = kindFollowed
			}
			for _, tb := range []*table[key4]{a, b} {
				st := tb.insert(&k, hash(&k))
				st.kind, st.seen = kind, seen
			}
			if rng.IntN(7) == 0 { // some deleted slots before
				a.remove(&k, hash(&k))
				b.remove(&k, hash(&k))
			}
		}
		var keys []key4
		a.each(func(k *key4, st *dirState) {
			if st.kind != kindFollowed && st.seen < 300 {
				keys = append(keys, *k)
			}
		})
		for i := range keys {
			a.remove(&keys[i], hash(&keys[i]))
		}
		_, n := b.dropSeenBelow(300, nil)
		if n != len(keys) || n == 0 {
			t.Fatalf("dropped %d, removed %d", n, len(keys))
		}
		if a.used != b.used || a.filled != b.filled || !slices.Equal(a.slots, b.slots) || !slices.Equal(a.free, b.free) {
			t.Fatalf("after dropping: used %d/%d filled %d/%d, slots equal %v, free equal %v",
				a.used, b.used, a.filled, b.filled, slices.Equal(a.slots, b.slots), slices.Equal(a.free, b.free))
		}
		for c := range a.chunks {
			if !slices.Equal(a.chunks[c], b.chunks[c]) {
				t.Fatalf("chunk %d differs", c)
			}
		}
	}
}
