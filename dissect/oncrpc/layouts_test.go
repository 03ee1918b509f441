package oncrpc

import (
	"slices"
	"testing"
)

// Every operation's layout: each is encoded here from the XDR of RFC 7530,
// RFC 8881, RFC 7862 (the XDR of RFC 7863) and RFC 8276, and followed by
// GETFH and PUTFH (CB_RECALL twice in a CB_COMPOUND). A walker that moves
// over too few or too many octets does not land on them.

type layout struct {
	op   uint32
	name string
	e    *enc
}

func change() *enc { return newEnc().u32(1).u64(1).u64(2) } // change_info4

func chanAttrs(ird bool) *enc {
	e := newEnc().u32(0, 1<<20, 1<<20, 4096, 8, 64)
	if ird {
		return e.u32(1, 16)
	}
	return e.u32(0)
}

func ace() *enc { return newEnc().u32(0, 0, 0x1f).str("OWNER@") }

func argLayouts() []layout {
	e := newEnc
	return []layout{
		{3, "ACCESS", e().u32(0x1f)},
		{4, "CLOSE", e().u32(1).stateid()},
		{5, "COMMIT", e().u64(0).u32(0)},
		{6, "CREATE NF4LNK", e().u32(5).str("target/of/link").str("link").fattr()},
		{6, "CREATE NF4DIR", e().u32(2).str("dir").fattr()},
		{6, "CREATE NF4BLK", e().u32(3).u32(8, 1).str("sda1").fattr()},
		{7, "DELEGPURGE", e().u64(1)},
		{8, "DELEGRETURN", e().stateid()},
		{9, "GETATTR", e().bitmap(1, 2)},
		{10, "GETFH", e()},
		{11, "LINK", e().str("new")},
		{12, "LOCK new lock owner", e().u32(2, 0).u64(0).u64(^uint64(0)).u32(1).u32(1).stateid().u32(1).u64(1).str("lock owner")},
		{12, "LOCK existing lock owner", e().u32(2, 0).u64(0).u64(10).u32(0).stateid().u32(2)},
		{13, "LOCKT", e().u32(1).u64(0).u64(10).u64(1).str("o")},
		{14, "LOCKU", e().u32(1, 3).stateid().u64(0).u64(10)},
		{15, "LOOKUP", e().str("file")},
		{16, "LOOKUPP", e()},
		{17, "NVERIFY", e().fattr()},
		{18, "OPEN GUARDED4 CLAIM_NULL", e().u32(0, 2, 0).u64(1).str("open id").u32(1, 1).fattr().u32(0).str("file")},
		{18, "OPEN EXCLUSIVE4 CLAIM_DELEGATE_CUR", e().u32(0, 2, 0).u64(1).str("o").u32(1, 2).verf().u32(2).stateid().str("f")},
		{18, "OPEN EXCLUSIVE4_1 CLAIM_FH", e().u32(0, 2, 0).u64(1).str("o").u32(1, 3).verf().fattr().u32(4)},
		{18, "OPEN NOCREATE CLAIM_PREVIOUS", e().u32(0, 1, 0).u64(1).str("o").u32(0).u32(1, 1)},
		{18, "OPEN CLAIM_DELEGATE_PREV", e().u32(0, 1, 0).u64(1).str("o").u32(0).u32(3).str("f")},
		{18, "OPEN CLAIM_DELEG_CUR_FH", e().u32(0, 1, 0).u64(1).str("o").u32(0).u32(5).stateid()},
		{18, "OPEN CLAIM_DELEG_PREV_FH", e().u32(0, 1, 0).u64(1).str("o").u32(0).u32(6)},
		{19, "OPENATTR", e().u32(0)},
		{20, "OPEN_CONFIRM", e().stateid().u32(2)},
		{21, "OPEN_DOWNGRADE", e().stateid().u32(2, 1, 0)},
		{22, "PUTFH", e().fh()},
		{23, "PUTPUBFH", e()},
		{24, "PUTROOTFH", e()},
		{25, "READ", e().stateid().u64(0).u32(10)},
		{26, "READDIR", e().u64(0).verf().u32(100, 1000).bitmap(1)},
		{27, "READLINK", e()},
		{28, "REMOVE", e().str("f")},
		{29, "RENAME", e().str("a").str("bb")},
		{30, "RENEW", e().u64(1)},
		{31, "RESTOREFH", e()},
		{32, "SAVEFH", e()},
		{33, "SECINFO", e().str("dir")},
		{34, "SETATTR", e().stateid().fattr()},
		{35, "SETCLIENTID", e().verf().str("client id").u32(LinuxCallbackProgram).str("tcp").str("192.0.2.1.3.1").u32(1)},
		{36, "SETCLIENTID_CONFIRM", e().u64(1).verf()},
		{37, "VERIFY", e().fattr()},
		{38, "WRITE", e().stateid().u64(0).u32(0).opaque(octets(5))},
		{39, "RELEASE_LOCKOWNER", e().u64(1).str("o")},
		{40, "BACKCHANNEL_CTL", e().u32(LinuxCallbackProgram, 3).u32(AuthNone).
			u32(AuthSys).u32(1).str("machine").u32(0, 0).u32(2, 5, 6).
			u32(AuthGSS).u32(2).opaque(octets(4)).opaque(octets(5))},
		{41, "BIND_CONN_TO_SESSION", e().session().u32(3, 0)},
		{42, "EXCHANGE_ID SP4_MACH_CRED", e().verf().str("owner").u32(1).u32(1).bitmap(1).bitmap(2).
			u32(1).str("kernel.org").str("Linux").fixed(12)},
		{42, "EXCHANGE_ID SP4_SSV", e().verf().str("owner").u32(1).u32(2).bitmap(1).bitmap(2).
			u32(1).opaque(octets(9)).u32(0).u32(1, 2).u32(0)},
		{43, "CREATE_SESSION", e().u64(1).u32(1, 3).cat(chanAttrs(false), chanAttrs(true)).
			u32(LinuxCallbackProgram).u32(1, AuthNone)},
		{44, "DESTROY_SESSION", e().session()},
		{45, "FREE_STATEID", e().stateid()},
		{46, "GET_DIR_DELEGATION", e().u32(0).bitmap(1).fixed(12).fixed(12).bitmap(1).bitmap(1)},
		{47, "GETDEVICEINFO", e().fixed(16).u32(1, 4096).bitmap(2)},
		{48, "GETDEVICELIST", e().u32(1, 10).u64(0).verf()},
		{49, "LAYOUTCOMMIT", e().u64(0).u64(4096).u32(0).stateid().u32(1).u64(100).u32(1).fixed(12).u32(1).opaque(octets(3))},
		{49, "LAYOUTCOMMIT without new offset or time", e().u64(0).u64(4096).u32(0).stateid().u32(0).u32(0).u32(1).opaque(nil)},
		{50, "LAYOUTGET", e().u32(0, 1, 2).u64(0).u64(4096).u64(4096).stateid().u32(4096)},
		{51, "LAYOUTRETURN4_FILE", e().u32(0, 1, 3).u32(1).u64(0).u64(4096).stateid().opaque(octets(2))},
		{51, "LAYOUTRETURN4_ALL", e().u32(0, 1, 3).u32(3)},
		{52, "SECINFO_NO_NAME", e().u32(0)},
		{53, "SEQUENCE", seqArgs().withoutOp()},
		{54, "SET_SSV", e().opaque(octets(32)).opaque(octets(20))},
		{55, "TEST_STATEID", e().u32(2).stateid().stateid()},
		{56, "WANT_DELEGATION CLAIM_PREVIOUS", e().u32(0x100).u32(1, 1)},
		{56, "WANT_DELEGATION CLAIM_FH", e().u32(0x100).u32(4)},
		{57, "DESTROY_CLIENTID", e().u64(1)},
		{58, "RECLAIM_COMPLETE", e().u32(1)},
		{59, "ALLOCATE", e().stateid().u64(0).u64(1 << 20)},
		{60, "COPY", e().stateid().stateid().u64(0).u64(0).u64(1<<20).u32(1, 0).
			u32(3).u32(1).str("server").u32(2).str("nfs://server/x").u32(3).str("tcp").str("192.0.2.2.8.1")},
		{61, "COPY_NOTIFY", e().stateid().u32(2).str("nfs://x")},
		{62, "DEALLOCATE", e().stateid().u64(0).u64(1 << 20)},
		{63, "IO_ADVISE", e().stateid().u64(0).u64(1 << 20).bitmap(1)},
		{64, "LAYOUTERROR", e().u64(0).u64(10).stateid().u32(1).fixed(16).u32(10008, 25)},
		{65, "LAYOUTSTATS", e().u64(0).u64(10).stateid().u64(1).u64(2).u64(3).u64(4).fixed(16).u32(1).opaque(octets(6))},
		{66, "OFFLOAD_CANCEL", e().stateid()},
		{67, "OFFLOAD_STATUS", e().stateid()},
		{68, "READ_PLUS", e().stateid().u64(0).u32(10)},
		{69, "SEEK", e().stateid().u64(0).u32(1)},
		{70, "WRITE_SAME", e().stateid().u32(2).u64(0).u64(512).u64(8).u64(0).u32(0).u64(0).opaque(octets(7))},
		{71, "CLONE", e().stateid().stateid().u64(0).u64(0).u64(1 << 20)},
		{72, "GETXATTR", e().str("user.a")},
		{73, "SETXATTR", e().u32(0).str("user.a").opaque(octets(9))},
		{74, "LISTXATTRS", e().u64(0).u32(4096)},
		{75, "REMOVEXATTR", e().str("user.a")},
		{OpIllegal, "ILLEGAL", e()},
	}
}

