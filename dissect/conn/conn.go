// Package conn pairs connection messages into connection attempts, names
// each attempt's upper layer protocol (RPC-over-RDMA, NVMe-oF, iSER, ...)
// and works out what it negotiated under that layer's rules: under RFC
// 8797 the inline threshold each way and whether Send With Invalidate may
// be used, under iSER's the latter. It is the one home of the connection
// rules (the findings on a connection, and rpcrdma-absent, which applies
// only where RPC-over-RDMA's rules do; ulp.go).
//
// Pairing: an InfiniBand-family REP answers the REQ whose Local
// Communication ID is its Remote Communication ID, between the same two
// addresses; a REJ or RTU names the attempt the same way; an iWARP MPA
// Reply answers the Request of the same TCP connection. Replies seen before
// their request are kept for a while (captures merged from several
// interfaces). Attempts never pair across inputs.
package conn

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// attempt is a connection attempt being tracked: the record handed on,
// and what the tracker needs to know of it.
type attempt struct {
	record.Connection
	seq     int // order of the request
	reqID   uint32
	closed  bool // a DREQ or DREP was seen
	emitted bool
	// finished: nothing can change the attempt any more (an RTU or an
	// accepting MPA Reply, a rejection, a disconnection). Offline it waits
	// in Tracker.finished for its turn, and no longer counts against the
	// limit. (The three flags share a word with reqID: 65536 attempts are
	// held.)
	finished bool
	tid      uint64        // the REQ's Transaction ID
	st       *attemptState // shared with the history of the service

	// negotiation holds the findings on what an accepting reply agreed;
	// they join Findings when the attempt is handed on, unless the reply
	// is rejected after all (a REJ of the REP): a rejected connection
	// negotiated nothing.
	negotiation []finding.Finding

	partialReply int // an MPA Reply that ended before its flags
	cost         int // what it was charged to the budget

	reqInfo *record.CMInfo // the REQ's CM fields, for the hand-over to the data path
}

// Negotiate computes what two sides agree from their RFC 8797 messages; a
// side without one counts as Send Size 1024, Receive Size 1024, R=0.
func Negotiate(ini, res *record.RPCRDMA) (record.InlineThresholds, bool) {
	send := func(r *record.RPCRDMA) int {
		if r == nil {
			return layers.DefaultInline
		}
		return r.SendSize
	}
	recv := func(r *record.RPCRDMA) int {
		if r == nil {
			return layers.DefaultInline
		}
		return r.ReceiveSize
	}
	inv := func(r *record.RPCRDMA) bool { return r != nil && r.RemoteInvalidate }
	return record.InlineThresholds{
		InitiatorToResponder: min(send(ini), recv(res)),
		ResponderToInitiator: min(send(res), recv(ini)),
	}, inv(ini) && inv(res)
}

// Attempts are looked up by their endpoints (the tracker is emptied between
// inputs, which never pair).
type reqKey struct {
	ini, res string
	id       uint32
}

type tcpConnKey struct{ ini, res string }

type serviceKey struct {
	transport record.Transport
	ini, res  string
	svc       uint64
}

// attemptState is what the history of a service needs to know of an attempt
// after the fact: a REJ of the REP can still reject it.
type attemptState struct {
	final    bool // RTU (MPA Reply) or REJ seen: nothing changes it any more
	rejected bool
}

// negotiated is what an established connection agreed, kept to compare the
// next connection of the same initiator, responder and service with it.
type negotiated struct {
	inline record.InlineThresholds
	inv    bool
	frame  int
	seq    int // when it was recorded, to evict the oldest
	st     *attemptState
	// prev is the entry it replaced while that one could still be
	// rejected (no RTU yet), so that a late REJ falls back to it.
	prev *negotiated
}

// maxHistoryChain bounds the entries kept behind one service's latest.
const maxHistoryChain = 4

type histEntry struct {
	k   serviceKey
	seq int
}

type histHash struct {
	h   uint64
	seq int
}

