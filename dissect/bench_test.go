package dissect

import (
	"bytes"
	"os"
	"runtime"
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

// BenchmarkCMPath runs the pipeline over a capture of nothing but
// connection setups, each REQ and REP a new connection (craft's req-reps
// flood, the shape of the slowest case the review measured), into a sink
// that renders nothing, with CM messages built in reusable storage as the
// program builds them: it reports the allocations per frame.
func BenchmarkCMPath(b *testing.B) {
	const pairs = 20000
	var buf bytes.Buffer
	frames, err := craft.Flood(&buf, craft.FloodREQREPs, pairs)
	if err != nil {
		b.Fatal(err)
	}
	path := b.TempDir() + "/reqreps.pcap"
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, reuse := range []bool{true, false} {
		name := "reuse"
		if !reuse {
			name = "new"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(buf.Len()))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				var s countSink
				if _, err := Run(b.Context(), []string{path}, nil, Config{ReuseRecords: reuse}, &s); err != nil {
					b.Fatal(err)
				}
				if s.messages != frames {
					b.Fatalf("%d messages, want %d", s.messages, frames)
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(frames), "frames/op")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(frames), "allocs/frame")
		})
	}
}
