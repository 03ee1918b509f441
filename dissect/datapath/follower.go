package datapath

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The Follower is the InfiniBand-family data path: RC frames of RoCEv2,
// RoCEv1 and native InfiniBand, tied to the connections the tracker hands
// over (conn.Handover).
//
// A connection's frames are matched on their addresses (IP for RoCEv2,
// GIDs for RoCEv1, LIDs for native InfiniBand) and DestQP: the initiator's
// frames go to the REP's Local QPN, the responder's to the REQ's. The
// initiator's requests start at the REP's Starting PSN, the responder's at
// the REQ's. Frames of no connection seen are counted; the Sends among them
// are followed per direction (each decides by itself, from its first
// Sends, whether it is RPC-over-RDMA), never judged against a setup that
// was not seen.

// Net names the network an RC frame came over (the first field of the
// match).
type Net uint8

// Networks.
const (
	NetRoCEv2 Net = iota + 1
	NetRoCEv1
	NetIB
)

func (n Net) transport() record.Transport {
	switch n {
	case NetRoCEv1:
		return record.RoCEv1
	case NetIB:
		return record.InfiniBand
	}
	return record.RoCEv2
}

// Addr is an address as the data path matches it: an IPv6 or IPv4-mapped
// address (RoCEv2), a GID (RoCEv1), or a LID in the last two octets
// (native InfiniBand).
type Addr [16]byte

// LIDAddr is the Addr of a LID.
func LIDAddr(lid uint16) Addr {
	var a Addr
	binary.BigEndian.PutUint16(a[14:], lid)
	return a
}

// name shows an address as the records do.
func (a Addr) name(n Net) string {
	switch n {
	case NetIB:
		return fmt.Sprintf("LID %d", binary.BigEndian.Uint16(a[14:]))
	case NetRoCEv1:
		return layers.AddrString(a[:])
	}
	return netip.AddrFrom16(a).Unmap().String()
}

// Packet is one RC frame as the decoder hands it over; it and Payload are
// read during the call only.
type Packet struct {
	Frame    int
	Time     time.Time
	Net      Net
	Src, Dst Addr

	// The BTH.
	OpCode, PadCnt uint8
	DestQP, PSN    uint32
	// The extended headers of the opcode: RETH (RDMA WRITE First and Only,
	// READ Request), AETH (responses), IETH (SEND with Invalidate).
	VA        uint64
	RKey      uint32
	DMALength uint32
	Syndrome  uint8
	IETH      uint32

	// Payload is the payload as captured (after the extended headers,
	// without the pad and the ICRC); PayloadLen its length on the wire,
	// which is more when the capture cut the frame.
	Payload    []byte
	PayloadLen int
}

// flowKey is what a frame is matched on.
type flowKey struct {
	net      Net
	src, dst Addr
	qp       uint32
}

// same compares two keys word by word (the generated == calls memequal).
func (k *flowKey) same(o *flowKey) bool {
	le := binary.LittleEndian
	return k.qp == o.qp && k.net == o.net &&
		le.Uint64(k.src[8:]) == le.Uint64(o.src[8:]) && le.Uint64(k.dst[8:]) == le.Uint64(o.dst[8:]) &&
		le.Uint64(k.src[:8]) == le.Uint64(o.src[:8]) && le.Uint64(k.dst[:8]) == le.Uint64(o.dst[:8])
}

// flowRef is a side of a flow.
type flowRef struct {
	f    *flow
	side uint8
}

// flow is one connection's traffic (or, without its setup, one
// direction's).
type flow struct {
	conn    *record.Connection // nil without a setup
	neg     Negotiated
	peers   Peers
	net     Net
	keys    [2]flowKey
	indexed bool
	mtu     int // path MTU in octets; 0 when unknown
	start   [2]uint32
	chk     *Checker // made at the first frame
	sides   *[2]sideState
	handed  int // connection findings already on the handed-on record; -1 before
	// The flow's slot among those followed (connections, or directions
	// without a setup), and whether it was active since the eviction hand
	// last passed; the key of a direction without a setup.
	slot int
	used bool
	key  flowKey
}

