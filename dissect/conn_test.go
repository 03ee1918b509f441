package dissect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/craft"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// scenario builds a capture from exchanges; order, when set, gives the
// position of each frame in the file (frames of all exchanges, in turn).
type scenario struct {
	ib    []craft.Exchange
	iwarp []craft.IWARPExchange
	// drop removes frames (by position before reordering), to make a REQ go
	// unanswered; dup repeats a frame (a CM retry).
	drop map[int]bool
	dup  map[int]int
	// interleave sorts all frames by time instead of writing exchange after
	// exchange.
	interleave bool
}

func (sc scenario) write(t *testing.T) string {
	t.Helper()
	var frames []craft.Frame
	for _, x := range sc.ib {
		fs, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, fs...)
	}
	for _, x := range sc.iwarp {
		fs, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, fs...)
	}
	var out []craft.Frame
	for i, f := range frames {
		if sc.drop[i] {
			continue
		}
		out = append(out, f)
		for k := 0; k < sc.dup[i]; k++ {
			g := f
			g.Time = f.Time.Add(time.Duration(k+1) * 100 * time.Microsecond)
			out = append(out, g)
		}
	}
	if sc.interleave {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	}
	p := filepath.Join(t.TempDir(), "scenario.pcapng")
	if err := craft.WriteFile(p, out); err != nil {
		t.Fatal(err)
	}
	return p
}

