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
	state        dissect.State
	ini, res     string
	reqFrame     int
	replyFrame   int
	retries      int
	toRes, toIni int // 0: no thresholds
	inv          bool
	codes        []string
}

func got(c *dissect.Connection) connWant {
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
			[]connWant{{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, true, nil}}},
		{"one side", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(8192, 8192, false), Responder: none}}},
			[]connWant{{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 1024, 1024, false, []string{"rpcrdma-one-sided"}}}},
		{"only the responder", scenario{ib: []craft.Exchange{{Transport: craft.InfiniBand, Initiator: none, Responder: p(8192, 8192, false)}}},
			[]connWant{{dissect.Established, "LID 1", "LID 2", 1, 2, 0, 1024, 1024, false, []string{"rpcrdma-one-sided"}}}},
		{"neither", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv1, Initiator: none, Responder: none}}},
			[]connWant{{dissect.Established, "::ffff:192.0.2.1", "::ffff:192.0.2.2", 1, 2, 0, 1024, 1024, false, nil}}},
		{"asymmetric sizes", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(16384, 2048, false),
			Responder: p(4096, 65536, false)}}},
			[]connWant{{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 16384, 2048, false, nil}}},
		{"R on the initiator only", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, true), Responder: p(4096, 4096, false)}}},
			[]connWant{{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, false, []string{"remote-invalidation-one-sided"}}}},
		{"R on the responder only", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, true)}}},
			[]connWant{{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, false, []string{"remote-invalidation-one-sided"}}}},
		{"REJ with private data", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, true),
			Responder: p(4096, 4096, true), Reject: true}}},
			[]connWant{{dissect.Rejected, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, false, []string{"connection-rejected"}}}},
		{"MPA reject", scenario{iwarp: []craft.IWARPExchange{{Rev: 2, Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true), Reject: true}}},
			[]connWant{{dissect.Rejected, "192.0.2.1:49153", "192.0.2.2:20049", 4, 5, 0, 4096, 4096, false, []string{"connection-rejected"}}}},
		{"MPA both R", scenario{iwarp: []craft.IWARPExchange{{Rev: 1, Initiator: p(4096, 16384, true), Responder: p(2048, 4096, true)}}},
			[]connWant{{dissect.Established, "192.0.2.1:49153", "192.0.2.2:20049", 4, 5, 0, 4096, 2048, true, nil}}},
		{"CM retries", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, false)}},
			dup: map[int]int{0: 2}},
			[]connWant{{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 4, 2, 4096, 4096, false, nil}}},
		{"no reply", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false)}}, drop: map[int]bool{1: true, 2: true}},
			[]connWant{{dissect.NoReply, "192.0.2.1", "192.0.2.2", 1, 0, 0, 0, 0, false, []string{"reply-missing"}}}},
		{"reply without request", scenario{ib: []craft.Exchange{{Transport: craft.RoCEv2, Initiator: p(4096, 4096, false)}}, drop: map[int]bool{0: true}},
			nil},
		{"reconnection with changed properties", scenario{ib: []craft.Exchange{
			{Transport: craft.RoCEv2, Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true)},
			{Transport: craft.RoCEv2, Attempt: 1, Start: base.Add(time.Second), Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true)},
			{Transport: craft.RoCEv2, Attempt: 2, Start: base.Add(2 * time.Second), Initiator: p(8192, 8192, true), Responder: p(4096, 4096, false)}}},
			[]connWant{
				{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 2, 0, 4096, 4096, true, nil},
				{dissect.Established, "192.0.2.1", "192.0.2.2", 4, 5, 0, 4096, 4096, true, nil},
				{dissect.Established, "192.0.2.1", "192.0.2.2", 7, 8, 0, 4096, 4096, false,
					[]string{"remote-invalidation-one-sided", "properties-changed-on-reconnect"}}}},
		{"MPA reconnection with changed properties", scenario{iwarp: []craft.IWARPExchange{
			{Rev: 2, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, false)},
			{Rev: 2, Attempt: 1, Start: base.Add(time.Second), Initiator: p(4096, 4096, false), Responder: p(2048, 2048, false)}}},
			[]connWant{
				{dissect.Established, "192.0.2.1:49153", "192.0.2.2:20049", 4, 5, 0, 4096, 4096, false, nil},
				{dissect.Established, "192.0.2.1:50153", "192.0.2.2:20049", 9, 10, 0, 2048, 2048, false, []string{"properties-changed-on-reconnect"}}}},
		{"interleaved connections between different hosts", scenario{interleave: true, ib: []craft.Exchange{
			{Transport: craft.RoCEv2, Index: 0, Initiator: p(4096, 4096, false), Responder: p(4096, 4096, false)},
			{Transport: craft.RoCEv2, Index: 1, Start: base.Add(500 * time.Microsecond), Initiator: p(8192, 8192, true), Responder: p(16384, 16384, true), Reject: true},
			{Transport: craft.RoCEv2, Index: 2, Start: base.Add(700 * time.Microsecond), Initiator: p(2048, 2048, false), Responder: p(1024, 1024, false)},
		}, iwarp: []craft.IWARPExchange{{Rev: 2, Index: 3, Start: base.Add(200 * time.Microsecond), Initiator: p(4096, 4096, true), Responder: p(4096, 4096, true)}}},
			// Frames by time: 1 REQ0, 2 SYN3, 3 REQ1, 4 REQ2, 5 REP0, 6 SYN-ACK3, 7 REJ1, 8 REP2, 9 RTU0, 10 ACK3,
			// 11 RTU2, 12 MPA_REQ3, 13 MPA_REP3.
			[]connWant{
				{dissect.Established, "192.0.2.1", "192.0.2.2", 1, 5, 0, 4096, 4096, false, nil},
				{dissect.Rejected, "192.0.2.3", "192.0.2.4", 3, 7, 0, 8192, 8192, false, []string{"connection-rejected"}},
				{dissect.Established, "192.0.2.5", "192.0.2.6", 4, 8, 0, 1024, 1024, false, nil},
				{dissect.Established, "192.0.2.7:49159", "192.0.2.8:20049", 12, 13, 0, 4096, 4096, true, nil}}},
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
			byState := map[dissect.State]int{}
			for _, w := range tc.want {
				byState[w.state]++
			}
			for _, st := range []dissect.State{dissect.Established, dissect.Rejected, dissect.NoReply} {
				if c.sum.Connections[st] != byState[st] {
					t.Errorf("summary %s = %d, want %d", st, c.sum.Connections[st], byState[st])
				}
			}
		})
	}
}