// resultLayouts are the results after an NFS4_OK status.
func resultLayouts() []layout {
	e := newEnc
	return []layout{
		{3, "ACCESS", e().u32(0x1f, 0x1f)},
		{4, "CLOSE", e().stateid()},
		{5, "COMMIT", e().verf()},
		{6, "CREATE", e().cat(change()).bitmap(1)},
		{7, "DELEGPURGE", e()},
		{8, "DELEGRETURN", e()},
		{9, "GETATTR", e().fattr()},
		{10, "GETFH", e().fh()},
		{11, "LINK", change()},
		{12, "LOCK", e().stateid()},
		{13, "LOCKT", e()},
		{14, "LOCKU", e().stateid()},
		{15, "LOOKUP", e()},
		{16, "LOOKUPP", e()},
		{17, "NVERIFY", e()},
		{18, "OPEN OPEN_DELEGATE_NONE", e().stateid().cat(change()).u32(4).bitmap(1).u32(0)},
		{18, "OPEN OPEN_DELEGATE_READ", e().stateid().cat(change()).u32(4).bitmap(1).u32(1).stateid().u32(0).cat(ace())},
		{18, "OPEN OPEN_DELEGATE_WRITE", e().stateid().cat(change()).u32(4).bitmap(1).u32(2).stateid().u32(0).
			u32(2).u32(100, 4096).cat(ace())},
		{18, "OPEN OPEN_DELEGATE_NONE_EXT WND4_CONTENTION", e().stateid().cat(change()).u32(4).bitmap().u32(3).u32(1, 0)},
		{18, "OPEN OPEN_DELEGATE_NONE_EXT WND4_RESOURCE", e().stateid().cat(change()).u32(4).bitmap().u32(3).u32(2, 1)},
		{18, "OPEN OPEN_DELEGATE_NONE_EXT WND4_NOT_WANTED", e().stateid().cat(change()).u32(4).bitmap().u32(3).u32(0)},
		{19, "OPENATTR", e()},
		{20, "OPEN_CONFIRM", e().stateid()},
		{21, "OPEN_DOWNGRADE", e().stateid()},
		{22, "PUTFH", e()},
		{23, "PUTPUBFH", e()},
		{24, "PUTROOTFH", e()},
		{25, "READ", e().u32(1).opaque(octets(10))},
		{26, "READDIR", e().verf().u32(1).u64(1).str("a").fattr().u32(1).u64(2).str("bb").fattr().u32(0).u32(1)},
		{27, "READLINK", e().str("target")},
		{28, "REMOVE", change()},
		{29, "RENAME", e().cat(change(), change())},
		{30, "RENEW", e()},
		{31, "RESTOREFH", e()},
		{32, "SAVEFH", e()},
		{33, "SECINFO", e().u32(2).u32(AuthGSS).opaque(octets(9)).u32(0, 2).u32(AuthSys)},
		{34, "SETATTR", e().bitmap(1)},
		{35, "SETCLIENTID", e().u64(1).verf()},
		{36, "SETCLIENTID_CONFIRM", e()},
		{37, "VERIFY", e()},
		{38, "WRITE", e().u32(10, 2).verf()},
		{39, "RELEASE_LOCKOWNER", e()},
		{40, "BACKCHANNEL_CTL", e()},
		{41, "BIND_CONN_TO_SESSION", e().session().u32(1, 0)},
		{42, "EXCHANGE_ID SP4_NONE", e().u64(1).u32(1, 0x10001).u32(0).u64(0).str("major").str("scope").
			u32(1).str("kernel.org").str("Linux").fixed(12)},
		{42, "EXCHANGE_ID SP4_SSV", e().u64(1).u32(1, 0x10001).u32(2).bitmap(1).bitmap(1).u32(1, 1, 32, 16).
			u32(1).opaque(octets(4)).u64(0).str("major").str("scope").u32(0)},
		{43, "CREATE_SESSION", e().session().u32(1, 0).cat(chanAttrs(true), chanAttrs(false))},
		{44, "DESTROY_SESSION", e()},
		{45, "FREE_STATEID", e()},
		{46, "GET_DIR_DELEGATION GDD4_OK", e().u32(0).verf().stateid().bitmap(1).bitmap(1).bitmap(1)},
		{46, "GET_DIR_DELEGATION GDD4_UNAVAIL", e().u32(1).u32(0)},
		{47, "GETDEVICEINFO", e().u32(1).opaque(octets(40)).bitmap()},
		{48, "GETDEVICELIST", e().u64(0).verf().u32(2).fixed(32).u32(1)},
		{49, "LAYOUTCOMMIT", e().u32(1).u64(4096)},
		{50, "LAYOUTGET", e().u32(1).stateid().u32(1).u64(0).u64(4096).u32(1).u32(1).opaque(octets(12))},
		{51, "LAYOUTRETURN", e().u32(1).stateid()},
		{52, "SECINFO_NO_NAME", e().u32(1).u32(AuthSys)},
		{53, "SEQUENCE", e().session().u32(1, 0, 15, 15, 0)},
		{54, "SET_SSV", e().opaque(octets(20))},
		{55, "TEST_STATEID", e().u32(2).u32(0, 10025)},
		{56, "WANT_DELEGATION OPEN_DELEGATE_NONE", e().u32(0)},
		{56, "WANT_DELEGATION OPEN_DELEGATE_READ", e().u32(1).stateid().u32(1).cat(ace())},
		{57, "DESTROY_CLIENTID", e()},
		{58, "RECLAIM_COMPLETE", e()},
		{59, "ALLOCATE", e()},
		{60, "COPY", e().u32(1).stateid().u64(100).u32(2).verf().u32(1, 1)},
		{61, "COPY_NOTIFY", e().fixed(12).stateid().u32(1).u32(1).str("server")},
		{62, "DEALLOCATE", e()},
		{63, "IO_ADVISE", e().bitmap(1)},
		{64, "LAYOUTERROR", e()},
		{65, "LAYOUTSTATS", e()},
		{66, "OFFLOAD_CANCEL", e()},
		{67, "OFFLOAD_STATUS", e().u64(5).u32(1).u32(0)},
		{68, "READ_PLUS", e().u32(1).u32(2).u32(0).u64(0).opaque(octets(3)).u32(1).u64(3).u64(100)},
		{69, "SEEK", e().u32(0).u64(12)},
		{70, "WRITE_SAME", e().u32(0).u64(100).u32(2).verf()},
		{71, "CLONE", e()},
		{72, "GETXATTR", e().opaque(octets(4))},
		{73, "SETXATTR", change()},
		{74, "LISTXATTRS", e().u64(0).u32(2).str("user.a").str("user.bb").u32(1)},
		{75, "REMOVEXATTR", change()},
		{OpIllegal, "ILLEGAL", e()},
	}
}

