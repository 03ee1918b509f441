package oncrpc

// MaxOps is how many operations of a COMPOUND or CB_COMPOUND a Message
// lists. Clients send far fewer; a longer list is cut here and says so
// (OpsMaxOps), and OpsTotal keeps its count.
const MaxOps = 32

// maxAuthBytes bounds an opaque_auth body (RFC 5531, section 8.2).
const maxAuthBytes = 400

// Message is what the decoders make of one RPC message. It holds values
// only: no slice, nothing that points into the octets, so one Message can
// be reused for every message without allocation. Every decode resets all
// of it first.
//
// A Call (RFC 5531, section 9):
//
//	xid | msg_type 0 | rpcvers 2 | prog | vers | proc | cred | verf | arguments
//
// A Reply:
//
//	xid | msg_type 1 | reply_stat | MSG_ACCEPTED: verf | accept_stat | results (SUCCESS)
//	                              | MSG_DENIED: reject_stat | low, high (RPC_MISMATCH)
//	                                                        | auth_stat (AUTH_ERROR)
//
// where cred and verf are opaque_auth: a flavor and an opaque body of at
// most 400 octets.
type Message struct {
	XID  uint32
	Type MsgType

	// Program, Version and Procedure are the Call's; a Reply has them from
	// the CallInfo it was decoded with, when known.
	Program   uint32
	Version   uint32
	Procedure uint32
	// Callback is set when the Call was decoded as the NFSv4 callback
	// program's (its CB_COMPOUND is procedure 1).
	Callback bool

	// RPCVers is the Call's rpcvers (always 2 once decoded).
	RPCVers uint32
	// AuthFlavor is the Call's credential flavor (a Reply's from its
	// CallInfo); VerfFlavor is the message's own verifier's flavor.
	AuthFlavor uint32
	VerfFlavor uint32
	// The RPCSEC_GSS credential (RFC 2203, section 5): gss_proc, seq_num
	// and service, when AuthFlavor is RPCSEC_GSS. A Reply has GSSProc and
	// GSSService from its CallInfo, and no GSSSeq.
	GSSProc    uint32
	GSSSeq     uint32
	GSSService GSSService
	// Encrypted is set when RPCSEC_GSS privacy hides the arguments or
	// results: no status and no operation is known.
	Encrypted bool

	// ReplyStat is MSG_ACCEPTED or MSG_DENIED. Accepted: AcceptStat, and
	// MismatchLow and MismatchHigh for PROG_MISMATCH. Denied: RejectStat,
	// and MismatchLow and MismatchHigh for RPC_MISMATCH, AuthStat for
	// AUTH_ERROR.
	ReplyStat    uint32
	AcceptStat   uint32
	RejectStat   uint32
	AuthStat     uint32
	MismatchLow  uint32
	MismatchHigh uint32

	// BodyOffset is where the procedure's arguments (a Call) or results
	// (a Reply) start in the octets, after the RPCSEC_GSS integrity
	// wrapping; 0 when the decode did not get there.
	BodyOffset int

	// Status is the first word of the results where it is a status: which
	// table names it is StatusKind's (NoStatus: none was read).
	Status     uint32
	StatusKind StatusKind

	// Compound is set for the arguments or results of an NFSv4 COMPOUND
	// or CB_COMPOUND. MinorVersion and CallbackIdent are the Call's;
	// Status is the Reply's COMPOUND status (StatusNFS4).
	Compound      bool
	MinorVersion  uint32
	CallbackIdent uint32
	// OpsTotal is the count field of the operation list; Ops[:NOps] are
	// the operations listed, in order, and OpsEnd says why the list ends
	// where it does. In a Reply, OpStatus is the status of the last
	// operation listed: nonzero when it failed (and the COMPOUND stopped
	// there).
	OpsTotal uint32
	NOps     int
	Ops      [MaxOps]uint32
	OpStatus uint32
	OpsEnd   OpsEnd
}

// OpsEnd says why an operation list ends where it does.
type OpsEnd uint8