// Tracker pairs messages into connection attempts. In live mode it hands
// each attempt on as soon as its state is known; otherwise all come out at
// the end of their input, in the order of their requests.
type Tracker struct {
	live bool
	max  int // attempts held at once
	seq  int
	open []*attempt // not yet handed on, in request order (live: handed-on ones until compacted)
	held int        // attempts in open not yet handed on
	// finished are the attempts of open that are finished but not yet
	// handed on (offline), in the order they finished. They are handed on
	// early, in request order and without a finding, when the limit needs
	// their room.
	finished []*attempt
	done     []*attempt // live: handed on, still recognised (CM retries, REJ of a REP)
	byReq    map[reqKey]*attempt
	byTCP    map[tcpConnKey]*attempt
	orphans  map[orphanKey]*record.Message // replies seen before their request
	oOrder   []orphanKey                   // orphans, oldest first
	history  map[serviceKey]*negotiated
	hOrder   []histEntry // history in the order it was recorded
	dropped  int
	// forgotten are the services whose history was evicted at the limit
	// (by a hash of their key, with when), so that a reconnection to one
	// counts as a comparison lost; fOrder is their order, oldest first.
	forgotten map[uint64]int
	fOrder    []histHash
	// recall holds the services that fell out of forgotten, as a Bloom
	// filter (made when first needed): a reconnection to one still counts
	// as lost, except that a false positive may count one too many.
	recall  []uint64
	seed    maphash.Seed
	forgot  int // reconnections not compared
	numbers int // attempts opened in the run (Connection.Number)

	handover Handover // the data path, told of connections established and ended

	budget *budget.Budget // the run's memory budget, or nil
}

// DefaultMaxConnections bounds the attempts held at once: about 1 KB
// each, 64 MiB at most.
const DefaultMaxConnections = 65536

// maxDone bounds the attempts a live tracker still recognises after it
// handed them on, so that a CM retry of a REQ that was answered, or a REJ
// of a REP, joins its attempt rather than opening a new one.
const maxDone = 4096

// maxOrphans bounds the replies kept in case their request comes later
// (captures merged from several interfaces). Most such replies answer a
// request from before the capture started, so forgetting the oldest loses
// nothing that was ever going to pair.
const maxOrphans = 1024

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
	t.byReq = map[reqKey]*attempt{}
	t.byTCP = map[tcpConnKey]*attempt{}
	t.orphans = map[orphanKey]*record.Message{}
	t.oOrder = nil
	t.history = map[serviceKey]*negotiated{}
	t.hOrder = nil
	t.forgotten = map[uint64]int{}
	t.fOrder = nil
	t.recall = nil
	t.done = nil
}

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

// Notes are the tracker's findings about the run as a whole: what the
// limit made it forget, which no connection record can show.
func (t *Tracker) Notes() []finding.Finding {
	if t.forgot == 0 {
		return nil
	}
	what := fmt.Sprintf("%d reconnections", t.forgot)
	if t.forgot == 1 {
		what = "1 reconnection"
	}
	return []finding.Finding{finding.New(finding.StateLimitReached,
		"%s could not be compared with the service's previous connection (properties-changed-on-reconnect): what it negotiated was forgotten at the --max-connections limit", what)}
}

// Message takes the next message and returns the attempts it makes ready
// (live mode, or attempts pushed out by the limit).
func (t *Tracker) Message(m *record.Message) []*record.Connection {
	t.judge(m)
	var ready []*attempt
	if m.Kind.IsMPA() {
		ready = t.mpa(m)
	} else {
		ready = t.cm(m)
	}
	if c := t.attemptOf(m); c != nil {
		m.Conn = c.Number
	}
	return records(ready)
}

// records are the connection records of attempts being handed on.
func records(as []*attempt) []*record.Connection {
	if len(as) == 0 {
		return nil
	}
	out := make([]*record.Connection, len(as))
	for i, a := range as {
		if a.negotiation != nil {
			a.Findings = append(a.negotiation, a.Findings...)
			a.negotiation = nil
		}
		out[i] = &a.Connection
	}
	return out
}

// byLocal finds the attempt a message belongs to from its sender's side:
// the initiator's messages carry the REQ's Local Communication ID as their
// own, the responder's carry it as the Remote Communication ID.
func (t *Tracker) byLocal(m *record.Message) (c *attempt, fromInitiator bool) {
	if c = t.byReq[reqKey{m.Src, m.Dst, m.LocalCommID}]; c != nil {
		return c, true
	}
	return t.byReq[reqKey{m.Dst, m.Src, m.RemoteCommID}], false
}

