package datapath

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The checks of the Checker: each finding is raised where its condition is
// seen, on the "rpc" record of the Send that shows it (the Read limit, a
// connection finding, is kept for the connection record).

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

// readsOver is what was seen of Reads over a side's limit.
type readsOver struct {
	frame, outstanding int // the first Request over the limit, and how many were outstanding then
	count, most        int // Requests over the limit, the most outstanding
}

// msgKind is what an RPC-over-RDMA message is to the RPC layer.
type msgKind uint8

const (
	otherMsg msgKind = iota
	callMsg
	replyMsg
)

var sideNames = [2]string{"initiator", "responder"}

// Send takes one Send of the connection.
func (c *Checker) Send(s *Send) {
	c.touched = true
	if s.Invalidate {
		c.fig.SendWithInvalidate++
		if s.Side == 1 && c.neg.ISERForbidsInvalidate {
			if c.iser++; c.iser == 1 {
				c.Note(conn.ISERSendWithInvalidate(s.Frame, s.InvalidateSTag, c.neg.Connection))
			}
		}
	}
	if c.rule == RuleNone || c.rule == RuleOtherULP {
		return
	}
	h := &c.out.hdr
	err := h.DecodeFromBytes(s.Head, gopacket.NilDecodeFeedback)
	if c.rule == RuleUndecided {
		if looksRPCRDMA(h, err, s) <= 0 {
			if c.tries++; c.tries >= heuristicTries {
				c.rule = RuleNone
			}
			return
		}
		c.rule = RuleHeuristic
	}
	c.message(s, h, err)
}

// message checks one RPC-over-RDMA message.
func (c *Checker) message(s *Send, h *layers.RPCRDMAHeader, err error) {
	c.out.RPCMessages++
	c.fig.RPCMessages[s.Side]++
	// A Send one of whose packets broke the path MTU rule has a length the
	// peers did not agree on: it is not judged against the threshold.
	judged := s.LengthKnown && s.Flaws.Sizes == 0
	if judged && s.Length > c.fig.LargestInline[s.Side] {
		c.fig.LargestInline[s.Side] = s.Length
	}
	var fs []finding.Finding
	add := func(code finding.Code, format string, args ...any) {
		fs = append(fs, finding.New(code, format, args...))
	}
	who, dir := sideNames[s.Side], c.dirName(s.Side)

	if c.neg.Known && !c.neg.Unknown && judged && s.Length > c.threshold(s.Side) {
		add(finding.InlineThresholdExceeded, "a Send of %d octets from the %s, over the %s inline threshold of %d (%s): the %s cannot receive it",
			s.Length, who, dir, c.threshold(s.Side), c.thresholdWhy(s.Side), sideNames[1-s.Side])
	}

	flawFindings(s, add)

	fixed := len(s.Head) >= layers.RPCRDMAFixedLen // the fixed part was read (also when err says the rest was not)
	complete := c.headerProblems(s, h, err, add)
	te, _ := err.(*layers.TruncatedError)
	if h.NotKept > 0 && !listCut(s, te) { // a list cut says how many it read
		add(finding.StateLimitReached, "the header holds %d RDMA segments; the first %d are shown and checked", h.Segments()+h.NotKept, h.Segments())
	}
	// A header the octets kept cut short is still a Call or a Reply: its
	// fixed part says whose, and its STags are known only in part.
	cut := te != nil && !s.HeadWhole && h.Vers == layers.RPCRDMAVersion && h.Proc <= layers.RPCRDMAError
	c.seen = rpcSeen{}
	if fixed && err == nil {
		c.decodeRPC(s, h)
	}
	callAt := -1
	if fixed && (err == nil && h.HasBody || cut) {
		switch c.kind(h, s.Side) {
		case callMsg:
			callAt = c.callSeen(s, h, complete, add)
			if c.seen.ok {
				c.rpcCall(s)
			}
		case replyMsg:
			if c.seen.ok {
				c.rpcReply(s, add)
			}
			c.replySeen(s, h, add)
		}
	}
	if s.Invalidate {
		c.invalidation(s, h, fixed && err == nil, add)
	}
	if h.Proc == layers.RPCRDMAError && fixed && err == nil {
		c.errorReply(h, add)
	}
	if len(s.Frames) > maxFrames { // a transport that lists them all
		t := *s
		t.Frames, t.FramesDropped = s.Frames[:maxFrames], s.FramesDropped+len(s.Frames)-maxFrames
		s = &t
	}
	if s.FramesDropped > 0 {
		add(finding.StateLimitReached, "the Send has %d frames; the first %d are listed", len(s.Frames)+s.FramesDropped, len(s.Frames))
	}
	if c.out.Mode == ModeAll || len(fs) > 0 {
		rec := c.record(s, h, fixed, fs)
		rec.Message = c.rpcRecord(s)
		seq := c.out.add(rec)
		if callAt >= 0 && (rec.Message != nil && rec.Message.Type == "call" || c.calls[callAt].longCall != nil) {
			c.calls[callAt].seq = seq // it waits for its Reply's frame
			c.out.hold(seq)
			if c.calls[callAt].longCall != nil { // and a Long Call for its read chunk's decode
				c.calls[callAt].longSeq = seq
				c.out.hold(seq)
			}
		}
	}
}