// The ends of an operation list.
const (
	OpsNone      OpsEnd = iota // no list: not a COMPOUND, or not reached
	OpsComplete                // every operation is listed (a Reply's up to the first that failed)
	OpsMaxOps                  // cut at MaxOps; OpsTotal says how many there are
	OpsUnknownOp               // the last one listed has an opcode whose layout is not known
	OpsBadLayout               // the last one listed does not match its layout (an unknown union arm, a length over its bound, the end of its RPCSEC_GSS body)
	OpsTruncated               // the octets ran out in the list (the last one listed may be cut)
)

var opsEnds = [...]string{"", "complete", "max-ops", "unknown-op", "bad-layout", "truncated"}

// String returns a short lower-case word: complete, max-ops, unknown-op,
// bad-layout, truncated ("" for OpsNone).
func (e OpsEnd) String() string { return name(opsEnds[:], uint32(e)) }

// StatusKind says which table names Message.Status.
type StatusKind uint8

// The status tables.
const (
	NoStatus     StatusKind = iota
	StatusNFS2              // nfsstat: NFS version 2, NFSACL version 2 (NFS2StatusName)
	StatusNFS3              // nfsstat3: NFS version 3, NFSACL version 3 (NFS3StatusName)
	StatusNFS4              // nfsstat4: a COMPOUND or CB_COMPOUND (NFS4StatusName)
	StatusMount3            // mountstat3: MOUNT version 3 MNT (Mount3StatusName)
	StatusNLM               // nlm_stats: NLM versions 1 and 3 (NLMStatusName)
	StatusNLM4              // nlm4_stats: NLM version 4 (NLMStatusName)
)

// StatusName returns the name of m.Status in the table StatusKind says,
// "" when there is none.
func (m *Message) StatusName() string {
	switch m.StatusKind {
	case StatusNFS2:
		return NFS2StatusName(m.Status)
	case StatusNFS3:
		return NFS3StatusName(m.Status)
	case StatusNFS4:
		return NFS4StatusName(m.Status)
	case StatusMount3:
		return Mount3StatusName(m.Status)
	case StatusNLM:
		return NLMStatusName(1, m.Status)
	case StatusNLM4:
		return NLMStatusName(4, m.Status)
	}
	return ""
}

// ProcName returns the name of m's procedure: CB_COMPOUND and NULL for
// the callback program, else ProcedureName's.
func (m *Message) ProcName() string {
	if m.Callback {
		return CBProcedureName(m.Procedure)
	}
	return ProcedureName(m.Program, m.Version, m.Procedure)
}

// OpName returns the name of m.Ops[i]: a callback operation's in a
// CB_COMPOUND, else an NFSv4 operation's.
func (m *Message) OpName(i int) string {
	if i < 0 || i >= m.NOps {
		return ""
	}
	if m.Callback {
		return CBOpName(m.Ops[i])
	}
	return OpName(m.Ops[i])
}

// CallInfo is what a Reply's decode needs from its Call, which has the same
// XID and went the other way on the same connection. It is a small
// comparable value, to keep per outstanding XID.
type CallInfo struct {
	// Known is set when the Call was seen; without it only the Reply's
	// header is decoded.
	Known     bool
	Program   uint32
	Version   uint32
	Procedure uint32
	// Callback is set when the Call was the NFSv4 callback program's.
	Callback bool
	// AuthFlavor, GSSProc and GSSService are the Call's credential's: a
	// Reply's results are wrapped as its Call's arguments were.
	AuthFlavor uint32
	GSSProc    uint32
	GSSService GSSService
}

// CallInfo returns what a Reply to the Call m needs; Known is false when m
// is not a decoded Call.
func (m *Message) CallInfo() CallInfo {
	if m.Type != Call || m.RPCVers != 2 {
		return CallInfo{}
	}
	return CallInfo{
		Known:      true,
		Program:    m.Program,
		Version:    m.Version,
		Procedure:  m.Procedure,
		Callback:   m.Callback,
		AuthFlavor: m.AuthFlavor,
		GSSProc:    m.GSSProc,
		GSSService: m.GSSService,
	}
}

