package capture

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"
	"testing"
)

// testSummer sums what a record holds in a way that depends on every
// octet and on the link type: a CRC of all but its first and last
// octets, its first octet, and for records of even length up to a dozen
// more (the reader keeps maxRecordSums of them).
func testSummer(link uint16, data []byte, out []Sum) []Sum {
	if len(data) < 2 {
		return out
	}
	out = append(out, Sum{At: 1, N: int32(len(data) - 2), Value: crc32.ChecksumIEEE(data[1:len(data)-1]) ^ uint32(link)})
	out = append(out, Sum{At: 0, N: 1, Value: uint32(data[0])})
	if len(data)%2 == 0 {
		for i := range 12 {
			out = append(out, Sum{At: int32(i), N: 0, Value: uint32(i)})
		}
	}
	return out
}

// TestSums reads capture files with a Summer: every frame that carries
// sums carries exactly those of its own octets and link type (at most
// maxRecordSums), with or without read-ahead's tiny chunks (TestMain):
// pcap in both byte orders, and pcapng with two sections of either byte
// order, interfaces of two link types, and blocks other than packets
// between them. Records that lie whole in a chunk carry them. Without
// read-ahead nothing is summed, nor are pcapng's Simple Packet Blocks.
func TestSums(t *testing.T) {
	type rec struct {
		data []byte
		link uint16
	}
	size := func(i int) int {
		if i%3 == 0 {
			return 20 + i%40 // small ones fit the test's tiny chunks too
		}
		return 20 + (i*97)%1500
	}
	files := map[string]func() ([]byte, []rec){}
	for _, be := range []bool{false, true} {
		files[fmt.Sprintf("pcap, big-endian %v", be)] = func() ([]byte, []rec) {
			p := newPcap(be, true, 65535, 1)
			var want []rec
			for i := range 3000 {
				d := payload(size(i), i)
				want = append(want, rec{d, 1})
				p.rec(1, uint32(i), d, 0)
			}
			return p.b, want
		}
	}
	files["pcapng"] = func() ([]byte, []rec) {
		ng := newNg(false).idb(1, 0).idb(113, 0)
		var want []rec
		for i := range 3000 {
			if i == 1500 { // a section in the other byte order
				ng.be = true
				ng.shb(1, 0).idb(113, 0).idb(1, 0).idb(276, 0)
			}
			if i%50 == 7 {
				ng.block(0x0bad, payload(30, i)) // a block the reader skips
			}
			id, link := uint32(i%2), uint16(1)
			if i%2 == 1 {
				link = 113
			}
			if i >= 1500 {
				id = uint32(1 - i%2)
			}
			d := payload(size(i), i)
			ng.epb(id, uint64(i), d, 0)
			want = append(want, rec{d, link})
		}
		return ng.b, want
	}
	for name, file := range files {
		b, want := file()
		r, err := NewReader(bytes.NewReader(b), ReaderOptions{Readahead: true, Summer: testSummer})
		if err != nil {
			t.Fatal(err)
		}
		summed := 0
		for i, w := range want {
			f, err := r.Next()
			if err != nil {
				t.Fatalf("%s: record %d: %v", name, i, err)
			}
			if !bytes.Equal(f.Data, w.data) || f.LinkType != w.link {
				t.Fatalf("%s: record %d: link %d, %x", name, i, f.LinkType, f.Data)
			}
			if f.Sums == nil {
				continue
			}
			summed++
			exp := testSummer(w.link, w.data, nil)
			exp = exp[:min(len(exp), maxRecordSums)]
			if len(f.Sums) != len(exp) {
				t.Fatalf("%s: record %d: %d sums, want %d", name, i, len(f.Sums), len(exp))
			}
			for j := range exp {
				if f.Sums[j] != exp[j] {
					t.Fatalf("%s: record %d: sum %d is %+v, want %+v", name, i, j, f.Sums[j], exp[j])
				}
			}
		}
		if _, err := r.Next(); err == nil {
			t.Fatalf("%s: a record past the end", name)
		}
		r.Close()
		// With chunks of 64 KiB and more, all but the records cut by a
		// chunk's end and those in the reader's first buffer, read before
		// the read-ahead began (64 KiB), are summed; with the tiny chunks,
		// some small ones.
		least := len(want) * 9 / 10
		if testReadahead.on {
			least = 10
		}
		if summed < least {
			t.Errorf("%s: %d of %d records summed, want %d at least", name, summed, len(want), least)
		}
	}

	p := newPcap(false, false, 65535, 1)
	for i := range 10 {
		p.rec(1, 0, payload(100, i), 0)
	}
	if !testReadahead.on {
		r, _ := NewReader(bytes.NewReader(p.b), ReaderOptions{Summer: testSummer})
		for {
			f, err := r.Next()
			if err != nil {
				break
			}
			if f.Sums != nil {
				t.Fatal("sums without read-ahead")
			}
		}
	}
	ng := newNg(false).idb(1, 0)
	for i := range 3000 {
		ng.epb(0, 0, payload(80, i), 0).spb(80, payload(80, i))
	}
	r, err := NewReader(bytes.NewReader(ng.b), ReaderOptions{Readahead: true, Summer: testSummer})
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		if f.Sums != nil && f.Index%2 == 0 {
			t.Fatal("a Simple Packet Block summed")
		}
	}
}