// headerProblems raises what makes the header invalid, or uncheckable,
// and reports whether the lists were read whole. A header that did not
// decode is judged by what stopped the decode (undecoded); one that did,
// by its values (valueProblems).
func (c *Checker) headerProblems(s *Send, h *layers.RPCRDMAHeader, err error, add func(finding.Code, string, ...any)) bool {
	if err != nil {
		c.undecoded(s, h, err, add)
		return false
	}
	valueProblems(s, h, add)
	return true
}

// undecoded says why a header did not decode: an XDR boolean that is
// neither 0 nor 1, or too few octets. Too few octets are the transport's
// doing when it kept fewer than the Send has (notKept), else the sender's:
// a Send shorter than the fixed part, or a list that runs past its end.
func (c *Checker) undecoded(s *Send, h *layers.RPCRDMAHeader, err error, add func(finding.Code, string, ...any)) {
	// The layer returns its error types as they are: a type switch (rather
	// than errors.As, whose target escapes) keeps this allocation-free.
	te, _ := err.(*layers.TruncatedError)
	xe, _ := err.(*layers.XDRBoolError)
	switch {
	case xe != nil:
		add(finding.RPCRDMAHeaderInvalid, "%s", strings.TrimPrefix(xe.Error(), "rpc-over-rdma: "))
	case te == nil:
		add(finding.RPCRDMAHeaderInvalid, "%v", err)
	case !s.HeadWhole:
		c.notKept(s, h, te, add)
	case len(s.Head) < layers.RPCRDMAFixedLen:
		add(finding.RPCRDMAHeaderInvalid, "the Send has %d octets, fewer than the %d of an RPC-over-RDMA header's fixed part", len(s.Head), layers.RPCRDMAFixedLen)
	default:
		part := strings.TrimPrefix(te.Layer, "rpc-over-rdma")
		if part == "" || part == " msgp" {
			part = " header"
		}
		add(finding.RPCRDMAHeaderInvalid, "the%s runs past the end of the Send (%d octets)", part, len(s.Head))
	}
}

