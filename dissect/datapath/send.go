package datapath

import (
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The PSN bookkeeping and the reassembly of Sends, per side of a
// connection.
//
// Each side's requests (SEND, RDMA WRITE, READ Request, atomics) carry
// consecutive PSNs: one per packet, and ceil(length / path MTU) for a READ
// Request. A PSN the side already used is a retransmission and counts once;
// one beyond the next expected means frames are missing from the capture.
// Responses (Acknowledge, READ Response, ATOMIC Acknowledge) carry the PSN
// of the request they answer, in the other side's sequence: the last packet
// of a READ Response (or an ACK or ATOMIC Acknowledge at or past it)
// completes the Reads up to it.
//
// A multi-packet Send (First, Middle..., Last) keeps only its length, its
// frames and its first HeadLen octets (for the RPC-over-RDMA header), in a
// buffer taken from a bounded pool while it is in progress. A SEND Only is
// checked straight from its frame.

const psnMask = 1<<24 - 1

// sideState is one side's request stream.
type sideState struct {
	next    uint32 // the PSN of its next request
	hasNext bool
	asm     sendAsm
	reads   []uint32 // the last response PSN of each outstanding Read or atomic, in order
	// forgot counts the Reads (and atomics) outstanding before those in
	// reads, no longer tracked one by one (readsPerSide); forgotLast is the
	// last response PSN of the newest of them.
	forgot     int
	forgotLast uint32
}

// sendAsm is a multi-packet Send in progress.
type sendAsm struct {
	active      bool
	length      int
	lengthKnown bool
	head        []byte // first octets, from the pool; nil when none was free
	headCut     string // why head stopped before HeadLen: "capture" or "limit"
	frames      []int  // from the pool (maxFrames), or few
	pooled      bool   // head and frames are the pool's
	few         [4]int
	dropped     int // frames beyond those kept
	lastFrame   int
	lastTime    time.Time
	lastOp      uint8
	flaws       Flaws // what its packets showed wrong in their lengths
}

type psnOrder uint8

const (
	inOrder psnOrder = iota
	ahead            // frames are missing before it
	behind           // already seen: a retransmission
)

func (st *sideState) order(psn uint32) psnOrder {
	if !st.hasNext {
		return inOrder
	}
	switch d := (psn - st.next) & psnMask; {
	case d == 0:
		return inOrder
	case d < 1<<23:
		return ahead
	}
	return behind
}

// atOrBefore reports whether PSN a is b or comes before it.
func atOrBefore(a, b uint32) bool { return (b-a)&psnMask < 1<<23 }

// IsSend reports whether an RC opcode is a SEND (First, Middle, Last, Only,
// with Immediate or Invalidate).
func IsSend(op uint8) bool { return isSend(op) }

func isSend(op uint8) bool {
	return op <= layers.OpSendOnlyImm || op == layers.OpSendLastInvalidate || op == layers.OpSendOnlyInvalidate
}

var sendNames = [...]string{
	layers.OpSendFirst: "SEND_FIRST", layers.OpSendMiddle: "SEND_MIDDLE", layers.OpSendLast: "SEND_LAST",
	layers.OpSendLastImm: "SEND_LAST_WITH_IMMEDIATE", layers.OpSendOnly: "SEND_ONLY",
	layers.OpSendOnlyImm: "SEND_ONLY_WITH_IMMEDIATE", layers.OpSendLastInvalidate: "SEND_LAST_WITH_INVALIDATE",
	layers.OpSendOnlyInvalidate: "SEND_ONLY_WITH_INVALIDATE",
}

// frame takes one frame of a connection, sent by side.
func (fl *Follower) frame(f *flow, side int, p *Packet) {
	fl.chunkFrame(f, side, p)
	op := p.OpCode
	hl := f.chk.hl
	hl.marks(side, p)
	switch op {
	case layers.OpCNP:
		return
	case layers.OpReadResponseFirst, layers.OpReadResponseMiddle:
		hl.readResponse(side, p)
		return
	case layers.OpReadResponseLast, layers.OpReadResponseOnly:
		hl.readResponse(side, p)
		fl.response(f, 1-side, p)
		return
	case layers.OpAcknowledge:
		f.chk.acknowledge(side, p)
		fl.response(f, 1-side, p)
		return
	case layers.OpAtomicAcknowledge:
		fl.response(f, 1-side, p)
		return
	}
	if !layers.IsRC(op) {
		return
	}
	st := &f.sides[side]
	o := st.order(p.PSN)
	switch o {
	case behind:
		hl.request(side, o, p, 1, true)
		return // a retransmission, counted once
	case ahead:
		f.chk.Lost(side)
		st.asm.gap()
	}
	if p.DMALength > MaxDMALength {
		f.chk.DMALengthInvalid(side, p.Frame, op, p.DMALength)
	}
	n, known := uint32(1), true
	if op == layers.OpReadRequest {
		switch {
		case f.mtu > 0 && p.DMALength > 0:
			n = readPSNs(p.DMALength, uint32(f.mtu))
		case f.mtu == 0:
			known = false // the next request tells where the sequence goes on
		}
	}
	st.next, st.hasNext = (p.PSN+n)&psnMask, known
	hl.request(side, o, p, n, known)
	switch {
	case isSend(op):
		fl.sendPacket(f, side, st, p)
	case op == layers.OpReadRequest || op == layers.OpCmpSwap || op == layers.OpFetchAdd:
		if len(st.reads) == readsPerSide {
			// Over any limit a setup can give: the oldest is no longer
			// tracked one by one, but stays outstanding until a response
			// answers it or a later one.
			st.forgot++
			st.forgotLast = st.reads[0]
			st.reads = st.reads[:copy(st.reads, st.reads[1:])]
			fl.ReadsUntracked++
			f.chk.ReadsUntracked(side, p.Frame)
		}
		st.reads = append(st.reads, (p.PSN+n-1)&psnMask)
		f.chk.ReadRequest(side, p.Frame)
	}
}

// response completes the Reads of side that a response packet answers: up
// to its PSN, or (a NAK) before it.
func (fl *Follower) response(f *flow, side int, p *Packet) {
	st := &f.sides[side]
	nak := p.OpCode == layers.OpAcknowledge && p.Syndrome>>5&0x03 != layers.SyndromeACK
	done := 0
	for _, last := range st.reads {
		if !atOrBefore(last, p.PSN) || nak && last == p.PSN {
			break
		}
		done++
	}
	// The Reads no longer tracked one by one come before all those
	// tracked: a response to the newest of them, or to a later one,
	// completes them all.
	if st.forgot > 0 && (done > 0 || atOrBefore(st.forgotLast, p.PSN) && !(nak && st.forgotLast == p.PSN)) {
		for range st.forgot {
			f.chk.ReadDone(side)
		}
		st.forgot = 0
	}
	if done > 0 {
		st.reads = st.reads[:copy(st.reads, st.reads[done:])]
		for range done {
			f.chk.ReadDone(side)
		}
	}
}

// orphanSend follows a Send packet of a direction whose setup was not
// seen. Its other requests are not followed, so a PSN jump before a new
// Send says nothing; one inside a Send is a gap.
func (fl *Follower) orphanPacket(f *flow, p *Packet) {
	st := &f.sides[0]
	o := st.order(p.PSN)
	if o == behind {
		return
	}
	if o == ahead && (p.OpCode == layers.OpSendMiddle || p.OpCode == layers.OpSendLast ||
		p.OpCode == layers.OpSendLastImm || p.OpCode == layers.OpSendLastInvalidate) {
		st.asm.gap()
	}
	st.next, st.hasNext = (p.PSN+1)&psnMask, true
	fl.sendPacket(f, 0, st, p)
}

// sendPacket reassembles Sends.
func (fl *Follower) sendPacket(f *flow, side int, st *sideState, p *Packet) {
	a := &st.asm
	switch p.OpCode {
	case layers.OpSendFirst:
		if a.active {
			fl.deliver(f, side, st, false, nil)
		}
		fl.start(a, p)
		fl.packetFlaws(&a.flaws, p, f.mtu)
	case layers.OpSendMiddle:
		if !a.active {
			fl.orphanPiece(f, p)
			return
		}
		fl.add(a, p)
		fl.packetFlaws(&a.flaws, p, f.mtu)
	case layers.OpSendLast, layers.OpSendLastImm, layers.OpSendLastInvalidate:
		if !a.active {
			fl.orphanPiece(f, p)
			return
		}
		fl.add(a, p)
		fl.packetFlaws(&a.flaws, p, f.mtu)
		fl.deliver(f, side, st, true, p)
	default: // SEND Only, with Immediate, with Invalidate
		if a.active {
			fl.deliver(f, side, st, false, nil)
		}
		fl.one[0] = p.Frame
		s := &fl.scratch
		*s = Send{Side: side, Opcode: sendNames[p.OpCode], Invalidate: p.OpCode == layers.OpSendOnlyInvalidate,
			Length: p.PayloadLen, LengthKnown: true, Complete: true, Frame: p.Frame, Frames: fl.one[:], Time: p.Time,
			Head: p.Payload, HeadWhole: len(p.Payload) == p.PayloadLen}
		if s.Invalidate {
			s.InvalidateSTag = p.IETH
		}
		if !s.HeadWhole {
			s.HeadCut = "capture"
		}
		fl.packetFlaws(&s.Flaws, p, f.mtu)
		fl.check(f, s)
	}
}

// start begins a multi-packet Send.
func (fl *Follower) start(a *sendAsm, p *Packet) {
	a.active, a.length, a.lengthKnown, a.dropped, a.headCut, a.flaws = true, 0, true, 0, "", Flaws{}
	fl.getBuf(a)
	if a.head == nil {
		a.headCut = "limit"
	}
	fl.add(a, p)
}

// add takes the next packet of a Send in progress.
func (fl *Follower) add(a *sendAsm, p *Packet) {
	a.length += p.PayloadLen
	if len(a.frames) < cap(a.frames) {
		a.frames = append(a.frames, p.Frame)
	} else {
		a.dropped++
	}
	a.lastFrame, a.lastTime, a.lastOp = p.Frame, p.Time, p.OpCode
	if a.head == nil || a.headCut != "" || len(a.head) >= HeadLen {
		return
	}
	n := min(len(p.Payload), HeadLen-len(a.head))
	a.head = append(a.head, p.Payload[:n]...)
	if len(p.Payload) < p.PayloadLen && len(a.head) < HeadLen {
		a.headCut = "capture" // the snap length cut this packet: what follows is not contiguous
	}
}

// gap marks the Send in progress as missing frames: its length is unknown,
// and its first octets stop where the gap is.
func (a *sendAsm) gap() {
	if !a.active {
		return
	}
	a.lengthKnown = false
	if a.headCut == "" && len(a.head) < HeadLen {
		a.headCut = "capture"
	}
}

// deliver hands the Send in progress to the checker: complete (its last
// packet p), or not (its end is missing, or the input ended).
func (fl *Follower) deliver(f *flow, side int, st *sideState, complete bool, p *Packet) {
	a := &st.asm
	if !a.active {
		return
	}
	s := &fl.scratch
	*s = Send{Side: side, Opcode: sendNames[a.lastOp], Length: a.length, LengthKnown: a.lengthKnown && complete, Complete: complete,
		Frame: a.lastFrame, Frames: a.frames, FramesDropped: a.dropped, Time: a.lastTime, Head: a.head, HeadCut: a.headCut, Flaws: a.flaws}
	if p != nil && p.OpCode == layers.OpSendLastInvalidate {
		s.Invalidate, s.InvalidateSTag = true, p.IETH
	}
	s.HeadWhole = s.HeadCut == "" && s.LengthKnown && len(a.head) == a.length
	if !s.HeadWhole && s.HeadCut == "" {
		if complete && a.lengthKnown {
			s.HeadCut = "limit" // longer than the octets kept
		} else {
			s.HeadCut = "capture" // its end is not in the capture
		}
	}
	fl.check(f, s)
	fl.putBuf(a)
	a.active = false
}

// sendBuf is what a multi-packet Send in progress keeps of its packets:
// its first octets and its frames.
type sendBuf struct {
	head   []byte
	frames []int
}

// getBuf gives a starting Send the buffers of the pool, made when needed
// up to Limits.HeadBuffers; beyond, it keeps no first octets and only its
// first few frames.
func (fl *Follower) getBuf(a *sendAsm) {
	var b sendBuf
	switch n := len(fl.bufs); {
	case n > 0:
		b = fl.bufs[n-1]
		fl.bufs = fl.bufs[:n-1]
	case fl.bufsOut < fl.out.Limits.HeadBuffers && fl.take(headCost):
		b = sendBuf{make([]byte, 0, HeadLen), make([]int, 0, maxFrames)}
	default:
		if fl.bufsOut < fl.out.Limits.HeadBuffers {
			fl.out.Limits.Budget.Lost(budget.Datapath)
		}
		fl.HeadsRefused++
		a.head, a.frames, a.pooled = nil, a.few[:0], false
		return
	}
	fl.bufsOut++
	a.head, a.frames, a.pooled = b.head[:0], b.frames[:0], true
}

// putBuf returns a Send's buffers to the pool.
func (fl *Follower) putBuf(a *sendAsm) {
	if a.pooled {
		fl.bufs = append(fl.bufs, sendBuf{a.head[:0], a.frames[:0]})
		fl.bufsOut--
	}
	a.head, a.frames, a.pooled = nil, nil, false
}
