// Package conn pairs connection messages into connection attempts, names
// each attempt's upper layer protocol (RPC-over-RDMA, NVMe-oF, iSER, ...)
// and works out what it negotiated under that layer's rules: under RFC
// 8797 the inline threshold each way and whether Send With Invalidate may
// be used, under iSER's the latter.
//
// The Tracker takes one message at a time and returns what happened, as
// Events: an attempt established (with what the data path needs to follow
// its traffic), ended, or handed on (its record is ready for the sink). It
// calls nobody; the run loop passes the events on.
//
// The package is cut along its seams:
//
//   - pairing.go: which attempt a message belongs to. An InfiniBand-family
//     REP answers the REQ whose Local Communication ID is its Remote
//     Communication ID, between the same two endpoints; a REJ or RTU names
//     the attempt the same way; an iWARP MPA Reply answers the Request of
//     the same TCP connection. Replies seen before their request are kept
//     for a while (captures merged from several interfaces). Attempts never
//     pair across inputs.
//   - queue.go: the attempts held, in request order, and their hand-on:
//     at the end of the input, live as soon as their state is known, or
//     early when the limit or the memory budget needs their room.
//   - history.go: what each service's last connection negotiated, so that
//     a reconnection that changed it is told (properties-changed-on-reconnect),
//     bounded, with what it forgot counted.
//   - rules.go: the connection rules, the one place that decides a
//     connection's upper layer and whether RPC-over-RDMA's rules apply, and
//     what those rules say of what was agreed (the findings on a
//     connection, and rpcrdma-absent on a message).
package conn

