package oncrpc

import (
	"errors"
	"testing"
)

// The decoders against hand-built messages. Each message is written from
// the layouts of RFC 5531 (the header), RFC 2203 (RPCSEC_GSS), RFC 1813
// (NFSv3, MOUNT), RFC 8881 and 7862 (COMPOUND and CB_COMPOUND) and the
// Open Group's XNFS (NLM); the expected Message is worked out from the same
// text, not from the decoder.

const xid = 0x2f1e0d0c

// decodeCase is one message and what must come of it. A nil call means a
// Call (DecodeCall with copt); else a Reply decoded with *call and ropt.
// The expected BodyOffset is the builder's mark.
type decodeCase struct {
	name string
	msg  *enc
	call *CallInfo
	copt CallOptions
	ropt ReplyOptions
	err  error
	want Message
}

var (
	nfs3Read     = &CallInfo{Known: true, Program: ProgNFS, Version: 3, Procedure: 6, AuthFlavor: AuthSys}
	nfs4Compound = &CallInfo{Known: true, Program: ProgNFS, Version: 4, Procedure: 1, AuthFlavor: AuthSys}
	cbCompound   = &CallInfo{Known: true, Program: LinuxCallbackProgram, Version: 1, Procedure: 1, Callback: true}
	gssInteg     = &CallInfo{Known: true, Program: ProgNFS, Version: 4, Procedure: 1,
		AuthFlavor: AuthGSS, GSSProc: GSSData, GSSService: GSSIntegrity}
	gssPriv = &CallInfo{Known: true, Program: ProgNFS, Version: 4, Procedure: 1,
		AuthFlavor: AuthGSS, GSSProc: GSSData, GSSService: GSSPrivacy}
	mountMnt = &CallInfo{Known: true, Program: ProgMount, Version: 3, Procedure: 1, AuthFlavor: AuthSys}
	nlm4Lock = &CallInfo{Known: true, Program: ProgNLM, Version: 4, Procedure: 2, AuthFlavor: AuthSys}
	unknown  = &CallInfo{}
)

// nfs4Call is the header of an NFSv4 COMPOUND Call with AUTH_SYS.
func nfs4Call() *enc { return callHead(xid, ProgNFS, 4, 1).authSys().authNone().mark() }

// nfs4Call41 is what a decoded NFSv4 COMPOUND Call has in common.
func nfs4Msg(minor uint32) Message {
	return Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 4, Procedure: 1,
		AuthFlavor: AuthSys, Compound: true, MinorVersion: minor}
}

// replyOf is what a decoded accepted Reply to call has in common.
func replyOf(c *CallInfo) Message {
	return Message{XID: xid, Type: Reply, Program: c.Program, Version: c.Version, Procedure: c.Procedure,
		Callback: c.Callback, AuthFlavor: c.AuthFlavor, GSSProc: c.GSSProc, GSSService: c.GSSService}
}

// with returns m changed by f.
func with(m Message, f func(*Message)) Message {
	f(&m)
	return m
}