func (t *Tracker) cm(m *record.Message) []*attempt {
	switch m.Kind {
	case record.KindREQ:
		k := reqKey{m.Src, m.Dst, m.LocalCommID}
		if c := t.byReq[k]; c != nil {
			// A CM retry of the same attempt: the REQ again before any
			// reply, or with the same Transaction ID after one (the reply
			// was lost on its way). A REQ that reuses the Communication ID
			// of an answered or disconnected attempt is a new attempt.
			if c.ReplyFrame == 0 || (!c.closed && m.TransactionID == c.tid) {
				c.Retries++
				return nil
			}
			t.unindex(c)
		}
		c := &attempt{Connection: record.Connection{File: m.File, Transport: m.Transport, Initiator: m.Src, Responder: m.Dst,
			ServiceID: m.ServiceID, HasServiceID: m.HasServiceID, RequestFrame: m.Frame, State: record.NoReply,
			InitiatorRPCRDMA: m.RPCRDMA, InitiatorULP: m.ULP}, reqID: m.LocalCommID, tid: m.TransactionID, st: &attemptState{}, reqInfo: m.CMInfo}
		decideULP(&c.Connection)
		t.number(c)
		t.byReq[k] = c
		ready := t.add(c)
		if r := t.takeOrphan(orphanKey{req: k}); r != nil { // its reply came first
			ready = append(ready, t.cm(r)...)
		}
		return ready
	case record.KindREP:
		k := reqKey{m.Dst, m.Src, m.RemoteCommID}
		c := t.byReq[k]
		if c == nil {
			t.orphan(orphanKey{req: k}, m)
			return nil
		}
		if c.ReplyFrame != 0 {
			return nil // a repeated reply
		}
		return t.accept(c, m)
	case record.KindREJ:
		c, fromInitiator := t.byLocal(m)
		switch {
		case c == nil:
			if m.RemoteCommID != 0 {
				t.orphan(orphanKey{req: reqKey{m.Dst, m.Src, m.RemoteCommID}}, m)
			}
			return nil
		case c.closed || c.st.final:
			return nil // too late, or repeated
		case fromInitiator && c.ReplyFrame == 0:
			// The initiator gave up before any reply (Linux sends a REJ
			// with reason Timeout when it abandons a REQ).
			return t.reject(c, m, false, finding.New(finding.ConnectionRejected,
				"the initiator gave up before any reply: %s", rejReason(m)))
		case c.ReplyFrame == 0:
			return t.reject(c, m, true, finding.New(finding.ConnectionRejected, "%s", rejReason(m)))
		}
		// A REJ of the REP, instead of an RTU: from the initiator (it did
		// not accept the REP) or from the responder (the RTU never came).
		// The REP stays the reply.
		who := "the responder"
		if fromInitiator {
			who = "the initiator"
		}
		return t.rejected(c, finding.New(finding.ConnectionRejected, "%s rejected the REP in frame %d: %s",
			who, m.Frame, rejReason(m)))
	case record.KindRTU:
		if c, fromInitiator := t.byLocal(m); c != nil && fromInitiator && c.State == record.Established && !c.st.final {
			c.st.final = true
			return t.emit(c)
		}
	case record.KindDREQ, record.KindDREP:
		if c, _ := t.byLocal(m); c != nil && c.ReplyFrame != 0 {
			if m.Kind == record.KindDREP && c.State == record.Established {
				t.ended(c) // the disconnection is complete: a DREQ's sender may still see frames flushed
			}
			if !c.closed {
				c.closed = true // disconnected: nothing changes it any more
				return t.emit(c)
			}
		}
	}
	// MRA, LAP, APR, SIDR: nothing in them changes what was negotiated.
	return nil
}

// orphanKey names the request a reply answers: the REQ's (InfiniBand
// family) or the TCP connection's (iWARP).
type orphanKey struct {
	req reqKey
	tcp tcpConnKey
}