// TestSumsDamage: a record whose length the read-ahead cannot follow
// stops the sums there, and the parser reports the damage after handing
// out the records before it, their sums right.
func TestSumsDamage(t *testing.T) {
	p := newPcap(false, false, 65535, 1)
	for i := range 50 {
		p.rec(1, 0, payload(30+i, i), 0)
	}
	p.recHeader(1, 0, 1<<30, 1<<30).raw(payload(100, 1))
	for i := range 50 {
		p.rec(1, 0, payload(30+i, i), 0)
	}
	r, err := NewReader(bytes.NewReader(p.b), ReaderOptions{Readahead: true, Summer: testSummer})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		f, err := r.Next()
		if err != nil {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("after %d records: %v", n, err)
			}
			break
		}
		n++
		if f.Sums != nil && f.Sums[1].Value != uint32(f.Data[0]) {
			t.Fatalf("record %d: %+v", n, f.Sums)
		}
	}
	if n != 50 {
		t.Fatalf("%d records before the damage, want 50", n)
	}
	r.Close()
}

// TestSumsWanted: while SumsWanted says no, the read-ahead follows the
// records without summing them; once it says yes, the chunks read after
// carry sums, each its own frame's.
func TestSumsWanted(t *testing.T) {
	p := newPcap(false, false, 65535, 1)
	for i := range 3000 {
		p.rec(1, 0, payload(20+(i*97)%1500, i), 0)
	}
	for _, flip := range []int{-1, 500} {
		var on atomic.Bool
		r, err := NewReader(bytes.NewReader(p.b), ReaderOptions{Readahead: true, Summer: testSummer, SumsWanted: on.Load})
		if err != nil {
			t.Fatal(err)
		}
		summed := 0
		for i := 0; ; i++ {
			if i == flip {
				on.Store(true)
			}
			f, err := r.Next()
			if err != nil {
				break
			}
			if f.Sums == nil {
				continue
			}
			summed++
			if exp := testSummer(1, f.Data, nil); !slices.Equal(f.Sums, exp[:min(len(exp), maxRecordSums)]) {
				t.Fatalf("flip %d: frame %d: %+v", flip, f.Index, f.Sums)
			}
		}
		r.Close()
		switch {
		case flip < 0 && summed > 0:
			t.Errorf("%d frames summed, never wanted", summed)
		case flip > 0 && summed == 0 && !testReadahead.on:
			t.Error("nothing summed once wanted")
		}
	}
}
