package conn

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The tests drive the tracker with the messages the decoder hands it,
// built from named fields: the tracker reads nothing else of a message.

// nfsServiceID is the IP CM Service ID of NFS/RDMA (TCP port 20049).
const nfsServiceID = 0x0000000001064e51

// hosts are the initiator and responder of exchange i: 192.0.2.(2i+1) and
// 192.0.2.(2i+2), as internal/craft addresses them.
func hosts(i int) (string, string) {
	return fmt.Sprintf("192.0.2.%d", 2*i+1), fmt.Sprintf("192.0.2.%d", 2*i+2)
}

// cm is a CM message between the hosts of exchange Index.
type cm struct {
	Kind          record.Kind
	Index         int    // which pair of hosts
	FromResponder bool   // sent by the responder, else by the initiator
	Local, Remote uint32 // the sender's Local and Remote Communication IDs
	TID           uint64
	RPC           *record.RPCRDMA // the usable RFC 8797 message, if any
	Reason        uint16          // REJ: the reject reason
}

// withTID is c with Transaction ID id.
func (c cm) withTID(id uint64) cm { c.TID = id; return c }

// message is c as the decoder hands it on, in frame frame.
func (c cm) message(frame int) *record.Message {
	ini, res := hosts(c.Index)
	m := &record.Message{File: "test.pcap", Frame: frame, Transport: record.RoCEv2, Src: ep(ini), Dst: ep(res), Kind: c.Kind,
		LocalCommID: c.Local, RemoteCommID: c.Remote, TransactionID: c.TID, RPCRDMA: c.RPC}
	if c.FromResponder {
		m.Src, m.Dst = ep(res), ep(ini)
	}
	switch c.Kind {
	case record.KindREQ:
		m.ServiceID, m.HasServiceID = nfsServiceID, true
	case record.KindREJ:
		m.CMInfo = &record.CMInfo{RejectReason: c.Reason}
	}
	return m
}

// sizes is an RFC 8797 message advertising these sizes and R.
func sizes(send, recv int, r bool) *record.RPCRDMA {
	return &record.RPCRDMA{Version: 1, SendSize: send, ReceiveSize: recv, RemoteInvalidate: r}
}

// feed hands the messages to the tracker in turn, numbering their frames
// from 1, and returns every connection it hands on, those of Finish last.
func feed(tr *Tracker, msgs ...cm) []*record.Connection {
	var out []*record.Connection
	for i, c := range msgs {
		out = append(out, handed(tr.Message(c.message(i+1)))...)
	}
	return append(out, handed(tr.Finish())...)
}

// connWant is what a test expects of a connection.
type connWant struct {
	State                    record.State
	Initiator, Responder     string
	RequestFrame, ReplyFrame int
	Retries                  int
	ToResponder, ToInitiator int // 0: no thresholds
	RemoteInvalidation       bool
	Codes                    []string
}

func got(c *record.Connection) connWant {
	w := connWant{State: c.State, Initiator: c.Initiator.String(), Responder: c.Responder.String(), RequestFrame: c.RequestFrame,
		ReplyFrame: c.ReplyFrame, Retries: c.Retries, RemoteInvalidation: c.RemoteInvalidation, Codes: codes(c.Findings)}
	if c.Inline != nil {
		w.ToResponder, w.ToInitiator = c.Inline.InitiatorToResponder, c.Inline.ResponderToInitiator
	}
	return w
}

func codes(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code.String())
	}
	return out
}

// hasFinding reports whether fs holds a finding of code c: only the tests
// ask it, so it lives here rather than in package finding.
func hasFinding(fs []finding.Finding, c finding.Code) bool {
	return slices.ContainsFunc(fs, func(f finding.Finding) bool { return f.Code == c })
}

