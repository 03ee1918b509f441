package conn

import (
	"fmt"
	"slices"

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
	// limit. (The flags share a word with reqID: 65536 attempts are held.)
	finished   bool
	hasReqInfo bool
	// final: an RTU (an MPA Reply) or a REJ was seen, nothing changes what
	// it agreed any more; rejected: a REJ of the REP rejected it after
	// all. hist is its entry in the history of its service (history.go),
	// which learns both.
	final, rejected bool
	// absent: a message of it carried rpcrdma-absent while its upper layer
	// was unknown; on such a connection the finding is said once (judge).
	absent bool
	// inOpen, inDone: the queue or the handed-on attempts still
	// recognised hold it (queue.go); with Tracker.Reuse an attempt is
	// reused only once neither does and no index finds it.
	inOpen, inDone bool
	hist           *negotiated
	tid            uint64 // the REQ's Transaction ID

	// negotiation holds the findings on what an accepting reply agreed;
	// they join Findings when the attempt is handed on, unless the reply
	// is rejected after all (a REJ of the REP): a rejected connection
	// negotiated nothing.
	negotiation []finding.Finding

	partialReply int // an MPA Reply that ended before its flags
	cost         int // what it was charged to the budget

	// What the two sides' messages said, which the record points to: the
	// tracker keeps nothing of a message after the call.
	iniRPCRDMA, resRPCRDMA record.RPCRDMA
	inline                 record.InlineThresholds
	req                    reqFields // the REQ's CM fields, for the data path
}

// settle makes c final, rejected or not, and tells its service's history.
func (c *attempt) settle(rejected bool) {
	c.final, c.rejected = true, rejected
	if e := c.hist; e != nil && e.id == c.Number {
		e.final, e.rejected = true, rejected
	}
}

// reqFields are the fields of a REQ the data path reads (record.CMInfo's,
// without a REJ's): an attempt keeps them, and 65536 attempts are held.
type reqFields struct {
	localQPN, startingPSN                       uint32
	slid, dlid                                  uint16
	responderResources, initiatorDepth, pathMTU uint8
	cut                                         record.CMCut
}

func reqFieldsOf(c *record.CMInfo) reqFields {
	return reqFields{c.LocalQPN, c.StartingPSN, c.SLID, c.DLID, c.ResponderResources, c.InitiatorDepth, c.PathMTU, c.Cut}
}

// info is r as record.CMInfo.
func (r reqFields) info() record.CMInfo {
	return record.CMInfo{LocalQPN: r.localQPN, StartingPSN: r.startingPSN, SLID: r.slid, DLID: r.dlid,
		ResponderResources: r.responderResources, InitiatorDepth: r.initiatorDepth, PathMTU: r.pathMTU, Cut: r.cut}
}

// setInitiator and setResponder record what a side's message said of its
// RPC-over-RDMA data and upper layer.
func (c *attempt) setInitiator(m *record.Message) {
	c.InitiatorRPCRDMA, c.InitiatorULP = nil, m.ULP
	c.PrivateDataCut = c.PrivateDataCut || m.PrivateDataCut
	if m.RPCRDMA != nil {
		c.iniRPCRDMA = *m.RPCRDMA
		c.InitiatorRPCRDMA = &c.iniRPCRDMA
	}
}

func (c *attempt) setResponder(m *record.Message) {
	c.PrivateDataCut = c.PrivateDataCut || m.PrivateDataCut
	c.ResponderRPCRDMA, c.ResponderULP = nil, m.ULP
	if m.RPCRDMA != nil {
		c.resRPCRDMA = *m.RPCRDMA
		c.ResponderRPCRDMA = &c.resRPCRDMA
	}
}

// Attempts are looked up by their endpoints (the tracker is emptied between
// inputs, which never pair). A request of the InfiniBand family is keyed on
// its two addresses, their kinds and its Local Communication ID: 40
// octets, 65536 of them held.
type reqKey struct {
	ini, res [16]byte
	kinds    uint16
	id       uint32
}

// keyOf is the key of a request from ini to res with Local Communication
// ID id.
func keyOf(ini, res record.Endpoint, id uint32) reqKey {
	return reqKey{ini.Addr, res.Addr, uint16(ini.Kind)<<8 | uint16(res.Kind), id}
}

type tcpConnKey struct{ ini, res record.Endpoint }

// maxOrphans bounds the replies kept in case their request comes later
// (captures merged from several interfaces). Most such replies answer a
// request from before the capture started, so forgetting the oldest loses
// nothing that was ever going to pair.
const maxOrphans = 1024

