package mpa

import (
	"reflect"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestCheckAside: a direction whose FPDUs come whole in their segments
// and cut across them, with wrong and zero CRC fields among both, counts
// the same problems, and describes the same first of each kind, whether
// the whole ones are checked aside (on the worker, their verdicts joined
// when the direction ends, or by the framer a batch at a time) or at once;
// and they were checked aside.
func TestCheckAside(t *testing.T) {
	var units []unit
	for i := range 3 * asideBatch {
		u := sendUnit(layers.RDMAPOpSend, uint32(1+i), 0, true, 0, "a call of some length")
		switch i % 11 {
		case 3, 9:
			u.BadCRC = true
		case 6:
			u.ZeroCRC = true
		}
		units = append(units, u)
	}
	s, starts := craft.FPDUStream(units, false, true)
	// Every third FPDU is cut in two across segments; the others come in
	// a segment of their own.
	var segs [][]byte
	for i, at := range starts {
		end := len(s)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		if i%3 == 1 {
			mid := (at + end) / 2
			segs = append(segs, s[at:mid], s[mid:end])
			continue
		}
		segs = append(segs, s[at:end])
	}
	run := func(aside, worker bool) ([]string, int) {
		c := newConn()
		if aside {
			c.r.f.CheckAside(worker)
			c.r.f.Lend(s, nil) // the segments' octets stay valid: the stream's
		}
		c.syn()
		c.send(0, (&craft.MPA{Request: true, Rev: 1, CRC: true}).Bytes(), 0)
		c.send(1, (&craft.MPA{Rev: 1, CRC: true}).Bytes(), 0)
		for _, p := range segs {
			c.send(0, p, 0)
		}
		c.r.flush()
		checked := 0
		if a := c.r.f.aside; a != nil {
			checked = a.checked
		}
		c.r.f.Stop()
		var got []string
		for _, g := range c.log.got {
			if g[0] != 's' && g != "close" { // not the Sends
				got = append(got, g)
			}
		}
		return got, checked
	}
	inline, _ := run(false, false)
	for _, worker := range []bool{true, false} {
		aside, checked := run(true, worker)
		if len(aside) != 2 {
			t.Fatalf("worker %v: findings %q, want a mismatch and a missing CRC", worker, aside)
		}
		if !reflect.DeepEqual(aside, inline) {
			t.Errorf("worker %v: checked aside:\n%q\nat once:\n%q", worker, aside, inline)
		}
		if want := len(units) - len(units)/3; checked != want {
			t.Errorf("worker %v: %d FPDUs checked aside, want the %d whole in a segment", worker, checked, want)
		}
	}
}
