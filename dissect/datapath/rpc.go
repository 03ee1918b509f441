package datapath

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The RPC layer: the ONC RPC message (RFC 5531) that follows the transport
// header of an RDMA_MSG or RDMA_MSGP Send, decoded in place (dissect/oncrpc)
// into the Output's one Message, without allocating. A Call is told from a
// Reply by its msg_type, never by who sent it: with NFSv4.1 the server
// sends callback Calls on the same connection (RFC 8167). A Reply is paired
// with the outstanding Call of its XID that went the other way; the Call
// tracking (callSeen) keeps what the Reply needs (oncrpc.CallInfo), the
// Call's frame and time. The figures count Calls and Replies by
// procedure, NFSv4 operations one by one, the Calls never answered and the
// Calls the responder sent.

// maxProcs and maxOps bound the procedures and operations a connection
// counts apart; the Calls of others are counted in procsCut.
const (
	maxProcs = 64
	maxOps   = 128
)

// procKey names a procedure.
type procKey struct {
	prog, vers, proc uint32
	callback         bool
}

// procStats counts the Calls of a procedure and their Replies.
type procStats struct {
	calls, replies, errors int
	nfsErrors              map[string]int
	timed                  int
	min, max, sum          time.Duration
}

// opKey names an NFSv4 operation or a callback operation.
type opKey struct {
	op       uint32
	callback bool
}

type opStats struct{ count, errors int }

// rpcStats are a connection's RPC figures: a connection calls few
// procedures and operations, so they are looked up in order of first use,
// the last found first.
type rpcStats struct {
	procKeys []procKey
	procs    []*procStats
	lastProc int
	opKeys   []opKey
	ops      []*opStats
	lastOp   int
	procsCut int // Calls of procedures past maxProcs, or operations past maxOps
	reverse  int // Calls the responder sent
}

// rpcSeen is what the RPC layer made of the Send under way.
type rpcSeen struct {
	ok      bool // Message holds the Send's decoded message
	paired  bool // a Reply whose Call was outstanding: call says which
	call    call
	carried string // where the message travelled: send, reply_chunk
}

// decodeRPC decodes the RPC message of an RDMA_MSG or RDMA_MSGP Send whose
// transport header decoded, into c.out.msg, and pairs a Reply with its
// Call (which stays outstanding: callSeen, replySeen and invalidation
// retire it).
func (c *Checker) decodeRPC(s *Send, h *layers.RPCRDMAHeader) {
	c.seen = rpcSeen{carried: "send"}
	if h.Proc == layers.RPCRDMANoMsg {
		c.decodeLongReply(s, h)
		return
	}
	if h.Proc != layers.RPCRDMAMsg && h.Proc != layers.RPCRDMAMsgP || len(h.Payload) < 8 {
		return
	}
	m := &c.out.msg
	_, t, err := oncrpc.Peek(h.Payload)
	if err != nil {
		return
	}
	if t == oncrpc.Call {
		opt := oncrpc.CallOptions{CallbackProgram: oncrpc.LinuxCallbackProgram, Backchannel: c.neg.Known && s.Side == 1}
		for _, r := range h.ReadList {
			if r.Position > 0 {
				opt.ReadPosition = r.Position
				break
			}
		}
		err = oncrpc.DecodeCall(h.Payload, opt, m)
	} else {
		var info oncrpc.CallInfo
		if i := c.findCall(h.XID, 1-s.Side); i >= 0 {
			c.seen.paired, c.seen.call = true, c.calls[i]
			info = c.calls[i].info
		}
		opt := oncrpc.ReplyOptions{}
		if n := len(h.WriteList); n > 0 {
			opt.Written = uint32(1)<<min(n, 32) - 1
		}
		err = oncrpc.DecodeReply(h.Payload, info, opt, m)
	}
	// A message the octets kept cut short is still named as far as it
	// decoded; one that does not parse is not named at all.
	if err != nil && !isTruncated(err) && m.Type == oncrpc.Call && m.RPCVers != 2 {
		return
	}
	if err != nil && !isTruncated(err) && m.Type == oncrpc.Reply && m.ReplyStat > oncrpc.MsgDenied {
		return
	}
	c.seen.ok = m.Type == oncrpc.Call || m.Type == oncrpc.Reply
}

