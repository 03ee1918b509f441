package decode

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// TestTCPCost: what TCP reassembly is charged for the directions it holds
// is close to what they take on the heap (the memory bound rests on it):
// directions followed while they look for an MPA key or collect a frame
// (half-mpa: a SYN and the first 30 octets of a Request each), and
// ordinary directions decided not MPA, which only the flow tables remember
// (tcp-streams); iWARP connections whose FPDUs are followed, each with a
// Send in progress (iwarp-conns, the FPDU followers of both directions).
func TestTCPCost(t *testing.T) {
	for _, tc := range []struct {
		kind string
		n    int
	}{{craft.FloodHalfMPA, 20000}, {craft.FloodTCPStreams, 100000}, {craft.FloodIWARPConns, 4000}} {
		var buf bytes.Buffer
		if _, err := craft.Flood(&buf, tc.kind, tc.n); err != nil {
			t.Fatal(err)
		}
		rd, err := capture.NewReader(bytes.NewReader(buf.Bytes()), capture.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b := budget.New(1 << 30)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d := New("cost", Config{Datapath: tc.kind == craft.FloodIWARPConns, TCP: reassembly.Options{Budget: b, Flows: 2 * tc.n, EarlyFlows: 2 * tc.n, TotalBytes: 1 << 30}})
		for {
			f, err := rd.Next()
			if err != nil {
				break
			}
			d.Decode(f)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		charged := float64(b.Stats().Held[budget.TCP])
		t.Logf("%s %d: %.1f MB of heap, %.1f MB charged (%d followed, %d remembered)", tc.kind, tc.n, heap/(1<<20), charged/(1<<20),
			d.TCPStats().Followed, d.TCPStats().Remembered)
		if charged < 0.8*heap || charged > 2*heap {
			t.Errorf("%s: %.1f MB charged for %.1f MB on the heap", tc.kind, charged/(1<<20), heap/(1<<20))
		}
		runtime.KeepAlive(d)
		rd.Close()
	}
}
