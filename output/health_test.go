package output_test

import (
	"slices"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// connNumbers notes the numbers of the connections it gets.
type connNumbers struct{ shown *[]int }

func (connNumbers) Message(*record.Message) error { return nil }
func (c connNumbers) Connection(x *record.Connection) error {
	*c.shown = append(*c.shown, x.Number)
	return nil
}
func (connNumbers) Update(*record.ConnectionUpdate) error { return nil }
func (connNumbers) Summary(*record.Summary) error         { return nil }
func (connNumbers) RPC(*record.RPC) error                 { return nil }

// TestSelectHealthFields: nak selects the connections whose RC traffic
// carried a NAK (by code, rnr_nak, or any), retransmission those that sent
// packets again (ordered); a connection without either has no value.
func TestSelectHealthFields(t *testing.T) {
	quiet := &record.Connection{Number: 1, Datapath: &record.Datapath{Health: &record.Health{Kind: record.HealthRC, ACKs: [2]int{3, 3}}}}
	lossy := &record.Connection{Number: 2, Datapath: &record.Datapath{Health: &record.Health{Kind: record.HealthRC,
		NAKs: [2][record.NAKCodeCount]int{{1}}, Retransmitted: [2]int{0, 5}}}}
	rnr := &record.Connection{Number: 3, Datapath: &record.Datapath{Health: &record.Health{Kind: record.HealthRC,
		RNRNAKs: [2]int{0, 2}, Retransmitted: [2]int{2, 0}}}}
	none := &record.Connection{Number: 4}
	for _, tc := range []struct {
		expr  string
		shown []int
	}{
		{"nak", []int{2, 3}},
		{"nak == psn_sequence_error", []int{2}},
		{"nak == RNR_NAK", []int{3}},
		{"not nak", []int{1, 4}},
		{"retransmission", []int{2, 3}},
		{"retransmission > 2", []int{2}},
		{"retransmission <= 2", []int{3}},
		{"retransmission == 5 and nak", []int{2}},
	} {
		sel, err := output.ParseSelection(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		var shown []int
		sink := sel.Filter(connNumbers{&shown})
		for _, c := range []*record.Connection{quiet, lossy, rnr, none} {
			sink.Connection(c)
		}
		if !slices.Equal(shown, tc.shown) {
			t.Errorf("%s: shown %v, want %v", tc.expr, shown, tc.shown)
		}
	}
	for _, bad := range []string{"nak == lost", "nak > psn_sequence_error", "retransmission == many"} {
		if _, err := output.ParseSelection(bad); err == nil {
			t.Errorf("%s: taken", bad)
		}
	}
}