// TestConnectionLifecycle: CM retries, reused Communication IDs and late
// REJs, offline and live. The REQ's Local Communication ID is 1, the REP's 9.
func TestConnectionLifecycle(t *testing.T) {
	reqM := func(rpc *record.RPCRDMA) cm { return cm{Kind: record.KindREQ, Local: 1, RPC: rpc} }
	repM := func(rpc *record.RPCRDMA) cm {
		return cm{Kind: record.KindREP, FromResponder: true, Local: 9, Remote: 1, RPC: rpc}
	}
	rejM := func(fromInitiator bool, reason uint16) cm {
		if fromInitiator {
			return cm{Kind: record.KindREJ, Local: 1, Remote: 9, Reason: reason}
		}
		return cm{Kind: record.KindREJ, FromResponder: true, Local: 9, Remote: 1, Reason: reason}
	}
	rtu := cm{Kind: record.KindRTU, Local: 1, Remote: 9}
	dreq := cm{Kind: record.KindDREQ, Local: 1, Remote: 9}
	drep := cm{Kind: record.KindDREP, FromResponder: true, Local: 9, Remote: 1}
	small, big := sizes(4096, 4096, false), sizes(16384, 16384, true)
	ini, res := hosts(0)
	established := func(req, rep, retries, toRes, toIni int, inv bool, codes ...string) connWant {
		return connWant{State: record.Established, Initiator: ini, Responder: res, RequestFrame: req, ReplyFrame: rep,
			Retries: retries, ToResponder: toRes, ToInitiator: toIni, RemoteInvalidation: inv, Codes: codes}
	}
	rejected := func(req, rep, toRes, toIni int) connWant {
		return connWant{State: record.Rejected, Initiator: ini, Responder: res, RequestFrame: req, ReplyFrame: rep,
			ToResponder: toRes, ToInitiator: toIni, Codes: []string{"connection-rejected"}}
	}

	cases := []struct {
		name string
		msgs []cm
		want []connWant
	}{
		{"Communication ID reused after a disconnection: a new attempt",
			[]cm{reqM(small).withTID(1), repM(small).withTID(2), rtu.withTID(3), dreq.withTID(4), drep.withTID(5),
				reqM(big).withTID(6), repM(big).withTID(7), rtu.withTID(8)},
			[]connWant{established(1, 2, 0, 4096, 4096, false),
				established(6, 7, 0, 16384, 16384, true, "properties-changed-on-reconnect")}},
		{"REQ again after a REJ, with a new Transaction ID: a new attempt",
			[]cm{reqM(small).withTID(1), rejM(false, 28).withTID(2), reqM(small).withTID(3), repM(small).withTID(4), rtu.withTID(5)},
			[]connWant{rejected(1, 2, 1024, 1024), established(3, 4, 0, 4096, 4096, false)}},
		{"REQ again after the REP, same Transaction ID: a CM retry (the REP was lost)",
			[]cm{reqM(small).withTID(1), repM(small).withTID(2), reqM(small).withTID(1), repM(small).withTID(2), rtu.withTID(3)},
			[]connWant{established(1, 2, 1, 4096, 4096, false)}},
		{"REQ again before any reply, whatever its Transaction ID: a CM retry",
			[]cm{reqM(small).withTID(1), reqM(small).withTID(7), repM(small).withTID(2), rtu.withTID(3)},
			[]connWant{established(1, 3, 1, 4096, 4096, false)}},
		{"the initiator rejects the REP: rejected, the REP stays the reply, findings once",
			[]cm{reqM(big).withTID(1), repM(small).withTID(2), rejM(true, 28).withTID(3)},
			[]connWant{rejected(1, 2, 4096, 4096)}},
		{"the responder rejects its REP when no RTU came (timeout)",
			[]cm{reqM(small).withTID(1), repM(small).withTID(2), rejM(false, 4).withTID(3)},
			[]connWant{rejected(1, 2, 4096, 4096)}},
		{"the REP before its REQ (captures merged from several interfaces): still paired",
			[]cm{repM(small).withTID(2), reqM(small).withTID(1), rtu.withTID(3)},
			[]connWant{established(2, 1, 0, 4096, 4096, false)}},
		{"the initiator gives up before any reply (REJ reason Timeout)",
			[]cm{reqM(small).withTID(1), {Kind: record.KindREJ, Local: 1, TID: 2, Reason: 4}},
			[]connWant{rejected(1, 2, 1024, 1024)}},
		{"a REJ after the RTU changes nothing",
			[]cm{reqM(small).withTID(1), repM(small).withTID(2), rtu.withTID(3), rejM(false, 4).withTID(4)},
			[]connWant{established(1, 2, 0, 4096, 4096, false)}},
	}
	for _, tc := range cases {
		for _, live := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/live=%v", tc.name, live), func(t *testing.T) {
				var gotConns []connWant
				for _, x := range feed(NewTracker(live, 0), tc.msgs...) {
					gotConns = append(gotConns, got(x))
				}
				sort.Slice(gotConns, func(i, j int) bool { return gotConns[i].RequestFrame < gotConns[j].RequestFrame })
				if !reflect.DeepEqual(gotConns, tc.want) {
					t.Errorf("connections\n got %+v\nwant %+v", gotConns, tc.want)
				}
			})
		}
	}
}

