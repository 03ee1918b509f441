package datapath

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The checks of the Checker on each RPC-over-RDMA message: each finding is
// raised where its condition is seen, on the "rpc" record of the Send that
// shows it. The transport header's own checks are in header.go, the Calls
// outstanding and the credits in calls.go, and the connection findings
// (the Read limit, the notes) in conn_findings.go.

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
	var fs []finding.Finding
	add := func(code finding.Code, format string, args ...any) {
		fs = append(fs, finding.New(code, format, args...))
	}
	c.inlineSize(s, add)
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
		callAt = c.callOrReply(s, h, complete, add)
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
		c.addRecord(s, h, fixed, fs, callAt)
	}
}

// inlineSize keeps the largest Send of each side and checks a Send's
// length against the inline threshold of its direction.
func (c *Checker) inlineSize(s *Send, add func(finding.Code, string, ...any)) {
	// A Send one of whose packets broke the path MTU rule has a length the
	// peers did not agree on: it is not judged against the threshold.
	judged := s.LengthKnown && s.Flaws.Sizes == 0
	if judged && s.Length > c.fig.LargestInline[s.Side] {
		c.fig.LargestInline[s.Side] = s.Length
	}
	if c.neg.Known && !c.neg.Unknown && judged && s.Length > c.threshold(s.Side) {
		who, dir := sideNames[s.Side], c.dirName(s.Side)
		add(finding.InlineThresholdExceeded, "a Send of %d octets from the %s, over the %s inline threshold of %d (%s): the %s cannot receive it",
			s.Length, who, dir, c.threshold(s.Side), c.thresholdWhy(s.Side), sideNames[1-s.Side])
	}
}

// callOrReply follows a message that has a body, or a cut header, as a
// Call or a Reply: a Call is tracked (callSeen), then given to the RPC
// layer when it decoded the message (decodeRPC); a Reply is given to the
// RPC layer first, then answers its Call (replySeen). It returns the place
// of the Call tracked in c.calls, or -1.
func (c *Checker) callOrReply(s *Send, h *layers.RPCRDMAHeader, complete bool, add func(finding.Code, string, ...any)) int {
	switch c.kind(h, s.Side) {
	case callMsg:
		i := c.callSeen(s, h, complete, add)
		if c.seen.ok {
			c.rpcCall(s)
		}
		return i
	case replyMsg:
		if c.seen.ok {
			c.rpcReply(s, add)
		}
		c.replySeen(s, h, add)
	}
	return -1
}

// addRecord adds the "rpc" record of a Send to the Output. The record of
// a Call tracked at callAt is held there while the Call waits for its
// Reply's frame, and a Long Call's also until its read chunk is decoded.
func (c *Checker) addRecord(s *Send, h *layers.RPCRDMAHeader, fixed bool, fs []finding.Finding, callAt int) {
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

// errorReply raises rpcrdma-error-reply for an RDMA_ERROR (its Call is
// retired as any Reply's is: replySeen, invalidation).
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
