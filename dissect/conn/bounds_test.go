package conn

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestTrackerBounded: the tracker's tables stay bounded however long a live
// capture runs, and are emptied between inputs.
func TestTrackerBounded(t *testing.T) {
	req := func(id uint32) *record.Message {
		return &record.Message{Transport: record.RoCEv2, Src: ep("a"), Dst: ep("b"), Kind: record.KindREQ, AttributeID: layers.AttrREQ,
			LocalCommID: id, TransactionID: uint64(id), ServiceID: 0x0000000001064e51, HasServiceID: true, Frame: int(id)}
	}
	rep := func(id uint32) *record.Message {
		return &record.Message{Transport: record.RoCEv2, Src: ep("b"), Dst: ep("a"), Kind: record.KindREP, AttributeID: layers.AttrREP,
			LocalCommID: id + 1<<20, RemoteCommID: id}
	}
	rtu := func(id uint32) *record.Message {
		return &record.Message{Transport: record.RoCEv2, Src: ep("a"), Dst: ep("b"), Kind: record.KindRTU, AttributeID: layers.AttrRTU,
			LocalCommID: id, RemoteCommID: id + 1<<20}
	}
	orphan := func(id uint32) *record.Message { m := rep(id); m.RemoteCommID = id + 1<<24; return m }

	tr := NewTracker(true, 100)
	emitted := 0
	for id := uint32(1); id <= 20000; id++ {
		// One client reconnecting to one service, and a reply whose
		// request is not in the capture.
		for _, m := range []*record.Message{req(id), rep(id), rtu(id), orphan(id)} {
			emitted += len(handed(tr.Message(m)))
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
	if n := len(handed(off.Finish())); n != 50 {
		t.Errorf("%d attempts at the end of the input", n)
	}
	off.NextInput()
	if len(off.byReq) != 0 || len(off.orphans) != 0 || len(off.history) != 0 || len(off.open) != 0 {
		t.Errorf("after NextInput: byReq %d, orphans %d, history %d, open %d", len(off.byReq), len(off.orphans), len(off.history), len(off.open))
	}
}

// budgetReq and budgetRep are a REQ and its REP as the decoder makes them,
// with addresses of their own (attempt i), the RFC 8797 data and the CM
// fields the tracker keeps.
func budgetReq(i int) *record.Message {
	return &record.Message{Transport: record.RoCEv2, Src: ep(fmt.Sprintf("10.0.%d.%d", i>>8&0xff, i&0xff)), Dst: ep("192.0.2.2"),
		Kind: record.KindREQ, AttributeID: layers.AttrREQ, LocalCommID: uint32(i), TransactionID: uint64(i),
		ServiceID: 0x0000000001064e51, HasServiceID: true, Frame: 2*i + 1,
		RPCRDMA: &record.RPCRDMA{Version: 1, SendSize: 4096, ReceiveSize: 4096}, CMInfo: &record.CMInfo{}}
}

func budgetRep(i int) *record.Message {
	return &record.Message{Transport: record.RoCEv2, Src: ep("192.0.2.2"), Dst: ep(fmt.Sprintf("10.0.%d.%d", i>>8&0xff, i&0xff)),
		Kind: record.KindREP, AttributeID: layers.AttrREP, LocalCommID: uint32(i) ^ 0x5a5a5a5a, RemoteCommID: uint32(i),
		Frame: 2*i + 2, RPCRDMA: &record.RPCRDMA{Version: 1, SendSize: 4096, ReceiveSize: 4096}, CMInfo: &record.CMInfo{}}
}

// budgetMPARequest and budgetMPAReply are an iWARP connection's MPA
// Request and Reply (attempt i), as budgetReq and budgetRep.
func budgetMPARequest(i int) *record.Message {
	return &record.Message{Transport: record.IWARP, Src: ep(fmt.Sprintf("10.0.%d.%d:%d", i>>8&0xff, i&0xff, 40000+i%20000)), Dst: ep("192.0.2.2:20049"),
		Kind: record.KindMPARequest, Frame: 2*i + 1, MPAInfo: &record.MPAHeader{HasFlags: true, HasRev: true, Rev: 2},
		RPCRDMA: &record.RPCRDMA{Version: 1, SendSize: 4096, ReceiveSize: 4096}}
}

func budgetMPAReply(i int) *record.Message {
	m := budgetMPARequest(i)
	m.Src, m.Dst, m.Kind, m.Frame = m.Dst, m.Src, record.KindMPAReply, 2*i+2
	return m
}

// TestAttemptCost: what the budget is charged for the attempts held is
// close to what they take on the heap: never much less (the budget would
// not bound memory), nor twice as much (it would give attempts up for no
// reason). For requests alone and with their replies, of the InfiniBand
// family and of iWARP, at several counts: the tracker's indexes grow by
// doubling, and an attempt's share of them is largest just after they
// grew.
func TestAttemptCost(t *testing.T) {
	type kind struct {
		name     string
		req, rep func(int) *record.Message
	}
	for _, k := range []kind{{"cm", budgetReq, budgetRep}, {"mpa", budgetMPARequest, budgetMPAReply}} {
		for _, withReply := range []bool{false, true} {
			for _, n := range []int{7000, 14000, 20000, 29000} {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				b := budget.New(1 << 30)
				tr := NewTracker(false, 2*n)
				tr.SetBudget(b)
				reqs, reps := make([]*record.Message, n), make([]*record.Message, n)
				for i := range n {
					reqs[i], reps[i] = k.req(i), k.rep(i)
				}
				for i := range n {
					tr.Message(reqs[i])
					if withReply {
						tr.Message(reps[i])
					}
				}
				reqs, reps = nil, nil // what the tracker keeps of them stays reachable through it
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
				charged := float64(b.Stats().Used) / float64(n)
				t.Logf("%s, reply %v, %d: %.0f octets of heap an attempt, %.0f charged", k.name, withReply, n, heap, charged)
				if charged < 0.9*heap || charged > 2*heap {
					t.Errorf("%s, reply %v, %d attempts: %.0f octets charged an attempt for %.0f on the heap", k.name, withReply, n, charged, heap)
				}
				if len(handed(tr.Finish())) != n {
					t.Errorf("%s, reply %v: not every attempt handed on", k.name, withReply)
				}
				tr.NextInput() // the indexes go with their input
				if b.Stats().Used != 0 {
					t.Errorf("%s, reply %v: %d octets still charged after the input", k.name, withReply, b.Stats().Used)
				}
				runtime.KeepAlive(tr)
			}
		}
	}
}

// TestTrackerBudget: attempts are charged to the memory budget; when it is
// full the finished ones are handed on first, without a finding, then the
// oldest unfinished, each with a state-limit-reached finding naming the
// budget; Shed does the same between messages; everything is released at
// the end of the input.
func TestTrackerBudget(t *testing.T) {
	rtu := func(i int) *record.Message {
		return &record.Message{Transport: record.RoCEv2, Src: ep(fmt.Sprintf("10.0.%d.%d", i>>8&0xff, i&0xff)), Dst: ep("192.0.2.2"),
			Kind: record.KindRTU, AttributeID: layers.AttrRTU, LocalCommID: uint32(i), RemoteCommID: uint32(i) ^ 0x5a5a5a5a}
	}
	findings := func(cs []*record.Connection) (budgeted, other int) {
		for _, c := range cs {
			for _, f := range c.Findings {
				switch {
				case f.Code == finding.StateLimitReached && strings.Contains(f.Message, "memory budget"):
					budgeted++
				default:
					other++
				}
			}
		}
		return
	}
	cost := attemptCost(&attempt{Connection: record.Connection{Initiator: ep("10.0.0.100"), Responder: ep("192.0.2.2")}})

	// 50 finished attempts (which cost more: their replies), then 200
	// requests, in room for 100 requests.
	b := budget.New(int64(100*cost + cost/2))
	tr := NewTracker(false, 1000)
	tr.SetBudget(b)
	var early []*record.Connection
	for i := range 50 {
		for _, m := range []*record.Message{budgetReq(i), budgetRep(i), rtu(i)} {
			early = append(early, handed(tr.Message(m))...)
		}
	}
	for i := 50; i < 250; i++ {
		early = append(early, handed(tr.Message(budgetReq(i)))...)
	}
	budgeted, other := findings(early)
	if len(early) != 50+100 || budgeted != 100 || other != 0 {
		t.Errorf("%d handed on early (%d for the budget, %d other findings)", len(early), budgeted, other)
	}
	for i, c := range early[:50] {
		if c.RequestFrame != 2*i+1 || c.State != record.Established || len(c.Findings) != 0 {
			t.Errorf("early %d: frame %d, %v, %v: the finished should go first, in order, without a finding", i, c.RequestFrame, c.State, c.Findings)
			break
		}
	}
	if s := b.Stats(); s.Lost[budget.Attempts] != 100 || s.Used > s.Limit {
		t.Errorf("lost %d, used %d of %d", s.Lost[budget.Attempts], s.Used, s.Limit)
	}
	if n := len(handed(tr.Finish())); n != 100 || b.Stats().Used != 0 {
		t.Errorf("%d at the end, %d octets still charged", n, b.Stats().Used)
	}

	// Shed, when another holder filled the budget: the finished first,
	// then an eighth of the unfinished at most.
	b = budget.New(int64(100 * cost))
	tr = NewTracker(false, 1000)
	tr.SetBudget(b)
	for i := range 10 {
		for _, m := range []*record.Message{budgetReq(i), budgetRep(i), rtu(i)} {
			tr.Message(m)
		}
	}
	for i := 10; i < 90; i++ {
		tr.Message(budgetReq(i))
	}
	if cs := handed(tr.Shed()); len(cs) != 0 {
		t.Errorf("Shed handed on %d with the budget not full", len(cs))
	}
	b.Force(budget.TCP, 50*cost)
	shed := handed(tr.Shed())
	budgeted, other = findings(shed)
	if len(shed) != 10+10 || budgeted != 10 || other != 0 || shed[10].RequestFrame != 2*10+1 {
		t.Errorf("Shed handed on %d (%d for the budget, %d other findings)", len(shed), budgeted, other)
	}
}

// TestIndexRoom: the room the indexes keep after their entries go is
// charged, and given back when they are made again at a quarter of their
// mark.
func TestIndexRoom(t *testing.T) {
	const n = 20000
	b := budget.New(1 << 30)
	tr := NewTracker(false, 2*n)
	tr.SetBudget(b)
	for i := range n {
		tr.Message(budgetReq(i))
	}
	if tr.idxMark[0] != n || tr.idxCharged != 0 {
		t.Fatalf("mark %d, charged %d after %d requests", tr.idxMark[0], tr.idxCharged, n)
	}
	b.Force(budget.TCP, 2<<30) // over: each Shed hands on an eighth of the unfinished
	remade := false
	for held := n; held > n/8; {
		held -= len(handed(tr.Shed()))
		in := len(tr.byReq)
		switch {
		case tr.idxMark[0] == n && tr.idxCharged != (n-in)*indexSlot:
			t.Fatalf("%d entries of a mark of %d: %d charged", in, n, tr.idxCharged)
		case tr.idxMark[0] != n:
			remade = true
			if tr.idxMark[0] >= n/4 || tr.idxCharged != (tr.idxMark[0]-in)*indexSlot {
				t.Fatalf("made again, %d entries: mark %d, charged %d", in, tr.idxMark[0], tr.idxCharged)
			}
		}
	}
	if !remade {
		t.Error("the indexes were never made again")
	}
}