// Follower follows the RC traffic of one input.
type Follower struct {
	out     *Output
	charged int // octets charged to the budget (Limits.Budget)
	index   map[flowKey]flowRef
	byConn  map[*record.Connection]*flow // the connections followed
	conns   []*flow                      // the same, for the eviction hand
	chand   int
	orphans map[flowKey]*flow
	slots   []*flow // the directions without a setup, for the eviction hand
	hand    int
	notes   []finding.Finding // connection findings of records already handed on (live capture)
	// notesCut counts the notes beyond maxNotes, not kept.
	notesCut int
	cache    struct {
		key flowKey
		ref flowRef
		ok  bool
	}
	// filter counts the connections' match keys by a hash of their DestQP
	// and destination: a frame whose slot is empty belongs to none, which
	// the decoder learns (Maybe) without building the whole Packet.
	filter []uint16

	bufs    []sendBuf // free buffers of multi-packet Sends
	bufsOut int       // those in use
	one     [1]int    // the frames of a one-packet Send
	scratch Send      // the Send handed to a checker

	// HeadsRefused counts multi-packet Sends whose first octets (and
	// frames beyond the first few) were not kept: Limits.HeadBuffers were
	// in use.
	HeadsRefused int
	// ConnectionsRetired counts connections whose traffic was given up at
	// Limits.Connections.
	ConnectionsRetired int

	// OrphanFrames counts frames of no connection whose setup was seen.
	OrphanFrames int
	// OrphanEvictions counts directions without a setup given up at
	// Limits.Directions.
	OrphanEvictions int

	// iWARP (iwarp.go): connections established, waiting for their
	// traffic; and those whose traffic is followed.
	iwSetups map[iwKey]iwSetup
	iwByConn map[*record.Connection]*iwFlow
}

// NewFollower makes the follower of one input, writing its records to out.
func NewFollower(out *Output) *Follower {
	return &Follower{out: out, index: map[flowKey]flowRef{}, byConn: map[*record.Connection]*flow{},
		orphans: map[flowKey]*flow{}, filter: make([]uint16, 1<<16)}
}

// filterSlot hashes a DestQP and the last four octets of the destination
// address (the IPv4 address, the end of a GID, the LID).
func filterSlot(qp, dst4 uint32) uint32 {
	h := (qp ^ dst4*0x9e3779b1) * 0x85ebca6b
	return h >> 16
}

// Maybe reports whether a frame to DestQP qp at a destination ending in
// dst4 may belong to a connection whose setup was seen. The decoder asks it
// first, for frames that are no SEND: when it says no, the frame only
// counts (Orphan).
func (fl *Follower) Maybe(qp, dst4 uint32) bool { return fl.filter[filterSlot(qp, dst4)] != 0 }

// Orphan counts a frame that belongs to no connection whose setup was seen.
func (fl *Follower) Orphan() { fl.OrphanFrames++ }

func (k *flowKey) slot() uint32 { return filterSlot(k.qp, binary.BigEndian.Uint32(k.dst[12:])) }

// SetFile names the input of the frames that follow (live capture: the
// interface each frame came from).
func (fl *Follower) SetFile(name string) { fl.out.File = name }

