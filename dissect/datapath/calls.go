package datapath

import (
	"slices"
	"time"
	"unsafe"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The Calls outstanding on a connection, by XID and side, with the STags
// each advertised: a Call is tracked when it is sent (callSeen, which
// checks the credits of a forward Call against the responder's grant) and
// retired by its Reply (replySeen, invalidation), or forgotten when the
// capture lost traffic that may have answered it (Lost).

// call is an outstanding Call: its XID, who sent it, where, and the STags
// its chunk lists advertised.
type call struct {
	xid      uint32
	side     uint8
	overflow bool // more STags than kept, or lists not all read: a Send With Invalidate naming another is not judged
	nstags   uint8
	frame    int
	stags    [STagsPerCall]uint32
	// The RPC layer's (rpc.go): what the Reply's decode needs, when the
	// Call was sent, and the place of its record in the Output's queue
	// while it waits for its Reply (0: none).
	info oncrpc.CallInfo
	at   time.Time
	seq  uint64
	// Chunks (chunk.go): the first octets of a Long Call's read chunk and
	// of the reply chunk, while they come; the place of the Long Call's
	// record, waiting for its decode; whether it was decoded.
	longCall, reply *longBuf
	longSeq         uint64
	decoded         bool
}

func (k *call) has(stag uint32) bool { return slices.Contains(k.stags[:k.nstags], stag) }

func (k *call) add(stag uint32) {
	if k.has(stag) {
		return
	}
	if int(k.nstags) == len(k.stags) {
		k.overflow = true
		return
	}
	k.stags[k.nstags] = stag
	k.nstags++
}

// callSeen tracks a Call with the STags it advertises, and checks the
// credits of a forward Call (from the initiator).
func (c *Checker) callSeen(s *Send, h *layers.RPCRDMAHeader, complete bool, add func(finding.Code, string, ...any)) int {
	if c.gone[1-s.Side] {
		return -1 // its Reply cannot be read: not tracked (gone.go)
	}
	i := c.findCall(h.XID, s.Side)
	if i >= 0 {
		// The same XID the same way while the first had no Reply.
		old := &c.calls[i]
		add(finding.RPCCallResent, "the Call of XID 0x%08x was sent before in frame %d, which had no Reply yet: this is a retransmission",
			h.XID, old.frame)
		c.out.release(old.seq, 0)
		c.releaseLong(old, nil)
		c.dropSegments(old)
	} else if e, ok := c.out.resentFrom(c.peers, h.XID); ok && s.Side == 0 && c.neg.Known {
		add(finding.RPCCallResent, "the Call of XID 0x%08x was sent before in frame %d on connection %d, which ended without a Reply to it: a retransmission after reconnecting",
			h.XID, e.frame, e.conn)
	}
	if i < 0 {
		if len(c.calls) >= c.callsCap || c.out.calls >= c.out.Limits.CallBudget {
			c.out.CallsUntracked++
			c.limitNote = true
			add(finding.StateLimitReached, "more than %d Calls outstanding on this connection, or %d on all: this one is not followed, and its Reply is not checked",
				c.callsCap, c.out.Limits.CallBudget)
			c.lostCalls = true
			return -1
		}
		// Bounded by the limits above, and charged: a full budget has the
		// largest holder give back (the run loop).
		c.out.Limits.Budget.Force(budget.Datapath, callCost)
		c.calls = append(c.calls, call{})
		c.out.calls++
		i = len(c.calls) - 1
	}
	k := &c.calls[i]
	*k = call{xid: h.XID, side: uint8(s.Side), frame: s.Frame, overflow: !complete || h.NotKept > 0, at: s.Time}
	if c.seen.ok && c.out.msg.Type == oncrpc.Call {
		k.info = c.out.msg.CallInfo()
	}
	if c.rule.IsRPCRDMA() {
		c.addSegments(i, h)
	}
	for _, r := range h.ReadList {
		k.add(r.Handle)
	}
	for _, ch := range h.WriteList {
		for _, g := range ch {
			k.add(g.Handle)
		}
	}
	for _, g := range h.ReplyChunk {
		k.add(g.Handle)
	}
	if k.overflow && k.nstags == STagsPerCall {
		add(finding.StateLimitReached, "the Call advertises more than %d STags; a Send With Invalidate naming another is not judged", STagsPerCall)
	}
	if s.Side != 0 || !c.neg.Known {
		return i // a backchannel Call, or the setup is unknown
	}
	n := 0
	for j := range c.calls {
		if c.calls[j].side == 0 {
			n++
		}
	}
	c.fig.MaxOutstandingCalls = max(c.fig.MaxOutstandingCalls, n)
	grant, why := c.grantNow()
	if n > grant {
		add(finding.CreditsExceeded, "the Call of XID 0x%08x makes %d Calls outstanding, over the responder's grant of %d (%s)", h.XID, n, grant, why)
	}
	return i
}

// grantNow is the credit grant a forward Call is judged against, and where
// it comes from.
func (c *Checker) grantNow() (int, string) {
	switch {
	case !c.hasGrant:
		return 1, "no Reply yet: a requester counts on one credit until the first"
	case c.grant == 0:
		return 1, "the latest Reply granted 0, which RFC 8166 forbids; it counts as 1"
	}
	return int(c.grant), "the latest Reply's rdma_credit"
}

// replySeen retires the Call a Reply answers and takes the grant of a
// forward Reply (from the responder).
func (c *Checker) replySeen(s *Send, h *layers.RPCRDMAHeader, add func(finding.Code, string, ...any)) {
	if i := c.findCall(h.XID, 1-s.Side); i >= 0 {
		c.replyChunks(s.Frame, s.Side, h, &c.calls[i])
	}
	if s.Side == 1 {
		c.grant, c.hasGrant = h.Credit, true
		c.fig.CreditsGranted, c.fig.HasCredits = int(h.Credit), true
	}
	if i := c.findCall(h.XID, 1-s.Side); i >= 0 && !s.Invalidate {
		c.retire(i)
	}
}

func (c *Checker) findCall(xid uint32, side int) int {
	for i := range c.calls {
		if c.calls[i].xid == xid && int(c.calls[i].side) == side {
			return i
		}
	}
	return -1
}

func (c *Checker) retire(i int) {
	c.out.release(c.calls[i].seq, 0)
	c.releaseLong(&c.calls[i], nil)
	c.dropSegments(&c.calls[i])
	c.out.Limits.Budget.Release(budget.Datapath, callCost)
	last := len(c.calls) - 1
	c.calls[i] = c.calls[last]
	c.calls = c.calls[:last]
	c.out.calls--
	c.shrink()
}

// callCost is what an outstanding Call holds, charged to the memory budget
// while it is tracked: its entry, and the room the slice keeps for it.
const callCost = int(unsafe.Sizeof(call{})) * 3 / 2

// keptCalls is the capacity of the Calls a connection keeps however few
// are outstanding: a burst of Calls does not pin its memory for the
// connection's life.
const keptCalls = 16

// shrink halves the Calls' capacity when a quarter of it is in use.
func (c *Checker) shrink() {
	if n := cap(c.calls); n > keptCalls && len(c.calls) < n/4 {
		c.calls = append(make([]call, 0, n/2), c.calls...)
	}
}

// Lost says that frames of a side's requests are missing from the capture:
// Calls or Replies may have gone unseen. Outstanding Calls may have been
// answered unseen, so they are no longer counted against the grant, and a
// Reply whose Call is not known is no longer judged.
func (c *Checker) Lost(side int) {
	c.lostCalls = true
	if side == 1 || !c.neg.Known {
		c.dropCalls()
		c.shrink()
	}
}

// dropCalls forgets the outstanding Calls: their records wait no more,
// and what they held is released.
func (c *Checker) dropCalls() {
	for i := range c.calls {
		c.out.release(c.calls[i].seq, 0)
		c.releaseLong(&c.calls[i], nil)
		c.freeLong(c.calls[i].longCall)
		c.freeLong(c.calls[i].reply)
	}
	c.segs = c.segs[:0]
	c.out.Limits.Budget.Release(budget.Datapath, callCost*len(c.calls))
	c.out.calls -= len(c.calls)
	clear(c.calls)
	c.calls = c.calls[:0]
}