// orphan keeps a reply whose request was not seen (yet), the oldest
// forgotten first: beyond maxOrphans, or when the budget has no room.
func (t *Tracker) orphan(k orphanKey, m *record.Message) {
	o := slimOrphan(m)
	cost := orphanCost(o)
	if old, ok := t.orphans[k]; ok { // replaced (its key stays in oOrder, and is skipped)
		t.budget.Release(budget.Orphans, orphanCost(old))
		delete(t.orphans, k)
	}
	for !t.budget.Charge(budget.Orphans, cost) {
		if !t.forgetOrphan() {
			return // the budget is full of others' state: the reply is not kept
		}
	}
	t.orphans[k] = o
	t.oOrder = append(t.oOrder, k)
	for len(t.oOrder) > maxOrphans {
		t.forgetOrphan()
	}
}

// forgetOrphan forgets the oldest orphan reply; false when there is none.
func (t *Tracker) forgetOrphan() bool {
	for len(t.oOrder) > 0 {
		k := t.oOrder[0]
		t.oOrder = t.oOrder[1:]
		if o, ok := t.orphans[k]; ok {
			t.budget.Release(budget.Orphans, orphanCost(o))
			delete(t.orphans, k)
			return true
		}
	}
	return false
}

// orphanCost estimates what a slimmed orphan reply holds.
func orphanCost(m *record.Message) int {
	return 700 + len(m.PrivateData) + len(m.Src) + len(m.Dst) + 64*len(m.Findings)
}

// orphanPD is how much of an orphan reply's private data is kept: enough
// for every upper layer's layout that readAs may read it as (the largest,
// SRP's login response, is 52 octets after an IP CM header).
const orphanPD = 256

// slimOrphan is what an orphan reply keeps until its request comes: the
// message was handed on already, and 1024 of them with 64 KiB of MPA
// private data and their field lists would hold 70 MB. Its layers' field
// lists go, and its private data is cut to orphanPD octets (copied, so the
// rest can be freed).
func slimOrphan(m *record.Message) *record.Message {
	s := *m
	s.Frames, s.Tunnel, s.IB, s.MAD, s.CM, s.IPCM, s.MPA = nil, nil, nil, nil, nil, nil, nil
	s.PrivateData = slices.Clone(m.PrivateData[:min(len(m.PrivateData), orphanPD)])
	s.Findings = slices.Clone(m.Findings)
	return &s
}

// takeOrphan returns and forgets the reply kept for k, or nil.
func (t *Tracker) takeOrphan(k orphanKey) *record.Message {
	m, ok := t.orphans[k]
	if ok {
		t.budget.Release(budget.Orphans, orphanCost(m))
		delete(t.orphans, k)
	}
	return m
}

func rejReason(m *record.Message) string {
	if m.CMInfo == nil {
		return "REJ"
	}
	r := m.CMInfo.RejectReason
	if name := layers.RejectReasonName(r); name != "" {
		return fmt.Sprintf("REJ reason %d (%s)", r, name)
	}
	return fmt.Sprintf("REJ reason %d", r)
}

func (t *Tracker) mpa(m *record.Message) []*attempt {
	switch m.Kind {
	case record.KindMPARequest:
		// One TCP connection carries one MPA Request (the reassembler hands
		// on each stream's once), so a Request on a 4-tuple already seen is
		// a new TCP connection that reuses it.
		k := tcpConnKey{m.Src, m.Dst}
		if old := t.byTCP[k]; old != nil {
			t.unindex(old)
		}
		c := &attempt{Connection: record.Connection{File: m.File, Transport: record.IWARP, Initiator: m.Src, Responder: m.Dst,
			RequestFrame: m.Frame, State: record.NoReply, InitiatorRPCRDMA: m.RPCRDMA, InitiatorULP: m.ULP}, st: &attemptState{}}
		if port, ok := portOf(m.Dst); ok {
			c.Port, c.HasPort = port, true
		}
		decideULP(&c.Connection)
		t.number(c)
		t.byTCP[k] = c
		ready := t.add(c)
		if r := t.takeOrphan(orphanKey{tcp: k}); r != nil { // its Reply came first
			ready = append(ready, t.mpa(r)...)
		}
		return ready
	case record.KindMPAReply:
		k := tcpConnKey{m.Dst, m.Src}
		c := t.byTCP[k]
		if c == nil {
			t.orphan(orphanKey{tcp: k}, m)
			return nil
		}
		if c.ReplyFrame != 0 {
			return nil
		}
		switch h := m.MPAInfo; {
		case h == nil || !h.HasFlags:
			c.partialReply = m.Frame // the stream ended before the Reply's flags: it settles nothing
			return nil
		case h.Reject:
			return t.reject(c, m, true, finding.New(finding.ConnectionRejected, "MPA Reply with R set"))
		}
		// MPA has no third message: the Reply establishes the connection.
		c.st.final = true
		return t.accept(c, m)
	}
	return nil
}