import (
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// EventKind is what happened to a connection attempt.
type EventKind uint8

// The events, as the tracker returns them.
const (
	// Established: an accepting reply (a REP, an MPA Reply without R)
	// established the attempt. The data path learns the connection from
	// it before the first frame of its traffic.
	Established EventKind = iota + 1
	// Ended: the connection ended: a DREP completed its disconnection
	// (frames still in flight after the DREQ belong to it), or a REJ of the
	// REP rejected it after all.
	Ended
	// HandedOn: the attempt's record goes to the sink, complete as far as
	// it is known.
	HandedOn
)

var eventNames = [...]string{Established: "established", Ended: "ended", HandedOn: "handed on"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return fmt.Sprintf("event %d", uint8(k))
}

// Event is one thing that happened to an attempt. The events of a call come
// in the order they happened: an MPA Reply that establishes its connection
// gives Established, then HandedOn (live, or when nothing can change the
// attempt any more).
type Event struct {
	Kind EventKind
	// Conn is the attempt's record. Conn.Number identifies the attempt for
	// the run: whoever keeps something of a connection keys it on that, not
	// on the pointer. Only HandedOn passes the record on; the other events
	// let it be read during the call.
	Conn *record.Connection
	// Established only: the CM fields of the REQ and the REP (InfiniBand
	// family; nil when a CM body did not decode, and for iWARP), the
	// accepting MPA Reply's header (iWARP: its IRD and ORD bound the
	// Reads), and the accepting reply's frame. Read during the call only.
	Request, Reply *record.CMInfo
	ReplyMPA       *record.MPAHeader
	Frame          int
}

// Tracker pairs messages into connection attempts. In live mode it hands
// each attempt on as soon as its state is known; otherwise all come out at
// the end of their input, in the order of their requests.
type Tracker struct {
	live bool
	max  int // attempts held at once
	seq  int

	// The attempts (queue.go).
	open []*attempt // not yet handed on, in request order (live: handed-on ones until compacted)
	held int        // attempts in open not yet handed on
	// finished are the attempts of open that are finished but not yet
	// handed on (offline), in the order they finished. They are handed on
	// early, in request order and without a finding, when the limit needs
	// their room.
	finished []*attempt
	done     []*attempt // live: handed on, still recognised (CM retries, REJ of a REP)
	dropped  int
	numbers  int // attempts opened in the run (Connection.Number)

	// Pairing (pairing.go).
	byReq    map[reqKey]*attempt
	reqCache [2]reqHit // the last look-ups of byReq
	byTCP    map[tcpConnKey]*attempt
	orphans  map[orphanKey]*record.Message // replies seen before their request
	oOrder   []orphanKey                   // orphans, oldest first

	// The history of the services (history.go).
	history map[serviceKey]*negotiated
	hOrder  []histEntry // history in the order it was recorded
	// forgotten are the services whose history was evicted at the limit
	// (by a hash of their key, with when), so that a reconnection to one
	// counts as a comparison lost; fOrder is their order, oldest first.
	forgotten map[uint64]int
	fOrder    []histHash
	// recall holds the services that fell out of forgotten, as a Bloom
	// filter (made when first needed): a reconnection to one still counts
	// as lost, except that a false positive may count one too many.
	recall []uint64
	seed   maphash.Seed
	forgot int // reconnections not compared

	events  []Event       // what the current call returns
	reqInfo record.CMInfo // the REQ's fields an Established event points to

	// With Reuse: the attempts handed on by the last call (or let go of
	// since), to be reused from the next call on once nothing finds them,
	// and those free for reuse.
	reuse       bool
	handed      []*attempt
	handedLook  int // len(handed) at which begin looks through them
	free        []*attempt
	freeEntries []*negotiated // history entries free for reuse

	budget *budget.Budget // the run's memory budget, or nil
	// idxMark is the most entries byReq and byTCP held since each was
	// made, idxCharged what their empty room is charged (chargeIndex).
	idxMark    [2]int
	idxCharged int
}

// DefaultMaxConnections bounds the attempts held at once: about 1 KB
// each, 64 MiB at most.
const DefaultMaxConnections = 65536

// NewTracker makes a tracker holding at most max attempts at once (0: the
// default).
func NewTracker(live bool, max int) *Tracker {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	t := &Tracker{live: live, max: max, seed: maphash.MakeSeed()}
	t.reset()
	return t
}

func (t *Tracker) reset() {
	for _, o := range t.orphans {
		t.budget.Release(budget.Orphans, orphanCost(o))
	}
	t.budget.Release(budget.Attempts, t.idxCharged)
	t.idxMark, t.idxCharged = [2]int{}, 0
	t.byReq = map[reqKey]*attempt{}
	t.reqCache = [2]reqHit{}
	t.byTCP = map[tcpConnKey]*attempt{}
	t.orphans = map[orphanKey]*record.Message{}
	t.oOrder = nil
	t.history = map[serviceKey]*negotiated{}
	t.hOrder = nil
	t.forgotten = map[uint64]int{}
	t.fOrder = nil
	t.recall = nil
	for _, c := range t.done {
		c.inDone = false
	}
	t.done = nil
}

// Reuse says that whoever takes the events reads each HandedOn record
// until the tracker's next call only (the run loop's sink keeps none): the
// tracker then builds later attempts in the storage of those it handed on,
// so that following connection setups allocates nothing per connection.
func (t *Tracker) Reuse() { t.reuse = true }

// SetBudget makes the tracker charge the attempts and orphan replies it
// holds to b, the run's memory budget.
func (t *Tracker) SetBudget(b *budget.Budget) { t.budget = b }

// NextInput starts a new input: attempts never pair across inputs, so
// call Finish first to hand on those of the input before.
func (t *Tracker) NextInput() { t.reset() }

// Dropped counts attempts handed on early because of the tracking limit.
func (t *Tracker) Dropped() int { return t.dropped }

// Forgotten counts what forgetting at the tracking limit lost: the
// reconnections that could not be compared with their service's previous
// connection because what it negotiated had been forgotten. Forgetting a
// service that never reconnects loses nothing and is not counted.
func (t *Tracker) Forgotten() int { return t.forgot }

// Notes are the tracker's findings about the run as a whole: the attempts
// it handed on before their end (each record says so too, but -q or -Y may
// show none), and what the limit made it forget, which no connection
// record can show.
func (t *Tracker) Notes() []finding.Finding {
	var out []finding.Finding
	if t.dropped > 0 {
		what := fmt.Sprintf("%d connection attempts were reported before their end", t.dropped)
		if t.dropped == 1 {
			what = "1 connection attempt was reported before its end"
		}
		out = append(out, finding.New(finding.StateLimitReached,
			"%s, as far as they were known, at the limit of %d held at once (--max-connections) or because the memory budget was full: each connection record says so",
			what, t.max))
	}
	if t.forgot > 0 {
		what := fmt.Sprintf("%d reconnections", t.forgot)
		if t.forgot == 1 {
			what = "1 reconnection"
		}
		out = append(out, finding.New(finding.StateLimitReached,
			"%s could not be compared with the service's previous connection (properties-changed-on-reconnect): what it negotiated was forgotten at the --max-connections limit", what))
	}
	return out
}

// Message takes the next message and returns what it made happen. The
// connection rules judge the message first (rpcrdma-absent, a reply read
// as its request's upper layer), and it learns the number of its attempt
// (Message.Conn). The tracker keeps nothing of m after the call: what an
// attempt needs of it is copied. The events are valid until the next call.
func (t *Tracker) Message(m *record.Message) []Event {
	t.begin()
	t.judge(m)
	if m.Kind.IsMPA() {
		t.mpa(m)
	} else {
		t.cm(m)
	}
	if c := t.attemptOf(m); c != nil {
		m.Conn = c.Number
		c.absent = c.absent || c.ULP == "" && hasAbsent(m)
	}
	return t.events
}

// Finish hands on the attempts not yet handed on, in request order, with
// those that got no reply marked so. The events are valid until the next
// call.
func (t *Tracker) Finish() []Event { return t.finish("") }

// FinishCut is Finish for an input that ended early (why says how: "the
// file is damaged after frame 12"): an attempt without a reply is Cut, not
// NoReply, since the reply may be in what was not read.
func (t *Tracker) FinishCut(why string) []Event { return t.finish(why) }

func (t *Tracker) finish(cut string) []Event {
	t.begin()
	var out []*attempt
	for _, c := range t.open {
		c.inOpen = false
		if c.emitted {
			continue
		}
		switch {
		case c.State == record.NoReply && cut != "":
			c.State = record.Cut
			c.Findings = append(c.Findings, finding.New(finding.ReplyMissing,
				"no reply to the request of frame %d before the input ended early (%s): the reply may be in what was not read",
				c.RequestFrame, cut))
		case c.State == record.NoReply && c.partialReply != 0:
			c.Findings = append(c.Findings, finding.New(finding.ReplyMissing,
				"the MPA Reply of frame %d ended before its flags: whether it accepted the request of frame %d is not known",
				c.partialReply, c.RequestFrame))
		case c.State == record.NoReply:
			c.Findings = append(c.Findings, finding.New(finding.ReplyMissing,
				"no reply to the request of frame %d by the end of the capture", c.RequestFrame))
		}
		out = append(out, c)
		t.budget.Release(budget.Attempts, c.cost)
	}
	slices.SortStableFunc(out, func(a, b *attempt) int { return a.seq - b.seq })
	t.open, t.held, t.finished = nil, 0, nil
	for _, c := range out {
		t.handedOn(c)
	}
	return t.events
}

// begin starts a call: the events of the last are read, so its handed-on
// attempts that nothing finds any more are free.
func (t *Tracker) begin() {
	clear(t.events)
	t.events = t.events[:0]
	// The attempts handed on are looked through when maxFree more came
	// since the last look, not at every message: many of them stay
	// recognised (inDone) for a long while, and a look goes through them
	// all. At most maxFree wait beyond those kept.
	if !t.reuse || len(t.handed) < t.handedLook {
		return
	}
	kept := t.handed[:0]
	for _, c := range t.handed {
		if c.inOpen || c.inDone || t.indexed(c) {
			kept = append(kept, c) // still held or recognised: freed once let go
			continue
		}
		if len(t.free) < maxFree {
			t.free = append(t.free, c)
		}
	}
	clear(t.handed[len(kept):])
	t.handed = kept
	t.handedLook = len(kept) + maxFree
}

// attempt is an attempt to fill: a free one (its findings' storage kept),
// or a new one.
func (t *Tracker) attempt() *attempt {
	n := len(t.free)
	if n == 0 {
		return &attempt{}
	}
	c := t.free[n-1]
	t.free = t.free[:n-1]
	fs, neg := c.Findings[:0], c.negotiation[:0]
	clear(fs[:cap(fs)])
	*c = attempt{negotiation: neg}
	c.Findings = fs
	return c
}

// maxFree bounds the attempts kept for reuse. Only what is held is
// charged to the budget, so the free ones are few: enough for a stream of
// connections handed on one by one (a limit reached, live capture), and
// nothing that a full budget could not take back by shedding attempts
// (each attempt is its own allocation, which the collector frees once
// nothing holds it).
const maxFree = 256

// happened adds an event of c.
func (t *Tracker) happened(k EventKind, c *attempt) {
	t.events = append(t.events, Event{Kind: k, Conn: &c.Connection})
}

// handedOn adds the HandedOn event of c: the findings on what it
// negotiated join its record first.
func (t *Tracker) handedOn(c *attempt) {
	if c.negotiation != nil {
		c.Findings = append(c.negotiation, c.Findings...)
		c.negotiation = nil
	}
	t.happened(HandedOn, c)
	if t.reuse {
		t.handed = append(t.handed, c)
	}
}

// established adds the Established event of an attempt an accepting reply
// m established.
func (t *Tracker) established(c *attempt, m *record.Message) {
	e := Event{Kind: Established, Conn: &c.Connection, Reply: m.CMInfo, ReplyMPA: m.MPAInfo, Frame: m.Frame}
	if c.hasReqInfo {
		t.reqInfo = c.req.info()
		e.Request = &t.reqInfo
	}
	t.events = append(t.events, e)
}
