package dissect

import (
	"bytes"
	"os"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
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
				if c.rpc >= 0 && (sum.RPCMessages != c.rpc || len(sum.Findings) != 0) {
					b.Fatalf("%d RPC-over-RDMA messages (want %d), findings %v", sum.RPCMessages, c.rpc, sum.Findings)
				}
			}
		})
	}
}
