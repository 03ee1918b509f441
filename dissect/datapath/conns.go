package datapath

import (
	"cmp"
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The connections followed: the data path learns them from the tracker's
// events, which the run loop hands it (Connection), keeps each by its
// Number, and gives what its traffic showed to its record as the run loop
// hands the record on (Annotate). A connection that ends before that (its
// DREP, a reconnection on the same QPNs, the limit of connections
// followed) keeps its figures and findings here until then; one that ends
// after, when the record went out early (live capture, or a limit), has
// them noted for the run (Notes).
//
// A connection's frames are matched on their addresses (IP for RoCEv2,
// GIDs for RoCEv1, LIDs for native InfiniBand) and DestQP: the initiator's
// frames go to the REP's Local QPN, the responder's to the REQ's. The
// initiator's requests start at the REP's Starting PSN, the responder's at
// the REQ's. Frames of no connection seen are counted; the Sends among them
// are followed per direction (each decides by itself, from its first
// Sends, whether it is RPC-over-RDMA), never judged against a setup that
// was not seen.

// Connection takes an event of the tracker: an established connection is
// followed from now on, an ended one no longer. The event's record is read
// during the call only.
func (fl *Follower) Connection(e *conn.Event) {
	switch e.Kind {
	case conn.Established:
		if e.Conn.Transport == record.IWARP {
			fl.establishedIWARP(e.Conn, e.ReplyMPA)
			return
		}
		fl.established(e)
	case conn.Ended:
		if f := fl.byConn[e.Conn.Number]; f != nil {
			fl.release(f, nil)
		}
	}
}

// negotiatedOf is what a connection's record says it agreed.
func negotiatedOf(c *record.Connection) Negotiated {
	n := Negotiated{Known: true, Connection: c.RequestFrame, Number: c.Number, RemoteInvalidation: c.RemoteInvalidation, Rule: setupRule(c),
		InitiatorRPCRDMA: c.InitiatorRPCRDMA != nil, ResponderRPCRDMA: c.ResponderRPCRDMA != nil,
		InitiatorR:            c.InitiatorRPCRDMA != nil && c.InitiatorRPCRDMA.RemoteInvalidate,
		ResponderR:            c.ResponderRPCRDMA != nil && c.ResponderRPCRDMA.RemoteInvalidate,
		ISERForbidsInvalidate: conn.ISERForbidsInvalidate(c)}
	if c.Inline != nil {
		n.Inline = *c.Inline
	}
	n.Unknown = c.PrivateDataCut
	return n
}

// established follows a connection of the InfiniBand family.
func (fl *Follower) established(e *conn.Event) {
	c := e.Conn
	net, ok := netOf(c.Transport)
	if !ok || e.Request == nil || e.Reply == nil {
		return // no QPNs without the CM bodies
	}
	ini, res, ok := endpoints(net, c, e.Request)
	if !ok {
		return
	}
	req, rep := e.Request, e.Reply
	if (req.Cut|rep.Cut)&record.CutQPN != 0 {
		return // the capture cut a QPN away: its traffic cannot be told
	}
	f := fl.newFlow()
	*f = flow{id: c.Number, net: net, peers: Peers{c.Initiator, c.Responder}, neg: negotiatedOf(c)}
	// Reads the initiator issues go to the responder: the initiator's
	// Initiator Depth against the responder's Responder Resources; and the
	// mirror.
	f.neg.ReadLimit = [2]int{int(min(req.InitiatorDepth, rep.ResponderResources)), int(min(rep.InitiatorDepth, req.ResponderResources))}
	f.neg.HasReadLimit = [2]bool{true, true}
	if (req.Cut|rep.Cut)&record.CutDepths != 0 { // the capture cut them away
		f.neg.HasReadLimit = [2]bool{}
	}
	f.neg.readWhy = [2]readWhy{{cmReads, uint16(req.InitiatorDepth), uint16(rep.ResponderResources)},
		{cmReads | mirrored, uint16(rep.InitiatorDepth), uint16(req.ResponderResources)}}
	if req.PathMTU >= 1 && req.PathMTU <= 5 {
		f.mtu = 128 << req.PathMTU
	}
	f.start = [2]uint32{rep.StartingPSN, req.StartingPSN}
	// A Starting PSN the capture cut: the side's first request tells it.
	f.startCut = [2]bool{rep.Cut&record.CutStartingPSN != 0, req.Cut&record.CutStartingPSN != 0}
	f.keys = [2]flowKey{{net, ini, res, rep.LocalQPN}, {net, res, ini, req.LocalQPN}}
	// A reconnection on the same addresses and QPNs takes them over.
	for side, k := range f.keys {
		if old, ok := fl.index[k]; ok && old.f != f {
			fl.release(old.f, nil)
		}
		if t := fl.tombs[keyHash(&k)]; t != nil {
			fl.unbury(t) // a connection given up before its traffic, now set up again
		}
		fl.index[k] = flowRef{f, uint8(side)}
		fl.filter[k.slot()]++
	}
	f.indexed = true
	fl.byConn[f.id] = f
	fl.admit(f, e.Frame)
}

// admit follows a connection from frame on: among the connections
// followed, at the limit of how many, and within the budget.
func (fl *Follower) admit(f *flow, frame int) {
	if len(fl.conns) >= fl.out.Limits.Connections {
		fl.retireConn(frame, false)
	}
	// Within a sixteenth over the budget's limit, as a parked connection:
	// the run loop then has the largest holder make room.
	for !fl.takeOver(connCost) {
		if len(fl.conns) == 0 {
			fl.force(connCost)
			break
		}
		fl.retireConn(frame, true)
	}
	f.slot = len(fl.conns)
	fl.conns = append(fl.conns, f)
	fl.cache.ok = false
}

// Shed makes room in a full memory budget, when the data path holds the
// most, at frame: the connections followed are given up, the least
// recently active first (one whose traffic has not begun is parked, which
// loses nothing), until the data path holds an eighth less than it did,
// or follows none.
func (fl *Follower) Shed(frame int) {
	b := fl.out.Limits.Budget
	target := b.Stats().Held[budget.Datapath] * 7 / 8
	for len(fl.conns) > 0 && b.Stats().Held[budget.Datapath] > target {
		fl.retireConn(frame, true)
	}
}

// Connections whose traffic has not begun are parked when the limit (or
// the budget) needs their place: still matched on their keys, at a
// fraction of the cost (parkCost, TestParkCost), they are followed again
// at their first frame, taking the place of another. Setups that all come
// before their traffic lose nothing so, and connections that never carry
// any cost no finding. Beyond maxParked (or when the budget has no room for
// one more) the oldest parked is given up, and said.
const (
	parkCost  = 900
	maxParked = 1 << 16
)

// park sets a connection that showed no frame aside.
func (fl *Follower) park(f *flow) {
	fl.unslot(f)
	fl.give(connCost)
	// A parked connection may take the budget a sixteenth over its limit:
	// the run loop then has the largest holder make room (handing on
	// finished connection attempts loses nothing), where giving up a
	// parked one may lose its traffic.
	for fl.nParked >= maxParked || !fl.takeOver(parkCost) {
		if !fl.dropParked() {
			fl.force(parkCost)
			break
		}
	}
	f.parked, f.slot = true, -1
	fl.nParked++
	if n := len(fl.parkQ) - fl.parkHead; n > 2*fl.nParked+64 {
		fl.compactParked() // most of the queue was followed again, or ended
	}
	fl.parkQ = append(fl.parkQ, parkedRef{f, f.id})
}

// compactParked keeps, in order, only the queue's connections still
// parked: those followed again or ended since would otherwise hold their
// place (and their flows) until their turn came.
func (fl *Follower) compactParked() {
	q := fl.parkQ[:0]
	for _, p := range fl.parkQ[fl.parkHead:] {
		if p.f.parked && p.f.id == p.id {
			q = append(q, p)
		}
	}
	clear(fl.parkQ[len(q):])
	fl.parkQ, fl.parkHead = q, 0
}

// unpark follows a parked connection again, at its first frame.
func (fl *Follower) unpark(f *flow, frame int) {
	f.parked = false
	fl.nParked--
	fl.give(parkCost)
	fl.admit(f, frame)
}

// dropParked gives up the oldest parked connection, leaving its tombstone;
// it reports false when none is parked.
func (fl *Follower) dropParked() bool {
	for fl.parkHead < len(fl.parkQ) {
		p := fl.parkQ[fl.parkHead]
		fl.parkQ[fl.parkHead] = parkedRef{}
		fl.parkHead++
		if fl.parkHead > len(fl.parkQ)/2 && fl.parkHead > 64 {
			fl.parkQ = fl.parkQ[:copy(fl.parkQ, fl.parkQ[fl.parkHead:])]
			clear(fl.parkQ[len(fl.parkQ):cap(fl.parkQ)])
			fl.parkHead = 0
		}
		if !p.f.parked || p.f.id != p.id {
			continue // followed again, or ended, since
		}
		fl.bury(p.f) // said if its traffic comes (wake)
		fl.release(p.f, nil)
		return true
	}
	return false
}

// parkedRef is a parked connection in the order of parking: its flow and
// its Number then (a flow is reused once its connection ends).
type parkedRef struct {
	f  *flow
	id int
}

// retireConn gives up the connection the eviction hand finds first that
// was not active since it last passed, at frame (the setup that needs its
// place, at the limit or, with full, because the budget is full). One that
// showed no frame at all is forgotten without a finding.
func (fl *Follower) retireConn(frame int, full bool) {
	for {
		f := fl.conns[fl.chand]
		fl.chand = (fl.chand + 1) % len(fl.conns)
		if f.used {
			f.used = false
			continue
		}
		if f.chk == nil {
			fl.park(f) // its traffic has not begun: nothing is lost yet
			return
		}
		fl.ConnectionsRetired++
		why := finding.New(finding.StateLimitReached,
			"more than %d connections' traffic was followed at once: this one's, the least recently active, was given up at frame %d; frames of it after that are counted as of no connection",
			fl.out.Limits.Connections, frame)
		if full {
			fl.out.Limits.Budget.Lost(budget.Datapath)
			why = finding.New(finding.StateLimitReached,
				"%s: this connection's traffic, the least recently active, was given up at frame %d; frames of it after that are counted as of no connection",
				fl.out.Limits.Budget.Full(), frame)
		}
		fl.release(f, &why)
		return
	}
}

// release stops following a connection: its Sends in progress are
// delivered as far as they came, and what its traffic showed (with why, a
// finding about its end) waits for its record, or goes to the notes when
// its record was already handed on.
func (fl *Follower) release(f *flow, why *finding.Finding) {
	fl.unindex(f)
	delete(fl.byConn, f.id)
	if f.parked {
		f.parked = false
		fl.nParked--
		fl.give(parkCost)
	} else {
		fl.unslot(f)
		fl.give(connCost)
	}
	var r result
	if f.chk != nil {
		end := "the connection's end" // a limit that gives it up (why) is no end of it
		if why != nil {
			end = ""
		}
		r = f.chk.result(end)
		f.chk.Close()
	}
	if why != nil {
		r.findings = append(r.findings, *why)
	}
	fl.ended(f.id, &f.handed, f.neg.Connection, f.net.transport(), f.peers, r)
	// Emptied even when not kept: the parking queue may still refer to it
	// (until its turn comes), and must not keep its checker alive.
	*f = flow{}
	if len(fl.freeFlows) < maxFreeFlows {
		fl.freeFlows = append(fl.freeFlows, f)
	}
}

// unslot takes a connection out of those followed.
func (fl *Follower) unslot(f *flow) {
	last := len(fl.conns) - 1
	fl.conns[f.slot] = fl.conns[last]
	fl.conns[f.slot].slot = f.slot
	fl.conns[last] = nil // a pointer left past the end would keep a flow alive
	fl.conns = fl.conns[:last]
	if fl.chand >= last {
		fl.chand = 0
	}
}

// maxFreeFlows bounds the flows of ended connections kept for the next:
// the budget charges only the flows followed.
const maxFreeFlows = 256

// newFlow is a flow to fill: one a connection that ended left, or a new
// one.
func (fl *Follower) newFlow() *flow {
	if len(fl.freeFlows) == 0 {
		return new(flow)
	}
	f := fl.freeFlows[len(fl.freeFlows)-1]
	fl.freeFlows = fl.freeFlows[:len(fl.freeFlows)-1]
	return f
}

// resultCost is what a result kept for its record holds: its map entry,
// its figures and its findings (measured: TestResultCost).
func resultCost(r *result) int {
	n := 80
	if r.fig != nil {
		n += 288 + 48*len(r.fig.NFSOperations)
		if r.fig.Health != nil {
			n += 384 // record.Health
		}
		for _, p := range r.fig.RPCProcedures {
			n += 144 + 40*len(p.NFSErrors)
		}
	}
	for _, f := range r.findings {
		n += 64 + len(f.Message)
	}
	return n
}

// handed is what a connection's record got when it was handed on: the
// connection findings and figures an update need not repeat.
type handed struct {
	done     bool // the record was handed on
	findings int
	fig      uint64 // the figures' fingerprint (record.Datapath.Fingerprint): not the figures, which hold slices
	hasFig   bool
	file     string
	end      record.State
}

// ended keeps what the traffic of connection id showed for its record,
// or, when its record was handed on already (h), makes the update that
// carries what the record does not show.
func (fl *Follower) ended(id int, h *handed, request int, tr record.Transport, peers Peers, r result) {
	if !h.done {
		if r.fig != nil || len(r.findings) > 0 {
			r.cost = resultCost(&r)
			fl.force(r.cost) // kept until its record goes: it cannot be given up
			fl.results[id] = r
		}
		return
	}
	fl.update(id, h, request, tr, peers, r)
}

// update makes the update of connection id, whose record was handed on
// (h), when its traffic showed more since: the figures as they are now,
// and the connection findings the record did not get.
func (fl *Follower) update(id int, h *handed, request int, tr record.Transport, peers Peers, r result) {
	fs := r.findings[min(h.findings, len(r.findings)):]
	changed := r.fig != nil && (!h.hasFig || r.fig.Fingerprint() != h.fig) || r.end != "" && r.end != h.end
	if len(fs) == 0 && !changed {
		return
	}
	fl.out.updates = append(fl.out.updates, &record.ConnectionUpdate{Number: id, RequestFrame: request, File: h.file,
		Transport: tr, Initiator: peers[0], Responder: peers[1], Datapath: r.fig, Findings: fs, End: r.end})
	h.findings, h.end = len(r.findings), r.end
	if r.fig != nil {
		h.fig, h.hasFig = r.fig.Fingerprint(), true
	}
}

// setEnd gives an established connection's record the end its traffic
// showed, unless the capture showed another first.
func setEnd(c *record.Connection, end record.State) {
	if end != "" && c.End == "" && c.State == record.Established {
		c.End = end
	}
}

// handOn notes what a connection's record got as it was handed on (c).
func (h *handed) handOn(c *record.Connection, findings int) {
	*h = handed{done: true, findings: findings, file: c.File, end: c.End}
	if c.Datapath != nil {
		h.fig, h.hasFig = c.Datapath.Fingerprint(), true
	}
}

// unindex stops matching frames to a flow, delivering its Sends in
// progress.
func (fl *Follower) unindex(f *flow) {
	if !f.indexed {
		return
	}
	for _, k := range f.keys {
		if r, ok := fl.index[k]; ok && r.f == f {
			delete(fl.index, k)
			fl.filter[k.slot()]--
		}
	}
	f.indexed = false
	fl.cache.ok = false
	if f.sides != nil {
		for side := range f.sides {
			fl.deliver(f, side, &f.sides[side], false, nil)
		}
		f.sides = nil
	}
}

// maxNotes bounds the notes kept: the findings of iWARP traffic whose
// setup was not seen.
const maxNotes = 256

// netOf is the network of a transport the follower handles.
func netOf(t record.Transport) (Net, bool) {
	switch t {
	case record.RoCEv2:
		return NetRoCEv2, true
	case record.RoCEv1:
		return NetRoCEv1, true
	case record.InfiniBand:
		return NetIB, true
	}
	return 0, false
}

// endpoints are the initiator's and the responder's addresses as frames
// carry them: the IP addresses or GIDs the connection record names, or the
// LIDs of the REQ's LRH.
func endpoints(net Net, c *record.Connection, req *record.CMInfo) (Addr, Addr, bool) {
	if net == NetIB {
		return LIDAddr(req.SLID), LIDAddr(req.DLID), true
	}
	ok := func(e record.Endpoint) bool { return e.Kind == record.IPv4 || e.Kind == record.IPv6 }
	if !ok(c.Initiator) || !ok(c.Responder) {
		return Addr{}, Addr{}, false
	}
	return c.Initiator.Addr, c.Responder.Addr, true
}

// Annotate adds to a connection record, as it is handed on, what the data
// path saw of its traffic so far: its figures and its connection findings.
// What shows after that comes in an update (Finish, or when the traffic
// ends).
func (fl *Follower) Annotate(c *record.Connection) {
	fl.handedTomb(c.Number)
	if r, ok := fl.results[c.Number]; ok {
		delete(fl.results, c.Number)
		fl.give(r.cost)
		c.Datapath = r.fig
		c.Findings = append(c.Findings, r.findings...)
		setEnd(c, r.end)
		return
	}
	if c.Transport == record.IWARP && fl.annotateIWARP(c) {
		return
	}
	f := fl.byConn[c.Number]
	if f == nil {
		return
	}
	n := 0
	if f.chk != nil {
		r := f.chk.result(fl.endOfInput())
		c.Datapath = r.fig
		c.Findings = append(c.Findings, r.findings...)
		setEnd(c, r.end)
		n = len(r.findings)
	}
	f.handed.handOn(c, n)
}

// endOfCapture is the end a connection's Calls are unanswered by, when
// the input ends before the connection does.
const endOfCapture = "the end of the capture"

// endOfInput is the end of a connection whose record is handed on now:
// the input's, once it ended (Flush); none while it goes on.
func (fl *Follower) endOfInput() string {
	if fl.ending {
		return endOfCapture
	}
	return ""
}

// Finish makes the updates of the connections still followed at the end
// of the input whose records were handed on before (live capture, a state
// limit), in the order of their numbers.
func (fl *Follower) Finish() {
	conns := slices.Clone(fl.conns)
	slices.SortFunc(conns, func(a, b *flow) int { return cmp.Compare(a.id, b.id) })
	for _, f := range conns {
		if f.chk != nil && f.handed.done {
			fl.update(f.id, &f.handed, f.neg.Connection, f.net.transport(), f.peers, f.chk.result(endOfCapture))
		}
	}
	open := make([]*iwFlow, 0, len(fl.iwByConn)) // iWARP traffic still open at the end
	for _, t := range fl.iwByConn {
		open = append(open, t)
	}
	slices.SortFunc(open, func(a, b *iwFlow) int { return cmp.Compare(a.id, b.id) })
	for _, t := range open {
		if t.handed.done {
			fl.update(t.id, &t.handed, t.chk.neg.Connection, record.IWARP, t.chk.peers, t.chk.result(endOfCapture))
		}
	}
}

// Drops reports what the data path gave up at its limits, by holder.
func (fl *Follower) Drops(drop func(record.DropHolder, int)) {
	drop(record.DropRCDirections, fl.OrphanEvictions)
	drop(record.DropRCConnections, fl.ConnectionsRetired+fl.TombsForgotten)
	drop(record.DropCalls, fl.CallsUntracked())
	drop(record.DropSendBuffers, fl.HeadsRefused)
	drop(record.DropRDMAReads, fl.ReadsUntracked)
	drop(record.DropReadLists, fl.out.ListsCut)
	drop(record.DropOrphanPackets, fl.OrphanPackets)
	drop(record.DropChunkSegments, fl.out.SegmentsUntracked)
	drop(record.DropLongMessages, fl.out.LongsRefused)
}

// Notes are the data path's findings about the run, at the end of the
// input: the findings of iWARP traffic whose setup was not seen, what each
// holder of state gave up (drops.go), and the lengths of packets no record
// shows (flaws.go).
func (fl *Follower) Notes() []finding.Finding {
	out := fl.notes
	if fl.notesCut > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%d more findings of iWARP traffic whose setup was not seen are not listed", fl.notesCut))
	}
	fl.notes, fl.notesCut = nil, 0
	out = append(out, fl.dropNotes()...)
	return append(out, fl.flawNotes()...)
}
