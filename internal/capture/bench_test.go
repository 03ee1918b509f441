package capture

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// benchSizes are the captured lengths the benchmark files cycle through:
// mostly small frames, as in connection setup traffic, some full ones.
var benchSizes = []int{60, 66, 98, 130, 256, 342, 590, 1070, 1514, 60, 78, 122}

// benchPcap returns a nanosecond pcap file of about size octets.
func benchPcap(size int) []byte {
	p := newPcap(false, true, 65535, 1)
	p.b = make([]byte, 0, size+2000)
	p.b = append(p.b, newPcap(false, true, 65535, 1).b...)
	for i := 0; len(p.b) < size; i++ {
		n := benchSizes[i%len(benchSizes)]
		p.rec(uint32(1_700_000_000+i/1000), uint32(i%1000*1000), payload(n, i), 0)
	}
	return p.b
}

// benchPcapng returns a pcapng file of about size octets (one interface,
// nanosecond timestamps, no packet options).
func benchPcapng(size int) []byte {
	w := newNg(false).idb(1, 65535, (&ngFile{}).tsresol(9))
	w.b = append(make([]byte, 0, size+2000), w.b...)
	for i := 0; len(w.b) < size; i++ {
		n := benchSizes[i%len(benchSizes)]
		var body []byte
		o := w.o()
		ts := uint64(1_700_000_000_000_000_000 + i*1000)
		body = o.AppendUint32(body, 0)
		body = o.AppendUint32(body, uint32(ts>>32))
		body = o.AppendUint32(body, uint32(ts))
		body = o.AppendUint32(body, uint32(n))
		body = o.AppendUint32(body, uint32(n))
		body = append(body, payload(n, i)...)
		w.block(blockEPB, body)
	}
	return w.b
}

// benchNext measures Next over file, one frame per op; the reader is
// recreated (outside the timer) at the end of the file.
func benchNext(b *testing.B, file []byte, compressed bool) {
	src := file
	if compressed {
		src = gz(b, file, gzip.BestSpeed)
	}
	r, err := NewReader(bytes.NewReader(src), ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	frames, err := readAll(r)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(file) / len(frames)))
	b.ReportAllocs()
	r, _ = NewReader(bytes.NewReader(src), ReaderOptions{})
	b.ResetTimer()
	for range b.N {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				b.Fatal(err)
			}
			b.StopTimer()
			r, _ = NewReader(bytes.NewReader(src), ReaderOptions{})
			b.StartTimer()
		}
	}
}

func BenchmarkNextPcap(b *testing.B)       { benchNext(b, benchPcap(32<<20), false) }
func BenchmarkNextPcapng(b *testing.B)     { benchNext(b, benchPcapng(32<<20), false) }
func BenchmarkNextPcapGzip(b *testing.B)   { benchNext(b, benchPcap(32<<20), true) }
func BenchmarkNextPcapngGzip(b *testing.B) { benchNext(b, benchPcapng(32<<20), true) }