func runScenario(t *testing.T, cfg dissect.Config, files ...string) *collect {
	t.Helper()
	var c collect
	if _, err := dissect.Run(context.Background(), files, nil, cfg, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

type connWant struct {
	state        record.State
	ini, res     string
	reqFrame     int
	replyFrame   int
	retries      int
	toRes, toIni int // 0: no thresholds
	inv          bool
	codes        []string
}

func got(c *record.Connection) connWant {
	w := connWant{state: c.State, ini: c.Initiator, res: c.Responder, reqFrame: c.RequestFrame, replyFrame: c.ReplyFrame,
		retries: c.Retries, inv: c.RemoteInvalidation, codes: codes(c.Findings)}
	if c.Inline != nil {
		w.toRes, w.toIni = c.Inline.InitiatorToResponder, c.Inline.ResponderToInitiator
	}
	return w
}

func TestConnections(t *testing.T) {
	p := func(send, recv int, r bool) craft.Peer {
		return craft.Peer{SendSize: send, ReceiveSize: recv, RemoteInvalidate: r}
	}
	none := craft.Peer{Absent: true}
	base := craft.DefaultStart
	cases := []struct {
		name string
		sc   scenario
		want []connWant
	}{
		{"both sides advertise", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, true),
			Responder: p(8192, 8192, true)}}},
			[]connWant{{record.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, true, nil}}},
		{"one side", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(8192, 8192, false), Responder: none}}},
			[]connWant{{record.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 1024, 1024, false, []string{"rpcrdma-one-sided"}}}},
		{"only the responder", scenario{ib: []craft.Exchange{{Transport: craft.InfiniBand, Initiator: none, Responder: p(8192, 8192, false)}}},
			[]connWant{{record.Established, "LID 1", "LID 2", 1, 2, 0, 1024, 1024, false, []string{"rpcrdma-one-sided"}}}},
		{"neither", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv1, Initiator: none, Responder: none}}},
			[]connWant{{record.Established, "::ffff:192.0.2.1", "::ffff:192.0.2.2", 1, 2, 0, 1024, 1024, false, nil}}},
		{"asymmetric sizes", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(16384, 2048, false),
			Responder: p(4096, 65536, false)}}},
			[]connWant{{record.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 16384, 2048, false, nil}}},
		{"R on the initiator only", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, true), Responder: p(4096, 4096, false)}}},
			[]connWant{{record.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, false, []string{"remote-invalidation-one-sided"}}}},
		{"R on the responder only", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, true)}}},
			[]connWant{{record.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, false, []string{"remote-invalidation-one-sided"}}}},
		{"REJ with private data", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, true),
			Responder: p(4096, 4096, true), Reject: true}}},
			[]connWant{{record.Rejected, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, false, []string{"connection-rejected"}}}},
		{"MPA reject", scenario{iwarp: []craft.IWARPExchange{{Rev: 2, Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true), Reject: true}}},
			[]connWant{{record.Rejected, "192.0.2.1:49153", "192.0.2.2:20049", 4, 5, 0, 4096, 4096, false, []string{"connection-rejected"}}}},
		{"MPA both R", scenario{iwarp: []craft.IWARPExchange{{Rev: 1, Initiator: p(4096, 16384, true), Responder: p(2048, 4096, true)}}},
			[]connWant{{record.Established, "192.0.2.1:49153", "192.0.2.2:20049", 4, 5, 0, 4096, 2048, true, nil}}},
		{"CM retries", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, false)}},
			dup: map[int]int{0: 2}},
			[]connWant{{record.Established, "192.0.2.1", "192.0.2.2", 1, 4, 2, 4096, 4096, false, nil}}},
		{"no reply", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false)}}, drop: map[int]bool{1: true, 2: true}},
			[]connWant{{record.NoReply, "192.0.2.1", "192.0.2.2", 1, 0, 0, 0, 0, false, []string{"reply-missing"}}}},
		{"reply without request", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false)}}, drop: map[int]bool{0: true}},
			nil},
		{"reconnection with changed properties", scenario{ib: []craft.Exchange{
			{Transport: craft.RoCEv2, Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true)},
			{Transport: craft.RoCEv2, Attempt: 1, Start: base.Add(time.Second), Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true)},
			{Transport: craft.RoCEv2, Attempt: 2, Start: base.Add(2 * time.Second), Initiator: p(8192, 8192, true), Responder: p(4096, 4096, false)}}},
			[]connWant{
				{record.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, true, nil},
				{record.Established, "192.0.2.1", "192.0.2.2", 4, 5, 0, 4096, 4096, true, nil},
				{record.Established, "192.0.2.1", "192.0.2.2", 7, 8, 0, 4096, 4096, false,
					[]string{"remote-invalidation-one-sided", "properties-changed-on-reconnect"}}}},
		{"MPA reconnection with changed properties", scenario{iwarp: []craft.IWARPExchange{
			{Rev: 2, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, false)},
			{Rev: 2, Attempt: 1, Start: base.Add(time.Second), Initiator: p(4096, 4096, false), Responder: p(2048, 2048, false)}}},
			[]connWant{
				{record.Established, "192.0.2.1:49153", "192.0.2.2:20049", 4, 5, 0, 4096, 4096, false, nil},
				{record.Established, "192.0.2.1:50153", "192.0.2.2:20049", 9, 10, 0, 2048, 2048, false, []string{"properties-changed-on-reconnect"}}}},
		{"iWARP reconnection that reuses the TCP 4-tuple", scenario{iwarp: []craft.IWARPExchange{
			{Rev: 2, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, false)},
			{Rev: 2, Start: base.Add(time.Second), Initiator: p(8192, 8192, false), Responder: p(8192, 8192, false)}}},
			[]connWant{
				{record.Established, "192.0.2.1:49153", "192.0.2.2:20049", 4, 5, 0, 4096, 4096, false, nil},
				{record.Established, "192.0.2.1:49153", "192.0.2.2:20049", 9, 10, 0, 8192, 8192, false, []string{"properties-changed-on-reconnect"}}}},
		{"interleaved connections between different hosts", scenario{interleave: true, ib: []craft.Exchange{
			{Transport: craft.RoCEv2, Index: 0, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, false)},
			{Transport: craft.RoCEv2, Index: 1, Start: base.Add(500 * time.Microsecond), Initiator: p(8192, 8192, true), Responder: p(16384, 16384, true), Reject: true},
			{Transport: craft.RoCEv2, Index: 2, Start: base.Add(700 * time.Microsecond), Initiator: p(2048, 2048, false), Responder: p(1024, 1024, false)},
		}, iwarp: []craft.IWARPExchange{{Rev: 2, Index: 3, Start: base.Add(200 * time.Microsecond), Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true)}}},
			// Frames by time: 1 REQ0, 2 SYN3, 3 REQ1, 4 REQ2, 5 REP0, 6 SYN-ACK3, 7 REJ1, 8 REP2, 9 RTU0, 10 ACK3,
			// 11 RTU2, 12 MPA_REQ3, 13 MPA_REP3.
			[]connWant{
				{record.Established, "192.0.2.1", "192.0.2.2", 1, 5, 0, 4096, 4096, false, nil},
				{record.Rejected, "192.0.2.3", "192.0.2.4", 3, 7, 0, 8192, 8192, false, []string{"connection-rejected"}},
				{record.Established, "192.0.2.5", "192.0.2.6", 4, 8, 0, 1024, 1024, false, nil},
				{record.Established, "192.0.2.7:49159", "192.0.2.8:20049", 12, 13, 0, 4096, 4096, true, nil}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := runScenario(t, dissect.Config{}, tc.sc.write(t))
			var gotConns []connWant
			for _, x := range c.conns {
				gotConns = append(gotConns, got(x))
			}
			if !reflect.DeepEqual(gotConns, tc.want) {
				t.Errorf("connections\n got %+v\nwant %+v", gotConns, tc.want)
				for _, x := range c.conns {
					t.Logf("%v", x.Findings)
				}
			}
			// The summary counts them by state.
			byState := map[record.State]int{}
			for _, w := range tc.want {
				byState[w.state]++
			}
			for _, st := range []record.State{record.Established, record.Rejected, record.NoReply} {
				if c.sum.Connections[st] != byState[st] {
					t.Errorf("summary %s = %d, want %d", st, c.sum.Connections[st], byState[st])
				}
			}
		})
	}
}