// notKept says why the header runs past the octets the transport kept of
// the Send: none kept at a limit, the capture's snap length, or a header
// longer than what is kept: its chunk lists are cut there (counted for the
// run), and how many segments were read is said, with the count the chunk
// being read announces when it is a counted one.
func (c *Checker) notKept(s *Send, h *layers.RPCRDMAHeader, te *layers.TruncatedError, add func(finding.Code, string, ...any)) {
	switch {
	case len(s.Head) == 0 && s.HeadCut == "limit":
		add(finding.StateLimitReached, "the first octets of the Send were not kept (more than %d multi-packet Sends were in progress at once, --max-send-buffers, or the memory budget was full): its header is not checked",
			c.out.Limits.HeadBuffers)
	case s.HeadCut == "capture":
		add(finding.CaptureTruncated, "the capture holds %d octets of the Send, which end inside its RPC-over-RDMA header: the header is not checked", len(s.Head))
	case listCut(s, te):
		c.out.ListsCut++
		list := strings.TrimPrefix(te.Layer, "rpc-over-rdma ")
		read, shown := h.Segments()+h.NotKept, h.Segments()
		more := "how many more the list holds is not known"
		if h.HasCutCount {
			more = fmt.Sprintf("the %s at the cut announces %d segments, none of them read", chunkName(list), h.CutCount)
		}
		add(finding.StateLimitReached, "the header's %s runs past the %d octets kept of the Send, which cut it: %d segments were read before the cut (%d shown and checked); %s",
			list, len(s.Head), read, shown, more)
	default:
		add(finding.StateLimitReached, "the header runs past the %d octets kept of the Send: it is not checked", len(s.Head))
	}
}

// listCut reports whether a header's decode stopped in its chunk lists
// because the transport kept fewer octets of the Send (HeadLen) than it
// has.
func listCut(s *Send, te *layers.TruncatedError) bool {
	return te != nil && !s.HeadWhole && s.HeadCut == "limit" && len(s.Head) > 0 &&
		(strings.HasSuffix(te.Layer, " list") || strings.HasSuffix(te.Layer, " chunk"))
}

// chunkName is what a counted array of the named list is.
func chunkName(list string) string {
	if list == "write list" {
		return "write chunk"
	}
	return list
}

// valueProblems judges the values of a header that decoded: the version,
// the procedure, where the RPC message is, its XID.
func valueProblems(s *Send, h *layers.RPCRDMAHeader, add func(finding.Code, string, ...any)) {
	switch {
	case h.Proc == layers.RPCRDMAError:
		errorProblems(h, add)
	case h.Vers != layers.RPCRDMAVersion:
		add(finding.RPCRDMAHeaderInvalid, "rdma_vers is %d, not 1", h.Vers)
	case h.Proc > layers.RPCRDMAError:
		add(finding.RPCRDMAHeaderInvalid, "rdma_proc %d is not a procedure of version 1", h.Proc)
	case h.Proc == layers.RPCRDMAMsgP:
		add(finding.RPCRDMAHeaderInvalid, "RDMA_MSGP is no longer supported (RFC 8166, section 4.6.1): senders must not send it")
	case h.Proc == layers.RPCRDMADone:
		add(finding.RPCRDMAHeaderInvalid, "RDMA_DONE is no longer supported (RFC 8166, section 4.6.2): senders must not send it")
	case h.Proc == layers.RPCRDMANoMsg && len(h.ReadList) == 0 && len(h.WriteList) == 0 && !h.HasReplyChunk:
		add(finding.RPCRDMAHeaderInvalid, "an RDMA_NOMSG with no chunk: its RPC message is nowhere")
	case h.Proc == layers.RPCRDMAMsg && !h.HasRPCXID && s.HeadWhole:
		add(finding.RPCRDMAHeaderInvalid, "an RDMA_MSG with no RPC message after its %d-octet header", len(h.Contents))
	case h.Proc == layers.RPCRDMAMsg && h.HasRPCXID && h.RPCXID != h.XID:
		add(finding.RPCRDMAHeaderInvalid, "the RPC message's XID 0x%08x differs from rdma_xid 0x%08x", h.RPCXID, h.XID)
	}
}

// errorProblems judges an RDMA_ERROR: a known rdma_err, and version 1
// unless it is ERR_VERS, which echoes the version of the failing request.
func errorProblems(h *layers.RPCRDMAHeader, add func(finding.Code, string, ...any)) {
	if layers.RPCRDMAErrName(h.Err) == "" {
		add(finding.RPCRDMAHeaderInvalid, "rdma_err %d is neither ERR_VERS (1) nor ERR_CHUNK (2)", h.Err)
	}
	if h.Vers != layers.RPCRDMAVersion && h.Err != layers.RPCRDMAErrVers {
		add(finding.RPCRDMAHeaderInvalid, "rdma_vers is %d, not 1", h.Vers)
	}
}