func decodeCases() []decodeCase {
	return []decodeCase{
		{
			name: "NFSv3 READ call",
			msg: callHead(xid, ProgNFS, 3, 6).authSys().authNone().mark().
				fh().u64(1 << 20).u32(32768), // READ3args: file, offset, count
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 3, Procedure: 6,
				AuthFlavor: AuthSys},
		},
		{
			name: "NFSv3 READ reply NFS3_OK",
			msg: acceptedHead(xid).mark().u32(NFS3OK).
				u32(0).u32(4096, 1).opaque(octets(4096)), // no post_op_attr, count, eof, data
			call: nfs3Read,
			want: with(replyOf(nfs3Read), func(m *Message) { m.StatusKind = StatusNFS3 }),
		},
		{
			name: "NFSv3 reply NFS3ERR_STALE",
			msg:  acceptedHead(xid).mark().u32(70).u32(0),
			call: nfs3Read,
			want: with(replyOf(nfs3Read), func(m *Message) { m.Status, m.StatusKind = 70, StatusNFS3 }),
		},
		{
			name: "NFSv4.1 COMPOUND(SEQUENCE, PUTFH, READ) call",
			msg:  nfs4Call().cat(compoundArgs(1, seqArgs(), putfhArgs(), readArgs())),
			want: with(nfs4Msg(1), func(m *Message) {
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 3, 3, opsOf(OpSequence, OpPutfh, OpRead), OpsComplete
			}),
		},
		{
			name: "NFSv4.1 COMPOUND reply NFS4_OK",
			msg:  acceptedHead(xid).mark().cat(compoundRes(NFS4OK, seqRes(), putfhRes(NFS4OK), readRes(octets(100)))),
			call: nfs4Compound,
			want: with(replyOf(nfs4Compound), func(m *Message) {
				m.StatusKind, m.Compound = StatusNFS4, true
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 3, 3, opsOf(OpSequence, OpPutfh, OpRead), OpsComplete
			}),
		},
		{
			name: "COMPOUND reply stops at PUTFH NFS4ERR_STALE",
			msg:  acceptedHead(xid).mark().cat(compoundRes(70, seqRes(), putfhRes(70))),
			call: nfs4Compound,
			want: with(replyOf(nfs4Compound), func(m *Message) {
				m.Status, m.StatusKind, m.Compound = 70, StatusNFS4, true
				m.OpsTotal, m.NOps, m.Ops, m.OpStatus, m.OpsEnd = 2, 2, opsOf(OpSequence, OpPutfh), 70, OpsComplete
			}),
		},
		{
			name: "CB_COMPOUND(CB_SEQUENCE, CB_RECALL) call, the callback program given",
			msg: callHead(xid, LinuxCallbackProgram, 1, 1).authNone().authNone().mark().
				cat(cbCompoundArgs(1, 0x5a, cbSeqArgs(), cbRecallArgs())),
			copt: CallOptions{CallbackProgram: LinuxCallbackProgram},
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: LinuxCallbackProgram, Version: 1, Procedure: 1,
				Callback: true, Compound: true, MinorVersion: 1, CallbackIdent: 0x5a,
				OpsTotal: 2, NOps: 2, Ops: opsOf(CBOpSequence, CBOpRecall), OpsEnd: OpsComplete},
		},
		{
			name: "CB_COMPOUND call on the backchannel, another program number",
			msg: callHead(xid, 0x40000123, 1, 1).authNone().authNone().mark().
				cat(cbCompoundArgs(2, 1, cbSeqArgs(), cbRecallArgs())),
			copt: CallOptions{Backchannel: true},
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: 0x40000123, Version: 1, Procedure: 1,
				Callback: true, Compound: true, MinorVersion: 2, CallbackIdent: 1,
				OpsTotal: 2, NOps: 2, Ops: opsOf(CBOpSequence, CBOpRecall), OpsEnd: OpsComplete},
		},
		{
			name: "a CB_COMPOUND without the callback program: not decoded",
			msg: callHead(xid, 0x40000123, 1, 1).authNone().authNone().mark().
				cat(cbCompoundArgs(1, 1, cbSeqArgs())),
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: 0x40000123, Version: 1, Procedure: 1},
		},
		{
			name: "CB_COMPOUND reply",
			msg:  acceptedHead(xid).mark().cat(compoundRes(NFS4OK, cbSeqRes(), cbRecallRes())),
			call: cbCompound,
			want: with(replyOf(cbCompound), func(m *Message) {
				m.StatusKind, m.Compound = StatusNFS4, true
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 2, 2, opsOf(CBOpSequence, CBOpRecall), OpsComplete
			}),
		},
		{
			name: "RPCSEC_GSS integrity call: the operations inside the wrapping",
			msg: callHead(xid, ProgNFS, 4, 1).gssCred(GSSData, 77, GSSIntegrity).gssVerf().
				integ(77, compoundArgs(1, seqArgs(), putfhArgs(), getattrArgs())),
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 4, Procedure: 1,
				AuthFlavor: AuthGSS, VerfFlavor: AuthGSS, GSSProc: GSSData, GSSSeq: 77, GSSService: GSSIntegrity,
				Compound: true, MinorVersion: 1,
				OpsTotal: 3, NOps: 3, Ops: opsOf(OpSequence, OpPutfh, OpGetattr), OpsEnd: OpsComplete},
		},
		{
			name: "RPCSEC_GSS integrity reply",
			msg: newEnc().u32(xid, uint32(Reply), MsgAccepted).gssVerf().u32(Success).
				integ(77, compoundRes(NFS4OK, seqRes(), putfhRes(NFS4OK), getattrRes())),
			call: gssInteg,
			want: with(replyOf(gssInteg), func(m *Message) {
				m.VerfFlavor, m.StatusKind, m.Compound = AuthGSS, StatusNFS4, true
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 3, 3, opsOf(OpSequence, OpPutfh, OpGetattr), OpsComplete
			}),
		},
		{
			name: "RPCSEC_GSS privacy call: encrypted, no operations",
			msg:  callHead(xid, ProgNFS, 4, 1).gssCred(GSSData, 78, GSSPrivacy).gssVerf().mark().priv(),
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 4, Procedure: 1,
				AuthFlavor: AuthGSS, VerfFlavor: AuthGSS, GSSProc: GSSData, GSSSeq: 78, GSSService: GSSPrivacy,
				Encrypted: true},
		},
		{
			name: "RPCSEC_GSS privacy reply",
			msg:  newEnc().u32(xid, uint32(Reply), MsgAccepted).gssVerf().u32(Success).mark().priv(),
			call: gssPriv,
			want: with(replyOf(gssPriv), func(m *Message) { m.VerfFlavor, m.Encrypted = AuthGSS, true }),
		},
		{
			name: "RPCSEC_GSS_INIT: a control message, no arguments decoded",
			msg: callHead(xid, ProgNFS, 4, 0).gssCred(GSSInit, 0, GSSIntegrity).authNone().mark().
				opaque(octets(600)), // the GSS token
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 4,
				AuthFlavor: AuthGSS, GSSProc: GSSInit, GSSService: GSSIntegrity},
		},
		{
			name: "MSG_DENIED AUTH_ERROR RPCSEC_GSS_CREDPROBLEM",
			msg:  newEnc().u32(xid, uint32(Reply), MsgDenied, AuthError, 13),
			call: gssInteg,
			want: with(replyOf(gssInteg), func(m *Message) { m.ReplyStat, m.RejectStat, m.AuthStat = MsgDenied, AuthError, 13 }),
		},
		{
			name: "MSG_DENIED RPC_MISMATCH",
			msg:  newEnc().u32(xid, uint32(Reply), MsgDenied, RPCMismatch, 2, 2),
			call: unknown,
			want: Message{XID: xid, Type: Reply, ReplyStat: MsgDenied, RejectStat: RPCMismatch, MismatchLow: 2, MismatchHigh: 2},
		},
		{
			name: "PROG_MISMATCH low 2 high 3",
			msg:  newEnc().u32(xid, uint32(Reply), MsgAccepted).authNone().u32(ProgMismatch, 2, 3),
			call: nfs4Compound,
			want: with(replyOf(nfs4Compound), func(m *Message) { m.AcceptStat, m.MismatchLow, m.MismatchHigh = ProgMismatch, 2, 3 }),
		},
		{
			name: "an unknown opcode in the middle ends the list",
			msg:  nfs4Call().cat(compoundArgs(1, seqArgs(), newEnc().u32(9999, 1, 2, 3), putfhArgs())),
			want: with(nfs4Msg(1), func(m *Message) {
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 3, 2, opsOf(OpSequence, 9999), OpsUnknownOp
			}),
		},
		{
			name: "an OPEN with an unknown claim type ends the list",
			msg: nfs4Call().cat(compoundArgs(0, putfhArgs(),
				newEnc().u32(18, 1, 2, 0).u64(7).str("owner").u32(0).u32(9), getattrArgs())),
			want: with(nfs4Msg(0), func(m *Message) {
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 3, 2, opsOf(OpPutfh, 18), OpsBadLayout
			}),
		},
		{
			name: "more operations than MaxOps",
			msg: func() *enc {
				ops := make([]*enc, MaxOps+8)
				for i := range ops {
					ops[i] = newEnc().u32(24) // PUTROOTFH
				}
				return nfs4Call().cat(compoundArgs(0, ops...))
			}(),
			want: with(nfs4Msg(0), func(m *Message) {
				m.OpsTotal, m.NOps, m.OpsEnd = MaxOps+8, MaxOps, OpsMaxOps
				for i := range m.Ops {
					m.Ops[i] = 24
				}
			}),
		},
		{
			name: "WRITE data inline, then GETATTR",
			msg:  nfs4Call().cat(compoundArgs(2, seqArgs(), putfhArgs(), writeArgs(octets(1001)), getattrArgs())),
			want: with(nfs4Msg(2), func(m *Message) {
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 4, 4, opsOf(OpSequence, OpPutfh, OpWrite, OpGetattr), OpsComplete
			}),
		},
		{
			name: "WRITE data in a read chunk: its length stays, the list goes on",
			msg: nfs4Call().cat(compoundArgs(1, seqArgs(), putfhArgs(),
				newEnc().u32(OpWrite).stateid().u64(0).u32(2).u32(1<<20), // the octets went in the chunk
				getattrArgs())),
			// after the header, the tag, minorversion and count (12), SEQUENCE,
			// PUTFH, and WRITE's opcode, stateid, offset, stable and length (36)
			copt: CallOptions{ReadPosition: uint32(len(nfs4Call().b) + 12 + len(seqArgs().b) + len(putfhArgs().b) + 36)},
			want: with(nfs4Msg(1), func(m *Message) {
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 4, 4, opsOf(OpSequence, OpPutfh, OpWrite, OpGetattr), OpsComplete
			}),
		},
		{
			name: "the same without the read chunk's Position: truncated",
			msg: nfs4Call().cat(compoundArgs(1, seqArgs(), putfhArgs(),
				newEnc().u32(OpWrite).stateid().u64(0).u32(2).u32(1<<20), getattrArgs())),
			err: ErrTruncated,
			want: with(nfs4Msg(1), func(m *Message) {
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 4, 3, opsOf(OpSequence, OpPutfh, OpWrite), OpsTruncated
			}),
		},
		{
			name: "READ data in a write chunk: the list goes on",
			msg: acceptedHead(xid).mark().cat(compoundRes(NFS4OK, seqRes(), putfhRes(NFS4OK),
				newEnc().u32(OpRead, NFS4OK, 0, 65536), getattrRes())),
			call: nfs4Compound,
			ropt: ReplyOptions{Written: 1},
			want: with(replyOf(nfs4Compound), func(m *Message) {
				m.StatusKind, m.Compound = StatusNFS4, true
				m.OpsTotal, m.NOps, m.Ops, m.OpsEnd = 4, 4, opsOf(OpSequence, OpPutfh, OpRead, OpGetattr), OpsComplete
			}),
		},
		{
			name: "MOUNT MNT call",
			msg:  callHead(xid, ProgMount, 3, 1).authSys().authNone().mark().str("/export/home"),
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgMount, Version: 3, Procedure: 1, AuthFlavor: AuthSys},
		},
		{
			name: "MOUNT MNT reply MNT3_OK",
			msg:  acceptedHead(xid).mark().u32(0).fh().u32(2, AuthSys, 390003),
			call: mountMnt,
			want: with(replyOf(mountMnt), func(m *Message) { m.StatusKind = StatusMount3 }),
		},
		{
			name: "NLM version 4 LOCK call",
			// nlm4_lockargs: cookie, block, exclusive, nlm4_lock (caller_name,
			// fh, oh, svid, l_offset, l_len), reclaim, state
			msg: callHead(xid, ProgNLM, 4, 2).authSys().authNone().mark().
				opaque(octets(8)).u32(1, 1).
				str("client.example.net").fh().opaque(octets(20)).u32(4242).u64(0).u64(0).
				u32(0, 3),
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNLM, Version: 4, Procedure: 2, AuthFlavor: AuthSys},
		},
		{
			name: "NLM version 4 LOCK reply NLM4_DENIED",
			msg:  acceptedHead(xid).mark().opaque(octets(8)).u32(1),
			call: nlm4Lock,
			want: with(replyOf(nlm4Lock), func(m *Message) { m.Status, m.StatusKind = 1, StatusNLM4 }),
		},
		{
			name: "an unknown Call's Reply: the header only",
			msg:  acceptedHead(xid).mark().u32(1, 2, 3),
			call: unknown,
			want: Message{XID: xid, Type: Reply},
		},
		{
			name: "rpcvers 3",
			msg:  newEnc().u32(xid, uint32(Call), 3, ProgNFS, 3, 0).authNone().authNone(),
			err:  ErrRPCVersion,
			want: Message{XID: xid, Type: Call, RPCVers: 3},
		},
		{
			name: "msg_type 2",
			msg:  newEnc().u32(xid, 2, 2, ProgNFS, 3, 0),
			err:  ErrMsgType,
			want: Message{XID: xid, Type: 2},
		},
		{
			name: "a Reply given to DecodeCall",
			msg:  acceptedHead(xid),
			err:  ErrNotCall,
			want: Message{XID: xid, Type: Reply},
		},
		{
			name: "a Call given to DecodeReply",
			msg:  callHead(xid, ProgNFS, 3, 0).authNone().authNone(),
			call: unknown,
			err:  ErrNotReply,
			want: Message{XID: xid, Type: Call},
		},
		{
			name: "a credential of 401 octets",
			msg:  callHead(xid, ProgNFS, 3, 0).u32(AuthSys).opaque(octets(401)).authNone(),
			err:  ErrAuthLength,
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 3, AuthFlavor: AuthSys},
		},
		{
			name: "an RPCSEC_GSS credential of version 2",
			msg:  callHead(xid, ProgNFS, 3, 0).u32(AuthGSS).opaque(newEnc().u32(2, 0, 1, 1).opaque(nil).b).authNone(),
			err:  ErrGSSVersion,
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 3, AuthFlavor: AuthGSS, GSSSeq: 1},
		},
		{
			name: "an RPCSEC_GSS service 4",
			msg:  callHead(xid, ProgNFS, 3, 0).u32(AuthGSS).opaque(newEnc().u32(1, 0, 1, 4).opaque(nil).b).authNone(),
			err:  ErrGSSService,
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 3, AuthFlavor: AuthGSS, GSSSeq: 1},
		},
		{
			name: "an RPCSEC_GSS credential shorter than its fields",
			msg:  callHead(xid, ProgNFS, 3, 0).u32(AuthGSS).opaque(newEnc().u32(1, 0, 1).b).authNone().u32(0, 0),
			err:  ErrGSSCred,
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 3, AuthFlavor: AuthGSS, GSSSeq: 1},
		},
		{
			name: "an RPCSEC_GSS integrity body shorter than the operations in it",
			msg: callHead(xid, ProgNFS, 4, 1).gssCred(GSSData, 5, GSSIntegrity).gssVerf().
				u32(4 + 12 + 8).u32(5).mark().cat(compoundArgs(0, putfhArgs())).opaque(octets(28)),
			err: ErrBody,
			want: Message{XID: xid, Type: Call, RPCVers: 2, Program: ProgNFS, Version: 4, Procedure: 1,
				AuthFlavor: AuthGSS, VerfFlavor: AuthGSS, GSSSeq: 5, GSSService: GSSIntegrity,
				Compound: true, OpsTotal: 1, NOps: 1, Ops: opsOf(OpPutfh), OpsEnd: OpsBadLayout},
		},
		{
			name: "reply_stat 2",
			msg:  newEnc().u32(xid, uint32(Reply), 2),
			call: unknown,
			err:  ErrReplyStat,
			want: Message{XID: xid, Type: Reply, ReplyStat: 2},
		},
		{
			name: "accept_stat 6",
			msg:  newEnc().u32(xid, uint32(Reply), MsgAccepted).authNone().u32(6),
			call: unknown,
			err:  ErrAcceptStat,
			want: Message{XID: xid, Type: Reply, AcceptStat: 6},
		},
		{
			name: "reject_stat 2",
			msg:  newEnc().u32(xid, uint32(Reply), MsgDenied, 2),
			call: unknown,
			err:  ErrRejectStat,
			want: Message{XID: xid, Type: Reply, ReplyStat: MsgDenied, RejectStat: 2},
		},
	}
}

