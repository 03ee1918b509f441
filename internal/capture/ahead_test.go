package capture

import (
	"bytes"
	"testing"
)

// Ahead shows the records after the one handed out last, as Next then
// hands them out, in either byte order; it shows nothing past the end, of
// a pcapng file, or for i below 1, and never moves the reader.
func TestAhead(t *testing.T) {
	for _, be := range []bool{false, true} {
		p := newPcap(be, false, 65535, 1)
		var want [][]byte
		for i := range 6 {
			d := payload(60+i*37, i)
			want = append(want, d)
			p.rec(1, uint32(i), d, 0)
		}
		r, err := NewReader(bytes.NewReader(p.b), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for n := range want {
			f, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f.Data, want[n]) {
				t.Fatalf("be %v: record %d: %x", be, n, f.Data)
			}
			for i := 1; i <= 3; i++ {
				got := r.Ahead(i)
				if n+i >= len(want) {
					if got != nil {
						t.Errorf("be %v: after record %d, %d ahead: %x past the end", be, n, i, got)
					}
					continue
				}
				if !bytes.Equal(got, want[n+i]) {
					t.Errorf("be %v: after record %d, %d ahead: %x, want %x", be, n, i, got, want[n+i])
				}
			}
			if r.Ahead(0) != nil {
				t.Error("Ahead(0) shows a record")
			}
		}
	}
	ng := newNg(false).shb(1, 0).idb(1, 0).epb(0, 0, payload(80, 1), 0).epb(0, 0, payload(80, 2), 0)
	r, err := NewReader(bytes.NewReader(ng.b), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if r.Ahead(1) != nil {
		t.Error("a pcapng record shown")
	}
}
