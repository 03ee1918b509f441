package capture

import (
	"slices"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// TestFrameRuns: frames added in any order become sorted, disjoint runs,
// joined where they touch; has answers forward and backward lookups.
func TestFrameRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  []int
		want []frameRun
	}{
		{"in order", []int{1, 2, 3, 7, 8}, []frameRun{{1, 3}, {7, 8}}},
		{"again", []int{5, 5, 5}, []frameRun{{5, 5}}},
		{"before", []int{10, 4, 2}, []frameRun{{2, 2}, {4, 4}, {10, 10}}},
		{"joins two", []int{1, 3, 2}, []frameRun{{1, 3}}},
		{"extends down", []int{5, 4, 3}, []frameRun{{3, 5}}},
		{"inside", []int{1, 2, 3, 4, 2}, []frameRun{{1, 4}}},
		{"between", []int{1, 10, 5}, []frameRun{{1, 1}, {5, 5}, {10, 10}}},
	} {
		var s frameRuns
		for _, f := range tc.add {
			if !s.add(f, true) {
				t.Fatalf("%s: no room", tc.name)
			}
		}
		if !slices.Equal(s.runs, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, s.runs, tc.want)
		}
		for f := 0; f <= 12; f++ {
			in := slices.Contains(tc.add, f)
			if s.has(f) != in {
				t.Errorf("%s: has(%d) = %v", tc.name, f, !in)
			}
		}
		for f := 12; f >= 0; f-- { // backwards: each lookup starts again
			if s.has(f) != slices.Contains(tc.add, f) {
				t.Errorf("%s: backwards has(%d)", tc.name, f)
			}
		}
	}
	var s frameRuns
	s.add(1, false) // no room for a run
	if len(s.runs) != 0 {
		t.Errorf("a run made without room: %v", s.runs)
	}
	s.add(1, true)
	if !s.add(2, false) || !slices.Equal(s.runs, []frameRun{{1, 2}}) {
		t.Errorf("extending a run needs no room: %v", s.runs)
	}
}

// TestPlanBounds: past maxPlanned, records are counted as unplanned; a
// connection wanted whole is a bit, whatever was wanted of it before.
func TestPlanBounds(t *testing.T) {
	p := NewPlan(nil)
	p.conn(3, 10)
	p.conn(3, 7)
	if !p.wants(3, 10) || p.wants(3, 11) || p.wants(0, 1) {
		t.Errorf("upto: %v", p.upto)
	}
	p.connWhole(3)
	if !p.wants(3, 1<<40) || len(p.upto) != 0 || p.planned != 0 {
		t.Errorf("whole: %v, planned %d", p.upto, p.planned)
	}
	for i := 0; i < maxPlanned+5; i++ {
		p.own("f", []int{2 * i})
	}
	// The input's entry counts too: one run fewer than maxPlanned.
	if p.planned != maxPlanned || p.Unplanned != 6 {
		t.Errorf("planned %d, unplanned %d", p.planned, p.Unplanned)
	}
	p.conn(99, 1)
	if p.Unplanned != 7 || p.wants(99, 1) {
		t.Errorf("a connection past the bound: unplanned %d", p.Unplanned)
	}
}

// TestPlanRPCUpToReply: an rpc record of a Call that names its Reply wants
// its connection up to the Reply (a Long Call is put together after its
// Send); one without, up to itself.
func TestPlanRPCUpToReply(t *testing.T) {
	p := NewPlan(record.NopSink{})
	p.RPC(&record.RPC{Conn: 3, Frame: 10, Message: &record.RPCMessage{Type: "call", ReplyFrame: 20}})
	p.RPC(&record.RPC{Conn: 4, Frame: 10, Message: &record.RPCMessage{Type: "call"}})
	if !p.wants(3, 20) || p.wants(3, 21) || !p.wants(4, 10) || p.wants(4, 11) {
		t.Errorf("upto %v", p.upto)
	}
}
