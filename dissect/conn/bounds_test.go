package conn

import (
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestTrackerBounded: the tracker's tables stay bounded however long a live
// capture runs, and are emptied between inputs.
func TestTrackerBounded(t *testing.T) {
	req := func(id uint32) *record.Message {
		return &record.Message{Transport: record.RoCEv2, Src: "a", Dst: "b", Kind: record.KindREQ, AttributeID: layers.AttrREQ,
			LocalCommID: id, TransactionID: uint64(id), ServiceID: 0x0000000001064e51, HasServiceID: true, Frame: int(id)}
	}
	rep := func(id uint32) *record.Message {
		return &record.Message{Transport: record.RoCEv2, Src: "b", Dst: "a", Kind: record.KindREP, AttributeID: layers.AttrREP,
			LocalCommID: id + 1<<20, RemoteCommID: id}
	}
	rtu := func(id uint32) *record.Message {
		return &record.Message{Transport: record.RoCEv2, Src: "a", Dst: "b", Kind: record.KindRTU, AttributeID: layers.AttrRTU,
			LocalCommID: id, RemoteCommID: id + 1<<20}
	}
	orphan := func(id uint32) *record.Message { m := rep(id); m.RemoteCommID = id + 1<<24; return m }

	tr := NewTracker(true, 100)
	emitted := 0
	for id := uint32(1); id <= 20000; id++ {
		// One client reconnecting to one service, and a reply whose
		// request is not in the capture.
		for _, m := range []*record.Message{req(id), rep(id), rtu(id), orphan(id)} {
			emitted += len(tr.Message(m))
		}
	}
	if emitted != 20000 {
		t.Errorf("%d attempts handed on", emitted)
	}
	if len(tr.byReq) > maxDone || len(tr.done) > maxDone || len(tr.open) > 100 ||
		len(tr.history) != 1 || len(tr.hOrder) > 2*len(tr.history)+64 || len(tr.orphans) > maxOrphans || len(tr.oOrder) > maxOrphans {
		t.Errorf("byReq %d, done %d, open %d, history %d, hOrder %d, orphans %d/%d",
			len(tr.byReq), len(tr.done), len(tr.open), len(tr.history), len(tr.hOrder), len(tr.orphans), len(tr.oOrder))
	}

	off := NewTracker(false, 100)
	for id := uint32(1); id <= 50; id++ {
		off.Message(req(id))
		off.Message(orphan(id))
	}
	if n := len(off.Finish()); n != 50 {
		t.Errorf("%d attempts at the end of the input", n)
	}
	off.NextInput()
	if len(off.byReq) != 0 || len(off.orphans) != 0 || len(off.history) != 0 || len(off.open) != 0 {
		t.Errorf("after NextInput: byReq %d, orphans %d, history %d, open %d", len(off.byReq), len(off.orphans), len(off.history), len(off.open))
	}
}
