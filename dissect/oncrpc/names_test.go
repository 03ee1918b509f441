package oncrpc

import "testing"

// The name tables, spot-checked against the numbers in the RFCs: each
// entry below was read off the RFC (or the Open Group's XNFS for NLM and
// NSM, Solaris's nfs_acl.x for NFSACL), not off the tables.

type procName struct {
	vers, proc uint32
	want       string
}

func checkProcs(t *testing.T, prog uint32, cases []procName) {
	t.Helper()
	for _, c := range cases {
		if got := ProcedureName(prog, c.vers, c.proc); got != c.want {
			t.Errorf("ProcedureName(%d, %d, %d) = %q, want %q", prog, c.vers, c.proc, got, c.want)
		}
	}
}

func TestProgramNames(t *testing.T) {
	for _, c := range []struct {
		prog uint32
		want string
	}{
		{100000, "PORTMAP"}, {100003, "NFS"}, {100005, "MOUNT"}, {100011, "RQUOTA"},
		{100021, "NLM"}, {100024, "NSM"}, {100227, "NFSACL"},
		{0, ""}, {100004, ""}, {LinuxCallbackProgram, ""}, {^uint32(0), ""},
	} {
		if got := ProgramName(c.prog); got != c.want {
			t.Errorf("ProgramName(%d) = %q, want %q", c.prog, got, c.want)
		}
	}
}

// RFC 1094, section 2.2 (version 2); RFC 1813, section 3 (version 3);
// RFC 8881, section 16 (version 4); section 19 (the callback program).
func TestNFSProcedureNames(t *testing.T) {
	checkProcs(t, ProgNFS, []procName{
		{2, 0, "NULL"}, {2, 3, "ROOT"}, {2, 6, "READ"}, {2, 7, "WRITECACHE"}, {2, 8, "WRITE"},
		{2, 13, "SYMLINK"}, {2, 17, "STATFS"}, {2, 18, ""},
		{3, 0, "NULL"}, {3, 1, "GETATTR"}, {3, 2, "SETATTR"}, {3, 3, "LOOKUP"}, {3, 4, "ACCESS"},
		{3, 5, "READLINK"}, {3, 6, "READ"}, {3, 7, "WRITE"}, {3, 8, "CREATE"}, {3, 9, "MKDIR"},
		{3, 10, "SYMLINK"}, {3, 11, "MKNOD"}, {3, 12, "REMOVE"}, {3, 13, "RMDIR"}, {3, 14, "RENAME"},
		{3, 15, "LINK"}, {3, 16, "READDIR"}, {3, 17, "READDIRPLUS"}, {3, 18, "FSSTAT"},
		{3, 19, "FSINFO"}, {3, 20, "PATHCONF"}, {3, 21, "COMMIT"}, {3, 22, ""}, {3, ^uint32(0), ""},
		{4, 0, "NULL"}, {4, 1, "COMPOUND"}, {4, 2, ""},
		{1, 0, ""}, {5, 0, ""},
	})
	for proc, want := range []string{"NULL", "CB_COMPOUND", ""} {
		if got := CBProcedureName(uint32(proc)); got != want {
			t.Errorf("CBProcedureName(%d) = %q, want %q", proc, got, want)
		}
	}
}

// RFC 1094, appendix A (version 1); RFC 1813, appendix I (version 3).
func TestMountProcedureNames(t *testing.T) {
	checkProcs(t, ProgMount, []procName{
		{1, 0, "NULL"}, {1, 1, "MNT"}, {1, 2, "DUMP"}, {1, 3, "UMNT"}, {1, 4, "UMNTALL"},
		{1, 5, "EXPORT"}, {1, 6, "EXPORTALL"}, {1, 7, ""},
		{2, 7, "PATHCONF"},
		{3, 0, "NULL"}, {3, 1, "MNT"}, {3, 2, "DUMP"}, {3, 3, "UMNT"}, {3, 4, "UMNTALL"},
		{3, 5, "EXPORT"}, {3, 6, ""},
		{4, 1, ""},
	})
}