// portOf reads the port of "addr:port" or "[addr]:port".
func portOf(s string) (uint16, bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return 0, false
	}
	p, err := strconv.ParseUint(s[i+1:], 10, 16)
	return uint16(p), err == nil
}

// hostOf strips the port of an iWARP endpoint, so that a reconnection from a
// new port is the same initiator.
func hostOf(s string) string {
	if i := strings.LastIndexByte(s, ':'); i >= 0 && (strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1) {
		return strings.Trim(s[:i], "[]")
	}
	return s
}

// add queues a new attempt. Beyond the limit, or when the budget has no
// room for it, it first hands on the finished attempts (offline), which
// loses nothing; only when more than the limit are unfinished, or the
// budget is still full, does it hand on the oldest ones still held, as far
// as they are known, each with a state-limit-reached finding.
func (t *Tracker) add(c *attempt) []*attempt {
	t.seq++
	c.seq = t.seq
	t.open = append(t.open, c)
	t.held++
	c.cost = attemptCost(c)
	fits := t.budget.Charge(budget.Attempts, c.cost)
	if t.held <= t.max && fits {
		return nil
	}
	ready := t.handOnFinished()
	if !fits {
		fits = t.budget.Charge(budget.Attempts, c.cost)
	}
	for t.held > t.max || !fits {
		t.dropEmitted()
		if t.open[0] == c {
			t.budget.Force(budget.Attempts, c.cost) // the newest alone is over the budget: it stays
			break
		}
		ready = append(ready, t.dropOldest(t.held > t.max))
		if !fits {
			fits = t.budget.Charge(budget.Attempts, c.cost)
		}
	}
	return ready
}

// dropOldest hands on the oldest attempt still held, before its end, with
// a state-limit-reached finding: for the --max-connections limit (count)
// or for the memory budget.
func (t *Tracker) dropOldest(count bool) *attempt {
	old := t.open[0]
	t.open[0] = nil // the backing array must not keep it alive
	t.open = t.open[1:]
	t.held--
	t.dropped++
	t.unindex(old)
	t.budget.Release(budget.Attempts, old.cost)
	if count {
		old.Findings = append(old.Findings, finding.New(finding.StateLimitReached,
			"more than %d unfinished connection attempts were held at once: this one is reported before its end, as far as it is known", t.max))
	} else {
		t.budget.Lost(budget.Attempts)
		old.Findings = append(old.Findings, finding.New(finding.StateLimitReached,
			"%s: this unfinished connection attempt, the oldest held, is reported before its end, as far as it is known", t.budget.Full()))
	}
	old.emitted = true
	return old
}

// Shed makes room in a full budget (budget.Over), between two messages:
// it hands on the finished attempts, which loses nothing, then the oldest
// unfinished ones while the budget is still over, an eighth of those held
// at most.
func (t *Tracker) Shed() []*record.Connection {
	if !t.budget.Over() {
		return nil
	}
	ready := t.handOnFinished()
	for n := t.held / 8; n > 0 && t.budget.Over(); n-- {
		t.dropEmitted()
		if len(t.open) == 0 {
			break
		}
		ready = append(ready, t.dropOldest(false))
	}
	return records(ready)
}

// attemptCost estimates what an attempt holds, for the budget: the attempt
// and its index entries, its addresses, and what its upper layer decoded
// of the request.
func attemptCost(c *attempt) int {
	n := attemptBase + len(c.Initiator) + len(c.Responder)
	if u := c.InitiatorULP; u != nil {
		n += 160 + len(u.Name) + len(u.Summary) + len(u.Problem)
		for _, f := range u.Fields {
			n += 96 + len(f.Bytes)
		}
	}
	return n
}