// CallOptions says what the octets of a Call do not.
type CallOptions struct {
	// CallbackProgram is the program number the NFSv4 client gave its
	// callback service (LinuxCallbackProgram, or what SETCLIENTID or
	// CREATE_SESSION said); 0 when not known. Procedure 1 of that program
	// is decoded as a CB_COMPOUND, whatever its version.
	CallbackProgram uint32
	// Backchannel is set when the Call went from the server to the client
	// (an RPC-over-RDMA backchannel, RFC 8167). Procedure 1 of any program
	// is then decoded as a CB_COMPOUND when its arguments have that shape:
	// a minor version of 0 to 2 and a first operation that is a callback
	// operation.
	Backchannel bool
	// ReadPosition is the Position of the Call's read chunk, when the
	// RPC-over-RDMA header has one past 0 (RFC 8166, section 3.4.5): the
	// data item that went in the chunk (an NFSv4 WRITE's data) has its
	// length in the message and its octets in the chunk. 0: none.
	ReadPosition uint32
}

// ReplyOptions says what the octets of a Reply do not.
type ReplyOptions struct {
	// Written has bit i set when the Reply's write chunk i (RFC 8166,
	// section 3.4.6) holds data: the i-th data item in the results that a
	// write chunk may carry (an NFSv4 READ's data, a READLINK's link) has
	// its length in the message and its octets in the chunk.
	Written uint32
}

// Peek returns a message's XID and msg_type without decoding the rest, to
// find the CallInfo of a Reply.
func Peek(b []byte) (xid uint32, t MsgType, err error) {
	r := newReader(b)
	xid = r.u32()
	t = MsgType(r.u32())
	if r.short {
		return 0, 0, ErrTruncated
	}
	if t != Call && t != Reply {
		return xid, t, ErrMsgType
	}
	return xid, t, nil
}

// DecodeCall decodes the Call in b, which starts at its XID, into m: the
// header, the credential, and for an NFSv4 COMPOUND or CB_COMPOUND the
// list of its operations. Arguments are skipped, never kept. On an error
// m keeps what was decoded before it; an operation list the octets ran out
// in is marked OpsTruncated.
func DecodeCall(b []byte, opt CallOptions, m *Message) error {
	*m = Message{}
	r := newReader(b)
	if opt.ReadPosition > 0 && uint64(opt.ReadPosition) < uint64(len(b)) {
		r.readPos = int(opt.ReadPosition)
	}
	if err := m.head(&r, Call); err != nil {
		return err
	}
	m.RPCVers = r.u32()
	if r.short {
		return ErrTruncated
	}
	if m.RPCVers != 2 {
		return ErrRPCVersion
	}
	m.Program = r.u32()
	m.Version = r.u32()
	m.Procedure = r.u32()
	if err := m.cred(&r); err != nil {
		return err
	}
	var err error
	if m.VerfFlavor, err = r.auth(); err != nil {
		return err
	}
	m.BodyOffset = r.off
	if !m.unwrap(&r) {
		return nil
	}
	switch {
	case m.Program == ProgNFS && m.Version == 4 && m.Procedure == 1:
		m.walkCall(&r, false)
	case m.Procedure == 1 && opt.CallbackProgram != 0 && m.Program == opt.CallbackProgram,
		m.Procedure == 1 && opt.Backchannel && looksCBCompound(r):
		m.Callback = true
		m.walkCall(&r, true)
	}
	return r.err()
}

