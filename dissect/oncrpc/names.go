package oncrpc

// The names of programs, procedures and RPC values. Each is spelled as its
// RFC spells it, without the prefix a C header adds (READ, not
// NFSPROC3_READ); status names keep theirs (NFS3ERR_STALE). A number
// without a name gets "", never a formatted number.

// Program numbers (the RFCs and documents of each program).
const (
	ProgPortmap uint32 = 100000 // PORTMAP and rpcbind (RFC 1833)
	ProgNFS     uint32 = 100003 // NFS (RFC 1094, 1813, 7530, 8881, 7862)
	ProgMount   uint32 = 100005 // MOUNT (RFC 1094 appendix A, RFC 1813 appendix I)
	ProgRquota  uint32 = 100011 // RQUOTA
	ProgNLM     uint32 = 100021 // NLM, the Network Lock Manager (Open Group XNFS)
	ProgNSM     uint32 = 100024 // NSM, the Network Status Monitor (Open Group XNFS)
	ProgNFSACL  uint32 = 100227 // NFSACL (Solaris and Linux)

	// LinuxCallbackProgram is the program number the Linux client gives
	// its NFSv4 callback service (SETCLIENTID's cb_program,
	// CREATE_SESSION's csa_cb_program); the XDR of RFC 7530 and RFC 8881
	// uses the same number. Another client may choose another one.
	LinuxCallbackProgram uint32 = 0x40000000
)

// ProgramName returns the name of a well-known program: NFS, MOUNT, NLM,
// NSM, RQUOTA, NFSACL or PORTMAP. The NFSv4 callback program has no fixed
// number and no name here.
func ProgramName(prog uint32) string { return programNames[prog] }

var programNames = map[uint32]string{
	ProgPortmap: "PORTMAP",
	ProgNFS:     "NFS",
	ProgMount:   "MOUNT",
	ProgRquota:  "RQUOTA",
	ProgNLM:     "NLM",
	ProgNSM:     "NSM",
	ProgNFSACL:  "NFSACL",
}

// name returns t[i], or "" when i is past the table.
func name(t []string, i uint32) string {
	if uint64(i) < uint64(len(t)) {
		return t[i]
	}
	return ""
}

// NFS version 2 (RFC 1094, section 2.2).
var nfs2Procs = [...]string{
	"NULL", "GETATTR", "SETATTR", "ROOT", "LOOKUP", "READLINK", "READ",
	"WRITECACHE", "WRITE", "CREATE", "REMOVE", "RENAME", "LINK", "SYMLINK",
	"MKDIR", "RMDIR", "READDIR", "STATFS",
}

// NFS version 3 (RFC 1813, section 3).
var nfs3Procs = [...]string{
	"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ",
	"WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR",
	"RENAME", "LINK", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO",
	"PATHCONF", "COMMIT",
}

// NFS version 4 (RFC 7530; RFC 8881, section 16), and the callback
// program (RFC 7530; RFC 8881, section 19).
var (
	nfs4Procs = [...]string{"NULL", "COMPOUND"}
	cbProcs   = [...]string{"NULL", "CB_COMPOUND"}
)

// MOUNT version 1 (RFC 1094, appendix A) with EXPORTALL, version 2 (the
// same and PATHCONF) and version 3 (RFC 1813, appendix I).
var mountProcs = [...]string{
	"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT", "EXPORTALL", "PATHCONF",
}

// NLM versions 1, 3 and 4 (Open Group XNFS).
var nlmProcs = [...]string{
	0: "NULL", 1: "TEST", 2: "LOCK", 3: "CANCEL", 4: "UNLOCK", 5: "GRANTED",
	6: "TEST_MSG", 7: "LOCK_MSG", 8: "CANCEL_MSG", 9: "UNLOCK_MSG",
	10: "GRANTED_MSG", 11: "TEST_RES", 12: "LOCK_RES", 13: "CANCEL_RES",
	14: "UNLOCK_RES", 15: "GRANTED_RES",
	20: "SHARE", 21: "UNSHARE", 22: "NM_LOCK", 23: "FREE_ALL",
}

// NSM version 1 (Open Group XNFS).
var nsmProcs = [...]string{
	"NULL", "STAT", "MON", "UNMON", "UNMON_ALL", "SIMU_CRASH", "NOTIFY",
}

// RQUOTA version 1, and version 2 with SETQUOTA and SETACTIVEQUOTA.
var rquotaProcs = [...]string{
	"NULL", "GETQUOTA", "GETACTIVEQUOTA", "SETQUOTA", "SETACTIVEQUOTA",
}

