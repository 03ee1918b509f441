package datapath

import (
	"cmp"
	"encoding/binary"
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The Follower is the InfiniBand-family data path: RC frames of RoCEv2,
// RoCEv1 and native InfiniBand, tied to the connections the tracker
// established (conns.go).
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

// endpoint is an address as the records name it.
func (a Addr) endpoint(n Net) record.Endpoint {
	switch n {
	case NetIB:
		return record.LIDEndpoint(binary.BigEndian.Uint16(a[14:]))
	case NetRoCEv1:
		return record.GIDEndpoint(a)
	}
	return record.IPEndpoint(a[:])
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
	// FECN and BECN are the BTH's congestion bits; DSCP and ECN the IP
	// traffic class of a RoCEv2 packet, when HasTClass.
	FECN, BECN bool
	DSCP, ECN  uint8
	HasTClass  bool
	// The extended headers of the opcode: RETH (RDMA WRITE First and Only,
	// READ Request), AETH (responses), IETH (SEND with Invalidate).
	VA        uint64
	RKey      uint32
	DMALength uint32
	Syndrome  uint8
	HasAETH   bool // the AETH was captured (Syndrome is its)
	IETH      uint32

	// Payload is the payload as captured (after the extended headers,
	// without the pad and the ICRC); PayloadLen its length on the wire,
	// which is more when the capture cut the frame.
	Payload    []byte
	PayloadLen int
	// LengthLie, when not "", says how a length field of the frame's
	// headers (UDP Length, IPv4 Total Length, ...) claims more than the
	// frame carried on the wire: PayloadLen is what the wire carried
	// (length-mismatch).
	LengthLie string
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
	id      int // the connection's Number; 0 without a setup
	neg     Negotiated
	peers   Peers
	net     Net
	keys    [2]flowKey
	indexed bool
	// startCut: the capture cut that side's Starting PSN from its CM
	// message; its first request tells it.
	startCut [2]bool
	mtu      int // path MTU in octets; 0 when unknown
	start    [2]uint32
	chk      *Checker // made at the first frame
	sides    *[2]sideState
	handed   handed    // what the handed-on record got
	parked   bool      // set aside until its first frame (park)
	chunks   *rcChunks // its RDMA operations, for the chunks (chunk_rc.go)
	// The flow's slot among those followed (connections, or directions
	// without a setup), and whether it was active since the eviction hand
	// last passed; the key of a direction without a setup.
	slot int
	used bool
	key  flowKey
}

// Follower follows the RC traffic of one input, and the iWARP traffic the
// MPA framer reads of it (iwarp.go). The run loop hands it the tracker's
// events (Connection), the RC frames (RC) and the framer's traffic (IWARP);
// it keeps what it follows by the connections' Numbers, and adds the
// "rpc" records it makes to its Output, which the run loop takes after
// each call.
type Follower struct {
	out     *Output
	charged int // octets charged to the budget (Limits.Budget)
	index   map[flowKey]flowRef
	byConn  map[int]*flow // the connections followed, by Number
	conns   []*flow       // the same, for the eviction hand
	chand   int
	// The connections parked (none of their traffic seen yet), in the
	// order they were, from parkHead; nParked counts them.
	parkQ    []parkedRef
	parkHead int
	nParked  int
	// Tombstones of parked connections given up (tomb.go).
	tombs    map[uint64]*tomb
	tombIDs  map[int32]*tomb
	tombQ    []*tomb
	tombHead int
	// TombsForgotten counts tombstones forgotten at maxTombs or for the
	// budget: the traffic of those connections, if it came, went unsaid.
	TombsForgotten int
	// freeFlows are flows of ended connections, for the next ones.
	freeFlows []*flow
	orphans   map[flowKey]*flow
	slots     []*flow // the directions without a setup, for the eviction hand
	hand      int
	// results are what the traffic of connections no longer followed
	// showed, until their records are handed on (Annotate), by Number.
	results map[int]result
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
	// RC learns from the frame's key without decoding the rest.
	filter []uint16

	bufs    []sendBuf // free buffers of multi-packet Sends
	bufsOut int       // those in use
	one     [1]int    // the frames of a one-packet Send
	scratch Send      // the Send handed to a checker

	// ending is set once the input ended (Flush): the connection records
	// handed on after it are final.
	ending bool

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
	// OrphanPackets counts SEND Middle and Last packets that came without
	// the First of their Send; ReadsUntracked the RDMA Read Requests (and
	// atomics) that came when readsPerSide of their side were tracked
	// already (drops.go).
	OrphanPackets  int
	ReadsUntracked int
	// stray are the length flaws of packets that no "rpc" record shows,
	// for the run's notes; lieTaken is set while a packet is taken once
	// its length lie went to a Send (flaws.go).
	stray    Flaws
	lieTaken bool

	// iWARP (iwarp.go): connections established, waiting for their
	// traffic; the traffic the framer links, by its link number; and the
	// connections whose traffic is followed, by Number.
	iwSetups map[iwKey]iwSetup
	iwLinks  map[int]*iwFlow
	// The last of iwLinks looked up, and its number (IWARP).
	iwLast     *iwFlow
	iwLastConn int
	iwByConn   map[int]*iwFlow
}

// result is what a connection's traffic showed: its figures and its
// connection findings.
type result struct {
	fig      *record.Datapath
	findings []finding.Finding
	cost     int          // charged to the budget while kept (resultCost)
	end      record.State // how the traffic showed the connection's end, if it did
}

// NewFollower makes the follower of one input, writing its records to out.
func NewFollower(out *Output) *Follower {
	return &Follower{out: out, index: map[flowKey]flowRef{}, byConn: map[int]*flow{}, results: map[int]result{},
		orphans: map[flowKey]*flow{}, filter: make([]uint16, 1<<16)}
}

// Take returns the "rpc" records made since the last Take, in capture
// order; the slice is valid until the next call.
func (fl *Follower) Take() []*record.RPC { return fl.out.Take() }

// Holding reports whether records wait for a Call's Reply: the run loop's
// own records then wait behind them (Defer), to keep capture order.
func (fl *Follower) Holding() bool { return fl.out.Holding() }

// Defer queues a record of the run loop's behind those waiting.
func (fl *Follower) Defer(x any, frame, cost int) { fl.out.Defer(x, frame, cost) }

// TakeItems returns the rpc records and deferred records no waiting record
// holds back any more, in order (valid until the next call).
func (fl *Follower) TakeItems() []Item { return fl.out.TakeItems() }

// TakeUpdates returns the updates of connection records handed on before
// their traffic ended, made since the last call; the slice is valid until
// the next call. The run loop takes them after Take: an update comes when
// a connection's traffic ends, after the records of its last Sends.
func (fl *Follower) TakeUpdates() []*record.ConnectionUpdate { return fl.out.TakeUpdates() }

// RPCMessages counts the RPC-over-RDMA messages seen, recorded or not.
func (fl *Follower) RPCMessages() int { return fl.out.RPCMessages }

// CallsUntracked counts the Calls not tracked at a limit.
func (fl *Follower) CallsUntracked() int { return fl.out.CallsUntracked }

// filterSlot hashes a DestQP and the last four octets of the destination
// address (the IPv4 address, the end of a GID, the LID).
func filterSlot(qp, dst4 uint32) uint32 {
	h := (qp ^ dst4*0x9e3779b1) * 0x85ebca6b
	return h >> 16
}

func (k *flowKey) slot() uint32 { return filterSlot(k.qp, binary.BigEndian.Uint32(k.dst[12:])) }

// SetFile names the input of the frames that follow (live capture: the
// interface each frame came from).
func (fl *Follower) SetFile(name string) { fl.out.File = name }

// RCFrame is an RC frame as the decoder found it, decoded only as far as
// the follower asks: most RC frames of a capture are data of a connection
// whose setup is not in it (or no SEND of one that is), which the filter
// tells from the frame's key alone.
type RCFrame interface {
	// Key is the BTH opcode and DestQP, and the last four octets of the
	// destination address (the IPv4 address, the end of an IPv6 address
	// or GID, the LID).
	Key() (op uint8, qp, dst4 uint32)
	// Packet decodes the rest of the frame; it is valid until the next
	// frame.
	Packet() *Packet
}

// RC takes one RC frame.
func (fl *Follower) RC(f RCFrame) {
	op, qp, dst4 := f.Key()
	if !fl.Wants(op, qp, dst4) {
		return
	}
	fl.Packet(f.Packet())
}

// Wants reports whether an RC frame of this key (RCFrame.Key) may belong
// to a connection followed, and counts it as an orphan when it may not:
// only then need it be decoded for Packet.
func (fl *Follower) Wants(op uint8, qp, dst4 uint32) bool {
	if !isSend(op) && fl.filter[filterSlot(qp, dst4)] == 0 {
		if op != layers.OpCNP { // a CNP is no data frame
			fl.OrphanFrames++
		}
		return false
	}
	return true
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

// Packet takes one RC frame, decoded. A length field of it that lies
// goes to the "rpc" record of the Send it is part of, or else to the run's
// notes.
func (fl *Follower) Packet(p *Packet) {
	fl.lieTaken = false
	fl.packet(p)
	if p.LengthLie != "" && !fl.lieTaken {
		fl.stray.lie(p)
	}
}

func (fl *Follower) packet(p *Packet) {
	k := flowKey{p.Net, p.Src, p.Dst, p.DestQP}
	r, ok := fl.lookup(k)
	if !ok {
		fl.wake(&k, p)
		fl.OrphanFrames++
		if isSend(p.OpCode) {
			fl.orphanSend(k, p)
		}
		return
	}
	f := r.f
	if f.parked {
		fl.unpark(f, p.Frame)
	}
	f.used = true
	if f.chk == nil {
		f.chk = NewChecker(fl.out, f.neg, f.peers, f.net.transport())
		known := [2]bool{!f.startCut[0], !f.startCut[1]}
		f.sides = &[2]sideState{{next: f.start[0], hasNext: known[0]}, {next: f.start[1], hasNext: known[1]}}
		f.chk.hl = newRCHealth(p.Time, f.start, known) // charged with connCost
	}
	f.chk.Frame()
	if fl.out.Evidence != nil && f.id != 0 {
		fl.out.Evidence(f.id, p.Frame)
	}
	fl.frame(f, int(r.side), p)
}

// orphanSend follows a Send of a direction whose setup was not seen.
func (fl *Follower) orphanSend(k flowKey, p *Packet) {
	f := fl.orphans[k]
	if f == nil {
		f = &flow{net: p.Net, peers: Peers{p.Src.endpoint(p.Net), p.Dst.endpoint(p.Net)}, key: k}
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
	// connCost is a connection followed: its flow and index entries, and
	// what its traffic holds once it begins (its Checker, its sides'
	// bookkeeping, its health tracker, its RPC layer's and chunks' state),
	// charged up front so that the budget has room for it before its
	// first frame (TestParkCost: 4.7 KB at its first frame). A connection
	// that has to make room before its traffic begins is parked instead.
	connCost = 4800
	// dirCost is a direction without its setup: its flow and checker
	// (2.6 KB with a Call outstanding, measured as TestParkCost does).
	dirCost  = 2600
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

// takeOver charges n octets to the budget within a sixteenth over its
// limit, reporting whether they fit.
func (fl *Follower) takeOver(n int) bool {
	b := fl.out.Limits.Budget
	if !b.ChargeOver(budget.Datapath, n, b.Limit()/16) {
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
func (fl *Follower) Close() {
	fl.give(fl.charged)
	// The Calls still tracked by checkers never closed (directions
	// without a setup, at the end of the input).
	fl.out.Limits.Budget.Release(budget.Datapath, fl.out.calls*callCost)
	fl.out.calls = 0
	// And the long messages they were putting together (chunk.go).
	fl.out.Limits.Budget.Release(budget.Datapath, fl.out.longsOut*longCost)
	fl.out.longsOut = 0
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
	// The input ends: a Call still without its Reply gets none, and what
	// connections' records show now is what they end with.
	fl.out.releaseAll()
	fl.ending = true
}