// attemptBase is an attempt's cost without what varies, replyCost what an
// accepting reply adds (TestAttemptCost holds the estimates to what the
// heap shows).
const (
	attemptBase = 560
	replyCost   = 300
)

// handOnFinished hands on the finished attempts not yet handed on, in
// request order. They stay recognised for a while, as a live tracker's do.
func (t *Tracker) handOnFinished() []*attempt {
	if len(t.finished) == 0 {
		return nil
	}
	q := t.finished
	t.finished = nil
	sort.Slice(q, func(i, j int) bool { return q[i].seq < q[j].seq })
	out := make([]*attempt, 0, len(q))
	for _, c := range q {
		if !c.emitted {
			out = append(out, t.handOn(c))
		}
	}
	return out
}

// unindex stops later messages from finding c (a newer attempt may already
// have taken its place).
func (t *Tracker) unindex(c *attempt) {
	if c.Transport == record.IWARP {
		k := tcpConnKey{c.Initiator, c.Responder}
		if t.byTCP[k] == c {
			delete(t.byTCP, k)
		}
		return
	}
	k := reqKey{c.Initiator, c.Responder, c.reqID}
	if t.byReq[k] == c {
		delete(t.byReq, k)
	}
}

// reply records the reply to c and works out what the two sides agree
// under the rules of their upper layer (ulp.go). A REJ from the initiator
// carries nothing of the responder's.
func reply(c *attempt, m *record.Message, fromResponder bool) {
	c.ReplyFrame = m.Frame
	if fromResponder {
		c.ResponderRPCRDMA, c.ResponderULP = m.RPCRDMA, m.ULP
	}
	negotiate(&c.Connection)
}

// accept settles c with an accepting reply (a REP, or an MPA Reply without
// R): the connection rules judge what it agreed. A REP is not final: the
// RTU, or a REJ of the REP, settles it for good.
func (t *Tracker) accept(c *attempt, m *record.Message) []*attempt {
	reply(c, m, true)
	if !c.emitted && !c.finished {
		// What the reply adds (its RFC 8797 message, the service's
		// history): it cannot be refused, and the next attempt makes room.
		t.budget.Force(budget.Attempts, replyCost)
		c.cost += replyCost
	}
	c.State = record.Established
	if c.RPCRDMARulesApply() { // the rules on what was agreed are RPC-over-RDMA's
		c.negotiation = t.agreement(c)
		t.remember(c)
	}
	t.established(c, m)
	if c.st.final {
		return t.emit(c)
	}
	return nil
}

// reject settles c with a rejecting reply: a REJ, or an MPA Reply with R
// set. What the two sides advertised is still shown.
func (t *Tracker) reject(c *attempt, m *record.Message, fromResponder bool, why finding.Finding) []*attempt {
	reply(c, m, fromResponder)
	return t.rejected(c, why)
}

// rejected ends c as rejected (its REP, if any, stays the reply), for the
// reason the finding gives. A rejected connection negotiated nothing, and
// no longer counts as the earlier connection of its service.
func (t *Tracker) rejected(c *attempt, why finding.Finding) []*attempt {
	if c.State == record.Established && !c.closed {
		t.ended(c)
	}
	c.State, c.RejectReason, c.RemoteInvalidation = record.Rejected, why.Message, false
	c.st.final, c.st.rejected = true, true
	c.negotiation = nil
	c.Findings = append(c.Findings, why)
	return t.emit(c)
}

// emit marks c finished, and hands it on in live mode; offline it waits
// for the end of the input in request order, unless the limit needs its
// room first (add).
func (t *Tracker) emit(c *attempt) []*attempt {
	if c.emitted || c.finished {
		return nil
	}
	c.finished = true
	if !t.live {
		t.finished = append(t.finished, c)
		return nil
	}
	return []*attempt{t.handOn(c)}
}

