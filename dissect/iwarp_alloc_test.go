package dissect

import (
	"bytes"
	"os"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// TestIWARPDatapathAllocsPerFrame: over the iWARP NFS workload (READs
// whose data the responder writes into write chunks, in tagged segments
// the framer hands on in pieces), the whole pipeline allocates per
// connection, never per frame: a workload four times as long (the same
// connections) allocates no more than a few percent more.
func TestIWARPDatapathAllocsPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 80 MiB of workload")
	}
	dir := t.TempDir()
	allocs := func(size int) (float64, int) {
		var buf bytes.Buffer
		counts, err := (craft.IWARPWorkload{Size: int64(size), Seed: 1, Conns: 16}).Write(&buf)
		if err != nil {
			t.Fatal(err)
		}
		path := dir + "/w.pcap"
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		n := testing.AllocsPerRun(2, func() {
			var s countSink
			if _, err := Run(t.Context(), []string{path}, nil, Config{Datapath: datapath.ModeFindings}, &s); err != nil {
				t.Fatal(err)
			}
		})
		return n, counts.Frames
	}
	small, smallFrames := allocs(16 << 20)
	large, largeFrames := allocs(64 << 20)
	t.Logf("%d frames: %.0f allocations; %d frames: %.0f", smallFrames, small, largeFrames, large)
	if perFrame := (large - small) / float64(largeFrames-smallFrames); perFrame > 0.005 {
		t.Errorf("%.3f allocations per frame", perFrame)
	}
}