// decodeLongReply decodes the Reply an RDMA_NOMSG announces, from the
// first octets its Writes put in the Call's reply chunk (a Long Reply).
func (c *Checker) decodeLongReply(s *Send, h *layers.RPCRDMAHeader) {
	if len(h.ReadList) > 0 || !h.HasReplyChunk {
		return // a Long Call: its message comes in its read chunk
	}
	i := c.findCall(h.XID, 1-s.Side)
	if i < 0 || c.calls[i].reply == nil || len(c.calls[i].reply.prefix()) < 8 {
		return
	}
	k := c.calls[i]
	var n uint32
	for _, seg := range h.ReplyChunk {
		n += seg.Length
	}
	m := &c.out.msg
	err := oncrpc.DecodeReply(k.reply.prefix(), k.info, oncrpc.ReplyOptions{}, m)
	if m.Type != oncrpc.Reply || m.XID != h.XID || err != nil && !isTruncated(err) && m.ReplyStat > oncrpc.MsgDenied {
		return
	}
	c.seen = rpcSeen{ok: true, paired: true, call: k, carried: "reply_chunk"}
	c.longMessage(s.Side, n, &k.info)
}

func isTruncated(err error) bool {
	e, ok := err.(*oncrpc.Error)
	return ok && e.Truncated()
}

// rpcCall counts a Call (in c.out.msg): by procedure, its operations, a
// reverse Call.
func (c *Checker) rpcCall(s *Send) { c.countCall(s.Side) }

func (c *Checker) countCall(side int) {
	m := &c.out.msg
	if side == 1 && c.neg.Known {
		c.rpc.reverse++
		c.fig.ReverseCalls = c.rpc.reverse
	}
	if p := c.procOf(procKey{m.Program, m.Version, m.Procedure, m.Callback}); p != nil {
		p.calls++
	}
	for i := range m.NOps {
		if o := c.opOf(opKey{m.Ops[i], m.Callback}); o != nil {
			o.count++
		}
	}
}

// rpcReply counts a Reply paired with its Call, and raises rpc-reply-error
// on one that was denied or not carried out.
func (c *Checker) rpcReply(s *Send, add func(finding.Code, string, ...any)) {
	m := &c.out.msg
	failed := m.ReplyStat == oncrpc.MsgDenied || m.ReplyStat == oncrpc.MsgAccepted && m.AcceptStat != oncrpc.Success
	if failed {
		add(finding.RPCReplyError, "%s, answering %s", replyStatus(m), c.answered(s))
	}
	if !c.seen.paired {
		return
	}
	k := &c.seen.call
	if p := c.procOf(procKey{k.info.Program, k.info.Version, k.info.Procedure, k.info.Callback}); p != nil {
		p.replies++
		if failed {
			p.errors++
		}
		if name := m.StatusName(); name != "" && m.Status != 0 {
			if p.nfsErrors == nil {
				p.nfsErrors = map[string]int{}
			}
			if len(p.nfsErrors) < maxOps || p.nfsErrors[name] > 0 {
				p.nfsErrors[name]++
			}
		}
		if !k.at.IsZero() && !s.Time.IsZero() && !s.Time.Before(k.at) {
			d := s.Time.Sub(k.at)
			if p.timed == 0 || d < p.min {
				p.min = d
			}
			p.max = max(p.max, d)
			p.sum += d
			p.timed++
		}
	}
	if m.Compound && m.NOps > 0 && m.OpStatus != 0 {
		if o := c.opOf(opKey{m.Ops[m.NOps-1], m.Callback}); o != nil {
			o.errors++
		}
	}
	if k.seq != 0 {
		c.out.release(k.seq, s.Frame)
	}
}

// answered names the Call a Reply answers, for its finding.
func (c *Checker) answered(s *Send) string {
	m := &c.out.msg
	if !c.seen.paired {
		return fmt.Sprintf("XID 0x%08x, whose Call was not seen", m.XID)
	}
	return fmt.Sprintf("the %s Call of frame %d (XID 0x%08x)", procText(&c.seen.call.info), c.seen.call.frame, m.XID)
}

