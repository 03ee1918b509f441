package dissect_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
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
	w := connWant{state: c.State, ini: c.Initiator.String(), res: c.Responder.String(), reqFrame: c.RequestFrame, replyFrame: c.ReplyFrame,
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
func (*orderSink) RPC(*record.RPC) error           { return nil }

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

// TestTrackerLimitsInSummary: the attempts the tracker gave up at
// --max-connections, and what it forgot, reach the run's summary: counted
// in StateDrops, and its note among the summary's. (The tracker's own tests
// are in dissect/conn.)
func TestTrackerLimitsInSummary(t *testing.T) {
	p := func(n int) craft.Peer { return craft.Peer{SendSize: n, ReceiveSize: n} }
	base := craft.DefaultStart
	xs := []craft.Exchange{
		{Transport: craft.RoCEv2, Index: 0, Initiator: p(4096), Responder: p(4096)},
		{Transport: craft.RoCEv2, Index: 1, Start: base.Add(time.Second), Initiator: p(4096), Responder: p(4096)},
		{Transport: craft.RoCEv2, Index: 2, Start: base.Add(2 * time.Second), Initiator: p(4096), Responder: p(4096)},
		{Transport: craft.RoCEv2, Index: 0, Attempt: 1, Start: base.Add(3 * time.Second), Initiator: p(8192), Responder: p(8192)},
	}
	for i := 5; i < 8; i++ { // three REQs that stay unanswered (their REP and RTU dropped below)
		xs = append(xs, craft.Exchange{Transport: craft.RoCEv2, Index: i, Start: base.Add(time.Duration(i) * time.Second)})
	}
	drop := map[int]bool{13: true, 14: true, 16: true, 17: true, 19: true, 20: true}
	c := runScenario(t, dissect.Config{MaxConnections: 2}, scenario{ib: xs, drop: drop}.write(t))
	// Seven attempts against a limit of two, offline. The four complete
	// ones are finished and cost nothing; the third unanswered REQ gives up
	// the first. Index 0's history was forgotten when 2 was recorded, so its
	// reconnection was not compared; 1's was forgotten when 0 reconnected,
	// which loses nothing, since 1 never reconnects.
	limited := 0
	for _, x := range c.conns {
		if hasFinding(x.Findings, finding.StateLimitReached) {
			limited++
			if x.Initiator.String() != "192.0.2.11" {
				t.Errorf("%s limited", x.Initiator)
			}
		}
	}
	if len(c.conns) != 7 || limited != 1 || c.sum.StateDrops != 1+1 {
		t.Errorf("%d connections, %d limited, %d drops", len(c.conns), limited, c.sum.StateDrops)
	}
	if len(c.sum.Notes) != 2 || c.sum.Notes[0].Code != finding.StateLimitReached ||
		!strings.HasPrefix(c.sum.Notes[0].Message, "1 connection attempt was reported before its end") ||
		!strings.HasPrefix(c.sum.Notes[1].Message, "1 reconnection could not be compared") ||
		c.sum.Drops[record.DropAttempts] != 1 || c.sum.Drops[record.DropReconnections] != 1 ||
		c.sum.Findings[finding.StateLimitReached] != limited+2 {
		t.Errorf("notes %v, findings %v", c.sum.Notes, c.sum.Findings)
	}
}

// TestSequentialConnectionsPastLimit: 70000 connections one after another,
// each from its own host, never two open at once, past the default
// --max-connections (65536): nothing is given up, so no state-limit-reached
// and no state drop; every connection is established and reported once.
func TestSequentialConnectionsPastLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("70000 connections")
	}
	const n = 70000
	var frames []craft.Frame
	var x craft.Exchange
	for i := range n {
		a, b := craft.Endpoints(0, false)
		a.IP = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		x = craft.Exchange{Transport: craft.RoCEv2, Index: i % 50000, Start: craft.DefaultStart.Add(time.Duration(i) * 10 * time.Millisecond),
			Initiator2: &a, Responder2: &b, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
		fs, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, fs...)
	}
	name := filepath.Join(t.TempDir(), "sequential.pcap")
	if err := craft.WriteFile(name, frames); err != nil {
		t.Fatal(err)
	}
	var sink countSink
	sum, err := dissect.Run(context.Background(), []string{name}, nil, dissect.Config{}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if sink.conns != n || sink.limited != 0 || sum.Connections[record.Established] != n || sum.StateDrops != 0 ||
		sum.Findings[finding.StateLimitReached] != 0 || len(sum.Notes) != 0 {
		t.Errorf("%d connections (%d established), %d with state-limit-reached, %d state drops, notes %v",
			sink.conns, sum.Connections[record.Established], sink.limited, sum.StateDrops, sum.Notes)
	}
}

// countSink counts connections, and those with state-limit-reached.
type countSink struct {
	dissect.NopSink
	conns, limited int
}

func (c *countSink) Connection(x *record.Connection) error {
	c.conns++
	if hasFinding(x.Findings, finding.StateLimitReached) {
		c.limited++
	}
	return nil
}

func (*orderSink) Update(*record.ConnectionUpdate) error { return nil }