// NFSACL versions 2, 3 and 4 (Solaris's nfs_acl.x; Linux has versions 2
// and 3 without GETXATTRDIR).
var (
	nfsacl2Procs = [...]string{"NULL", "GETACL", "SETACL", "GETATTR", "ACCESS", "GETXATTRDIR"}
	nfsacl3Procs = [...]string{"NULL", "GETACL", "SETACL", "GETXATTRDIR"}
	nfsacl4Procs = [...]string{"NULL", "GETACL", "SETACL"}
)

// PORTMAP version 2, rpcbind versions 3 and 4 (RFC 1833).
var (
	pmap2Procs  = [...]string{"NULL", "SET", "UNSET", "GETPORT", "DUMP", "CALLIT"}
	rpcb3Procs  = [...]string{"NULL", "SET", "UNSET", "GETADDR", "DUMP", "CALLIT", "GETTIME", "UADDR2TADDR", "TADDR2UADDR"}
	rpcb4Procs  = [...]string{"NULL", "SET", "UNSET", "GETADDR", "DUMP", "BCAST", "GETTIME", "UADDR2TADDR", "TADDR2UADDR", "GETVERSADDR", "INDIRECT", "GETADDRLIST", "GETSTAT"}
	nlmV1Procs  = nlmProcs[:16]
	mountV1Proc = mountProcs[:7]
	mountV3Proc = mountProcs[:6]
	rquota1Proc = rquotaProcs[:3]
)

// ProcedureName returns the name of procedure proc of version vers of a
// well-known program (READ, MNT, LOCK, GETACL, COMPOUND, ...). The NFSv4
// callback program has no fixed number: see CBProcedureName.
func ProcedureName(prog, vers, proc uint32) string {
	return name(procTables[progVers{prog, vers}], proc)
}

// progVers is a program and one of its versions.
type progVers struct{ prog, vers uint32 }

// procTables are the procedure names of each version of the well-known
// programs.
var procTables = map[progVers][]string{
	{ProgNFS, 2}:     nfs2Procs[:],
	{ProgNFS, 3}:     nfs3Procs[:],
	{ProgNFS, 4}:     nfs4Procs[:],
	{ProgMount, 1}:   mountV1Proc,
	{ProgMount, 2}:   mountProcs[:],
	{ProgMount, 3}:   mountV3Proc,
	{ProgNLM, 1}:     nlmV1Procs,
	{ProgNLM, 3}:     nlmProcs[:],
	{ProgNLM, 4}:     nlmProcs[:],
	{ProgNSM, 1}:     nsmProcs[:],
	{ProgRquota, 1}:  rquota1Proc,
	{ProgRquota, 2}:  rquotaProcs[:],
	{ProgNFSACL, 2}:  nfsacl2Procs[:],
	{ProgNFSACL, 3}:  nfsacl3Procs[:],
	{ProgNFSACL, 4}:  nfsacl4Procs[:],
	{ProgPortmap, 2}: pmap2Procs[:],
	{ProgPortmap, 3}: rpcb3Procs[:],
	{ProgPortmap, 4}: rpcb4Procs[:],
}

// CBProcedureName returns the name of a procedure of the NFSv4 callback
// program, whatever number the client gave that program: NULL or
// CB_COMPOUND.
func CBProcedureName(proc uint32) string {
	return name(cbProcs[:], proc)
}

// Message types (RFC 5531, section 9).
const (
	Call  MsgType = 0 // CALL
	Reply MsgType = 1 // REPLY
)

// MsgType is an RPC message's msg_type: Call or Reply.
type MsgType uint32

// String returns CALL, REPLY, or "" for another value.
func (t MsgType) String() string {
	switch t {
	case Call:
		return "CALL"
	case Reply:
		return "REPLY"
	}
	return ""
}

// reply_stat, accept_stat and reject_stat values (RFC 5531, section 9).
const (
	MsgAccepted uint32 = 0 // MSG_ACCEPTED
	MsgDenied   uint32 = 1 // MSG_DENIED

	Success      uint32 = 0 // SUCCESS
	ProgUnavail  uint32 = 1 // PROG_UNAVAIL
	ProgMismatch uint32 = 2 // PROG_MISMATCH
	ProcUnavail  uint32 = 3 // PROC_UNAVAIL
	GarbageArgs  uint32 = 4 // GARBAGE_ARGS
	SystemErr    uint32 = 5 // SYSTEM_ERR

	RPCMismatch uint32 = 0 // RPC_MISMATCH
	AuthError   uint32 = 1 // AUTH_ERROR
)