// handOn hands c on. The tracker still recognises it for a while, so that
// its RTU, a CM retry or a late REJ does not open a new attempt.
func (t *Tracker) handOn(c *attempt) *attempt {
	c.emitted = true
	t.held--
	t.budget.Release(budget.Attempts, c.cost)
	t.dropEmitted()
	t.done = append(t.done, c)
	if len(t.done) > maxDone {
		t.unindex(t.done[0])
		t.done = t.done[1:]
	}
	return c
}

// dropEmitted removes handed-on attempts from the front of the queue, and
// compacts it when they pile up behind an old attempt still held.
func (t *Tracker) dropEmitted() {
	i := 0
	for i < len(t.open) && t.open[i].emitted {
		i++
	}
	clear(t.open[:i]) // handed on: the backing array must not keep them alive
	t.open = t.open[i:]
	if len(t.open) > 2*t.held+64 {
		kept := t.open[:0]
		for _, c := range t.open {
			if !c.emitted {
				kept = append(kept, c)
			}
		}
		clear(t.open[len(kept):])
		t.open = kept
	}
}

// remember records what an established attempt negotiated, to compare the
// next connection of the same initiator, responder and service with it.
func (t *Tracker) remember(c *attempt) {
	k := c.serviceKey()
	prev := t.history[k]
	if prev == nil {
		h := t.hash(k)
		if t.forgotten[h] != 0 {
			// A reconnection to a service whose history was forgotten: it
			// was not compared.
			delete(t.forgotten, h)
			t.forgot++
		} else if t.recalled(h) {
			t.forgot++
		}
	}
	for prev == nil && len(t.history) >= t.max && len(t.hOrder) > 0 {
		old := t.hOrder[0]
		t.hOrder = t.hOrder[1:]
		if cur := t.history[old.k]; cur != nil && cur.seq == old.seq {
			delete(t.history, old.k)
			t.forget(old.k)
		}
	}
	t.seq++
	e := &negotiated{inline: *c.Inline, inv: c.RemoteInvalidation, frame: c.RequestFrame, seq: t.seq, st: c.st}
	// Keep the entry it replaces while that one may still be rejected.
	if prev != nil && !prev.st.final {
		e.prev = prev
		n := 1
		for p := prev; p != nil; p = p.prev {
			if n++; n > maxHistoryChain {
				p.prev = nil
			}
		}
	}
	t.history[k] = e
	t.hOrder = append(t.hOrder, histEntry{k, t.seq})
	if len(t.hOrder) > 2*len(t.history)+64 {
		kept := t.hOrder[:0]
		for _, h := range t.hOrder {
			if cur := t.history[h.k]; cur != nil && cur.seq == h.seq {
				kept = append(kept, h)
			}
		}
		t.hOrder = kept
	}
}

// forget notes that the history of service k was evicted, so that a
// reconnection to it counts as a lost comparison. At most max services are
// noted exactly; the oldest beyond that go to the Bloom filter.
func (t *Tracker) forget(k serviceKey) {
	t.seq++
	h := t.hash(k)
	t.forgotten[h] = t.seq
	t.fOrder = append(t.fOrder, histHash{h, t.seq})
	for len(t.forgotten) > t.max && len(t.fOrder) > 0 {
		old := t.fOrder[0]
		t.fOrder = t.fOrder[1:]
		if t.forgotten[old.h] == old.seq {
			delete(t.forgotten, old.h)
			t.remember1(old.h)
		}
	}
	if len(t.fOrder) > 2*len(t.forgotten)+64 {
		kept := t.fOrder[:0]
		for _, f := range t.fOrder {
			if t.forgotten[f.h] == f.seq {
				kept = append(kept, f)
			}
		}
		t.fOrder = kept
	}
}

// recallBits is the size of the Bloom filter of forgotten services: 1 MiB,
// about 2 % false positives with a million services in it, far fewer below.
const recallBits = 1 << 23

// recallProbes are the filter's bit positions for h (double hashing).
func recallProbes(h uint64) [4]uint64 {
	h2 := (h*0x9e3779b97f4a7c15)>>29 | 1
	var p [4]uint64
	for i := range p {
		p[i] = (h + uint64(i)*h2) % recallBits
	}
	return p
}