// req is the attempt of the REQ with key k, or nil. The last two answers
// are kept: a message is looked up under the same keys by the rules, the
// pairing and its number.
func (t *Tracker) req(k reqKey) *attempt {
	for i := range t.reqCache {
		if e := &t.reqCache[i]; e.ok && e.k == k {
			return e.c
		}
	}
	c := t.byReq[k]
	t.reqCache[1], t.reqCache[0] = t.reqCache[0], reqHit{k, c, true}
	return c
}

// setReq indexes c under k (nil: nothing any more).
func (t *Tracker) setReq(k reqKey, c *attempt) {
	for i := range t.reqCache {
		if t.reqCache[i].k == k {
			t.reqCache[i].c = c
		}
	}
	if c == nil {
		delete(t.byReq, k)
		t.indexShrank()
	} else {
		t.byReq[k] = c
		t.indexGrew()
	}
}

// The indexes keep the room they grew to when their entries go (a Go map
// never shrinks). An attempt's charge covers its own entry; the room its
// entry leaves behind, once gone, is charged too, at indexSlot (an
// entry's share of a map between two doublings, TestAttemptCost), from the
// most entries each index held since it was made (its mark). When fewer
// than a quarter of its mark are in use, an index is made again, smaller,
// and the room is given back. Below minRemake entries what an index keeps
// is small, and neither charged nor made again.
const (
	indexSlot = 80
	minRemake = 4096
)

// indexGrew raises the marks.
func (t *Tracker) indexGrew() {
	t.idxMark[0] = max(t.idxMark[0], len(t.byReq))
	t.idxMark[1] = max(t.idxMark[1], len(t.byTCP))
	t.chargeIndex()
}

// indexShrank makes an index again when it holds fewer than a quarter of
// its mark, and charges the room the gone entries left otherwise.
func (t *Tracker) indexShrank() {
	if n := len(t.byReq); t.idxMark[0] >= minRemake && n < t.idxMark[0]/4 {
		m := make(map[reqKey]*attempt, n)
		for k, c := range t.byReq {
			m[k] = c
		}
		t.byReq, t.idxMark[0] = m, n
	}
	if n := len(t.byTCP); t.idxMark[1] >= minRemake && n < t.idxMark[1]/4 {
		m := make(map[tcpConnKey]*attempt, n)
		for k, c := range t.byTCP {
			m[k] = c
		}
		t.byTCP, t.idxMark[1] = m, n
	}
	t.chargeIndex()
}

// chargeIndex brings the budget's charge for the indexes' empty room up to
// date.
func (t *Tracker) chargeIndex() {
	want := 0
	for i, n := range [2]int{len(t.byReq), len(t.byTCP)} {
		if t.idxMark[i] >= minRemake {
			want += (t.idxMark[i] - n) * indexSlot
		}
	}
	switch {
	case want > t.idxCharged:
		t.budget.Force(budget.Attempts, want-t.idxCharged)
	case want < t.idxCharged:
		t.budget.Release(budget.Attempts, t.idxCharged-want)
	}
	t.idxCharged = want
}

// reqHit is a look-up of byReq kept (Tracker.reqCache).
type reqHit struct {
	k  reqKey
	c  *attempt
	ok bool
}

// byLocal finds the attempt a message belongs to from its sender's side:
// the initiator's messages carry the REQ's Local Communication ID as their
// own, the responder's carry it as the Remote Communication ID.
func (t *Tracker) byLocal(m *record.Message) (c *attempt, fromInitiator bool) {
	if c = t.req(keyOf(m.Src, m.Dst, m.LocalCommID)); c != nil {
		return c, true
	}
	return t.req(keyOf(m.Dst, m.Src, m.RemoteCommID)), false
}

// attemptOf is the attempt a message just taken belongs to, or nil: each
// attempt gets the next number of the run when its request opens it, and
// each message learns the number of its attempt (Message.Conn), so that
// the messages of a connection can be told before it is handed on.
func (t *Tracker) attemptOf(m *record.Message) *attempt {
	switch m.Kind {
	case record.KindMPARequest:
		return t.byTCP[tcpConnKey{m.Src, m.Dst}]
	case record.KindMPAReply:
		return t.byTCP[tcpConnKey{m.Dst, m.Src}]
	case record.KindREQ:
		return t.req(keyOf(m.Src, m.Dst, m.LocalCommID))
	case record.KindMRA, record.KindREJ, record.KindREP, record.KindRTU, record.KindDREQ, record.KindDREP,
		record.KindLAP, record.KindAPR:
		c, _ := t.byLocal(m)
		return c
	}
	return nil // SIDR has no connection
}

// newAttempt makes the attempt of a request: its record, numbered, and what
// its side said.
func (t *Tracker) newAttempt(m *record.Message, transport record.Transport) *attempt {
	c := t.attempt()
	c.Connection = record.Connection{File: m.File, Transport: transport, Initiator: m.Src, Responder: m.Dst,
		RequestFrame: m.Frame, State: record.NoReply, Findings: c.Findings}
	c.setInitiator(m)
	t.numbers++
	c.Number = t.numbers
	return c
}

