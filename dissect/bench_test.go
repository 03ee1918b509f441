package dissect

import (
	"bytes"
	"os"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// BenchmarkDissect runs the whole pipeline (read, classify, decode,
// reassemble, track, render to nothing) over a 64 MiB workload in memory.
func BenchmarkDissect(b *testing.B) {
	var wl bytes.Buffer
	counts, err := (craft.Workload{Size: 64 << 20, Seed: 1}).Write(&wl)
	if err != nil {
		b.Fatal(err)
	}
	path := b.TempDir() + "/w.pcap"
	if err := os.WriteFile(path, wl.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(wl.Len()))
	for b.Loop() {
		var s countSink
		if _, err := Run(b.Context(), []string{path}, nil, Config{}, &s); err != nil {
			b.Fatal(err)
		}
		if s.messages != counts.Messages() {
			b.Fatalf("%d messages, want %d", s.messages, counts.Messages())
		}
	}
	b.ReportMetric(float64(counts.Frames), "frames/op")
}

type countSink struct {
	NopSink
	messages int
}

func (c *countSink) Message(*record.Message) error { c.messages++; return nil }