// Open Group XNFS: NLM versions 1, 3 and 4.
func TestNLMProcedureNames(t *testing.T) {
	checkProcs(t, ProgNLM, []procName{
		{1, 0, "NULL"}, {1, 1, "TEST"}, {1, 2, "LOCK"}, {1, 3, "CANCEL"}, {1, 4, "UNLOCK"},
		{1, 5, "GRANTED"}, {1, 6, "TEST_MSG"}, {1, 7, "LOCK_MSG"}, {1, 8, "CANCEL_MSG"},
		{1, 9, "UNLOCK_MSG"}, {1, 10, "GRANTED_MSG"}, {1, 11, "TEST_RES"}, {1, 12, "LOCK_RES"},
		{1, 13, "CANCEL_RES"}, {1, 14, "UNLOCK_RES"}, {1, 15, "GRANTED_RES"},
		{1, 20, ""}, {1, 16, ""},
		{3, 2, "LOCK"}, {3, 16, ""}, {3, 19, ""}, {3, 20, "SHARE"}, {3, 21, "UNSHARE"},
		{3, 22, "NM_LOCK"}, {3, 23, "FREE_ALL"}, {3, 24, ""},
		{4, 1, "TEST"}, {4, 12, "LOCK_RES"}, {4, 20, "SHARE"}, {4, 23, "FREE_ALL"},
		{2, 1, ""}, {5, 1, ""},
	})
}

// Open Group XNFS: SM_STAT to SM_NOTIFY.
func TestNSMProcedureNames(t *testing.T) {
	checkProcs(t, ProgNSM, []procName{
		{1, 0, "NULL"}, {1, 1, "STAT"}, {1, 2, "MON"}, {1, 3, "UNMON"}, {1, 4, "UNMON_ALL"},
		{1, 5, "SIMU_CRASH"}, {1, 6, "NOTIFY"}, {1, 7, ""}, {2, 1, ""},
	})
}

// Solaris's nfs_acl.x: ACLPROC2_* and ACLPROC3_*.
func TestNFSACLProcedureNames(t *testing.T) {
	checkProcs(t, ProgNFSACL, []procName{
		{2, 0, "NULL"}, {2, 1, "GETACL"}, {2, 2, "SETACL"}, {2, 3, "GETATTR"}, {2, 4, "ACCESS"},
		{2, 5, "GETXATTRDIR"}, {2, 6, ""},
		{3, 0, "NULL"}, {3, 1, "GETACL"}, {3, 2, "SETACL"}, {3, 3, "GETXATTRDIR"}, {3, 4, ""},
		{4, 1, "GETACL"}, {4, 3, ""},
	})
}

// rquota.x: RQUOTAPROC_GETQUOTA, GETACTIVEQUOTA; version 2 adds the SETs.
func TestRquotaProcedureNames(t *testing.T) {
	checkProcs(t, ProgRquota, []procName{
		{1, 0, "NULL"}, {1, 1, "GETQUOTA"}, {1, 2, "GETACTIVEQUOTA"}, {1, 3, ""},
		{2, 3, "SETQUOTA"}, {2, 4, "SETACTIVEQUOTA"}, {2, 5, ""},
	})
}

// RFC 1833: PMAPPROC_* (version 2), RPCBPROC_* (versions 3 and 4).
func TestPortmapProcedureNames(t *testing.T) {
	checkProcs(t, ProgPortmap, []procName{
		{2, 0, "NULL"}, {2, 1, "SET"}, {2, 2, "UNSET"}, {2, 3, "GETPORT"}, {2, 4, "DUMP"},
		{2, 5, "CALLIT"}, {2, 6, ""},
		{3, 3, "GETADDR"}, {3, 5, "CALLIT"}, {3, 6, "GETTIME"}, {3, 7, "UADDR2TADDR"},
		{3, 8, "TADDR2UADDR"}, {3, 9, ""},
		{4, 5, "BCAST"}, {4, 9, "GETVERSADDR"}, {4, 10, "INDIRECT"}, {4, 11, "GETADDRLIST"},
		{4, 12, "GETSTAT"}, {4, 13, ""},
	})
}