var (
	replyStats  = [...]string{"MSG_ACCEPTED", "MSG_DENIED"}
	acceptStats = [...]string{"SUCCESS", "PROG_UNAVAIL", "PROG_MISMATCH", "PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR"}
	rejectStats = [...]string{"RPC_MISMATCH", "AUTH_ERROR"}
)

// ReplyStatName returns MSG_ACCEPTED or MSG_DENIED.
func ReplyStatName(s uint32) string { return name(replyStats[:], s) }

// AcceptStatName returns SUCCESS, PROG_UNAVAIL, PROG_MISMATCH,
// PROC_UNAVAIL, GARBAGE_ARGS or SYSTEM_ERR.
func AcceptStatName(s uint32) string { return name(acceptStats[:], s) }

// RejectStatName returns RPC_MISMATCH or AUTH_ERROR.
func RejectStatName(s uint32) string { return name(rejectStats[:], s) }

// Authentication flavors (RFC 5531, section 8.2; RFC 2203; RFC 9289).
const (
	AuthNone  uint32 = 0 // AUTH_NONE
	AuthSys   uint32 = 1 // AUTH_SYS
	AuthShort uint32 = 2 // AUTH_SHORT
	AuthDH    uint32 = 3 // AUTH_DH
	AuthGSS   uint32 = 6 // RPCSEC_GSS
)

var authFlavors = [...]string{
	"AUTH_NONE", "AUTH_SYS", "AUTH_SHORT", "AUTH_DH", "AUTH_KERB", "AUTH_RSA",
	"RPCSEC_GSS", "AUTH_TLS",
}

// AuthFlavorName returns AUTH_NONE, AUTH_SYS, AUTH_SHORT, AUTH_DH,
// RPCSEC_GSS, or one of the rarer AUTH_KERB (4), AUTH_RSA (5) and AUTH_TLS
// (7).
func AuthFlavorName(f uint32) string { return name(authFlavors[:], f) }

var authStats = [...]string{
	"AUTH_OK", "AUTH_BADCRED", "AUTH_REJECTEDCRED", "AUTH_BADVERF",
	"AUTH_REJECTEDVERF", "AUTH_TOOWEAK", "AUTH_INVALIDRESP", "AUTH_FAILED",
	"AUTH_KERB_GENERIC", "AUTH_TIMEEXPIRE", "AUTH_TKT_FILE", "AUTH_DECODE",
	"AUTH_NET_ADDR", "RPCSEC_GSS_CREDPROBLEM", "RPCSEC_GSS_CTXPROBLEM",
}

// AuthStatName returns an auth_stat's name (RFC 5531, section 9; RFC
// 2203, section 5.3.3.3): AUTH_OK to AUTH_NET_ADDR (0 to 12),
// RPCSEC_GSS_CREDPROBLEM (13) and RPCSEC_GSS_CTXPROBLEM (14).
func AuthStatName(s uint32) string { return name(authStats[:], s) }

// RPCSEC_GSS control procedures (RFC 2203, section 5).
const (
	GSSData         uint32 = 0 // RPCSEC_GSS_DATA
	GSSInit         uint32 = 1 // RPCSEC_GSS_INIT
	GSSContinueInit uint32 = 2 // RPCSEC_GSS_CONTINUE_INIT
	GSSDestroy      uint32 = 3 // RPCSEC_GSS_DESTROY
)

var gssProcs = [...]string{
	"RPCSEC_GSS_DATA", "RPCSEC_GSS_INIT", "RPCSEC_GSS_CONTINUE_INIT", "RPCSEC_GSS_DESTROY",
}

// GSSProcName returns a gss_proc's name as RFC 2203 spells it:
// RPCSEC_GSS_DATA, RPCSEC_GSS_INIT, RPCSEC_GSS_CONTINUE_INIT or
// RPCSEC_GSS_DESTROY.
func GSSProcName(p uint32) string { return name(gssProcs[:], p) }

// RPCSEC_GSS services (RFC 2203, section 5: rpc_gss_service_t).
const (
	GSSNone      GSSService = 1 // none: the arguments and results as they are
	GSSIntegrity GSSService = 2 // integrity: wrapped with a checksum
	GSSPrivacy   GSSService = 3 // privacy: encrypted
)

// GSSService is an RPCSEC_GSS credential's service; 0 when the credential
// is not RPCSEC_GSS.
type GSSService uint32

// String returns none, integrity or privacy, and "" for another value.
func (s GSSService) String() string {
	switch s {
	case GSSNone:
		return "none"
	case GSSIntegrity:
		return "integrity"
	case GSSPrivacy:
		return "privacy"
	}
	return ""
}