// TestLateRejectHistory: a connection whose REP was rejected after all
// does not count as the earlier connection of properties-changed-on-reconnect,
// whatever the order of the late REJs.
func TestLateRejectHistory(t *testing.T) {
	reqM := func(id uint32, size int) cm {
		return cm{Kind: record.KindREQ, Local: id, TID: uint64(id), RPC: sizes(size, size, false)}
	}
	repM := func(id uint32, size int) cm {
		return cm{Kind: record.KindREP, FromResponder: true, Local: id + 100, Remote: id, TID: uint64(id), RPC: sizes(size, size, false)}
	}
	rejREP := func(id uint32) cm {
		return cm{Kind: record.KindREJ, Local: id, Remote: id + 100, TID: uint64(id), Reason: 28}
	}
	rtu := func(id uint32) cm { return cm{Kind: record.KindRTU, Local: id, Remote: id + 100, TID: uint64(id)} }
	// 1: 4096, RTU. 2: 8192, REP rejected. 3: 16384, REP rejected. 4: 4096.
	// Against 1 (the last one accepted), 4 changed nothing.
	msgs := []cm{reqM(1, 4096), repM(1, 4096), rtu(1), reqM(2, 8192), repM(2, 8192), reqM(3, 16384), repM(3, 16384),
		rejREP(2), rejREP(3), reqM(4, 4096), repM(4, 4096), rtu(4)}
	for _, live := range []bool{false, true} {
		var got []string
		for _, x := range feed(NewTracker(live, 0), msgs...) {
			got = append(got, fmt.Sprintf("%d %s %v", x.RequestFrame, x.State, codes(x.Findings)))
		}
		sort.Strings(got)
		want := []string{"1 established []", "10 established []", "4 rejected [connection-rejected]", "6 rejected [connection-rejected]"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("live=%v: %q, want %q", live, got, want)
		}
	}
}