// kind tells a Call from a Reply: by the RPC message's type when the Send
// carries it, an RDMA_NOMSG by its read list (a Call's message travels in a
// read chunk), an RDMA_ERROR is a Reply; without any of these, by the side
// when the setup says which is the requester.
func (c *Checker) kind(h *layers.RPCRDMAHeader, side int) msgKind {
	switch h.Proc {
	case layers.RPCRDMAError:
		return replyMsg
	case layers.RPCRDMAMsg, layers.RPCRDMAMsgP:
		if h.HasRPCMsgType {
			switch h.RPCMsgType {
			case 0:
				return callMsg
			case 1:
				return replyMsg
			}
			return otherMsg
		}
	case layers.RPCRDMANoMsg:
		if len(h.ReadList) > 0 {
			return callMsg
		}
		return replyMsg
	default:
		return otherMsg
	}
	if c.neg.Known {
		if side == 0 {
			return callMsg
		}
		return replyMsg
	}
	return otherMsg
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

// invalidation checks a Send With Invalidate: that it may be used at all,
// and that it invalidates an STag of the Call it answers (RFC 8797, section
// 4.1).
func (c *Checker) invalidation(s *Send, h *layers.RPCRDMAHeader, decoded bool, add func(finding.Code, string, ...any)) {
	if c.neg.Known && !c.neg.Unknown {
		switch {
		case s.Side == 0:
			add(finding.SendWithInvalidateNotAllowed, "a Send With Invalidate (R_Key 0x%08x) from the initiator: RFC 8797 lets only the responder use it, for RPC Replies",
				s.InvalidateSTag)
		case !c.neg.RemoteInvalidation:
			add(finding.SendWithInvalidateNotAllowed, "a Send With Invalidate (R_Key 0x%08x) from the responder, where %s: replies must use plain Send unless both set R",
				s.InvalidateSTag, c.whyNoInvalidation())
		}
	}
	if !decoded || c.kind(h, s.Side) != replyMsg {
		return
	}
	i := c.findCall(h.XID, 1-s.Side)
	switch {
	case i >= 0:
		k := &c.calls[i]
		if !k.has(s.InvalidateSTag) && !k.overflow {
			add(finding.InvalidateSTagUnknown, "R_Key 0x%08x is not among the STags the Call of frame %d (XID 0x%08x) advertised: %s",
				s.InvalidateSTag, k.frame, h.XID, stagList(k))
		}
		c.retire(i)
	case c.neg.Known && !c.lostCalls:
		add(finding.InvalidateSTagUnknown, "R_Key 0x%08x: no outstanding Call has XID 0x%08x, so the STag belongs to no Call of this Reply",
			s.InvalidateSTag, h.XID)
	}
}

func stagList(k *call) string {
	if k.nstags == 0 {
		return "none"
	}
	var b strings.Builder
	for i, t := range k.stags[:k.nstags] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "0x%08x", t)
	}
	return b.String()
}

// whyNoInvalidation says which peer cleared R. Linux servers (svcrdma)
// advertise R=0 yet use Send With Invalidate whenever the client set R.
func (c *Checker) whyNoInvalidation() string {
	iniR, resR := c.neg.InitiatorR, c.neg.ResponderR
	absent := func(side int) string {
		if side == 0 && !c.neg.InitiatorRPCRDMA || side == 1 && !c.neg.ResponderRPCRDMA {
			return " (it sent no RFC 8797 data, which counts as R=0)"
		}
		return ""
	}
	switch {
	case iniR && !resR:
		return "the responder itself advertised R=0" + absent(1) + " and only the initiator set R (Linux servers do exactly this)"
	case !iniR && resR:
		return "the initiator did not set R" + absent(0)
	}
	return "neither peer set R"
}