// DecodeReply decodes the Reply in b, which starts at its XID, into m:
// the header and, when call is Known and the call was accepted, the status
// its results start with (NFS, NFSACL, MOUNT MNT, NLM), or for a COMPOUND
// or CB_COMPOUND its status and the list of its results' operations up to
// the first that failed. Results are skipped, never kept. On an error m
// keeps what was decoded before it; an operation list the octets ran out
// in is marked OpsTruncated.
func DecodeReply(b []byte, call CallInfo, opt ReplyOptions, m *Message) error {
	*m = Message{}
	r := newReader(b)
	r.written = opt.Written
	if err := m.head(&r, Reply); err != nil {
		return err
	}
	if call.Known {
		m.Program, m.Version, m.Procedure = call.Program, call.Version, call.Procedure
		m.Callback = call.Callback
		m.AuthFlavor, m.GSSProc, m.GSSService = call.AuthFlavor, call.GSSProc, call.GSSService
	}
	m.ReplyStat = r.u32()
	if r.short {
		return ErrTruncated
	}
	switch m.ReplyStat {
	case MsgAccepted:
		var err error
		if m.VerfFlavor, err = r.auth(); err != nil {
			return err
		}
		m.AcceptStat = r.u32()
		if r.short {
			return ErrTruncated
		}
		switch m.AcceptStat {
		case Success:
			m.BodyOffset = r.off
			if call.Known {
				m.results(&r, call)
			}
		case ProgMismatch:
			m.MismatchLow, m.MismatchHigh = r.u32(), r.u32()
		case ProgUnavail, ProcUnavail, GarbageArgs, SystemErr:
		default:
			return ErrAcceptStat
		}
	case MsgDenied:
		m.RejectStat = r.u32()
		if r.short {
			return ErrTruncated
		}
		switch m.RejectStat {
		case RPCMismatch:
			m.MismatchLow, m.MismatchHigh = r.u32(), r.u32()
		case AuthError:
			m.AuthStat = r.u32()
		default:
			return ErrRejectStat
		}
	default:
		return ErrReplyStat
	}
	return r.err()
}

// head reads the XID and msg_type, which must be want.
func (m *Message) head(r *reader, want MsgType) error {
	m.XID = r.u32()
	m.Type = MsgType(r.u32())
	switch {
	case r.short:
		return ErrTruncated
	case m.Type != Call && m.Type != Reply:
		return ErrMsgType
	case m.Type != want && want == Call:
		return ErrNotCall
	case m.Type != want:
		return ErrNotReply
	}
	return nil
}

// auth moves over an opaque_auth and returns its flavor.
func (r *reader) auth() (uint32, error) {
	flavor := r.u32()
	n := r.u32()
	if r.short {
		return flavor, ErrTruncated
	}
	if n > maxAuthBytes {
		return flavor, ErrAuthLength
	}
	if r.skip(padded(n)); r.short {
		return flavor, ErrTruncated
	}
	return flavor, nil
}

// cred reads the Call's credential: its flavor, and for RPCSEC_GSS its
// body, rpc_gss_cred_t (RFC 2203, section 5): version 1, gss_proc,
// seq_num, service, handle.
func (m *Message) cred(r *reader) error {
	start := r.off
	m.AuthFlavor = r.u32()
	n := r.u32()
	if r.short {
		return ErrTruncated
	}
	if n > maxAuthBytes {
		return ErrAuthLength
	}
	if m.AuthFlavor == AuthGSS {
		const fixed = 5 * 4 // version, gss_proc, seq_num, service, the handle's length
		vers := r.u32()
		m.GSSProc = r.u32()
		m.GSSSeq = r.u32()
		svc := r.u32()
		handle := r.u32()
		switch {
		case n < fixed:
			return ErrGSSCred
		case r.short:
			return ErrTruncated
		case vers != 1:
			return ErrGSSVersion
		case svc < uint32(GSSNone) || svc > uint32(GSSPrivacy):
			return ErrGSSService
		case fixed+padded(handle) > uint64(n):
			return ErrGSSCred
		}
		m.GSSService = GSSService(svc)
		r.off = start + 8
	}
	if r.skip(padded(n)); r.short {
		return ErrTruncated
	}
	return nil
}

