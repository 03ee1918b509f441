package reassembly

import "testing"

// firstAt, whose entry Ahead hints, is the state a look-up finds when the
// key sits in its first slot, and nil when none does or a key of another
// tag does: with the table three-quarters full at most, most keys sit in
// their first slot. A key of the same 8-bit tag there (1 in 256) makes it
// another key's entry: a hint for nothing.
func TestFirstAt(t *testing.T) {
	tb := newTable(hash4)
	keys := make([]key4, 50000)
	for i := range keys {
		keys[i] = key4{10, 0, byte(i >> 8), byte(i), 192, 0, 2, 1, byte(i), 4, 0x13, 0x89}
		st := tb.insert(&keys[i], hash4(&keys[i]))
		st.kind = kindDecided
	}
	first, other := 0, 0
	for i := range keys {
		h := hash4(&keys[i])
		switch st := tb.firstAt(h); {
		case st == nil:
		case st == tb.find(&keys[i], h):
			first++
		default:
			other++
		}
	}
	if first < len(keys)/2 || other > len(keys)/100 {
		t.Fatalf("of %d keys, %d in their first slot, %d behind another of their tag", len(keys), first, other)
	}
	absent := key4{172, 16, 0, 1}
	if st := tb.firstAt(hash4(&absent)); st != nil && st == tb.find(&absent, hash4(&absent)) {
		t.Fatal("an absent key has an entry")
	}
	if newTable(hash4).firstAt(1) != nil {
		t.Fatal("an empty table has an entry")
	}
}

// Ahead keeps the hash of the direction given, as the look-up of its
// segment will work it out, and drops it for one it cannot hint.
func TestAheadKeepsTheDirection(t *testing.T) {
	a := New(Options{}, nil)
	f := Flow{SrcPort: 1024, DstPort: 5001}
	copy(f.Src[12:], []byte{10, 0, 0, 1})
	copy(f.Dst[12:], []byte{10, 0, 0, 2})
	a.Ahead(&f)
	if _, h := key4Of(&f); !a.aheadOK || a.ahead != h {
		t.Fatalf("ahead %#x (%v), want %#x", a.ahead, a.aheadOK, h)
	}
	f.V6 = true
	if a.Ahead(&f); a.aheadOK {
		t.Fatal("an IPv6 direction kept")
	}
	a.Ahead(&Flow{})
	if a.Ahead(nil); a.aheadOK {
		t.Fatal("nothing shown, a direction kept")
	}
}