func TestConnectionFindingMessages(t *testing.T) {
	ini := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	for _, tc := range []struct {
		reject bool
		want   map[string]string
	}{
		{false, map[string]string{
			"rpcrdma-one-sided":             "only the initiator sent RPC-over-RDMA private data; the responder counts as Send Size 1024, Receive Size 1024, R=0",
			"remote-invalidation-one-sided": "the initiator set R, the responder did not: replies use plain Send, never Send With Invalidate",
		}},
		// A rejected connection negotiated nothing: only the rejection.
		{true, map[string]string{"connection-rejected": "REJ reason 28 (Consumer reject)"}},
	} {
		x := craft.Exchange{Transport: craft.RoCEv2, Initiator: ini, Responder: craft.Peer{Absent: true}, Reject: tc.reject}
		c := runScenario(t, dissect.Config{}, scenario{ib: []craft.Exchange{x}}.write(t))
		msgs := map[string]string{}
		for _, f := range c.conns[0].Findings {
			msgs[f.Code.String()] = f.Message
		}
		if !reflect.DeepEqual(msgs, tc.want) {
			t.Errorf("reject=%v: messages\n got %v\nwant %v", tc.reject, msgs, tc.want)
		}
	}
}

// cmStep is one CM message of a hand-written exchange between the
// endpoints a (initiator) and b.
type cmStep struct {
	aToB bool
	tid  uint64
	msg  layers.CMMessage
}

func cmScript(t *testing.T, steps ...cmStep) string {
	t.Helper()
	a, b := craft.Endpoints(0, false)
	var frames []craft.Frame
	for i, s := range steps {
		src, dst := b, a
		if s.aToB {
			src, dst = a, b
		}
		d, lt, err := (&craft.CM{Transport: craft.RoCEv2, Src: src, Dst: dst, Msg: s.msg, TID: s.tid}).Frame()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, craft.Frame{Data: d, LinkType: lt, Time: craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)})
	}
	p := filepath.Join(t.TempDir(), "script.pcap")
	if err := craft.WriteFile(p, frames); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConnectionLifecycle: CM retries, reused Communication IDs and late