// errorReply raises rpcrdma-error-reply for an RDMA_ERROR and retires its
// Call.
func (c *Checker) errorReply(h *layers.RPCRDMAHeader, add func(finding.Code, string, ...any)) {
	switch h.Err {
	case layers.RPCRDMAErrVers:
		add(finding.RPCRDMAErrorReply, "RDMA_ERROR ERR_VERS for XID 0x%08x: the responder supports RPC-over-RDMA versions %d to %d", h.XID, h.VersLow, h.VersHigh)
	case layers.RPCRDMAErrChunk:
		add(finding.RPCRDMAErrorReply, "RDMA_ERROR ERR_CHUNK for XID 0x%08x: the responder could not process the Call's transport header or chunks", h.XID)
	default:
		add(finding.RPCRDMAErrorReply, "RDMA_ERROR with rdma_err %d for XID 0x%08x", h.Err, h.XID)
	}
}

// ReadRequest counts an RDMA Read Request (or atomic) that a side issued,
// in the given frame.
func (c *Checker) ReadRequest(side, frame int) {
	c.touched = true
	c.reads[side]++
	n := c.reads[side]
	c.fig.MaxOutstandingRDMAReads[side] = max(c.fig.MaxOutstandingRDMAReads[side], n)
	if c.neg.Known && c.neg.HasReadLimit[side] && n > c.neg.ReadLimit[side] && !c.gone[1-side] {
		o := &c.readsOver[side]
		if o.count == 0 {
			o.frame, o.outstanding = frame, n
		}
		o.count++
		o.most = max(o.most, n)
	}
}

// ReadsUntracked says that a side issued a Read Request (or atomic), in
// the given frame, when the transport tracked as many of its Reads one by
// one as it does: it is counted as outstanding all the same, but its
// response is not matched to it (a connection finding).
func (c *Checker) ReadsUntracked(side, frame int) { c.untracked[side].add(frame) }

// DMALengthInvalid says that a side sent a request with a RETH (opcode
// op) whose DMA Length is over MaxDMALength, in the given frame (a
// connection finding).
func (c *Checker) DMALengthInvalid(side, frame int, op uint8, length uint32) {
	if c.dma.add(frame); c.dma.n == 1 {
		c.dma.side, c.dma.op, c.dma.length = side, op, length
	}
}