// TestLiveLimitOnce: in live mode the limit counts the attempts still
// held, never hands one on twice, and never flags one already written.
func TestLiveLimitOnce(t *testing.T) {
	reqM := func(id uint32) cm { return cm{Kind: record.KindREQ, Local: id, TID: uint64(id)} }
	complete := func(id uint32) []cm {
		return []cm{reqM(id), {Kind: record.KindREP, FromResponder: true, Local: id + 1000, Remote: id, TID: uint64(id)},
			{Kind: record.KindRTU, Local: id, Remote: id + 1000, TID: uint64(id)}}
	}
	msgs := []cm{reqM(1), reqM(2), {Kind: record.KindREP, FromResponder: true, Local: 12, Remote: 2, TID: 2},
		{Kind: record.KindRTU, Local: 2, Remote: 12, TID: 2}, reqM(3), reqM(4), reqM(5)}
	// Then many complete connections while 1 stays unanswered.
	for id := uint32(10); id < 200; id++ {
		msgs = append(msgs, complete(id)...)
	}
	tr := NewTracker(true, 3)
	conns := feed(tr, msgs...)
	seen := map[int]int{}
	limited, established := 0, 0
	for _, x := range conns {
		seen[x.RequestFrame]++
		if x.State == record.Established {
			established++
		}
		for _, f := range x.Findings {
			if f.Code == finding.StateLimitReached {
				limited++
				if x.State != record.NoReply {
					t.Errorf("frame %d (%s) flagged", x.RequestFrame, x.State)
				}
			}
		}
	}
	for fr, n := range seen {
		if n != 1 {
			t.Errorf("frame %d handed on %d times", fr, n)
		}
	}
	// Unanswered REQs 1, 3, 4 and 5 against a limit of 3: REQ 5 gives up 1,
	// the next REQ (10) gives up 3; the complete connections after it never
	// push out 4 or 5.
	if drops := tr.Dropped() + tr.Forgotten(); len(seen) != 5+190 || limited != 2 || drops != 2 || established != 191 {
		t.Errorf("%d attempts, %d limited, %d drops, %d established", len(seen), limited, drops, established)
	}
}

// TestRejectOfREPReason: the late REJ names who rejected and where.
func TestRejectOfREPReason(t *testing.T) {
	conns := feed(NewTracker(false, 0), cm{Kind: record.KindREQ, Local: 1, TID: 1},
		cm{Kind: record.KindREP, FromResponder: true, Local: 9, Remote: 1, TID: 2},
		cm{Kind: record.KindREJ, Local: 1, Remote: 9, TID: 3, Reason: 28})
	want := "the initiator rejected the REP in frame 3: REJ reason 28 (Consumer reject)"
	if len(conns) != 1 || conns[0].RejectReason != want || len(conns[0].Findings) != 1 ||
		conns[0].Findings[0].Message != want {
		t.Errorf("got %+v", conns)
	}
}

// TestConnectionLimit: beyond the tracking limit the oldest attempt is
// handed on early, with a state-limit-reached finding, and counted.
func TestConnectionLimit(t *testing.T) {
	var msgs []cm
	for i := range 5 {
		msgs = append(msgs, cm{Kind: record.KindREQ, Index: i, Local: 0x0a000001 + uint32(i)}) // only the REQs
	}
	tr := NewTracker(false, 2)
	conns := feed(tr, msgs...)
	if drops := tr.Dropped() + tr.Forgotten(); len(conns) != 5 || drops != 3 {
		t.Fatalf("%d connections, %d drops", len(conns), drops)
	}
	for i, x := range conns {
		wantCodes := []string{"state-limit-reached"}
		if i >= 3 {
			wantCodes = []string{"reply-missing"}
		}
		if !reflect.DeepEqual(codes(x.Findings), wantCodes) || x.RequestFrame != i+1 {
			t.Errorf("connection %d: frame %d, %v", i, x.RequestFrame, codes(x.Findings))
		}
	}
	if !strings.Contains(conns[0].Findings[0].Message, "more than 2 unfinished connection attempts") {
		t.Errorf("%v", conns[0].Findings)
	}
}

// exchange is a complete connection setup (REQ, REP, RTU) between the hosts
// of index i, both sides advertising size; a later attempt between the same
// hosts has new Communication and Transaction IDs, as internal/craft gives
// them.
func exchange(i, attempt, size int) []cm {
	n := uint32(i) + uint32(attempt)<<16
	reqID, repID, tid := 0x0a000001+n, 0x0b000001+n, uint64(0x0000000100000000)|uint64(n)<<8
	return []cm{
		{Kind: record.KindREQ, Index: i, Local: reqID, TID: tid, RPC: sizes(size, size, false)},
		{Kind: record.KindREP, Index: i, FromResponder: true, Local: repID, Remote: reqID, TID: tid, RPC: sizes(size, size, false)},
		{Kind: record.KindRTU, Index: i, Local: reqID, Remote: repID, TID: tid},
	}
}