// REJs, offline and live. a is 192.0.2.1, b 192.0.2.2; the REQ's Local
// Communication ID is 1, the REP's 9.
func TestConnectionLifecycle(t *testing.T) {
	a, b := craft.Endpoints(0, false)
	sized := func(send, recv byte, r bool) []byte {
		var rr byte
		if r {
			rr = 1
		}
		return rpc(1, rr, send, recv)
	}
	reqM := func(pd []byte) cmStep {
		m := &layers.CMReq{LocalCommID: 1, ServiceID: craft.NFSServiceID, PartitionKey: 0xffff}
		m.PrivateData = append(craft.IPCMHeader(a, b, a.Port), pd...)
		return cmStep{aToB: true, msg: m}
	}
	repM := func(pd []byte) cmStep {
		m := &layers.CMRep{LocalCommID: 9, RemoteCommID: 1}
		m.PrivateData = pd
		return cmStep{msg: m}
	}
	rejM := func(aToB bool, msgRej uint8, reason uint16) cmStep {
		m := &layers.CMRej{LocalCommID: 9, RemoteCommID: 1, MessageRejected: msgRej, Reason: reason}
		if aToB {
			m.LocalCommID, m.RemoteCommID = 1, 9
		}
		return cmStep{aToB: aToB, msg: m}
	}
	rtu := cmStep{aToB: true, msg: &layers.CMRtu{LocalCommID: 1, RemoteCommID: 9}}
	dreq := cmStep{aToB: true, msg: &layers.CMDreq{LocalCommID: 1, RemoteCommID: 9}}
	drep := cmStep{msg: &layers.CMDrep{LocalCommID: 9, RemoteCommID: 1}}
	tid := func(s cmStep, id uint64) cmStep { s.tid = id; return s }
	small, big := sized(3, 3, false), sized(15, 15, true)
	const ini, res = "192.0.2.1", "192.0.2.2"

	cases := []struct {
		name  string
		steps []cmStep
		want  []connWant
	}{
		{"Communication ID reused after a disconnection: a new attempt",
			[]cmStep{tid(reqM(small), 1), tid(repM(small), 2), tid(rtu, 3), tid(dreq, 4), tid(drep, 5),
				tid(reqM(big), 6), tid(repM(big), 7), tid(rtu, 8)},
			[]connWant{{record.Established, ini, res, 1, 2, 0, 4096, 4096, false, nil},
				{record.Established, ini, res, 6, 7, 0, 16384, 16384, true, []string{"properties-changed-on-reconnect"}}}},
		{"REQ again after a REJ, with a new Transaction ID: a new attempt",
			[]cmStep{tid(reqM(small), 1), tid(rejM(false, 0, 28), 2), tid(reqM(small), 3), tid(repM(small), 4), tid(rtu, 5)},
			[]connWant{{record.Rejected, ini, res, 1, 2, 0, 1024, 1024, false, []string{"connection-rejected"}},
				{record.Established, ini, res, 3, 4, 0, 4096, 4096, false, nil}}},
		{"REQ again after the REP, same Transaction ID: a CM retry (the REP was lost)",
			[]cmStep{tid(reqM(small), 1), tid(repM(small), 2), tid(reqM(small), 1), tid(repM(small), 2), tid(rtu, 3)},
			[]connWant{{record.Established, ini, res, 1, 2, 1, 4096, 4096, false, nil}}},
		{"REQ again before any reply, whatever its Transaction ID: a CM retry",
			[]cmStep{tid(reqM(small), 1), tid(reqM(small), 7), tid(repM(small), 2), tid(rtu, 3)},
			[]connWant{{record.Established, ini, res, 1, 3, 1, 4096, 4096, false, nil}}},
		{"the initiator rejects the REP: rejected, the REP stays the reply, findings once",
			[]cmStep{tid(reqM(big), 1), tid(repM(small), 2), tid(rejM(true, 1, 28), 3)},
			[]connWant{{record.Rejected, ini, res, 1, 2, 0, 4096, 4096, false, []string{"connection-rejected"}}}},
		{"the responder rejects its REP when no RTU came (timeout)",
			[]cmStep{tid(reqM(small), 1), tid(repM(small), 2), tid(rejM(false, 1, 4), 3)},
			[]connWant{{record.Rejected, ini, res, 1, 2, 0, 4096, 4096, false, []string{"connection-rejected"}}}},
		{"the REP before its REQ (captures merged from several interfaces): still paired",
			[]cmStep{tid(repM(small), 2), tid(reqM(small), 1), tid(rtu, 3)},
			[]connWant{{record.Established, ini, res, 2, 1, 0, 4096, 4096, false, nil}}},
		{"the initiator gives up before any reply (REJ reason Timeout)",
			[]cmStep{tid(reqM(small), 1), {aToB: true, tid: 2, msg: &layers.CMRej{LocalCommID: 1, Reason: 4}}},
			[]connWant{{record.Rejected, ini, res, 1, 2, 0, 1024, 1024, false, []string{"connection-rejected"}}}},
		{"a REJ after the RTU changes nothing",
			[]cmStep{tid(reqM(small), 1), tid(repM(small), 2), tid(rtu, 3), tid(rejM(false, 1, 4), 4)},
			[]connWant{{record.Established, ini, res, 1, 2, 0, 4096, 4096, false, nil}}},
	}
	for _, tc := range cases {
		file := cmScript(t, tc.steps...)
		for _, live := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/live=%v", tc.name, live), func(t *testing.T) {
				c := runScenario(t, dissect.Config{Live: live}, file)
				var gotConns []connWant
				for _, x := range c.conns {
					gotConns = append(gotConns, got(x))
				}
				sort.Slice(gotConns, func(i, j int) bool { return gotConns[i].reqFrame < gotConns[j].reqFrame })
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
	a, b := craft.Endpoints(0, false)
	reqM := func(id uint32, send byte) cmStep {
		m := &layers.CMReq{LocalCommID: id, ServiceID: craft.NFSServiceID}
		m.PrivateData = append(craft.IPCMHeader(a, b, a.Port), rpc(1, 0, send, send)...)
		return cmStep{aToB: true, tid: uint64(id), msg: m}
	}
	repM := func(id uint32, send byte) cmStep {
		m := &layers.CMRep{LocalCommID: id + 100, RemoteCommID: id}
		m.PrivateData = rpc(1, 0, send, send)
		return cmStep{tid: uint64(id), msg: m}
	}
	rejREP := func(id uint32) cmStep {
		return cmStep{aToB: true, tid: uint64(id), msg: &layers.CMRej{LocalCommID: id, RemoteCommID: id + 100, MessageRejected: 1, Reason: 28}}
	}
	rtu := func(id uint32) cmStep {
		return cmStep{aToB: true, tid: uint64(id), msg: &layers.CMRtu{LocalCommID: id, RemoteCommID: id + 100}}
	}
	// 1: 4096, RTU. 2: 8192, REP rejected. 3: 16384, REP rejected. 4: 4096.
	// Against 1 (the last one accepted), 4 changed nothing.
	file := cmScript(t, reqM(1, 3), repM(1, 3), rtu(1), reqM(2, 7), repM(2, 7), reqM(3, 15), repM(3, 15),
		rejREP(2), rejREP(3), reqM(4, 3), repM(4, 3), rtu(4))
	for _, live := range []bool{false, true} {
		c := runScenario(t, dissect.Config{Live: live}, file)
		var got []string
		for _, x := range c.conns {
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
	a, b := craft.Endpoints(0, false)
	reqM := func(id uint32) cmStep {
		m := &layers.CMReq{LocalCommID: id, ServiceID: craft.NFSServiceID}
		m.PrivateData = craft.IPCMHeader(a, b, a.Port)
		return cmStep{aToB: true, tid: uint64(id), msg: m}
	}
	steps := []cmStep{reqM(1), reqM(2), {tid: 2, msg: &layers.CMRep{LocalCommID: 12, RemoteCommID: 2}},
		{aToB: true, tid: 2, msg: &layers.CMRtu{LocalCommID: 2, RemoteCommID: 12}}, reqM(3), reqM(4), reqM(5)}
	// Then many complete connections while 1 stays unanswered.
	for id := uint32(10); id < 200; id++ {
		steps = append(steps, reqM(id), cmStep{tid: uint64(id), msg: &layers.CMRep{LocalCommID: id + 1000, RemoteCommID: id}},
			cmStep{aToB: true, tid: uint64(id), msg: &layers.CMRtu{LocalCommID: id, RemoteCommID: id + 1000}})
	}
	c := runScenario(t, dissect.Config{Live: true, MaxConnections: 3}, cmScript(t, steps...))
	seen := map[int]int{}
	limited := 0
	for _, x := range c.conns {
		seen[x.RequestFrame]++
		for _, f := range x.Findings {
			if f.Code.String() == "state-limit-reached" {
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
	if len(seen) != 5+190 || limited != 2 || c.sum.StateDrops != 2 || c.sum.Connections[record.Established] != 191 {
		t.Errorf("%d attempts, %d limited, %d drops, %v", len(seen), limited, c.sum.StateDrops, c.sum.Connections)
	}
}

// TestRejectOfREPReason: the late REJ names who rejected and where.
func TestRejectOfREPReason(t *testing.T) {
	a, b := craft.Endpoints(0, false)
	r := &layers.CMReq{LocalCommID: 1, ServiceID: craft.NFSServiceID}
	r.PrivateData = craft.IPCMHeader(a, b, a.Port)
	file := cmScript(t, cmStep{aToB: true, tid: 1, msg: r}, cmStep{tid: 2, msg: &layers.CMRep{LocalCommID: 9, RemoteCommID: 1}},
		cmStep{aToB: true, tid: 3, msg: &layers.CMRej{LocalCommID: 1, RemoteCommID: 9, MessageRejected: 1, Reason: 28}})
	c := runScenario(t, dissect.Config{}, file)
	want := "the initiator rejected the REP in frame 3: REJ reason 28 (Consumer reject)"
	if len(c.conns) != 1 || c.conns[0].RejectReason != want || len(c.conns[0].Findings) != 1 ||
		c.conns[0].Findings[0].Message != want {
		t.Errorf("got %+v", c.conns)
	}
}

// TestSameFileTwice: one file named twice is two inputs; nothing pairs
// across them, so each REQ is an attempt of its own (not a retry).
func TestSameFileTwice(t *testing.T) {
	p := scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2}}}.write(t)
	c := runScenario(t, dissect.Config{}, p, p)
	if len(c.conns) != 2 || c.conns[0].Retries != 0 || c.conns[1].Retries != 0 ||
		c.conns[1].State != record.Established || c.conns[1].RequestFrame != 1 {
		t.Fatalf("got %d connections: %+v", len(c.conns), c.conns)
	}
}

// TestLiveOrder: in live mode each attempt is handed on when its state is
// known, right after the message that settles it (the RTU, which completes
// the handshake; a REP may still be rejected); the unanswered one at the
// end.
func TestLiveOrder(t *testing.T) {
	base := craft.DefaultStart
	sc := scenario{interleave: true, ib: []craft.Exchange{
		{Transport: craft.RoCEv2, Index: 0},
		{Transport: craft.RoCEv2, Index: 1, Start: base.Add(500 * time.Microsecond)},
	}, drop: map[int]bool{1: true, 2: true}}
	var order []string
	sink := &orderSink{log: &order}
	if _, err := dissect.Run(context.Background(), []string{sc.write(t)}, nil, dissect.Config{Live: true}, sink); err != nil {
		t.Fatal(err)
	}
	want := []string{"REQ 1", "REQ 2", "REP 3", "RTU 4", "connection 192.0.2.3 established", "connection 192.0.2.1 no-reply", "summary"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

type orderSink struct{ log *[]string }

func (o *orderSink) Message(m *record.Message) error {
	*o.log = append(*o.log, fmt.Sprintf("%s %d", m.Name(), m.Frame))
	return nil
}
func (o *orderSink) Connection(c *record.Connection) error {
	*o.log = append(*o.log, fmt.Sprintf("connection %s %s", c.Initiator, c.State))
	return nil
}
func (o *orderSink) Summary(*record.Summary) error { *o.log = append(*o.log, "summary"); return nil }

// TestConnectionLimit: beyond the tracking limit the oldest attempt is
// handed on early, with a state-limit-reached finding, and counted.
func TestConnectionLimit(t *testing.T) {
	var xs []craft.Exchange
	for i := 0; i < 5; i++ {
		xs = append(xs, craft.Exchange{Transport: craft.RoCEv2, Index: i, Start: craft.DefaultStart.Add(time.Duration(i) * time.Second)})
	}
	drop := map[int]bool{}
	for i := 0; i < 5; i++ {
		drop[3*i+1], drop[3*i+2] = true, true // only the REQs
	}
	c := runScenario(t, dissect.Config{MaxConnections: 2}, scenario{ib: xs, drop: drop}.write(t))
	if len(c.conns) != 5 || c.sum.StateDrops != 3 {
		t.Fatalf("%d connections, %d drops", len(c.conns), c.sum.StateDrops)
	}
	for i, x := range c.conns {
		wantCodes := []string{"state-limit-reached"}
		if i >= 3 {
			wantCodes = []string{"reply-missing"}
		}
		if !reflect.DeepEqual(codes(x.Findings), wantCodes) || x.RequestFrame != i+1 {
			t.Errorf("connection %d: frame %d, %v", i, x.RequestFrame, codes(x.Findings))
		}
	}
	if !strings.Contains(c.conns[0].Findings[0].Message, "more than 2 connection attempts") {
		t.Errorf("%v", c.conns[0].Findings)
	}
}

// TestConnectionLimitPerInput: the tracking limit applies to one input at
// a time; complete connections of earlier files are not "given up".
func TestConnectionLimitPerInput(t *testing.T) {
	f1 := scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Index: 0}}}.write(t)
	f2 := scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Index: 1}}}.write(t)
	c := runScenario(t, dissect.Config{MaxConnections: 1}, f1, f2)
	if len(c.conns) != 2 || c.sum.StateDrops != 0 || len(c.sum.Notes) != 0 {
		t.Fatalf("%d connections, %d drops, notes %v", len(c.conns), c.sum.StateDrops, c.sum.Notes)
	}
	for _, x := range c.conns {
		if x.State != record.Established || len(x.Findings) != 0 {
			t.Errorf("%s: %s %v", x.Initiator, x.State, codes(x.Findings))
		}
	}
}