// ReadDone retires one of a side's outstanding Reads.
func (c *Checker) ReadDone(side int) {
	if c.reads[side] > 0 {
		c.reads[side]--
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

// Findings are the connection findings: the Read limit exceeded (by side),
// and the Calls a limit kept from being followed.
func (c *Checker) Findings() []finding.Finding {
	var out []finding.Finding
	for side, o := range c.readsOver {
		if o.count == 0 {
			continue
		}
		out = append(out, finding.New(finding.RDMAReadLimitExceeded,
			"frame %d: %d RDMA Read Requests outstanding from the %s, more than the %d its connection setup allows it (%s); over the limit %s, at most %d outstanding",
			o.frame, o.outstanding, sideNames[side], c.neg.ReadLimit[side], c.neg.readWhy[side], times(o.count), o.most))
	}
	for side, u := range c.untracked {
		if u.n > 0 {
			out = append(out, finding.New(finding.StateLimitReached,
				"frame %d: more than %d RDMA Read Requests (and atomics) outstanding from the %s, more than any connection setup allows: %d of them were counted as outstanding, but their responses were not matched one by one",
				u.first, readsPerSide, sideNames[side], u.n))
		}
	}
	if d := c.dma; d.n > 0 {
		out = append(out, finding.New(finding.RDMALengthInvalid,
			"frame %d: %s from the %s, DMA Length %d, over the 2^31 octets of the largest message; %d %s on this connection",
			d.first, layers.OpCodeName(d.op), sideNames[d.side], d.length, d.n, plural(d.n, "such request", "such requests")))
	}
	if c.limitNote {
		out = append(out, finding.New(finding.StateLimitReached,
			"Calls beyond %d outstanding on this connection (or %d on all) were not followed: their Replies were not checked", c.callsCap, c.out.Limits.CallBudget))
	}
	for _, f := range c.notes {
		if f.Code == finding.ISERSendWithInvalidateUnsupported && c.iser > 1 {
			f.Message += fmt.Sprintf("; %d such Sends With Invalidate in all", c.iser)
		}
		out = append(out, f)
	}
	if c.notesCut > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%d further findings on this connection's traffic were not kept (at most %d are)", c.notesCut, maxConnNotes))
	}
	return out
}

// Note adds a connection finding the transport raised (the iWARP FPDU
// follower's CRC, Terminate and framing findings), at most maxConnNotes.
func (c *Checker) Note(f finding.Finding) {
	if f.Code == finding.RDMAPTerminate {
		c.end = record.Terminated // the capture shows the connection's end
	}
	if len(c.notes) == maxConnNotes {
		c.notesCut++
		return
	}
	c.notes = append(c.notes, f)
}

// threshold is the inline threshold of a side's Sends.
func (c *Checker) threshold(side int) int {
	if side == 0 {
		return c.neg.Inline.InitiatorToResponder
	}
	return c.neg.Inline.ResponderToInitiator
}

func (c *Checker) thresholdWhy(side int) string {
	send, recv := "initiator Send Size", "responder Receive Size"
	sender, receiver := c.neg.InitiatorRPCRDMA, c.neg.ResponderRPCRDMA
	if side == 1 {
		send, recv = "responder Send Size", "initiator Receive Size"
		sender, receiver = receiver, sender
	}
	switch {
	case !sender && !receiver:
		return "neither side sent RFC 8797 data: the default of 1024"
	case !sender:
		return "the " + sideNames[side] + " sent no RFC 8797 data: its Send Size counts as 1024"
	case !receiver:
		return "the " + sideNames[1-side] + " sent no RFC 8797 data: its Receive Size counts as 1024"
	}
	return "the smaller of the " + send + " and the " + recv
}

func (c *Checker) dirName(side int) string {
	if side == 0 {
		return "initiator→responder"
	}
	return "responder→initiator"
}

// record builds the "rpc" record of a Send.
func (c *Checker) record(s *Send, h *layers.RPCRDMAHeader, fixed bool, fs []finding.Finding) *record.RPC {
	r := &record.RPC{File: c.out.File, Frame: s.Frame, Frames: slices.Clone(s.Frames), Time: s.Time.UTC(), Transport: c.transport,
		Src: c.peers[s.Side], Dst: c.peers[1-s.Side], Connection: c.neg.Connection, Conn: c.neg.Number, Opcode: s.Opcode,
		Invalidate: s.Invalidate, InvalidateRKey: s.InvalidateSTag, Length: s.Length, LengthKnown: s.LengthKnown, Findings: fs}
	if c.neg.Known {
		r.Direction = record.InitiatorToResponder
		if s.Side == 1 {
			r.Direction = record.ResponderToInitiator
		}
	}
	if fixed {
		r.Header = headerRecord(h)
	}
	return r
}

// headerRecord copies a decoded header (as far as it was read).
func headerRecord(h *layers.RPCRDMAHeader) *record.RPCRDMAHeader {
	out := &record.RPCRDMAHeader{XID: h.XID, Vers: h.Vers, Credits: h.Credit, Proc: h.Proc, Align: h.Align, Thresh: h.Thresh,
		HasReplyChunk: h.HasReplyChunk}
	seg := func(g layers.RPCRDMASegment) record.Segment {
		return record.Segment{Handle: g.Handle, Length: g.Length, Offset: g.Offset}
	}
	for _, r := range h.ReadList {
		out.ReadList = append(out.ReadList, record.ReadSegment{Position: r.Position, Segment: seg(r.RPCRDMASegment)})
	}
	for _, ch := range h.WriteList {
		w := make([]record.Segment, 0, len(ch))
		for _, g := range ch {
			w = append(w, seg(g))
		}
		out.WriteList = append(out.WriteList, w)
	}
	for _, g := range h.ReplyChunk {
		out.ReplyChunk = append(out.ReplyChunk, seg(g))
	}
	if h.Proc == layers.RPCRDMAError && h.HasBody {
		out.Error = &record.RPCRDMAError{Code: h.Err, Low: h.VersLow, High: h.VersHigh, HasRange: h.Err == layers.RPCRDMAErrVers}
	}
	return out
}

// times says how often: once, twice, 3 times.
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
