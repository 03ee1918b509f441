package dissect_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// pipelineInputs are captures whose data path the worker follows: an NFS
// workload over RoCEv2 (reconnecting, so connections end and begin among
// the data), the same with a memory budget far too small for it (so that
// the budget refuses, and the run makes room, all the way), a flood of RC
// connections under a small budget, the mixed workload, and the NFS
// workload's frames taken in turn with those of thousands of TCP flows
// captured mid-stream, under a small budget: the run loop's holders (TCP
// reassembly) and the data path's then fill it between the same two
// connection messages, while the worker runs behind.
func pipelineInputs(t *testing.T) map[string]pipelineInput {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, fn func(*bytes.Buffer) error) string {
		var buf bytes.Buffer
		if err := fn(&buf); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nfs := write("nfs.pcap", func(b *bytes.Buffer) error {
		_, err := (craft.NFSWorkload{Size: 6 << 20, Seed: 9, Connections: 8, ReconnectEvery: 300}).Write(b)
		return err
	})
	mixed := write("mixed.pcap", func(b *bytes.Buffer) error {
		_, err := (craft.Workload{Size: 4 << 20, Seed: 4}).Write(b)
		return err
	})
	var nfsOctets, flowOctets bytes.Buffer
	if _, err := (craft.NFSWorkload{Size: 6 << 20, Seed: 10, Connections: 8}).Write(&nfsOctets); err != nil {
		t.Fatal(err)
	}
	if _, err := (craft.Workload{Size: 6 << 20, Seed: 6, TCPFlows: 3000, TCPSegment: 300}).Write(&flowOctets); err != nil {
		t.Fatal(err)
	}
	flows := write("nfs-flows.pcap", func(b *bytes.Buffer) error {
		b.Write(interleave(nfsOctets.Bytes(), flowOctets.Bytes()))
		return nil
	})
	conns := write("rc-conns.pcap", func(b *bytes.Buffer) error {
		_, err := craft.Flood(b, craft.FloodRCConns, 3000)
		return err
	})
	return map[string]pipelineInput{"nfs": {nfs, 0}, "mixed": {mixed, 0}, "rc-conns": {conns, 0},
		"nfs/small-budget": {nfs, 64 << 10}, "rc-conns/small-budget": {conns, 64 << 10}, "nfs-flows/small-budget": {flows, 1 << 20}}
}

// pipelineInput is a capture, and the memory budget to dissect it with
// (0: the default).
type pipelineInput struct {
	path  string
	limit int64
}

// dissectJSON dissects the input at GOMAXPROCS procs, with the data
// path's worker or without, with every rpc record, and returns the JSON
// lines.
func dissectJSON(t *testing.T, in pipelineInput, procs int, worker bool) []byte {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	defer dissect.SetWorker(dissect.SetWorker(worker))
	var out bytes.Buffer
	r, err := output.New(&out, output.Options{Format: output.JSON})
	if err != nil {
		t.Fatal(err)
	}
	cfg := dissect.Config{Datapath: datapath.ModeAll}
	if in.limit > 0 {
		cfg.Budget = budget.New(in.limit)
	}
	if _, err := dissect.Run(context.Background(), []string{in.path}, nil, cfg, r); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestPipelineSameOutput: the data path following RC frames on a worker
// of its own gives the same output byte for byte at GOMAXPROCS 1, 2 and 8,
// the memory budget's decisions with it; so does the run loop alone; and
// the two are the same too while the budget has room.
func TestPipelineSameOutput(t *testing.T) {
	for name, in := range pipelineInputs(t) {
		t.Run(name, func(t *testing.T) {
			alone, worker := dissectJSON(t, in, 1, false), dissectJSON(t, in, 1, true)
			if in.limit > 0 && !bytes.Contains(alone, []byte("state-limit-reached")) {
				t.Fatalf("a budget of %d KiB did not fill", in.limit>>10)
			}
			if in.limit == 0 && !bytes.Equal(worker, alone) {
				t.Errorf("with the worker: %s", firstDiff(worker, alone))
			}
			for _, procs := range []int{2, 8} {
				if got := dissectJSON(t, in, procs, false); !bytes.Equal(got, alone) {
					t.Errorf("GOMAXPROCS=%d, alone: %s", procs, firstDiff(got, alone))
				}
				if got := dissectJSON(t, in, procs, true); !bytes.Equal(got, worker) {
					t.Errorf("GOMAXPROCS=%d, with the worker: %s", procs, firstDiff(got, worker))
				}
			}
		})
	}
}

// TestPipelineTiming runs the worker with random pauses before its frames,
// so that the run loop is now far ahead, now waiting for it, and requires
// the output of a run with the worker at GOMAXPROCS=1 every time. (Were the
// budget's decisions made on what the other goroutine holds at the
// moment, rather than on the views, the TCP flows among the NFS traffic
// would give a different output in nearly every run.)
func TestPipelineTiming(t *testing.T) {
	inputs := pipelineInputs(t)
	rng := rand.New(rand.NewPCG(1, 2))
	dissect.SetWorkerPause(func() {
		switch n := rng.IntN(512); {
		case n == 0:
			time.Sleep(50 * time.Microsecond)
		case n < 8:
			runtime.Gosched()
		}
	})
	defer dissect.SetWorkerPause(nil)
	for _, name := range []string{"nfs", "nfs/small-budget", "rc-conns/small-budget", "nfs-flows/small-budget"} {
		want := dissectJSON(t, inputs[name], 1, true)
		for i := range 3 {
			if got := dissectJSON(t, inputs[name], 8, true); !bytes.Equal(got, want) {
				t.Errorf("%s, run %d: %s", name, i+1, firstDiff(got, want))
			}
		}
	}
}

// interleave takes the records of two pcap files (of the same link type
// and time resolution) in turn, one from each, into one file.
func interleave(a, b []byte) []byte {
	out := append([]byte(nil), a[:24]...)
	pa, pb := 24, 24
	next := func(b []byte, p *int) bool {
		if *p+16 > len(b) {
			return false
		}
		n := 16 + int(binary.LittleEndian.Uint32(b[*p+8:]))
		out = append(out, b[*p:*p+n]...)
		*p += n
		return true
	}
	for {
		okA, okB := next(a, &pa), next(b, &pb)
		if !okA && !okB {
			return out
		}
	}
}

// firstDiff says where two outputs part.
func firstDiff(got, want []byte) string {
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			return fmt.Sprintf("line %d:\n got: %.400s\nwant: %.400s", i+1, g, w)
		}
	}
	return "no difference"
}