// Established takes a connection from the tracker (conn.Handover).
func (fl *Follower) Established(s *conn.Setup) {
	c := s.Conn
	if c.Transport == record.IWARP {
		fl.establishedIWARP(c, s.ReplyMPA)
		return
	}
	net, ok := netOf(c.Transport)
	if !ok || s.Request == nil || s.Reply == nil {
		return // no QPNs without the CM bodies
	}
	ini, res, ok := endpoints(net, c, s.Request)
	if !ok {
		return
	}
	req, rep := s.Request, s.Reply
	f := &flow{conn: c, net: net, handed: -1, peers: Peers{c.Initiator, c.Responder}}
	f.neg = Negotiated{Known: true, Connection: c.RequestFrame, RemoteInvalidation: c.RemoteInvalidation, Rule: Classify(c),
		InitiatorRPCRDMA: c.InitiatorRPCRDMA != nil, ResponderRPCRDMA: c.ResponderRPCRDMA != nil,
		InitiatorR: c.InitiatorRPCRDMA != nil && c.InitiatorRPCRDMA.RemoteInvalidate,
		ResponderR: c.ResponderRPCRDMA != nil && c.ResponderRPCRDMA.RemoteInvalidate, Conn: c}
	if c.Inline != nil {
		f.neg.Inline = *c.Inline
	}
	// Reads the initiator issues go to the responder: the initiator's
	// Initiator Depth against the responder's Responder Resources; and the
	// mirror.
	f.neg.ReadLimit = [2]int{int(min(req.InitiatorDepth, rep.ResponderResources)), int(min(rep.InitiatorDepth, req.ResponderResources))}
	f.neg.HasReadLimit = [2]bool{true, true}
	f.neg.ReadLimitWhy = [2]string{
		fmt.Sprintf("REQ Initiator Depth %d, REP Responder Resources %d", req.InitiatorDepth, rep.ResponderResources),
		fmt.Sprintf("REP Initiator Depth %d, REQ Responder Resources %d", rep.InitiatorDepth, req.ResponderResources)}
	if req.PathMTU >= 1 && req.PathMTU <= 5 {
		f.mtu = 128 << req.PathMTU
	}
	f.start = [2]uint32{rep.StartingPSN, req.StartingPSN}
	f.keys = [2]flowKey{{net, ini, res, rep.LocalQPN}, {net, res, ini, req.LocalQPN}}
	// A reconnection on the same addresses and QPNs takes them over.
	for side, k := range f.keys {
		if old, ok := fl.index[k]; ok && old.f != f {
			fl.release(old.f, nil)
		}
		fl.index[k] = flowRef{f, uint8(side)}
		fl.filter[k.slot()]++
	}
	f.indexed = true
	fl.byConn[c] = f
	if len(fl.conns) >= fl.out.Limits.Connections {
		fl.retireConn(s.Frame, false)
	}
	for !fl.take(connCost) {
		if len(fl.conns) == 0 {
			fl.force(connCost)
			break
		}
		fl.retireConn(s.Frame, true)
	}
	f.slot = len(fl.conns)
	fl.conns = append(fl.conns, f)
	fl.cache.ok = false
}