func cbArgLayouts() []layout {
	e := newEnc
	return []layout{
		{3, "CB_GETATTR", e().fh().bitmap(1)},
		{4, "CB_RECALL", e().stateid().u32(0).fh()},
		{5, "CB_LAYOUTRECALL FILE", e().u32(1, 1, 0).u32(1).fh().u64(0).u64(4096).stateid()},
		{5, "CB_LAYOUTRECALL FSID", e().u32(1, 1, 0).u32(2).u64(1).u64(2)},
		{5, "CB_LAYOUTRECALL ALL", e().u32(1, 1, 0).u32(3)},
		{6, "CB_NOTIFY", e().stateid().fh().u32(1).bitmap(1).opaque(octets(20))},
		{7, "CB_PUSH_DELEG", e().fh().u32(1).stateid().u32(0).cat(ace())},
		{8, "CB_RECALL_ANY", e().u32(0).bitmap(1)},
		{9, "CB_RECALLABLE_OBJ_AVAIL", e().u32(0).bitmap(1)},
		{10, "CB_RECALL_SLOT", e().u32(4)},
		{11, "CB_SEQUENCE", cbSeqArgs().withoutOp()},
		{12, "CB_WANTS_CANCELLED", e().u32(1, 0)},
		{13, "CB_NOTIFY_LOCK", e().fh().u64(1).str("lock owner")},
		{14, "CB_NOTIFY_DEVICEID", e().u32(1).bitmap(1).opaque(octets(24))},
		{15, "CB_OFFLOAD NFS4_OK", e().fh().stateid().u32(NFS4OK).u32(0).u64(1).u32(1).verf()},
		{15, "CB_OFFLOAD NFS4ERR_DELAY", e().fh().stateid().u32(10008).u64(5)},
		{OpIllegal, "CB_ILLEGAL", e()},
	}
}

