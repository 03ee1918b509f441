package dissect

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// TestBudgetReleased: every holder gives back what it charged to the
// memory budget by the end of the run, whatever the input: the samples,
// and each flood with a budget small enough that every holder is refused
// (so that what they let go for it is released too). A charge never given
// back would shrink the room of every later input of a long run.
func TestBudgetReleased(t *testing.T) {
	dir := t.TempDir()
	samples, _ := filepath.Glob("../pcaps/*.pcap*")
	files := append([]string(nil), samples...)
	for _, kind := range craft.FloodKinds {
		n := 3000
		switch kind {
		case craft.FloodBigRecords:
			n = 2
		case craft.FloodOrphanReplies, craft.FloodLargePD:
			n = 200
		case craft.FloodCombined:
			continue // its parts are here one by one
		}
		var buf bytes.Buffer
		if _, err := craft.Flood(&buf, kind, n); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, kind+".pcap")
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	for _, limit := range []int64{budget.DefaultLimit, 1 << 20} {
		b := budget.New(limit)
		if _, err := Run(context.Background(), files, nil, Config{Budget: b}, NopSink{}); err != nil {
			t.Fatal(err)
		}
		s := b.Stats()
		if s.Used != 0 {
			t.Errorf("limit %d MiB: %d octets still charged after the run (held %v)", limit>>20, s.Used, s.Held)
		}
		if limit == 1<<20 {
			for _, h := range []budget.Holder{budget.TCP, budget.Attempts, budget.Datapath} {
				if s.Refused[h] == 0 {
					t.Errorf("limit 1 MiB: no charge of %v was refused", h)
				}
			}
		}
	}
}