// TestHistoryLimit: what established connections negotiated is kept for at
// most max services; the oldest is forgotten first, and the tracker's notes
// say so.
func TestHistoryLimit(t *testing.T) {
	var msgs []cm
	for _, x := range [][]cm{exchange(0, 0, 4096), exchange(1, 0, 4096), exchange(2, 0, 4096),
		// Reconnections with other sizes: 0's history is gone, 2's is not.
		exchange(0, 1, 8192), exchange(2, 1, 8192)} {
		msgs = append(msgs, x...)
	}
	tr := NewTracker(false, 2)
	var changed []int
	for _, x := range feed(tr, msgs...) {
		for _, f := range x.Findings {
			if f.Code == finding.PropertiesChangedOnReconnect {
				changed = append(changed, x.RequestFrame)
			}
		}
	}
	// Index 0 was forgotten when 2 was recorded; when 0 reconnected, 1 was
	// forgotten to make room. Only 0's reconnection lost its comparison: 1
	// never reconnected.
	if !reflect.DeepEqual(changed, []int{13}) {
		t.Errorf("properties-changed-on-reconnect at %v, want [13]", changed)
	}
	if notes := tr.Notes(); len(notes) != 1 || notes[0].Code != finding.StateLimitReached ||
		!strings.HasPrefix(notes[0].Message, "1 reconnection could not be compared") || tr.Forgotten() != 1 {
		t.Errorf("notes %v, forgotten %d", notes, tr.Forgotten())
	}
}

// TestFinishedCostNothing: finished attempts (established with an RTU,
// rejected, disconnected) do not count against the limit: however many
// come one after another, none is flagged, none is counted as given up, and
// all come out once, in request order. Only unfinished attempts beyond the
// limit are.
func TestFinishedCostNothing(t *testing.T) {
	rejected := func(i int) []cm {
		id := 0x0c000001 + uint32(i)
		return []cm{{Kind: record.KindREQ, Index: i, Local: id, TID: uint64(id)},
			{Kind: record.KindREJ, Index: i, FromResponder: true, Local: id + 1<<20, Remote: id, TID: uint64(id), Reason: 28}}
	}
	disconnected := func(i int) []cm { // a REP, no RTU, then DREQ and DREP
		id := 0x0d000001 + uint32(i)
		return []cm{{Kind: record.KindREQ, Index: i, Local: id, TID: uint64(id)},
			{Kind: record.KindREP, Index: i, FromResponder: true, Local: id + 1<<20, Remote: id, TID: uint64(id)},
			{Kind: record.KindDREQ, Index: i, Local: id, Remote: id + 1<<20, TID: uint64(id) + 1},
			{Kind: record.KindDREP, Index: i, FromResponder: true, Local: id + 1<<20, Remote: id, TID: uint64(id) + 1}}
	}
	unanswered := func(i int) []cm {
		return []cm{{Kind: record.KindREQ, Index: i, Local: 0x0e000001 + uint32(i), TID: uint64(i)}}
	}
	const limit, n = 10, 500
	for _, tc := range []struct {
		name    string
		unit    func(int) []cm
		pending int // unanswered REQs at the start, within the limit
		limited int // state-limit-reached findings expected
	}{
		{"established", func(i int) []cm { return exchange(i, 0, 4096) }, 0, 0},
		{"established behind unanswered", func(i int) []cm { return exchange(i, 0, 4096) }, limit - 1, 0},
		{"rejected", rejected, 0, 0},
		{"disconnected", disconnected, limit - 1, 0},
		{"unanswered", unanswered, 0, n - limit},
	} {
		for _, live := range []bool{false, true} {
			var msgs []cm
			for i := range tc.pending {
				msgs = append(msgs, unanswered(n+i)...)
			}
			for i := range n {
				msgs = append(msgs, tc.unit(i)...)
			}
			tr := NewTracker(live, limit)
			conns := feed(tr, msgs...)
			limited, seen := 0, map[int]bool{}
			for _, x := range conns {
				if seen[x.RequestFrame] {
					t.Errorf("%s live=%v: frame %d handed on twice", tc.name, live, x.RequestFrame)
				}
				seen[x.RequestFrame] = true
				if hasFinding(x.Findings, finding.StateLimitReached) {
					limited++
				}
			}
			notes := 0 // one note says how many were handed on early, when any was
			if tc.limited > 0 {
				notes = 1
			}
			if len(conns) != n+tc.pending || limited != tc.limited || tr.Dropped() != tc.limited ||
				tr.Forgotten() != 0 || len(tr.Notes()) != notes {
				t.Errorf("%s live=%v: %d connections, %d limited, %d dropped, %d forgotten, notes %v",
					tc.name, live, len(conns), limited, tr.Dropped(), tr.Forgotten(), tr.Notes())
			}
			if !live && tc.pending == 0 {
				for i := 1; i < len(conns); i++ {
					if conns[i].RequestFrame <= conns[i-1].RequestFrame {
						t.Errorf("%s: frame %d after frame %d", tc.name, conns[i].RequestFrame, conns[i-1].RequestFrame)
						break
					}
				}
			}
			if len(tr.open) > 2*limit+64+1 || len(tr.finished) > limit+1 {
				t.Errorf("%s live=%v: open %d, finished %d", tc.name, live, len(tr.open), len(tr.finished))
			}
		}
	}
}