func cbResultLayouts() []layout {
	e := newEnc
	l := []layout{
		{3, "CB_GETATTR", e().fattr()},
		{11, "CB_SEQUENCE", e().session().u32(1, 0, 0, 0)},
		{OpIllegal, "CB_ILLEGAL", e()},
	}
	for op := uint32(4); op <= 15; op++ {
		if op != 11 {
			l = append(l, layout{op, CBOpName(op), e()})
		}
	}
	return l
}

// withoutOp returns e without its opcode, the first word: the helpers of
// builder_test.go write whole operations.
func (e *enc) withoutOp() *enc { return &enc{b: e.b[4:]} }

func TestOpLayouts(t *testing.T) {
	groups := []struct {
		name    string
		layouts []layout
		build   func(l layout) []byte
		decode  func(b []byte, m *Message) error
		follow  []uint32
		opNames func(uint32) string
		lastOp  uint32
	}{
		{
			name:    "arguments",
			layouts: argLayouts(),
			build: func(l layout) []byte {
				return nfs4Call().cat(compoundArgs(2, newEnc().u32(l.op).cat(l.e), newEnc().u32(10), putfhArgs())).b
			},
			decode:  func(b []byte, m *Message) error { return DecodeCall(b, CallOptions{}, m) },
			follow:  []uint32{10, OpPutfh},
			opNames: OpName, lastOp: 75,
		},
		{
			name:    "results",
			layouts: resultLayouts(),
			build: func(l layout) []byte {
				return acceptedHead(xid).cat(compoundRes(NFS4OK, newEnc().u32(l.op, NFS4OK).cat(l.e),
					newEnc().u32(10, NFS4OK).fh(), putfhRes(NFS4OK))).b
			},
			decode:  func(b []byte, m *Message) error { return DecodeReply(b, *nfs4Compound, ReplyOptions{}, m) },
			follow:  []uint32{10, OpPutfh},
			opNames: OpName, lastOp: 75,
		},
		{
			name:    "callback arguments",
			layouts: cbArgLayouts(),
			build: func(l layout) []byte {
				return callHead(xid, LinuxCallbackProgram, 1, 1).authNone().authNone().
					cat(cbCompoundArgs(1, 0, newEnc().u32(l.op).cat(l.e), cbRecallArgs(), cbRecallArgs())).b
			},
			decode: func(b []byte, m *Message) error {
				return DecodeCall(b, CallOptions{CallbackProgram: LinuxCallbackProgram}, m)
			},
			follow:  []uint32{CBOpRecall, CBOpRecall},
			opNames: CBOpName, lastOp: 15,
		},
		{
			name:    "callback results",
			layouts: cbResultLayouts(),
			build: func(l layout) []byte {
				return acceptedHead(xid).cat(compoundRes(NFS4OK, newEnc().u32(l.op, NFS4OK).cat(l.e),
					cbRecallRes(), cbRecallRes())).b
			},
			decode:  func(b []byte, m *Message) error { return DecodeReply(b, *cbCompound, ReplyOptions{}, m) },
			follow:  []uint32{CBOpRecall, CBOpRecall},
			opNames: CBOpName, lastOp: 15,
		},
	}
	for _, g := range groups {
		seen := map[uint32]bool{}
		for _, l := range g.layouts {
			seen[l.op] = true
			var m Message
			err := g.decode(g.build(l), &m)
			want := append([]uint32{l.op}, g.follow...)
			if err != nil || !slices.Equal(m.Ops[:m.NOps], want) || m.OpsEnd != OpsComplete {
				t.Errorf("%s of %s: error %v, ops %v %v; want %v complete", g.name, l.name, err, m.Ops[:m.NOps], m.OpsEnd, want)
			}
		}
		for op := uint32(3); op <= g.lastOp; op++ {
			if !seen[op] {
				t.Errorf("%s: no layout tested for %d (%s)", g.name, op, g.opNames(op))
			}
		}
	}
}

