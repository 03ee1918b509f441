package ipfrag

import (
	"testing"
)

// What Add checks of each fragment before it keeps it: the fragment's own
// extent (RFC 791, section 3.2, and RFC 8200, section 4.5: offsets count
// 8-octet units, so every fragment but the last carries a multiple of 8
// octets, and the fragmentable part is at most 65535 octets), and its end
// against the datagram's once the last fragment (More Fragments clear) has
// told it.
func TestFragmentExtent(t *testing.T) {
	d := seq(65536)
	type fr struct {
		off  int
		more bool
		n    int // octets on the wire
	}
	for _, tc := range []struct {
		name      string
		frags     []fr
		malformed int  // datagrams given up as malformed
		complete  bool // the last fragment completes the datagram
	}{
		{"one whole datagram", []fr{{0, false, 100}}, 0, true},
		{"the largest datagram", []fr{{0, true, 65528}, {65528, false, 7}}, 0, true},
		{"one octet more", []fr{{0, true, 65528}, {65528, false, 8}}, 1, false},
		{"a negative offset", []fr{{-8, true, 8}}, 1, false},
		{"a negative length", []fr{{0, true, -8}}, 1, false},
		{"a fragment before the last of 12 octets", []fr{{0, true, 12}}, 1, false},
		{"a last fragment of 12 octets", []fr{{8, false, 12}, {0, true, 8}}, 0, true},
		{"two last fragments that agree", []fr{{8, false, 8}, {8, false, 8}, {0, true, 8}}, 0, true},
		{"two last fragments that disagree", []fr{{8, false, 8}, {16, false, 8}}, 1, false},
		{"a last fragment before octets that arrived", []fr{{16, true, 8}, {0, false, 8}}, 1, false},
		{"a fragment past the end the last one gave", []fr{{8, false, 8}, {16, true, 8}}, 1, false},
		{"a fragment within it", []fr{{8, false, 8}, {0, true, 8}}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Options{})
			var ok bool
			end := 0 // the datagram's, when whole
			for i, f := range tc.frags {
				end = max(end, f.off+f.n)
				data := d[max(f.off, 0):][:max(f.n, 0)]
				fg := frag(1, f.off, f.more, data, i+1)
				fg.WireLen = f.n
				var dg *Datagram
				dg, ok = r.Add(fg)
				if ok && (len(dg.Payload) != end || dg.WireLen != end || string(dg.Payload) != string(d[:end])) {
					t.Errorf("datagram of %d octets (wire %d), want %d", len(dg.Payload), dg.WireLen, end)
				}
			}
			s := r.Stats()
			if s.Malformed != tc.malformed || ok != tc.complete || s.Reassembled != map[bool]int{true: 1}[tc.complete] {
				t.Errorf("%d malformed, complete %v, %+v", s.Malformed, ok, s)
			}
			if r.Pending() != 0 && (tc.complete || tc.malformed > 0) {
				t.Errorf("%d datagrams still pending", r.Pending())
			}
		})
	}
}