// decode runs the decoder c asks for.
func (c decodeCase) decode(b []byte, m *Message) error {
	if c.call == nil {
		return DecodeCall(b, c.copt, m)
	}
	return DecodeReply(b, *c.call, c.ropt, m)
}

func TestDecode(t *testing.T) {
	for _, c := range decodeCases() {
		t.Run(c.name, func(t *testing.T) {
			var m Message
			err := c.decode(c.msg.b, &m)
			if err != c.err {
				t.Errorf("error %v, want %v", err, c.err)
			}
			want := c.want
			want.BodyOffset = c.msg.body
			if m != want {
				t.Errorf("got  %+v\nwant %+v", m, want)
			}
		})
	}
}

// TestDecodeNames spot-checks the names a decoded Message gives.
func TestDecodeNames(t *testing.T) {
	var m Message
	b := nfs4Call().cat(compoundArgs(1, seqArgs(), putfhArgs(), readArgs())).b
	if err := DecodeCall(b, CallOptions{}, &m); err != nil {
		t.Fatal(err)
	}
	if got := m.ProcName(); got != "COMPOUND" {
		t.Errorf("ProcName %q", got)
	}
	for i, want := range []string{"SEQUENCE", "PUTFH", "READ", ""} {
		if got := m.OpName(i); got != want {
			t.Errorf("OpName(%d) %q, want %q", i, got, want)
		}
	}
	b = callHead(xid, LinuxCallbackProgram, 1, 1).authNone().authNone().
		cat(cbCompoundArgs(1, 1, cbSeqArgs(), cbRecallArgs())).b
	if err := DecodeCall(b, CallOptions{CallbackProgram: LinuxCallbackProgram}, &m); err != nil {
		t.Fatal(err)
	}
	if m.ProcName() != "CB_COMPOUND" || m.OpName(0) != "CB_SEQUENCE" || m.OpName(1) != "CB_RECALL" {
		t.Errorf("callback names %q %q %q", m.ProcName(), m.OpName(0), m.OpName(1))
	}
	b = acceptedHead(xid).cat(compoundRes(70, seqRes(), putfhRes(70))).b
	if err := DecodeReply(b, *nfs4Compound, ReplyOptions{}, &m); err != nil {
		t.Fatal(err)
	}
	if m.StatusName() != "NFS4ERR_STALE" || NFS4StatusName(m.OpStatus) != "NFS4ERR_STALE" {
		t.Errorf("status names %q %q", m.StatusName(), NFS4StatusName(m.OpStatus))
	}
	b = acceptedHead(xid).u32(10008).b
	if err := DecodeReply(b, *nfs3Read, ReplyOptions{}, &m); err != nil || m.StatusName() != "NFS3ERR_JUKEBOX" {
		t.Errorf("NFSv3 status %q, %v", m.StatusName(), err)
	}
}