// nfs_opnum4 in RFC 7530, RFC 8881 (section 16.2), RFC 7862 and RFC 8276.
func TestOpNames(t *testing.T) {
	for _, c := range []struct {
		op   uint32
		want string
	}{
		{0, ""}, {1, ""}, {2, ""},
		{3, "ACCESS"}, {4, "CLOSE"}, {9, "GETATTR"}, {10, "GETFH"}, {12, "LOCK"}, {18, "OPEN"},
		{20, "OPEN_CONFIRM"}, {22, "PUTFH"}, {24, "PUTROOTFH"}, {25, "READ"}, {26, "READDIR"},
		{33, "SECINFO"}, {35, "SETCLIENTID"}, {36, "SETCLIENTID_CONFIRM"}, {38, "WRITE"},
		{39, "RELEASE_LOCKOWNER"},
		{40, "BACKCHANNEL_CTL"}, {41, "BIND_CONN_TO_SESSION"}, {42, "EXCHANGE_ID"},
		{43, "CREATE_SESSION"}, {44, "DESTROY_SESSION"}, {47, "GETDEVICEINFO"}, {50, "LAYOUTGET"},
		{52, "SECINFO_NO_NAME"}, {53, "SEQUENCE"}, {55, "TEST_STATEID"}, {57, "DESTROY_CLIENTID"},
		{58, "RECLAIM_COMPLETE"},
		{59, "ALLOCATE"}, {60, "COPY"}, {63, "IO_ADVISE"}, {64, "LAYOUTERROR"}, {67, "OFFLOAD_STATUS"},
		{68, "READ_PLUS"}, {69, "SEEK"}, {70, "WRITE_SAME"}, {71, "CLONE"},
		{72, "GETXATTR"}, {75, "REMOVEXATTR"}, {76, ""},
		{10044, "ILLEGAL"}, {10043, ""}, {^uint32(0), ""},
	} {
		if got := OpName(c.op); got != c.want {
			t.Errorf("OpName(%d) = %q, want %q", c.op, got, c.want)
		}
	}
}

// nfs_cb_opnum4 in RFC 8881 (section 19.2) and RFC 7862.
func TestCBOpNames(t *testing.T) {
	for _, c := range []struct {
		op   uint32
		want string
	}{
		{2, ""}, {3, "CB_GETATTR"}, {4, "CB_RECALL"}, {5, "CB_LAYOUTRECALL"}, {6, "CB_NOTIFY"},
		{7, "CB_PUSH_DELEG"}, {8, "CB_RECALL_ANY"}, {9, "CB_RECALLABLE_OBJ_AVAIL"},
		{10, "CB_RECALL_SLOT"}, {11, "CB_SEQUENCE"}, {12, "CB_WANTS_CANCELLED"},
		{13, "CB_NOTIFY_LOCK"}, {14, "CB_NOTIFY_DEVICEID"}, {15, "CB_OFFLOAD"}, {16, ""},
		{10044, "CB_ILLEGAL"},
	} {
		if got := CBOpName(c.op); got != c.want {
			t.Errorf("CBOpName(%d) = %q, want %q", c.op, got, c.want)
		}
	}
}

type statusName struct {
	s    uint32
	want string
}

func checkStatus(t *testing.T, what string, f func(uint32) string, cases []statusName) {
	t.Helper()
	for _, c := range cases {
		if got := f(c.s); got != c.want {
			t.Errorf("%s(%d) = %q, want %q", what, c.s, got, c.want)
		}
	}
}