// replyStatus says how a Reply failed: "MSG_DENIED AUTH_ERROR
// (RPCSEC_GSS_CREDPROBLEM)", "MSG_ACCEPTED PROG_MISMATCH (versions 2 to 3)".
func replyStatus(m *oncrpc.Message) string {
	if m.ReplyStat == oncrpc.MsgDenied {
		switch m.RejectStat {
		case oncrpc.AuthError:
			return fmt.Sprintf("MSG_DENIED AUTH_ERROR (%s)", orNumber(oncrpc.AuthStatName(m.AuthStat), m.AuthStat))
		case oncrpc.RPCMismatch:
			return fmt.Sprintf("MSG_DENIED RPC_MISMATCH (RPC versions %d to %d)", m.MismatchLow, m.MismatchHigh)
		}
		return "MSG_DENIED"
	}
	if m.AcceptStat == oncrpc.ProgMismatch {
		return fmt.Sprintf("MSG_ACCEPTED PROG_MISMATCH (versions %d to %d)", m.MismatchLow, m.MismatchHigh)
	}
	return "MSG_ACCEPTED " + orNumber(oncrpc.AcceptStatName(m.AcceptStat), m.AcceptStat)
}

func orNumber(name string, n uint32) string {
	if name == "" {
		return fmt.Sprint(n)
	}
	return name
}

// procText names a procedure for a finding: "NFS3 READ", "NFS4 COMPOUND",
// "CB_COMPOUND", "program 400123 version 1 procedure 2".
func procText(k *oncrpc.CallInfo) string {
	if !k.Known {
		return "unknown"
	}
	if k.Callback {
		if n := oncrpc.CBProcedureName(k.Procedure); n != "" {
			return n
		}
	}
	prog, proc := oncrpc.ProgramName(k.Program), oncrpc.ProcedureName(k.Program, k.Version, k.Procedure)
	if prog == "" || proc == "" {
		return fmt.Sprintf("program %d version %d procedure %d", k.Program, k.Version, k.Procedure)
	}
	return fmt.Sprintf("%s%d %s", prog, k.Version, proc)
}

func (c *Checker) procOf(k procKey) *procStats {
	r := &c.rpc
	if r.lastProc < len(r.procKeys) && r.procKeys[r.lastProc] == k {
		return r.procs[r.lastProc]
	}
	for i := range r.procKeys {
		if r.procKeys[i] == k {
			r.lastProc = i
			return r.procs[i]
		}
	}
	if len(r.procs) >= maxProcs {
		r.procsCut++
		return nil
	}
	r.procKeys, r.procs, r.lastProc = append(r.procKeys, k), append(r.procs, &procStats{}), len(r.procKeys)
	return r.procs[r.lastProc]
}

func (c *Checker) opOf(k opKey) *opStats {
	r := &c.rpc
	if r.lastOp < len(r.opKeys) && r.opKeys[r.lastOp] == k {
		return r.ops[r.lastOp]
	}
	for i := range r.opKeys {
		if r.opKeys[i] == k {
			r.lastOp = i
			return r.ops[i]
		}
	}
	if len(r.ops) >= maxOps {
		r.procsCut++
		return nil
	}
	r.opKeys, r.ops, r.lastOp = append(r.opKeys, k), append(r.ops, &opStats{}), len(r.opKeys)
	return r.ops[r.lastOp]
}