func TestConnectionFindingMessages(t *testing.T) {
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
		Responder: craft.Peer{Absent: true}, Reject: true}
	c := runScenario(t, dissect.Config{}, scenario{ib: []craft.Exchange{x}}.write(t))
	msgs := map[string]string{}
	for _, f := range c.conns[0].Findings {
		msgs[f.Code] = f.Message
	}
	want := map[string]string{
		"connection-rejected":           "REJ reason 28 (Consumer reject)",
		"rpcrdma-one-sided":             "only the initiator sent RPC-over-RDMA private data; the responder counts as Send Size 1024, Receive Size 1024, R=0",
		"remote-invalidation-one-sided": "the initiator set R, the responder did not: replies use plain Send, never Send With Invalidate",
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("messages\n got %v\nwant %v", msgs, want)
	}
}

// TestLiveOrder: in live mode each attempt is handed on when its state is
// known, right after the message that settles it; the unanswered one at the
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
	want := []string{"REQ 1", "REQ 2", "REP 3", "connection 192.0.2.3 established", "RTU 4", "connection 192.0.2.1 no-reply", "summary"}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

type orderSink struct{ log *[]string }

func (o *orderSink) Message(m *dissect.Message) error {
	*o.log = append(*o.log, fmt.Sprintf("%s %d", m.Name, m.Frame))
	return nil
}
func (o *orderSink) Connection(c *dissect.Connection) error {
	*o.log = append(*o.log, fmt.Sprintf("connection %s %s", c.Initiator, c.State))
	return nil
}
func (o *orderSink) Summary(*dissect.Summary) error { *o.log = append(*o.log, "summary"); return nil }

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

func TestNegotiate(t *testing.T) {
	r := func(s, v int, inv bool) *dissect.RPCRDMA {
		return &dissect.RPCRDMA{SendSize: s, ReceiveSize: v, RemoteInvalidate: inv}
	}
	cases := []struct {
		ini, res *dissect.RPCRDMA
		want     dissect.InlineThresholds
		inv      bool
	}{
		{nil, nil, dissect.InlineThresholds{1024, 1024}, false},
		{r(4096, 4096, true), nil, dissect.InlineThresholds{1024, 1024}, false},
		{r(4096, 8192, true), r(16384, 2048, true), dissect.InlineThresholds{2048, 8192}, true},
		{r(262144, 262144, false), r(262144, 262144, true), dissect.InlineThresholds{262144, 262144}, false},
	}
	for i, c := range cases {
		got, inv := dissect.Negotiate(c.ini, c.res)
		if got != c.want || inv != c.inv {
			t.Errorf("case %d: %+v %v", i, got, inv)
		}
	}
}