func (t *Tracker) cm(m *record.Message) {
	switch m.Kind {
	case record.KindREQ:
		t.request(m)
	case record.KindREP:
		k := keyOf(m.Dst, m.Src, m.RemoteCommID)
		c := t.req(k)
		if c == nil {
			t.orphan(orphanKey{req: k}, m)
			return
		}
		if c.ReplyFrame == 0 { // else a repeated reply
			t.accept(c, m)
		}
	case record.KindREJ:
		t.rej(m)
	case record.KindRTU:
		if c, fromInitiator := t.byLocal(m); c != nil && fromInitiator && c.State == record.Established && !c.final {
			c.settle(false)
			t.emit(c)
		}
	case record.KindDREQ, record.KindDREP:
		if c, _ := t.byLocal(m); c != nil && c.ReplyFrame != 0 {
			if c.State == record.Established && c.End == "" {
				c.End = record.Disconnected
			}
			if m.Kind == record.KindDREP && c.State == record.Established {
				t.happened(Ended, c) // the disconnection is complete: a DREQ's sender may still see frames flushed
			}
			if !c.closed {
				c.closed = true // disconnected: nothing changes it any more
				t.emit(c)
			}
		}
	}
	// MRA, LAP, APR, SIDR: nothing in them changes what was negotiated.
}

// request opens the attempt of a REQ, unless it is a CM retry of one.
func (t *Tracker) request(m *record.Message) {
	k := keyOf(m.Src, m.Dst, m.LocalCommID)
	if c := t.req(k); c != nil {
		if isRetry(c, m) {
			c.Retries++
			return
		}
		t.unindex(c)
	}
	c := t.newAttempt(m, m.Transport)
	c.ServiceID, c.HasServiceID = m.ServiceID, m.HasServiceID
	c.reqID, c.tid = m.LocalCommID, m.TransactionID
	if m.CMInfo != nil {
		c.req, c.hasReqInfo = reqFieldsOf(m.CMInfo), true
	}
	c.RPCRDMARules = decideULP(&c.Connection)
	t.setReq(k, c)
	t.add(c)
	if r := t.takeOrphan(orphanKey{req: k}); r != nil { // its reply came first
		t.cm(r)
	}
}

// isRetry reports whether the REQ m is a CM retry of c, the attempt its
// Communication ID names: the REQ again before any reply, or with the same
// Transaction ID after one (the reply was lost on its way). A REQ that
// reuses the Communication ID of an answered or disconnected attempt is a
// new attempt.
func isRetry(c *attempt, m *record.Message) bool {
	return c.ReplyFrame == 0 || (!c.closed && m.TransactionID == c.tid)
}

