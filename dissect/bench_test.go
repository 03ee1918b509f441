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

// BenchmarkCMPath runs the pipeline over captures of nothing but
// connection messages, into a sink that keeps nothing, the records built
// in reusable storage as the program builds them (reuse) or each new
// (new), and reports the allocations per frame: a CM retry (craft's
// retries flood: one REQ sent again and again) costs none; a connection
// setup (the req-reps flood, each REQ and REP a new connection, the shape
// of the slowest case the review measured) costs one allocation per
// connection, its attempt, which holds its record until the end of the
// input, and nothing per message.
func BenchmarkCMPath(b *testing.B) {
	for _, c := range []struct {
		flood string
		n     int
	}{{craft.FloodRetries, 40000}, {craft.FloodREQREPs, 20000}} {
		var buf bytes.Buffer
		frames, err := craft.Flood(&buf, c.flood, c.n)
		if err != nil {
			b.Fatal(err)
		}
		path := b.TempDir() + "/" + c.flood + ".pcap"
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, reuse := range []bool{true, false} {
			name := c.flood + "/reuse"
			if !reuse {
				name = c.flood + "/new"
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
}