// RFC 1813, section 2.6; RFC 1094, section 2.3.1.
func TestNFS3StatusNames(t *testing.T) {
	checkStatus(t, "NFS3StatusName", NFS3StatusName, []statusName{
		{0, "NFS3_OK"}, {1, "NFS3ERR_PERM"}, {2, "NFS3ERR_NOENT"}, {5, "NFS3ERR_IO"},
		{6, "NFS3ERR_NXIO"}, {13, "NFS3ERR_ACCES"}, {17, "NFS3ERR_EXIST"}, {18, "NFS3ERR_XDEV"},
		{19, "NFS3ERR_NODEV"}, {20, "NFS3ERR_NOTDIR"}, {21, "NFS3ERR_ISDIR"}, {22, "NFS3ERR_INVAL"},
		{27, "NFS3ERR_FBIG"}, {28, "NFS3ERR_NOSPC"}, {30, "NFS3ERR_ROFS"}, {31, "NFS3ERR_MLINK"},
		{63, "NFS3ERR_NAMETOOLONG"}, {66, "NFS3ERR_NOTEMPTY"}, {69, "NFS3ERR_DQUOT"},
		{70, "NFS3ERR_STALE"}, {71, "NFS3ERR_REMOTE"}, {10001, "NFS3ERR_BADHANDLE"},
		{10002, "NFS3ERR_NOT_SYNC"}, {10003, "NFS3ERR_BAD_COOKIE"}, {10004, "NFS3ERR_NOTSUPP"},
		{10005, "NFS3ERR_TOOSMALL"}, {10006, "NFS3ERR_SERVERFAULT"}, {10007, "NFS3ERR_BADTYPE"},
		{10008, "NFS3ERR_JUKEBOX"},
		{3, ""}, {72, ""}, {10000, ""}, {10009, ""}, {^uint32(0), ""},
	})
	checkStatus(t, "NFS2StatusName", NFS2StatusName, []statusName{
		{0, "NFS_OK"}, {2, "NFSERR_NOENT"}, {13, "NFSERR_ACCES"}, {70, "NFSERR_STALE"},
		{99, "NFSERR_WFLUSH"}, {18, ""}, {100, ""},
	})
}

// RFC 8881, section 15.1; RFC 7862; RFC 8276.
func TestNFS4StatusNames(t *testing.T) {
	checkStatus(t, "NFS4StatusName", NFS4StatusName, []statusName{
		{0, "NFS4_OK"}, {1, "NFS4ERR_PERM"}, {13, "NFS4ERR_ACCESS"}, {18, "NFS4ERR_XDEV"},
		{19, ""}, {22, "NFS4ERR_INVAL"}, {70, "NFS4ERR_STALE"}, {71, ""},
		{10001, "NFS4ERR_BADHANDLE"}, {10002, ""}, {10008, "NFS4ERR_DELAY"},
		{10013, "NFS4ERR_GRACE"}, {10018, "NFS4ERR_RESOURCE"}, {10021, "NFS4ERR_MINOR_VERS_MISMATCH"},
		{10022, "NFS4ERR_STALE_CLIENTID"}, {10025, "NFS4ERR_BAD_STATEID"}, {10036, "NFS4ERR_BADXDR"},
		{10044, "NFS4ERR_OP_ILLEGAL"}, {10048, "NFS4ERR_CB_PATH_DOWN"}, {10049, "NFS4ERR_BADIOMODE"},
		{10052, "NFS4ERR_BADSESSION"}, {10053, "NFS4ERR_BADSLOT"},
		{10055, "NFS4ERR_CONN_NOT_BOUND_TO_SESSION"}, {10063, "NFS4ERR_SEQ_MISORDERED"},
		{10068, "NFS4ERR_RETRY_UNCACHED_REP"}, {10072, "NFS4ERR_HASH_ALG_UNSUPP"}, {10073, ""},
		{10074, "NFS4ERR_CLIENTID_BUSY"}, {10078, "NFS4ERR_DEADSESSION"},
		{10087, "NFS4ERR_DELEG_REVOKED"}, {10088, "NFS4ERR_PARTNER_NOTSUPP"},
		{10094, "NFS4ERR_OFFLOAD_NO_REQS"}, {10095, "NFS4ERR_NOXATTR"}, {10096, "NFS4ERR_XATTR2BIG"},
		{10097, ""},
	})
}