// TestCallInfo checks that a Call's CallInfo decodes its Reply.
func TestCallInfo(t *testing.T) {
	var call, reply Message
	b := callHead(xid, ProgNFS, 4, 1).gssCred(GSSData, 9, GSSIntegrity).gssVerf().
		integ(9, compoundArgs(1, seqArgs(), putfhArgs(), getattrArgs())).b
	if err := DecodeCall(b, CallOptions{}, &call); err != nil {
		t.Fatal(err)
	}
	if got := call.CallInfo(); got != *gssInteg {
		t.Fatalf("CallInfo %+v, want %+v", got, *gssInteg)
	}
	b = newEnc().u32(xid, uint32(Reply), MsgAccepted).gssVerf().u32(Success).
		integ(9, compoundRes(NFS4OK, seqRes(), putfhRes(NFS4OK), getattrRes())).b
	if err := DecodeReply(b, call.CallInfo(), ReplyOptions{}, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.NOps != 3 || reply.OpsEnd != OpsComplete {
		t.Errorf("reply ops %d %v", reply.NOps, reply.OpsEnd)
	}
	if (&Message{Type: Reply}).CallInfo().Known {
		t.Error("a Reply's CallInfo is Known")
	}
}

func TestPeek(t *testing.T) {
	for _, c := range []struct {
		b   []byte
		xid uint32
		t   MsgType
		err error
	}{
		{callHead(7, ProgNFS, 3, 0).b, 7, Call, nil},
		{acceptedHead(8).b, 8, Reply, nil},
		{newEnc().u32(9, 5).b, 9, 5, ErrMsgType},
		{newEnc().u32(9).b, 0, 0, ErrTruncated},
	} {
		x, typ, err := Peek(c.b)
		if x != c.xid || typ != c.t || err != c.err {
			t.Errorf("Peek(% x) = %d, %d, %v; want %d, %d, %v", c.b, x, typ, err, c.xid, c.t, c.err)
		}
	}
}

func TestErrors(t *testing.T) {
	var e *Error
	if !errors.As(ErrTruncated, &e) || !e.Truncated() {
		t.Error("ErrTruncated is not Truncated")
	}
	for _, err := range []*Error{ErrMsgType, ErrNotCall, ErrNotReply, ErrRPCVersion, ErrAuthLength,
		ErrGSSCred, ErrGSSVersion, ErrGSSService, ErrReplyStat, ErrAcceptStat, ErrRejectStat, ErrBody} {
		if err.Truncated() {
			t.Errorf("%v is Truncated", err)
		}
		if err.Error() == "" {
			t.Error("an error without text")
		}
	}
}
