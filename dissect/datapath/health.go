package datapath

import (
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The health of an RC connection's transport, per direction: what the
// AETH of each Acknowledge says (ACK, NAK by code, RNR NAK), the request
// packets sent again and those the capture never showed, the congestion
// marks (ECN CE, CNPs, FECN and BECN), the octets moved and the DSCP.
//
// Each side's requests carry consecutive PSNs. The tracker remembers the
// last psnWindow of them: whether each was seen, whether a NAK named it as
// lost, and when its first copy came. A PSN already seen is a
// retransmission; a PSN the capture skipped is a gap, which a later copy
// fills (a retransmission when a NAK named it, else a packet the capture
// put out of order). A gap still open when it leaves the window, or at the
// end, was lost by the capture, not by the wire: no NAK named it.
//
// The state is fixed in size (rcHealth: under 2 KB a connection) and
// each packet costs a few integer operations; nothing allocates after the
// connection's first frame.

// psnWindow is how many PSNs of a side's requests the tracker remembers
// (a multiple of 64).
const psnWindow = 64

// recentOps is how many Sends, and RDMA Writes and Reads, of each side
// the tracker remembers, for a NAK to name the one it refused.
const recentOps = 4

// rcHealth is the transport health of one connection.
type rcHealth struct {
	base  time.Time // the connection's first frame: times are kept as µs after it
	sides [2]sideHealth
	// invals are the last R_Keys Sends With Invalidate invalidated.
	invals [recentOps]inval
	ninval int
	fig    record.Health
}

// sideHealth is what the tracker keeps of one side: its requests, the
// responses it sent, and what its findings will say.
type sideHealth struct {
	next    uint32 // the PSN of its next request
	hasNext bool
	// seen and nakd are bits by PSN modulo psnWindow, for the PSNs
	// [next-psnWindow, next): seen, and (a gap) named lost by a NAK; at is
	// when each was first seen.
	seen, nakd [psnWindow / 64]uint64
	at         [psnWindow]uint32
	// missing counts the gaps that left the window unfilled; gaps are the
	// first few packets that showed a gap, for the finding.
	missing int
	gaps    [3]gapEvent
	ngaps   int
	// nakAt is when the peer last sent a NAK or RNR NAK about this side's
	// requests.
	nakAt  uint32
	hasNAK bool
	// respLast is the PSN of the last READ Response packet this side sent.
	respLast uint32
	hasResp  bool
	// The Send in progress, the last Sends, the last RDMA Writes and Reads.
	cur    opRec
	curOn  bool
	sends  [recentOps]opRec
	nsends int
	rdma   [recentOps]opRec
	nrdma  int

	// What its findings say: the first frames of each kind, the frame and
	// PSN of the first NAK of each code, what the first Invalid Request
	// and Remote Access Error answered, the RNR NAKs' Calls outstanding,
	// the retransmissions after a NAK.
	nakFrames  frames3
	nakFrame   [record.NAKCodeCount]int32
	nakPSN     [record.NAKCodeCount]uint32
	refused    nakNote // the first Invalid Request's
	denied     nakNote // the first Remote Access Error's
	rnrFrames  frames3
	rnrCalls   int32 // Calls outstanding at the first RNR NAK, -1 when not judged
	rnrGrant   int32 // the grant then, 0 when none
	rnrMost    int32 // the most Calls outstanding at an RNR NAK
	retxFrames frames3
	retxNAK    int32 // retransmissions after a NAK
	ceFrames   frames3
	cnpFrames  frames3
	fecnFrames frames3
	becnFrames frames3
	reserved   int32 // NAKs with a reserved code
}

// frames3 are the first frames of a kind of event.
type frames3 [3]int32

// opRec is a request the tracker remembers: its PSNs, the frame that
// ended it, its length (a Send) or R_Key (a Write or Read), its opcode.
type opRec struct {
	first, last uint32
	frame       int32
	val         uint32 // a Send's length, a Write's or Read's R_Key
	op          uint8
}

// inval is an R_Key a Send With Invalidate invalidated.
type inval struct {
	rkey  uint32
	frame int32
	side  uint8
}

// gapEvent is a packet that showed a gap: the PSNs skipped before it.
type gapEvent struct {
	from, n uint32
	frame   int
}

// nakNote is what the first NAK of a code answered: a Send or an RDMA
// Write or Read of the peer.
type nakNote struct {
	what  opRec
	found bool // what is known
	invOK bool // what.val (an R_Key) was invalidated before (inval)
	inval inval
	over  int32 // the Send's inline threshold, when over it (0: not over or not judged)
}

// newRCHealth is the tracker of a connection whose traffic begins at t;
// start is each side's Starting PSN, when known.
func newRCHealth(t time.Time, start [2]uint32, known [2]bool) *rcHealth {
	h := &rcHealth{base: t}
	h.fig.Kind = record.HealthRC
	for i := range h.sides {
		s := &h.sides[i]
		s.next, s.hasNext = start[i], known[i]
		for w := range s.seen {
			s.seen[w] = ^uint64(0) // nothing before the start is a gap
		}
		s.rnrCalls = -1
	}
	return h
}

// ts is t as the tracker keeps it: µs after the first frame (it wraps
// after 71 minutes, which only delays longer than that would notice).
func (h *rcHealth) ts(t time.Time) uint32 { return uint32(t.Sub(h.base) / time.Microsecond) }

func bit(psn uint32) (int, uint64) {
	i := psn % psnWindow
	return int(i / 64), 1 << (i % 64)
}

func (s *sideHealth) isSeen(psn uint32) bool { w, b := bit(psn); return s.seen[w]&b != 0 }
func (s *sideHealth) isNAKd(psn uint32) bool { w, b := bit(psn); return s.nakd[w]&b != 0 }

// advance moves the side's next PSN to `to`: the PSNs leaving the window
// unseen, and named by no NAK, are missing; those entering are gaps (gap)
// or seen at ts.
func (s *sideHealth) advance(to uint32, gap bool, ts uint32) {
	d := (to - s.next) & psnMask
	if d == 0 {
		return
	}
	leave := func(psn uint32) {
		if w, b := bit(psn); s.seen[w]&b == 0 && s.nakd[w]&b == 0 {
			s.missing++
		}
	}
	enter := func(psn uint32) {
		w, b := bit(psn)
		if gap {
			s.seen[w] &^= b
		} else {
			s.seen[w] |= b
		}
		s.nakd[w] &^= b
		s.at[psn%psnWindow] = ts
	}
	if d >= psnWindow {
		for i := range uint32(psnWindow) {
			leave(s.next + i)
		}
		if gap {
			s.missing += int(d - psnWindow) // skipped past the window at once
		}
		for i := d - psnWindow; i < d; i++ {
			enter(s.next + i)
		}
	} else {
		for i := range d {
			leave((s.next + i - psnWindow) & psnMask)
			enter((s.next + i) & psnMask)
		}
	}
	s.next = to & psnMask
}

// openGaps counts the PSNs in the window that are gaps no NAK named.
func (s *sideHealth) openGaps() int {
	n := 0
	for i := range s.seen {
		n += popcount(^s.seen[i] &^ s.nakd[i])
	}
	return n
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// note notes frame among the first few of a kind.
func (fs *frames3) note(frame int) {
	for i := range fs {
		if fs[i] == 0 {
			fs[i] = int32(frame)
			return
		}
	}
}

// request takes a request packet of side (SEND, RDMA WRITE, READ Request,
// atomic): o is where its PSN falls in the side's sequence, n how many PSNs
// it takes (known: whether that is known).
func (h *rcHealth) request(side int, o psnOrder, p *Packet, n uint32, known bool) {
	s := &h.sides[side]
	ts := h.ts(p.Time)
	switch {
	case !s.hasNext:
		s.next, s.hasNext = p.PSN, true
		s.advance((p.PSN+n)&psnMask, false, ts)
	case o == inOrder:
		s.advance(p.PSN, false, ts) // after a Read of unknown length: the sequence goes on here
		s.advance((p.PSN+n)&psnMask, false, ts)
	case o == ahead:
		from := s.next
		s.advance(p.PSN, true, ts)
		if s.ngaps < len(s.gaps) {
			s.gaps[s.ngaps] = gapEvent{from, (p.PSN - from) & psnMask, p.Frame}
			s.ngaps++
		}
		s.advance((p.PSN+n)&psnMask, false, ts)
	default: // behind
		back := (s.next - p.PSN) & psnMask
		w, b := bit(p.PSN)
		inWin := back <= psnWindow
		switch {
		case inWin && s.seen[w]&b == 0:
			// A gap filled: sent again after a NAK named it, or put
			// out of order by the capture.
			// Its octets are counted: the capture shows them once.
			s.seen[w] |= b
			s.at[p.PSN%psnWindow] = ts
			if s.nakd[w]&b != 0 {
				h.retransmitted(side, p, ts, 0, false)
			}
		default:
			h.retransmitted(side, p, ts, s.at[p.PSN%psnWindow], inWin)
			return
		}
	}
	if !known {
		s.hasNext = false // the next request tells where the sequence goes on
	}
	h.requestOp(side, p)
}

// retransmitted counts a request packet of side sent again, at ts; its
// first copy came at firstAt when hasFirst.
func (h *rcHealth) retransmitted(side int, p *Packet, ts, firstAt uint32, hasFirst bool) {
	s := &h.sides[side]
	h.fig.Retransmitted[side]++
	s.retxFrames.note(p.Frame)
	from, ok := firstAt, hasFirst
	if s.hasNAK && (!hasFirst || int32(s.nakAt-firstAt) >= 0) {
		from, ok = s.nakAt, true
		s.retxNAK++
	}
	if !ok {
		return
	}
	d := time.Duration(ts-from) * time.Microsecond
	f := &h.fig
	if !f.HasRetransmitDelay[side] || d < f.RetransmitMin[side] {
		f.RetransmitMin[side] = d
	}
	if !f.HasRetransmitDelay[side] || d > f.RetransmitMax[side] {
		f.RetransmitMax[side] = d
	}
	f.HasRetransmitDelay[side] = true
}

// requestOp counts the octets of a request packet seen for the first time
// and remembers its Send, Write or Read for the NAKs.
func (h *rcHealth) requestOp(side int, p *Packet) {
	s := &h.sides[side]
	op := p.OpCode
	switch {
	case isSend(op):
		h.fig.Octets[side][record.OctetsSend] += int64(p.PayloadLen)
		switch op {
		case layers.OpSendFirst:
			s.cur, s.curOn = opRec{first: p.PSN, last: p.PSN, frame: int32(p.Frame), val: uint32(p.PayloadLen), op: op}, true
		case layers.OpSendMiddle:
			if s.curOn {
				s.cur.last, s.cur.val = p.PSN, s.cur.val+uint32(p.PayloadLen)
			}
		case layers.OpSendLast, layers.OpSendLastImm, layers.OpSendLastInvalidate:
			if s.curOn {
				s.cur.last, s.cur.val, s.cur.frame, s.cur.op = p.PSN, s.cur.val+uint32(p.PayloadLen), int32(p.Frame), op
				s.push(&s.sends, &s.nsends, s.cur)
				s.curOn = false
			}
		default:
			s.push(&s.sends, &s.nsends, opRec{first: p.PSN, last: p.PSN, frame: int32(p.Frame), val: uint32(p.PayloadLen), op: op})
		}
		if op == layers.OpSendLastInvalidate || op == layers.OpSendOnlyInvalidate {
			h.invals[h.ninval%recentOps] = inval{p.IETH, int32(p.Frame), uint8(side)}
			h.ninval++
		}
	case op >= layers.OpWriteFirst && op <= layers.OpWriteOnlyImm:
		h.fig.Octets[side][record.OctetsWrite] += int64(p.PayloadLen)
		switch op {
		case layers.OpWriteFirst, layers.OpWriteOnly, layers.OpWriteOnlyImm:
			s.push(&s.rdma, &s.nrdma, opRec{first: p.PSN, last: p.PSN, frame: int32(p.Frame), val: p.RKey, op: op})
		default: // Middle, Last: the Write goes on
			if s.nrdma > 0 {
				r := &s.rdma[(s.nrdma-1)%recentOps]
				if r.op == layers.OpWriteFirst {
					r.last = p.PSN
				}
			}
		}
	case op == layers.OpReadRequest:
		s.push(&s.rdma, &s.nrdma, opRec{first: p.PSN, last: (s.next - 1) & psnMask, frame: int32(p.Frame), val: p.RKey, op: op})
	}
}

func (s *sideHealth) push(ring *[recentOps]opRec, n *int, r opRec) {
	ring[*n%recentOps] = r
	*n++
}

// find is the newest remembered request whose PSNs hold psn.
func find(ring *[recentOps]opRec, n int, psn uint32) (opRec, bool) {
	for i := n - 1; i >= 0 && i >= n-recentOps; i-- {
		r := ring[i%recentOps]
		if atOrBefore(r.first, psn) && atOrBefore(psn, r.last) {
			return r, true
		}
	}
	return opRec{}, false
}

// readResponse takes a READ Response packet that side sent: a PSN at or
// before the last one it sent is a response sent again.
func (h *rcHealth) readResponse(side int, p *Packet) {
	s := &h.sides[side]
	if s.hasResp && atOrBefore(p.PSN, s.respLast) {
		h.fig.Retransmitted[side]++
		s.retxFrames.note(p.Frame)
		return
	}
	s.respLast, s.hasResp = p.PSN, true
	h.fig.Octets[side][record.OctetsReadResponse] += int64(p.PayloadLen)
}

// marks counts the congestion marks of a packet that side sent, and the
// DSCP of its traffic (of the CNPs apart).
func (h *rcHealth) marks(side int, p *Packet) {
	s, f := &h.sides[side], &h.fig
	if p.OpCode == layers.OpCNP {
		f.CNPs[side]++
		s.cnpFrames.note(p.Frame)
		if p.HasTClass && !f.HasCNPDSCP {
			f.CNPDSCP, f.HasCNPDSCP = p.DSCP, true
		}
		return
	}
	if p.HasTClass {
		if !f.HasDSCP[side] {
			f.DSCP[side], f.HasDSCP[side] = p.DSCP, true
		}
		if p.ECN == 0x03 {
			f.ECNCE[side]++
			s.ceFrames.note(p.Frame)
		}
	}
	if p.FECN {
		f.FECN[side]++
		s.fecnFrames.note(p.Frame)
	}
	if p.BECN {
		f.BECN[side]++
		s.becnFrames.note(p.Frame)
	}
}

// acknowledge takes the AETH of an Acknowledge that side sent about the
// other side's requests.
func (c *Checker) acknowledge(side int, p *Packet) {
	h := c.hl
	if !p.HasAETH {
		return
	}
	s, r := &h.sides[side], &h.sides[1-side]
	f := &h.fig
	switch p.Syndrome >> 5 & 0x03 {
	case layers.SyndromeACK:
		f.ACKs[side]++
	case layers.SyndromeRNRNAK:
		f.RNRNAKs[side]++
		r.nakAt, r.hasNAK = h.ts(p.Time), true
		s.rnrFrames.note(p.Frame)
		n := int32(c.outstanding(1 - side))
		if s.rnrCalls < 0 {
			s.rnrCalls = n
			if 1-side == 0 && c.hasGrant {
				s.rnrGrant = int32(c.grant)
			}
		}
		s.rnrMost = max(s.rnrMost, n)
	case layers.SyndromeNAK:
		code := int(p.Syndrome & 0x1f)
		if code >= record.NAKCodeCount {
			s.reserved++
			return
		}
		f.NAKs[side][code]++
		s.nakFrames.note(p.Frame)
		r.nakAt, r.hasNAK = h.ts(p.Time), true
		if code == record.NAKPSNSequenceError {
			r.explain(p.PSN)
		}
		if s.nakFrame[code] == 0 {
			s.nakFrame[code], s.nakPSN[code] = int32(p.Frame), p.PSN
			switch code {
			case record.NAKInvalidRequest:
				c.refusedSend(&s.refused, 1-side, p.PSN)
			case record.NAKRemoteAccessError:
				c.deniedAccess(&s.denied, 1-side, p.PSN)
			}
		}
	}
}

// explain marks the gaps of a side's requests from psn on as named by a
// NAK: lost on the wire, not by the capture.
func (s *sideHealth) explain(psn uint32) {
	back := (s.next - psn) & psnMask
	if back == 0 || back > psnWindow {
		return
	}
	for i := range back {
		q := (psn + i) & psnMask
		if w, b := bit(q); s.seen[w]&b == 0 {
			s.nakd[w] |= b
		}
	}
}

// refusedSend notes the Send of side that an Invalid Request NAK at psn
// refused, and whether it was over its inline threshold.
func (c *Checker) refusedSend(n *nakNote, side int, psn uint32) {
	s := &c.hl.sides[side]
	n.what, n.found = find(&s.sends, s.nsends, psn)
	if !n.found && s.curOn && atOrBefore(s.cur.first, psn) {
		n.what, n.found = s.cur, true // refused before its last packet came
	}
	if n.found && c.neg.Known && c.rule.IsRPCRDMA() && int(n.what.val) > c.threshold(side) {
		n.over = int32(c.threshold(side))
	}
}

// deniedAccess notes the RDMA Write or Read of side that a Remote Access
// Error NAK at psn answered, and the Send With Invalidate that had
// invalidated its R_Key, if one did.
func (c *Checker) deniedAccess(n *nakNote, side int, psn uint32) {
	h := c.hl
	s := &h.sides[side]
	n.what, n.found = find(&s.rdma, s.nrdma, psn)
	if !n.found {
		return
	}
	for i := h.ninval - 1; i >= 0 && i >= h.ninval-recentOps; i-- {
		v := h.invals[i%recentOps]
		if v.rkey == n.what.val && int(v.side) == side && v.frame < n.what.frame {
			n.inval, n.invOK = v, true
			break
		}
	}
}

// outstanding counts the Calls side sent that are outstanding.
func (c *Checker) outstanding(side int) int {
	n := 0
	for i := range c.calls {
		if int(c.calls[i].side) == side {
			n++
		}
	}
	return n
}

// figures are the health figures as they are now: the gaps still open in
// the window count as missing.
func (h *rcHealth) figures() record.Health {
	f := h.fig
	for i := range h.sides {
		f.Missing[i] = h.sides[i].missing + h.sides[i].openGaps()
	}
	return f
}