// TestHistoryLimit: what established connections negotiated is kept for at
// most --max-connections services; the oldest is forgotten first, and the
// run says so.
func TestHistoryLimit(t *testing.T) {
	p := func(n int) craft.Peer { return craft.Peer{SendSize: n, ReceiveSize: n} }
	base := craft.DefaultStart
	xs := []craft.Exchange{
		{Transport: craft.RoCEv2, Index: 0, Initiator: p(4096), Responder: p(4096)},
		{Transport: craft.RoCEv2, Index: 1, Start: base.Add(time.Second), Initiator: p(4096), Responder: p(4096)},
		{Transport: craft.RoCEv2, Index: 2, Start: base.Add(2 * time.Second), Initiator: p(4096), Responder: p(4096)},
		// Reconnections with other sizes: 0's history is gone, 2's is not.
		{Transport: craft.RoCEv2, Index: 0, Attempt: 1, Start: base.Add(3 * time.Second), Initiator: p(8192), Responder: p(8192)},
		{Transport: craft.RoCEv2, Index: 2, Attempt: 1, Start: base.Add(4 * time.Second), Initiator: p(8192), Responder: p(8192)},
	}
	c := runScenario(t, dissect.Config{MaxConnections: 2}, scenario{ib: xs}.write(t))
	var changed []int
	for _, x := range c.conns {
		for _, f := range x.Findings {
			if f.Code.String() == "properties-changed-on-reconnect" {
				changed = append(changed, x.RequestFrame)
			}
		}
	}
	// Index 0 was forgotten when 2 was recorded; when 0 reconnected, 1 was
	// forgotten to make room.
	if !reflect.DeepEqual(changed, []int{13}) {
		t.Errorf("properties-changed-on-reconnect at %v, want [13]", changed)
	}
	if len(c.sum.Notes) != 1 || c.sum.Notes[0].Code != finding.StateLimitReached ||
		!strings.Contains(c.sum.Notes[0].Message, "what 2 established connections negotiated was forgotten") {
		t.Errorf("notes %v", c.sum.Notes)
	}
}
