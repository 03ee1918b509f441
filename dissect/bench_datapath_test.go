package dissect

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
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
// with CRC on every connection and on none, and the floors under the run
// with CRC (benchFloor). Run it with -cpu 1,2: at one core the read-ahead,
// the FPDU CRCs and the framing take turns; at two they overlap
// (docs/performance.md).
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
		if c.crc > 0 {
			benchFloor(b, path, int64(buf.Len()), counts.Frames)
		}
	}
}

// benchFloor measures the floor under BenchmarkDissectIWARP/crc: the work
// no design of the run can leave out, done the way the run does it.
//   - floor-read: the capture reader reads the file ahead on a goroutine of
//     its own and hands out every frame, which is touched and nothing more.
//   - floor-crc: the same, and the read-ahead computes the CRC32c of every
//     FPDU that lies whole in a segment (decode.FPDUSums), as the run does
//     once CRCs are in use.
//
// What a run does beyond floor-crc (classifying, reassembling, framing and
// following the traffic) is the work a sharded design would spread over
// cores; on two cores, floor-crc already keeps the second one busy
// (docs/performance.md, "What two cores allow").
func benchFloor(b *testing.B, path string, size int64, frames int) {
	for _, c := range []struct {
		name   string
		summer capture.Summer
	}{{"floor-read", nil}, {"floor-crc", decode.FPDUSums}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(size)
			for b.Loop() {
				n, sums := readFloor(b, path, c.summer)
				if n != frames || (c.summer != nil) != (sums > frames/2) {
					b.Fatalf("%d frames (want %d), %d sums", n, frames, sums)
				}
			}
		})
	}
}

// readFloor reads a capture file as benchFloor says: the frames read, and
// the sums they came with.
func readFloor(b *testing.B, path string, summer capture.Summer) (frames, sums int) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r, err := capture.NewReader(f, capture.ReaderOptions{Readahead: true, Summer: summer})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var touched byte
	for {
		fr, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		frames++
		sums += len(fr.Sums)
		touched ^= fr.Data[len(fr.Data)-1]
	}
	runtime.KeepAlive(touched)
	return frames, sums
}