// rej takes a REJ: of the request before any reply, or of the REP.
func (t *Tracker) rej(m *record.Message) {
	c, fromInitiator := t.byLocal(m)
	switch {
	case c == nil:
		if m.RemoteCommID != 0 {
			t.orphan(orphanKey{req: keyOf(m.Dst, m.Src, m.RemoteCommID)}, m)
		}
		return
	case c.closed || c.final:
		return // too late, or repeated
	case fromInitiator && c.ReplyFrame == 0:
		// The initiator gave up before any reply (Linux sends a REJ with
		// reason Timeout when it abandons a REQ).
		t.reject(c, m, false, finding.New(finding.ConnectionRejected,
			"the initiator gave up before any reply: %s", rejReason(m)))
		return
	case c.ReplyFrame == 0:
		t.reject(c, m, true, finding.New(finding.ConnectionRejected, "%s", rejReason(m)))
		return
	}
	// A REJ of the REP, instead of an RTU: from the initiator (it did not
	// accept the REP) or from the responder (the RTU never came). The REP
	// stays the reply.
	who := "the responder"
	if fromInitiator {
		who = "the initiator"
	}
	t.rejected(c, finding.New(finding.ConnectionRejected, "%s rejected the REP in frame %d: %s",
		who, m.Frame, rejReason(m)))
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

func (t *Tracker) mpa(m *record.Message) {
	switch m.Kind {
	case record.KindMPARequest:
		// One TCP connection carries one MPA Request (the reassembler hands
		// on each stream's once), so a Request on a 4-tuple already seen is
		// a new TCP connection that reuses it.
		k := tcpConnKey{m.Src, m.Dst}
		if old := t.byTCP[k]; old != nil {
			t.unindex(old)
		}
		c := t.newAttempt(m, record.IWARP)
		c.Port, c.HasPort = m.Dst.Port, m.Dst.HasPort
		c.RPCRDMARules = decideULP(&c.Connection)
		t.byTCP[k] = c
		t.indexGrew()
		t.add(c)
		if r := t.takeOrphan(orphanKey{tcp: k}); r != nil { // its Reply came first
			t.mpa(r)
		}
	case record.KindMPAReply:
		k := tcpConnKey{m.Dst, m.Src}
		c := t.byTCP[k]
		if c == nil {
			t.orphan(orphanKey{tcp: k}, m)
			return
		}
		if c.ReplyFrame != 0 {
			return
		}
		switch h := m.MPAInfo; {
		case h == nil || !h.HasFlags:
			c.partialReply = m.Frame // the stream ended before the Reply's flags: it settles nothing
			return
		case h.Reject:
			t.reject(c, m, true, finding.New(finding.ConnectionRejected, "MPA Reply with R set"))
			return
		}
		// MPA has no third message: the Reply establishes the connection.
		c.settle(false)
		t.accept(c, m)
	}
}

// indexed reports whether later messages may still find c.
func (t *Tracker) indexed(c *attempt) bool {
	if c.Transport == record.IWARP {
		return t.byTCP[tcpConnKey{c.Initiator, c.Responder}] == c
	}
	return t.req(keyOf(c.Initiator, c.Responder, c.reqID)) == c
}

// unindex stops later messages from finding c (a newer attempt may already
// have taken its place).
func (t *Tracker) unindex(c *attempt) {
	if c.Transport == record.IWARP {
		k := tcpConnKey{c.Initiator, c.Responder}
		if t.byTCP[k] == c {
			delete(t.byTCP, k)
			t.indexShrank()
		}
		return
	}
	k := keyOf(c.Initiator, c.Responder, c.reqID)
	if t.req(k) == c {
		t.setReq(k, nil)
	}
}

// reply records the reply to c and works out what the two sides agree
// under the rules of their upper layer (rules.go). A REJ from the initiator
// carries nothing of the responder's.
func reply(c *attempt, m *record.Message, fromResponder bool) {
	c.ReplyFrame = m.Frame
	if fromResponder {
		c.setResponder(m)
	}
	negotiate(c)
}

// accept settles c with an accepting reply (a REP, or an MPA Reply without
// R): the connection rules judge what it agreed. A REP is not final: the
// RTU, or a REJ of the REP, settles it for good.
func (t *Tracker) accept(c *attempt, m *record.Message) {
	reply(c, m, true)
	if !c.emitted && !c.finished {
		// What the reply adds (its RFC 8797 message, the service's
		// history): it cannot be refused, and the next attempt makes room.
		t.budget.Force(budget.Attempts, replyCost)
		c.cost += replyCost
	}
	c.State = record.Established
	// The rules on what was agreed are RPC-over-RDMA's, and need what each
	// side advertised: not judged when the capture cut it away.
	if c.RPCRDMARules && c.Inline != nil {
		c.negotiation = t.agreement(c)
		t.remember(c)
	}
	t.established(c, m)
	if c.final {
		t.emit(c)
	}
}

// reject settles c with a rejecting reply: a REJ, or an MPA Reply with R
// set. What the two sides advertised is still shown.
func (t *Tracker) reject(c *attempt, m *record.Message, fromResponder bool, why finding.Finding) {
	reply(c, m, fromResponder)
	t.rejected(c, why)
}

// rejected ends c as rejected (its REP, if any, stays the reply), for the
// reason the finding gives. A rejected connection negotiated nothing, and
// no longer counts as the earlier connection of its service.
func (t *Tracker) rejected(c *attempt, why finding.Finding) {
	if c.State == record.Established && !c.closed {
		t.happened(Ended, c)
	}
	c.State, c.RejectReason, c.RemoteInvalidation = record.Rejected, why.Message, false
	c.settle(true)
	c.negotiation = nil
	c.Findings = append(c.Findings, why)
	t.emit(c)
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
	return 700 + len(m.PrivateData) + m.Src.Len() + m.Dst.Len() + 64*len(m.Findings)
}

// orphanPD is how much of an orphan reply's private data is kept: enough
// for every upper layer's layout that readAs may read it as (the largest,
// SRP's login response, is 52 octets after an IP CM header).
const orphanPD = 256

// slimOrphan is what an orphan reply keeps until its request comes: a copy
// of the message, which was handed on already and whose frame is gone.
// Its layers' octets go, and its private data is cut to orphanPD octets
// (copied, so the rest can be freed: 1024 replies with 64 KiB of MPA
// private data would hold 64 MB).
func slimOrphan(m *record.Message) *record.Message {
	s := m.Clone()
	s.Frames, s.Tunnel = nil, nil
	s.DropLayers()
	s.PrivateData = slices.Clone(m.PrivateData[:min(len(m.PrivateData), orphanPD)])
	return s
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
