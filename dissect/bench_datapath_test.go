package dissect

import (
	"bytes"
	"os"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// BenchmarkDissectDatapath runs the whole pipeline over 64 MiB workloads
// to see what the data path costs: the mixed workload of BenchmarkDissect
// with the data path off (its RC frames skipped by the classifier, as
// before the data path), and the NFS/RDMA-like workload with it on (every
// RC frame of a connection followed, every RPC-over-RDMA header checked)
// and off.
func BenchmarkDissectDatapath(b *testing.B) {
	dir := b.TempDir()
	var mixed, nfs bytes.Buffer
	if _, err := (craft.Workload{Size: 64 << 20, Seed: 1}).Write(&mixed); err != nil {
		b.Fatal(err)
	}
	counts, err := (craft.NFSWorkload{Size: 64 << 20, Seed: 1}).Write(&nfs)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		mode datapath.Mode
		rpc  int // the RPC-over-RDMA messages to find; -1: not counted
	}{
		{"mixed/off", mixed.Bytes(), datapath.ModeOff, -1},
		{"nfs/findings", nfs.Bytes(), datapath.ModeFindings, counts.RPCMessages},
		{"nfs/off", nfs.Bytes(), datapath.ModeOff, -1},
	} {
		path := dir + "/" + c.name[:3] + ".pcap"
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				var s countSink
				sum, err := Run(b.Context(), []string{path}, nil, Config{Datapath: c.mode}, &s)
				if err != nil {
					b.Fatal(err)
				}
				// The workload's Long Calls and Long Replies give the
				// threshold advice, and nothing else.
				others := len(sum.Findings)
				if _, ok := sum.Findings[finding.InlineThresholdTooSmall]; ok {
					others--
				}
				if c.rpc >= 0 && (sum.RPCMessages != c.rpc || others != 0) {
					b.Fatalf("%d RPC-over-RDMA messages (want %d), findings %v", sum.RPCMessages, c.rpc, sum.Findings)
				}
			}
		})
	}
}

// TestDatapathAllocsPerFrame: the whole pipeline over the NFS/RDMA-like
// workload, with real RPC content, Long Replies and write chunks,
// allocates per connection, never per frame: a workload four times as long
// (four times the frames, the same connections) allocates no more than a
// few percent more.
func TestDatapathAllocsPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 320 MiB of workload")
	}
	dir := t.TempDir()
	allocs := func(size int) (float64, int) {
		var buf bytes.Buffer
		counts, err := (craft.NFSWorkload{Size: int64(size), Seed: 1}).Write(&buf)
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
	small, smallFrames := allocs(64 << 20)
	large, largeFrames := allocs(256 << 20)
	t.Logf("%d frames: %.0f allocations; %d frames: %.0f", smallFrames, small, largeFrames, large)
	// The longer run meets more of the workload's variety once per
	// connection (NFSv4 operations first seen, procedures named in the
	// inline-threshold-too-small finding's list): a few hundred
	// allocations, not one a frame.
	if perFrame := (large - small) / float64(largeFrames-smallFrames); perFrame > 0.01 {
		t.Errorf("%.3f allocations per frame", perFrame)
	}
}

// BenchmarkDissectIWARP runs the whole pipeline over a 64 MiB iWARP
// workload of 512 connections (`craft --workload 64MiB --iwarp-conns 512`),
// with CRC on every connection and on none. Run it with -cpu 1,2: at one
// core the read-ahead, the FPDU CRC checks (dissect/mpa/crc.go) and the
// framing take turns; at two they overlap (docs/performance.md).
func BenchmarkDissectIWARP(b *testing.B) {
	dir := b.TempDir()
	for _, c := range []struct {
		name string
		crc  int
	}{{"crc", 1}, {"nocrc", -1}} {
		var buf bytes.Buffer
		counts, err := (craft.IWARPWorkload{Size: 64 << 20, Seed: 1, Conns: 512, CRCEvery: c.crc}).Write(&buf)
		if err != nil {
			b.Fatal(err)
		}
		path := dir + "/" + c.name + ".pcap"
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				var s countSink
				sum, err := Run(b.Context(), []string{path}, nil, Config{}, &s)
				if err != nil {
					b.Fatal(err)
				}
				if want := counts.Calls + counts.Replies; sum.RPCMessages != want || len(sum.Findings) != 0 {
					b.Fatalf("%d RPC-over-RDMA messages (want %d), findings %v", sum.RPCMessages, want, sum.Findings)
				}
			}
		})
	}
}