// remember1 puts h into the Bloom filter.
func (t *Tracker) remember1(h uint64) {
	if t.recall == nil {
		t.recall = make([]uint64, recallBits/64)
	}
	for _, b := range recallProbes(h) {
		t.recall[b/64] |= 1 << (b % 64)
	}
}

// recalled reports whether h may be in the Bloom filter.
func (t *Tracker) recalled(h uint64) bool {
	if t.recall == nil {
		return false
	}
	for _, b := range recallProbes(h) {
		if t.recall[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// hash is a 64-bit digest of a service key: the forgotten services are kept
// as these, 8 octets each, rather than as their addresses.
func (t *Tracker) hash(k serviceKey) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	h.WriteString(k.ini)
	h.WriteByte(0)
	h.WriteString(k.res)
	h.WriteByte(0)
	h.WriteString(string(k.transport))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], k.svc)
	h.Write(b[:])
	return h.Sum64()
}

// previous is the latest earlier connection to the service of c that was
// not rejected after all.
func (t *Tracker) previous(c *attempt) *negotiated {
	for e := t.history[c.serviceKey()]; e != nil; e = e.prev {
		if !e.st.rejected && e.st != c.st {
			return e
		}
	}
	return nil
}

func (c *attempt) serviceKey() serviceKey {
	svc := c.ServiceID
	if c.HasPort {
		svc = uint64(c.Port)
	}
	return serviceKey{c.Transport, hostOf(c.Initiator), hostOf(c.Responder), svc}
}

// agreement holds the connection rules on what an accepted connection
// agreed: whether both sides sent RFC 8797 data, whether both set R, and
// whether the properties changed since the service's previous connection.
func (t *Tracker) agreement(c *attempt) []finding.Finding {
	var out []finding.Finding
	ini, res := c.InitiatorRPCRDMA != nil, c.ResponderRPCRDMA != nil
	if ini != res {
		who, other := "initiator", "responder"
		if res {
			who, other = "responder", "initiator"
		}
		out = append(out, finding.New(finding.RPCRDMAOneSided,
			"only the %s sent RPC-over-RDMA private data; the %s counts as Send Size 1024, Receive Size 1024, R=0", who, other))
	}
	iniR := ini && c.InitiatorRPCRDMA.RemoteInvalidate
	resR := res && c.ResponderRPCRDMA.RemoteInvalidate
	if iniR != resR {
		who, other := "the initiator", "the responder"
		if resR {
			who, other = "the responder", "the initiator"
		}
		out = append(out, finding.New(finding.RemoteInvalidationOneSided,
			"%s set R, %s did not: replies use plain Send, never Send With Invalidate", who, other))
	}
	in, inv := *c.Inline, c.RemoteInvalidation
	if prev := t.previous(c); prev != nil && (prev.inline != in || prev.inv != inv) {
		var what []string
		if prev.inline.InitiatorToResponder != in.InitiatorToResponder {
			what = append(what, fmt.Sprintf("initiator→responder %d → %d", prev.inline.InitiatorToResponder, in.InitiatorToResponder))
		}
		if prev.inline.ResponderToInitiator != in.ResponderToInitiator {
			what = append(what, fmt.Sprintf("responder→initiator %d → %d", prev.inline.ResponderToInitiator, in.ResponderToInitiator))
		}
		if prev.inv != inv {
			what = append(what, fmt.Sprintf("remote invalidation %s → %s", onOff(prev.inv), onOff(inv)))
		}
		out = append(out, finding.New(finding.PropertiesChangedOnReconnect, "since the connection of frame %d: %s",
			prev.frame, strings.Join(what, ", ")))
	}
	return out
}

// Finish returns the attempts not yet handed on, in request order, with
// those that got no reply marked so.
func (t *Tracker) Finish() []*record.Connection { return t.finish("") }

// FinishCut is Finish for an input that ended early (why says how: "the
// file is damaged after frame 12"): an attempt without a reply is Cut, not
// NoReply, since the reply may be in what was not read.
func (t *Tracker) FinishCut(why string) []*record.Connection { return t.finish(why) }

func (t *Tracker) finish(cut string) []*record.Connection {
	var out []*attempt
	for _, c := range t.open {
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
	sort.SliceStable(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	t.open, t.held, t.finished = nil, 0, nil
	return records(out)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