// TestBadUnionArms checks that a union discriminant no layout allows ends
// the list with OpsBadLayout.
func TestBadUnionArms(t *testing.T) {
	e := newEnc
	for _, l := range []layout{
		{18, "OPEN createmode 4", e().u32(0, 2, 0).u64(1).str("o").u32(1, 4).fattr().u32(0).str("f")},
		{18, "OPEN claim 7", e().u32(0, 2, 0).u64(1).str("o").u32(0).u32(7)},
		{40, "BACKCHANNEL_CTL flavor AUTH_DH", e().u32(LinuxCallbackProgram, 1).u32(AuthDH)},
		{40, "BACKCHANNEL_CTL with 17 gids", e().u32(LinuxCallbackProgram, 1).u32(AuthSys).u32(1).str("m").u32(0, 0).u32(17)},
		{42, "EXCHANGE_ID state protection 3", e().verf().str("owner").u32(1).u32(3)},
		{42, "EXCHANGE_ID two impl ids", e().verf().str("owner").u32(1).u32(0).u32(2)},
		{56, "WANT_DELEGATION CLAIM_NULL", e().u32(0x100).u32(0).str("f")},
		{60, "COPY netloc 4", e().stateid().stateid().u64(0).u64(0).u64(1).u32(1, 0).u32(1).u32(4)},
		{12, "LOCK new_lock_owner 2", e().u32(2, 0).u64(0).u64(10).u32(2)},
		{22, "PUTFH of 129 octets", e().opaque(octets(129))},
		{35, "SETCLIENTID id of 1025 octets", e().verf().opaque(octets(1025))},
	} {
		var m Message
		b := nfs4Call().cat(compoundArgs(1, seqArgs(), newEnc().u32(l.op).cat(l.e), newEnc().u32(10))).b
		err := DecodeCall(b, CallOptions{}, &m)
		if err != nil || m.NOps != 2 || m.Ops[1] != l.op || m.OpsEnd != OpsBadLayout {
			t.Errorf("%s: error %v, %d ops %v", l.name, err, m.NOps, m.OpsEnd)
		}
	}
}