// RFC 1813, appendix I; Open Group XNFS.
func TestMountAndNLMStatusNames(t *testing.T) {
	checkStatus(t, "Mount3StatusName", Mount3StatusName, []statusName{
		{0, "MNT3_OK"}, {1, "MNT3ERR_PERM"}, {13, "MNT3ERR_ACCES"}, {63, "MNT3ERR_NAMETOOLONG"},
		{10004, "MNT3ERR_NOTSUPP"}, {10006, "MNT3ERR_SERVERFAULT"}, {10005, ""}, {3, ""},
	})
	nlm4 := func(s uint32) string { return NLMStatusName(4, s) }
	checkStatus(t, "NLMStatusName(4)", nlm4, []statusName{
		{0, "NLM4_GRANTED"}, {1, "NLM4_DENIED"}, {3, "NLM4_BLOCKED"}, {5, "NLM4_DEADLCK"},
		{7, "NLM4_STALE_FH"}, {9, "NLM4_FAILED"}, {10, ""},
	})
	nlm1 := func(s uint32) string { return NLMStatusName(1, s) }
	checkStatus(t, "NLMStatusName(1)", nlm1, []statusName{
		{0, "LCK_GRANTED"}, {4, "LCK_DENIED_GRACE_PERIOD"}, {5, ""},
	})
	if got := NLMStatusName(2, 0); got != "" {
		t.Errorf("NLMStatusName(2, 0) = %q", got)
	}
}

// RFC 5531, sections 8.2 and 9; RFC 2203, section 5.
func TestRPCNames(t *testing.T) {
	checkStatus(t, "AuthFlavorName", AuthFlavorName, []statusName{
		{0, "AUTH_NONE"}, {1, "AUTH_SYS"}, {2, "AUTH_SHORT"}, {3, "AUTH_DH"}, {6, "RPCSEC_GSS"},
		{390003, ""},
	})
	checkStatus(t, "AuthStatName", AuthStatName, []statusName{
		{0, "AUTH_OK"}, {1, "AUTH_BADCRED"}, {2, "AUTH_REJECTEDCRED"}, {3, "AUTH_BADVERF"},
		{4, "AUTH_REJECTEDVERF"}, {5, "AUTH_TOOWEAK"}, {6, "AUTH_INVALIDRESP"}, {7, "AUTH_FAILED"},
		{13, "RPCSEC_GSS_CREDPROBLEM"}, {14, "RPCSEC_GSS_CTXPROBLEM"}, {15, ""},
	})
	checkStatus(t, "AcceptStatName", AcceptStatName, []statusName{
		{0, "SUCCESS"}, {1, "PROG_UNAVAIL"}, {2, "PROG_MISMATCH"}, {3, "PROC_UNAVAIL"},
		{4, "GARBAGE_ARGS"}, {5, "SYSTEM_ERR"}, {6, ""},
	})
	checkStatus(t, "RejectStatName", RejectStatName, []statusName{
		{0, "RPC_MISMATCH"}, {1, "AUTH_ERROR"}, {2, ""},
	})
	checkStatus(t, "ReplyStatName", ReplyStatName, []statusName{
		{0, "MSG_ACCEPTED"}, {1, "MSG_DENIED"}, {2, ""},
	})
	checkStatus(t, "GSSProcName", GSSProcName, []statusName{
		{0, "RPCSEC_GSS_DATA"}, {1, "RPCSEC_GSS_INIT"}, {2, "RPCSEC_GSS_CONTINUE_INIT"},
		{3, "RPCSEC_GSS_DESTROY"}, {4, ""},
	})
	for s, want := range []string{"", "none", "integrity", "privacy", ""} {
		if got := GSSService(s).String(); got != want {
			t.Errorf("GSSService(%d) = %q, want %q", s, got, want)
		}
	}
	for typ, want := range []string{"CALL", "REPLY", ""} {
		if got := MsgType(typ).String(); got != want {
			t.Errorf("MsgType(%d) = %q, want %q", typ, got, want)
		}
	}
	for e, want := range []string{"", "complete", "max-ops", "unknown-op", "bad-layout", "truncated", ""} {
		if got := OpsEnd(e).String(); got != want {
			t.Errorf("OpsEnd(%d) = %q, want %q", e, got, want)
		}
	}
}