// Ended stops following a connection (conn.Handover): what its traffic
// showed goes to its record.
func (fl *Follower) Ended(c *record.Connection) {
	if f := fl.byConn[c]; f != nil {
		fl.release(f, nil)
	}
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
			// No frame of it was seen: nothing is lost by forgetting it
			// (a later frame counts as of no connection), so no finding.
			fl.release(f, nil)
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
// finding about its end) goes to its record, or to the notes when its
// record was already handed on.
func (fl *Follower) release(f *flow, why *finding.Finding) {
	fl.unindex(f)
	delete(fl.byConn, f.conn)
	fl.give(connCost)
	last := len(fl.conns) - 1
	fl.conns[f.slot] = fl.conns[last]
	fl.conns[f.slot].slot = f.slot
	fl.conns = fl.conns[:last]
	if fl.chand >= last {
		fl.chand = 0
	}
	var fs []finding.Finding
	if f.chk != nil {
		fs = f.chk.Findings()
		f.chk.Close()
	}
	if why != nil {
		fs = append(fs, *why)
	}
	if f.handed < 0 {
		if f.chk != nil {
			f.conn.Datapath = f.chk.Figures()
		}
		f.conn.Findings = append(f.conn.Findings, fs...)
		return
	}
	fl.noteConn(f.conn, fs[min(f.handed, len(fs)):])
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

// maxNotes bounds the notes kept: the connection findings that came after
// their connection's record was handed on.
const maxNotes = 256

// noteConn keeps connection findings that came after c's record was
// handed on.
func (fl *Follower) noteConn(c *record.Connection, fs []finding.Finding) {
	for _, x := range fs {
		if len(fl.notes) == maxNotes {
			fl.notesCut++
			continue
		}
		x.Message = fmt.Sprintf("the connection of frame %d (%s → %s), after its record was written: %s",
			c.RequestFrame, c.Initiator, c.Responder, x.Message)
		fl.notes = append(fl.notes, x)
	}
}

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
	a, err1 := netip.ParseAddr(c.Initiator)
	b, err2 := netip.ParseAddr(c.Responder)
	if err1 != nil || err2 != nil {
		return Addr{}, Addr{}, false
	}
	return a.As16(), b.As16(), true
}

// lookup finds the connection side a frame belongs to. The last answer is
// kept: frames come in runs.
func (fl *Follower) lookup(k flowKey) (flowRef, bool) {
	if fl.cache.ok && k.same(&fl.cache.key) {
		return fl.cache.ref, fl.cache.ref.f != nil
	}
	r, ok := fl.index[k]
	fl.cache.key, fl.cache.ref, fl.cache.ok = k, r, true
	return r, ok
}

// Packet takes one RC frame.
func (fl *Follower) Packet(p *Packet) {
	k := flowKey{p.Net, p.Src, p.Dst, p.DestQP}
	r, ok := fl.lookup(k)
	if !ok {
		fl.OrphanFrames++
		if isSend(p.OpCode) {
			fl.orphanSend(k, p)
		}
		return
	}
	f := r.f
	f.used = true
	if f.chk == nil {
		f.chk = NewChecker(fl.out, f.neg, f.peers, f.net.transport())
		f.sides = &[2]sideState{{next: f.start[0], hasNext: true}, {next: f.start[1], hasNext: true}}
	}
	f.chk.Frame()
	fl.frame(f, int(r.side), p)
}

// orphanSend follows a Send of a direction whose setup was not seen.
func (fl *Follower) orphanSend(k flowKey, p *Packet) {
	f := fl.orphans[k]
	if f == nil {
		f = &flow{net: p.Net, handed: -1, peers: Peers{p.Src.name(p.Net), p.Dst.name(p.Net)}, key: k}
		f.chk = NewChecker(fl.out, Negotiated{}, f.peers, p.Net.transport())
		f.sides = &[2]sideState{}
		if len(fl.slots) < fl.out.Limits.Directions && (fl.take(dirCost) || len(fl.slots) == 0 && fl.force(dirCost)) {
			f.slot = len(fl.slots)
			fl.slots = append(fl.slots, f)
		} else {
			if len(fl.slots) < fl.out.Limits.Directions {
				fl.out.Limits.Budget.Lost(budget.Datapath) // evicted for the budget
			}
			f.slot = fl.evictOrphan()
			fl.slots[f.slot] = f
		}
		fl.orphans[k] = f
	}
	f.used = true
	f.chk.Frame()
	fl.orphanPacket(f, p)
}

// evictOrphan gives up a direction without a setup to make room for a new
// one, and returns its slot: the first the hand finds that was not active
// since it last passed (the CLOCK approximation of least recently used).
func (fl *Follower) evictOrphan() int {
	for {
		f := fl.slots[fl.hand]
		slot := fl.hand
		fl.hand = (fl.hand + 1) % len(fl.slots)
		if f.used {
			f.used = false
			continue
		}
		fl.deliver(f, 0, &f.sides[0], false, nil)
		f.chk.Close()
		delete(fl.orphans, f.key)
		fl.OrphanEvictions++
		return slot
	}
}

// Budget costs: what following a connection, a direction without its
// setup, and a Send's first octets hold (the estimates Limits.ExtraMemory
// also uses).
const (
	connCost = 1600
	dirCost  = 1300
	headCost = HeadLen + 8*maxFrames + 64
)

// take charges n octets to the budget, reporting whether they fit.
func (fl *Follower) take(n int) bool {
	if !fl.out.Limits.Budget.Charge(budget.Datapath, n) {
		return false
	}
	fl.charged += n
	return true
}

// force charges n octets to the budget even beyond its limit; it reports
// true.
func (fl *Follower) force(n int) bool {
	fl.out.Limits.Budget.Force(budget.Datapath, n)
	fl.charged += n
	return true
}

// give releases n octets charged.
func (fl *Follower) give(n int) {
	fl.out.Limits.Budget.Release(budget.Datapath, n)
	fl.charged -= n
}

// Close releases what the follower charged to the budget, at the end of
// its input.
func (fl *Follower) Close() { fl.give(fl.charged) }

// Annotate adds to a connection record, as it is handed on, what the data
// path saw of its traffic so far: its figures and its connection findings.
// A connection no longer followed already has them.
func (fl *Follower) Annotate(c *record.Connection) {
	if c.Transport == record.IWARP && fl.annotateIWARP(c) {
		return
	}
	f := fl.byConn[c]
	if f == nil || f.chk == nil {
		return
	}
	c.Datapath = f.chk.Figures()
	fs := f.chk.Findings()
	c.Findings = append(c.Findings, fs...)
	f.handed = len(fs)
}

// Flush delivers the Sends still in progress at the end of the input, as
// far as they came, in the order of their last frames.
func (fl *Follower) Flush() {
	type pending struct {
		f    *flow
		side int
	}
	var ps []pending
	for _, f := range fl.conns {
		if f.sides != nil {
			for side := range f.sides {
				if f.sides[side].asm.active {
					ps = append(ps, pending{f, side})
				}
			}
		}
	}
	for _, f := range fl.slots {
		if f.sides[0].asm.active {
			ps = append(ps, pending{f, 0})
		}
	}
	slices.SortStableFunc(ps, func(a, b pending) int {
		return cmp.Compare(a.f.sides[a.side].asm.lastFrame, b.f.sides[b.side].asm.lastFrame)
	})
	for _, p := range ps {
		fl.deliver(p.f, p.side, &p.f.sides[p.side], false, nil)
	}
}

// Notes are the data path's findings about the run, at the end of the
// input: connection findings that came after the connection's record was
// handed on (live capture), and the directions without a setup given up at
// the limit.
func (fl *Follower) Notes() []finding.Finding {
	for _, f := range fl.conns {
		if f.chk != nil && f.handed >= 0 {
			fs := f.chk.Findings()
			fl.noteConn(f.conn, fs[min(f.handed, len(fs)):])
			f.handed = len(fs)
		}
	}
	open := make([]*record.Connection, 0, len(fl.iwByConn)) // iWARP traffic still open at the end
	for c := range fl.iwByConn {
		open = append(open, c)
	}
	slices.SortFunc(open, func(a, b *record.Connection) int { return cmp.Compare(a.RequestFrame, b.RequestFrame) })
	for _, c := range open {
		if t := fl.iwByConn[c]; t.handed >= 0 {
			fs := t.chk.Findings()
			fl.noteConn(c, fs[min(t.handed, len(fs)):])
			t.handed = len(fs)
		}
	}
	out := fl.notes
	if fl.notesCut > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%d more connection findings that came after their records were written are not listed", fl.notesCut))
	}
	fl.notes, fl.notesCut = nil, 0
	if fl.OrphanEvictions > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%d directions of RC traffic without their connection setup were given up, the least recently active first, at the limit of %d followed at once",
			fl.OrphanEvictions, fl.out.Limits.Directions))
	}
	return out
}