// TestForgottenOnlyWhenLost: a service whose history was forgotten counts
// as a loss only when it reconnects, also once it fell out of the exact set
// of forgotten services (into the Bloom filter).
func TestForgottenOnlyWhenLost(t *testing.T) {
	var msgs []cm
	for i := range 6 { // services 0 to 5; 0 to 3 are forgotten, 0 and 1 beyond the exact set
		msgs = append(msgs, exchange(i, 0, 4096)...)
	}
	tr := NewTracker(false, 2)
	feed(tr, msgs...)
	if tr.Forgotten() != 0 || len(tr.Notes()) != 0 {
		t.Errorf("after 6 services: %d forgotten, notes %v", tr.Forgotten(), tr.Notes())
	}
	// 0 (in the filter) and 3 (in the exact set) reconnect, 1 and 2 do not.
	msgs = append(msgs, exchange(0, 1, 4096)...)
	msgs = append(msgs, exchange(3, 1, 4096)...)
	tr = NewTracker(false, 2)
	feed(tr, msgs...)
	if tr.Forgotten() != 2 || len(tr.Notes()) != 1 || !strings.HasPrefix(tr.Notes()[0].Message, "2 reconnections could not") {
		t.Errorf("two lost comparisons: %d forgotten, notes %v", tr.Forgotten(), tr.Notes())
	}
}

// An orphan reply keeps little: no layers' octets, its private data cut to
// orphanPD octets in a buffer of its own; what pairing reads stays.
func TestSlimOrphan(t *testing.T) {
	pd := make([]byte, 65000)
	m := &record.Message{Frame: 7, Src: ep("a"), Dst: ep("b"), Kind: record.KindMPAReply, PrivateData: pd, PrivateDataSize: len(pd),
		Octets: record.Octets{MPA: make([]byte, 24)}, MPAInfo: &record.MPAHeader{Rev: 1}, Findings: []finding.Finding{{Code: finding.MPAPDTooLong}}}
	s := slimOrphan(m)
	if len(s.PrivateData) != orphanPD || cap(s.PrivateData) != orphanPD || s.PrivateDataSize != 65000 || s.Octets.MPA != nil ||
		*s.MPAInfo != *m.MPAInfo || s.Frame != 7 || s.Src != ep("a") || s.Kind != record.KindMPAReply || len(s.Findings) != 1 {
		t.Errorf("%+v", s)
	}
	s.Findings = append(s.Findings[:0], finding.Finding{Code: finding.ReplyMissing})
	if m.Findings[0].Code != finding.MPAPDTooLong {
		t.Error("the handed-on message's findings changed")
	}
}