// integ reads the head of an rpc_gss_integ_data (RFC 2203, section
// 5.3.2.2): the length of databody_integ, whose first word is seq_num and
// the rest the arguments or results; r ends where databody_integ does (the
// checksum after it is left alone).
func (r *reader) integ() {
	n := r.u32()
	if r.short {
		return
	}
	if end := uint64(r.off) + uint64(n); end <= uint64(len(r.b)) {
		r.b = r.b[:end]
		r.cut = false
	} else {
		r.integCut = true
	}
	r.u32() // seq_num
}

// unwrap moves r into the RPCSEC_GSS integrity wrapping of the arguments
// or results, if any, and says whether they are there to read: not in a
// control message (its arguments are no procedure's, its results an
// rpc_gss_init_res), nor under privacy (m is then Encrypted). The
// credential is m's, a Reply's from its CallInfo.
func (m *Message) unwrap(r *reader) bool {
	if m.AuthFlavor != AuthGSS {
		return true
	}
	if m.GSSProc != GSSData {
		return false
	}
	switch m.GSSService {
	case GSSPrivacy:
		m.Encrypted = true
		return false
	case GSSIntegrity:
		r.integ()
		m.BodyOffset = r.off
	}
	return true
}

// err returns what a decode ends with: ErrTruncated when the octets ran
// out (or an RPCSEC_GSS body goes on past them), ErrBody when an RPCSEC_GSS
// body ended before what it holds.
func (r *reader) err() error {
	switch {
	case r.short && !r.cut:
		return ErrBody
	case r.short, r.integCut:
		return ErrTruncated
	}
	return nil
}

// results reads what a Reply's results start with, for the Call it
// answers.
func (m *Message) results(r *reader, call CallInfo) {
	if !m.unwrap(r) {
		return
	}
	proc := call.Procedure
	switch {
	case call.Callback:
		if proc == 1 {
			m.walkReply(r, true)
		}
	case call.Program == ProgNFS && call.Version == 4:
		if proc == 1 {
			m.walkReply(r, false)
		}
	default:
		kind := statusKind(call.Program, call.Version, proc)
		if kind == NoStatus {
			return
		}
		if call.Program == ProgNLM {
			r.opaque() // the cookie
		}
		m.status(r, kind)
	}
}

// statusKind returns the table of the status that the results of
// procedure proc of program prog, version vers, start with; NoStatus when
// they start with none (or are a COMPOUND's). An NLM status comes after a
// cookie.
func statusKind(prog, vers, proc uint32) StatusKind {
	switch prog {
	case ProgNFS:
		switch {
		case vers == 2 && proc != 0 && proc != 3 && proc != 7 && proc <= 17:
			return StatusNFS2 // all but NULL, ROOT and WRITECACHE (RFC 1094)
		case vers == 3 && proc != 0 && proc <= 21:
			return StatusNFS3 // all but NULL (RFC 1813)
		}
	case ProgNFSACL:
		switch {
		case vers == 2 && proc >= 1 && proc <= 5:
			return StatusNFS2
		case vers == 3 && proc >= 1 && proc <= 3:
			return StatusNFS3
		}
	case ProgMount:
		if vers == 3 && proc == 1 { // MNT: mountres3
			return StatusMount3
		}
	case ProgNLM:
		return nlmStatusKind(vers, proc)
	}
	return NoStatus
}

// nlmStatusKind returns the status table of NLM version vers procedure
// proc: TEST to GRANTED, SHARE, UNSHARE and NM_LOCK have a cookie, then
// the status (nlm_res, nlm_testres, nlm_shareres).
func nlmStatusKind(vers, proc uint32) StatusKind {
	if (proc < 1 || proc > 5) && (proc < 20 || proc > 22) {
		return NoStatus
	}
	switch vers {
	case 1, 3:
		return StatusNLM
	case 4:
		return StatusNLM4
	}
	return NoStatus
}

// status reads a status word of the table kind.
func (m *Message) status(r *reader, kind StatusKind) {
	m.Status = r.u32()
	if !r.short {
		m.StatusKind = kind
	}
}
