package dissect_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// TestWorkload is the performance workload at a small size: every message
// the generator put in is found, once, with the values it was given, and
// every connection is established. docs/performance.sh checks the same at
// 1 GiB.
func TestWorkload(t *testing.T) {
	var buf bytes.Buffer
	counts, err := (craft.Workload{Size: 12 << 20, Seed: 3}).Write(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if counts.CMExchange < 4 || counts.MPAConns < 2 || counts.Frames < 10000 {
		t.Fatalf("workload too small: %v", counts)
	}
	// The mix: about 60 % RoCEv2 data, 30 % TCP bulk, 10 % small UDP.
	bulk := counts.RoCEData + counts.TCPBulk + counts.SmallUDP
	for name, share := range map[string]float64{
		"RoCEv2 data": float64(counts.RoCEData) / float64(bulk),
		"TCP bulk":    float64(counts.TCPBulk) / float64(bulk),
		"small UDP":   float64(counts.SmallUDP) / float64(bulk),
	} {
		want := map[string]float64{"RoCEv2 data": 0.6, "TCP bulk": 0.3, "small UDP": 0.1}[name]
		if share < want-0.03 || share > want+0.03 {
			t.Errorf("%s: %.3f of the frames, want about %.1f", name, share, want)
		}
	}
	path := filepath.Join(t.TempDir(), "workload.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var c collect
	sum, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{}, &c)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for _, m := range c.msgs {
		byName[m.Name()]++
		if m.Transport != record.IWARP && (m.IB.ICRC == nil || !m.IB.ICRC.Valid) {
			t.Errorf("frame %d: ICRC %+v", m.Frame, m.IB.ICRC)
		}
		if m.Name() != "RTU" && m.RPCRDMA == nil {
			t.Errorf("frame %d %s: no RFC 8797 message", m.Frame, m.Name())
		}
	}
	want := map[string]int{"REQ": counts.CMExchange, "REP": counts.CMExchange, "RTU": counts.CMExchange,
		"MPA_REQ": counts.MPAConns, "MPA_REP": counts.MPAConns}
	for n, w := range want {
		if byName[n] != w {
			t.Errorf("%s: %d, want %d", n, byName[n], w)
		}
	}
	if sum.Frames != counts.Frames || sum.Messages != counts.Messages() ||
		sum.Connections[record.Established] != counts.Connections() || len(c.conns) != counts.Connections() {
		t.Errorf("summary: %d frames, %d messages, %v connections; workload %v", sum.Frames, sum.Messages, sum.Connections, counts)
	}
	if sum.StateDrops != 0 || sum.DecodeErrors != 0 {
		t.Errorf("drops %d, errors %d", sum.StateDrops, sum.DecodeErrors)
	}
}

// TestWorkloadReproducible: the same seed writes the same octets.
func TestWorkloadReproducible(t *testing.T) {
	var a, b, c bytes.Buffer
	if _, err := (craft.Workload{Size: 1 << 20, Seed: 9}).Write(&a); err != nil {
		t.Fatal(err)
	}
	(craft.Workload{Size: 1 << 20, Seed: 9}).Write(&b)
	(craft.Workload{Size: 1 << 20, Seed: 10}).Write(&c)
	if !bytes.Equal(a.Bytes(), b.Bytes()) || bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Error("the workload does not depend on the seed alone")
	}
}