// rpcFigures puts the RPC figures in order into f: procedures by program,
// version and procedure; operations by opcode, the callback ones last.
func (c *Checker) rpcFigures(f *record.Datapath) {
	f.RPCProcedures, f.NFSOperations = nil, nil
	keys := slices.Clone(c.rpc.procKeys)
	slices.SortFunc(keys, func(a, b procKey) int {
		return cmp.Or(cmp.Compare(a.prog, b.prog), cmp.Compare(a.vers, b.vers), cmp.Compare(a.proc, b.proc), boolCmp(a.callback, b.callback))
	})
	for _, k := range keys {
		p := c.rpc.procs[slices.Index(c.rpc.procKeys, k)]
		info := oncrpc.CallInfo{Known: true, Program: k.prog, Version: k.vers, Procedure: k.proc, Callback: k.callback}
		r := record.RPCProcedure{Program: k.prog, Version: k.vers, Procedure: k.proc, ProgramName: oncrpc.ProgramName(k.prog),
			ProcedureName: procName(&info), Calls: p.calls, Replies: p.replies, Errors: p.errors, Timed: p.timed,
			MinResponse: p.min, MaxResponse: p.max}
		if p.timed > 0 {
			r.MeanResponse = p.sum / time.Duration(p.timed)
		}
		for name, n := range p.nfsErrors {
			r.NFSErrors = append(r.NFSErrors, record.StatusCount{Status: name, Count: n})
		}
		slices.SortFunc(r.NFSErrors, func(a, b record.StatusCount) int { return strings.Compare(a.Status, b.Status) })
		f.RPCProcedures = append(f.RPCProcedures, r)
	}
	ops := slices.Clone(c.rpc.opKeys)
	slices.SortFunc(ops, func(a, b opKey) int { return cmp.Or(boolCmp(a.callback, b.callback), cmp.Compare(a.op, b.op)) })
	for _, k := range ops {
		o := c.rpc.ops[slices.Index(c.rpc.opKeys, k)]
		name := oncrpc.OpName(k.op)
		if k.callback {
			name = oncrpc.CBOpName(k.op)
		}
		if name == "" {
			name = fmt.Sprint(k.op) // an opcode that ended a list: kept by number
		}
		f.NFSOperations = append(f.NFSOperations, record.NFSOperation{Operation: name, Count: o.count, Errors: o.errors})
	}
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// procName names a procedure: a callback program's, else the program's.
func procName(k *oncrpc.CallInfo) string {
	if k.Callback {
		return oncrpc.CBProcedureName(k.Procedure)
	}
	return oncrpc.ProcedureName(k.Program, k.Version, k.Procedure)
}

// unanswered raises rpc-call-unanswered for the Calls still outstanding at
// the connection's end (why says which end), counts them, and remembers
// the forward ones for a later connection between the same hosts
// (rpc-call-resent).
func (c *Checker) unanswered(why string) *finding.Finding {
	if len(c.calls) == 0 {
		return nil
	}
	c.fig.UnansweredCalls = len(c.calls)
	calls := slices.Clone(c.calls)
	slices.SortFunc(calls, func(a, b call) int { return cmp.Compare(a.frame, b.frame) })
	for _, k := range calls {
		if k.side == 0 {
			c.out.remember(c.peers, k, c.neg.Number)
		}
	}
	// Which procedures, most first, and the first few Calls.
	type named struct {
		name string
		n    int
	}
	var procs []named
	for _, k := range calls {
		name := procText(&k.info)
		if i := slices.IndexFunc(procs, func(p named) bool { return p.name == name }); i >= 0 {
			procs[i].n++
		} else {
			procs = append(procs, named{name, 1})
		}
	}
	slices.SortStableFunc(procs, func(a, b named) int { return b.n - a.n })
	var ps []string
	for i, p := range procs {
		if i == 4 {
			ps = append(ps, "...")
			break
		}
		ps = append(ps, fmt.Sprintf("%s ×%d", p.name, p.n))
	}
	var first []string
	for i, k := range calls {
		if i == 3 {
			first = append(first, "...")
			break
		}
		first = append(first, fmt.Sprintf("XID 0x%08x in frame %d", k.xid, k.frame))
	}
	f := finding.New(finding.RPCCallUnanswered, "%d %s without a Reply by %s: %s; %s",
		len(calls), plural(len(calls), "Call", "Calls"), why, strings.Join(ps, ", "), strings.Join(first, ", "))
	return &f
}

// hostPair names two hosts, ports aside: a reconnection comes from another
// port.
type hostPair struct{ ini, res record.Endpoint }

// endedCall is a forward Call a connection ended without a Reply to.
type endedCall struct {
	xid   uint32
	frame int
	conn  int
}

// maxEndedPairs and maxEndedCalls bound what is remembered of Calls left
// unanswered by ended connections: host pairs, and Calls of each.
const (
	maxEndedPairs = 1024
	maxEndedCalls = 256
)

// remember keeps a forward Call its connection ended without a Reply to.
func (o *Output) remember(p Peers, k call, conn int) {
	key := hostPair{p[0].Host(), p[1].Host()}
	if o.ended == nil {
		o.ended = map[hostPair][]endedCall{}
	}
	l, ok := o.ended[key]
	if !ok && len(o.ended) >= maxEndedPairs {
		return
	}
	if len(l) >= maxEndedCalls {
		l = l[1:]
	}
	o.ended[key] = append(l, endedCall{k.xid, k.frame, conn})
}

// resentFrom finds a Call with this XID an earlier connection between the
// same hosts ended without a Reply to, and forgets it.
func (o *Output) resentFrom(p Peers, xid uint32) (endedCall, bool) {
	key := hostPair{p[0].Host(), p[1].Host()}
	l := o.ended[key]
	i := slices.IndexFunc(l, func(e endedCall) bool { return e.xid == xid })
	if i < 0 {
		return endedCall{}, false
	}
	e := l[i]
	o.ended[key] = slices.Delete(l, i, i+1)
	return e, true
}

// rpcRecord is the record of the Send's RPC message, with its pairing.
func (c *Checker) rpcRecord(s *Send) *record.RPCMessage {
	if !c.seen.ok {
		return nil
	}
	return messageRecord(&c.out.msg, c.seen.paired, &c.seen.call, s.Time, c.seen.carried)
}

// messageRecord is the record of a decoded RPC message m, carried where
// carried says, at time t; a Reply paired with its Call k.
func messageRecord(m *oncrpc.Message, paired bool, k *call, t time.Time, carried string) *record.RPCMessage {
	r := &record.RPCMessage{XID: m.XID, CarriedIn: carried}
	known := m.Type == oncrpc.Call || paired
	if known {
		r.Program, r.Version, r.Procedure, r.HasProgram = m.Program, m.Version, m.Procedure, true
		r.ProgramName = oncrpc.ProgramName(m.Program)
		info := oncrpc.CallInfo{Known: true, Program: m.Program, Version: m.Version, Procedure: m.Procedure, Callback: m.Callback}
		r.ProcedureName = procName(&info)
	}
	if m.Compound {
		r.HasMinorVersion, r.MinorVersion = m.Type == oncrpc.Call, m.MinorVersion
		r.Operations = make([]string, 0, m.NOps)
		for i := range m.NOps {
			name := m.OpName(i)
			if name == "" {
				name = fmt.Sprint(m.Ops[i])
			}
			r.Operations = append(r.Operations, name)
		}
		// Octets that ran out in the last operation's arguments (the data
		// of a WRITE past the first octets kept) leave the list whole.
		if m.OpsEnd != oncrpc.OpsComplete && !(m.OpsEnd == oncrpc.OpsTruncated && m.NOps == int(m.OpsTotal)) {
			r.OpsEnd = m.OpsEnd.String()
		}
	}
	if m.Type == oncrpc.Call { // a Reply's flavor is its Call's
		r.AuthFlavor = oncrpc.AuthFlavorName(m.AuthFlavor)
		if m.AuthFlavor == oncrpc.AuthGSS {
			r.AuthService = m.GSSService.String()
		}
	}
	r.Encrypted = m.Encrypted
	if r.Encrypted {
		r.Operations, r.OpsEnd = nil, ""
	}
	if m.Type == oncrpc.Call {
		r.Type = "call"
		return r
	}
	r.Type = "reply"
	r.ReplyStatus = oncrpc.ReplyStatName(m.ReplyStat)
	switch m.ReplyStat {
	case oncrpc.MsgAccepted:
		r.AcceptStatus = oncrpc.AcceptStatName(m.AcceptStat)
	case oncrpc.MsgDenied:
		r.RejectStatus = oncrpc.RejectStatName(m.RejectStat)
		if m.RejectStat == oncrpc.AuthError {
			r.AuthStatus = oncrpc.AuthStatName(m.AuthStat)
		}
	}
	r.NFSStatus = m.StatusName()
	if paired {
		r.CallFrame = k.frame
		if !k.at.IsZero() && !t.IsZero() && !t.Before(k.at) {
			r.ResponseTime, r.HasResponseTime = t.Sub(k.at), true
		}
	}
	return r
}
