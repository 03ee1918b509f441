package craft

import "encoding/binary"

// ONC RPC messages (RFC 5531) for the crafted traffic: Calls with an
// AUTH_NONE, AUTH_SYS or RPCSEC_GSS credential (RFC 2203), and Replies,
// accepted or denied. The procedures' arguments and results come from
// nfsmsg.go: NFSv3, NFSv4.1 COMPOUND and the callback CB_COMPOUND.

// ONC RPC numbers (RFC 5531, section 9; RFC 2203, section 5).
const (
	AuthNone uint32 = 0 // AUTH_NONE
	AuthSys  uint32 = 1 // AUTH_SYS
	AuthGSS  uint32 = 6 // RPCSEC_GSS

	GSSNone      uint32 = 1 // rpc_gss_svc_none
	GSSIntegrity uint32 = 2 // rpc_gss_svc_integrity
	GSSPrivacy   uint32 = 3 // rpc_gss_svc_privacy

	// accept_stat
	Success      uint32 = 0
	ProgUnavail  uint32 = 1
	ProgMismatch uint32 = 2
	ProcUnavail  uint32 = 3
	GarbageArgs  uint32 = 4
	SystemErr    uint32 = 5
	// reject_stat
	RPCMismatch uint32 = 0
	AuthError   uint32 = 1
	// auth_stat
	AuthBadCred       uint32 = 1
	AuthRejectedCred  uint32 = 2
	GSSCredProblem    uint32 = 13 // RPCSEC_GSS_CREDPROBLEM
	GSSContextProblem uint32 = 14 // RPCSEC_GSS_CTXPROBLEM
)

const (
	rpcCall, rpcReply      = uint32(0), uint32(1)
	msgAccepted, msgDenied = uint32(0), uint32(1)
	rpcVersion             = uint32(2)
	gssVersion, gssData    = uint32(1), uint32(0)
	gssChecksumLen         = 28 // the crafted checksums' length (a Kerberos v5 MIC token's)
	gssWrapLen             = 60 // what a crafted privacy wrap adds to the octets it hides
	growStep               = 4  // a data item grows by whole XDR units
	patternSeed            = 0x3c
	patternStep            = 7
	machineName            = "client.example.net"
	authSysStamp           = uint32(0x6a3b5c00)
)

// XDR appends XDR (RFC 4506) to B: big-endian 4-octet units; an opaque or
// a string is its length, its octets and zeros up to a multiple of 4.
//
// A data item moved to a chunk (RFC 8166: a "reduced" data item, such as
// an NFS WRITE's data in a read chunk or a READ's data in a write chunk)
// keeps its length in the message; its octets, and their padding, are
// left out. Reduced records where they would have started.
//
// Grow is how many octets, a multiple of 4, the first data item written
// inline takes on beyond its length (Grown says one did): how a message is
// made longer with real content, to reach a Send size.
type XDR struct {
	B       []byte
	Reduced []int
	Grow    int
	Grown   bool
}

// U32 appends each value as an unsigned int.
func (x *XDR) U32(vs ...uint32) {
	for _, v := range vs {
		x.B = binary.BigEndian.AppendUint32(x.B, v)
	}
}

// U64 appends an unsigned hyper.
func (x *XDR) U64(v uint64) { x.B = binary.BigEndian.AppendUint64(x.B, v) }

// Bool appends a bool.
func (x *XDR) Bool(v bool) {
	if v {
		x.U32(1)
		return
	}
	x.U32(0)
}

// Opaque appends a variable-length opaque.
func (x *XDR) Opaque(p []byte) {
	x.U32(uint32(len(p)))
	x.Fixed(p)
}

// String appends a string.
func (x *XDR) String(s string) {
	x.U32(uint32(len(s)))
	x.B = append(x.B, s...)
	x.pad(len(s))
}

// Fixed appends a fixed-length opaque: its octets and their padding.
func (x *XDR) Fixed(p []byte) {
	x.B = append(x.B, p...)
	x.pad(len(p))
}

func (x *XDR) pad(n int) {
	for ; n%4 != 0; n++ {
		x.B = append(x.B, 0)
	}
}

// grown returns n plus Grow when the data item it counts is to be
// written inline (chunk false) and no other item took Grow yet.
func (x *XDR) grown(n int, chunk bool) int {
	if chunk || x.Grown || x.Grow <= 0 {
		return n
	}
	x.Grown = true
	return n + x.Grow
}

// Data appends a data item of n octets of a pattern: its length and, when
// it is not in a chunk, its octets. The NFS encoders take n from grown,
// so that the counts before it agree.
func (x *XDR) Data(n int, chunk bool) {
	x.U32(uint32(n))
	if chunk {
		x.Reduced = append(x.Reduced, len(x.B))
		return
	}
	x.B = appendPattern(x.B, n, patternSeed)
	x.pad(n)
}

// appendPattern appends n octets of a recognisable pattern.
func appendPattern(b []byte, n int, seed byte) []byte {
	for i := range n {
		b = append(b, seed+byte(i*patternStep))
	}
	return b
}

// A Body is a procedure's arguments or results: it appends its XDR.
type Body interface {
	AppendXDR(x *XDR)
}

// BodyFunc is a Body written as a function.
type BodyFunc func(x *XDR)

// AppendXDR calls f.
func (f BodyFunc) AppendXDR(x *XDR) { f(x) }

// Cred is a Call's credential (RFC 5531, section 8.2).
type Cred struct {
	Flavor uint32 // AuthNone, AuthSys or AuthGSS
	// AUTH_SYS (RFC 5531, appendix A): authsys_parms.
	Stamp    uint32
	Machine  string
	UID, GID uint32
	GIDs     []uint32
	// RPCSEC_GSS (RFC 2203, section 5): rpc_gss_cred_vers_1_t, with
	// gss_proc RPCSEC_GSS_DATA (0).
	GSSSeq     uint32
	GSSService uint32 // GSSNone, GSSIntegrity or GSSPrivacy
	GSSHandle  []byte
}

// SysCred is the AUTH_SYS credential of root on a client: uid 0, gid 0,
// the group list {0}.
func SysCred() Cred {
	return Cred{Flavor: AuthSys, Stamp: authSysStamp, Machine: machineName, GIDs: []uint32{0}}
}

// GSSCred is an RPCSEC_GSS credential for data with service (GSSNone,
// GSSIntegrity or GSSPrivacy) and sequence number seq, on a context whose
// handle is 16 octets.
func GSSCred(service, seq uint32) Cred {
	return Cred{Flavor: AuthGSS, GSSSeq: seq, GSSService: service,
		GSSHandle: []byte{0x9a, 0x4e, 0x01, 0x00, 0, 0, 0, 0x2a, 0x6b, 0x65, 0x72, 0x62, 0, 0, 0, 1}}
}

// appendCred appends the credential as an opaque_auth.
func (c *Cred) appendCred(x *XDR) {
	x.U32(c.Flavor)
	at := len(x.B)
	x.U32(0) // the body's length, set below
	switch c.Flavor {
	case AuthSys:
		x.U32(c.Stamp)
		x.String(c.Machine)
		x.U32(c.UID, c.GID, uint32(len(c.GIDs)))
		x.U32(c.GIDs...)
	case AuthGSS:
		x.U32(gssVersion, gssData, c.GSSSeq, c.GSSService)
		x.Opaque(c.GSSHandle)
	}
	binary.BigEndian.PutUint32(x.B[at:], uint32(len(x.B)-at-4))
}

// appendVerf appends the verifier of a message with this credential, from
// the server when server: AUTH_NONE, or for RPCSEC_GSS a checksum (RFC
// 2203, section 5).
func (c *Cred) appendVerf(x *XDR, server bool) {
	if c.Flavor != AuthGSS {
		x.U32(AuthNone, 0)
		return
	}
	x.U32(AuthGSS, gssChecksumLen)
	x.B = appendMIC(x.B, c.GSSSeq, server)
}

// appendMIC appends a checksum shaped as a Kerberos v5 MIC token (RFC
// 4121, section 4.2.6.1): TOK_ID 04 04, flags (SentByAcceptor when from
// the server), five filler octets 0xff, the sequence number (8 octets) and
// a 12-octet checksum (here a pattern).
func appendMIC(b []byte, seq uint32, server bool) []byte {
	b = append(b, 0x04, 0x04, krbFlags(0, server), 0xff, 0xff, 0xff, 0xff, 0xff)
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	return appendPattern(b, gssChecksumLen-16, 0xc5)
}

// krbFlags are the flags of a Kerberos v5 token: f, and SentByAcceptor
// (0x01) when from the server.
func krbFlags(f byte, server bool) byte {
	if server {
		return f | 0x01
	}
	return f
}

// appendBody appends a Call's arguments or a Reply's results (server) as
// the credential wraps them: with RPCSEC_GSS integrity as rpc_gss_integ_data
// (the sequence number and the body in databody_integ, then a checksum),
// with privacy as rpc_gss_priv_data (an opaque of octets that stand for
// the encrypted sequence number and body). A data item cannot be moved to
// a chunk inside a wrapping (the checksum covers its octets): it panics.
func (c *Cred) appendBody(x *XDR, b Body, server bool) {
	if b == nil {
		b = BodyFunc(func(*XDR) {})
	}
	if c.Flavor != AuthGSS || c.GSSService == GSSNone {
		b.AppendXDR(x)
		return
	}
	in := XDR{Grow: x.Grow, Grown: x.Grown}
	in.U32(c.GSSSeq)
	b.AppendXDR(&in)
	if len(in.Reduced) > 0 {
		panic("craft: a data item in a chunk inside an RPCSEC_GSS wrapping")
	}
	x.Grown = in.Grown
	if c.GSSService == GSSIntegrity {
		x.Opaque(in.B)
		x.U32(gssChecksumLen)
		x.B = appendMIC(x.B, c.GSSSeq, server)
		return
	}
	// A Kerberos v5 Wrap token (RFC 4121, section 4.2.6.2): TOK_ID 05
	// 04, flags (sealed), filler 0xff, EC, RRC, the sequence number, then
	// what stands for the encrypted octets.
	n := 16 + len(in.B) + gssWrapLen
	x.U32(uint32(n))
	x.B = append(x.B, 0x05, 0x04, krbFlags(0x02, server), 0xff, 0x00, 0x00, 0x00, 0x00)
	x.B = binary.BigEndian.AppendUint64(x.B, uint64(c.GSSSeq))
	x.B = appendPattern(x.B, n-16, 0xe7)
	x.pad(n)
}

// Call is an ONC RPC Call (RFC 5531, section 9) without its XID, which
// the transport gives.
type Call struct {
	Prog, Vers, Proc uint32
	Cred             Cred
	Args             Body // nil: none (a NULL procedure)
}

// AppendTo appends the Call with xid to x: xid, CALL, rpcvers 2, prog,
// vers, proc, the credential, the verifier, the arguments.
func (c *Call) AppendTo(x *XDR, xid uint32) {
	x.U32(xid, rpcCall, rpcVersion, c.Prog, c.Vers, c.Proc)
	c.Cred.appendCred(x)
	c.Cred.appendVerf(x, false)
	c.Cred.appendBody(x, c.Args, false)
}

// Encode returns the Call with xid and, when its arguments moved a data
// item to a read chunk, that chunk's XDR Position: the offset from the
// Call's first octet where the item's octets belong (RFC 8166); 0 when
// none did.
func (c *Call) Encode(xid uint32) ([]byte, uint32) {
	var x XDR
	c.AppendTo(&x, xid)
	if len(x.Reduced) == 0 {
		return x.B, 0
	}
	return x.B, uint32(x.Reduced[0])
}

// Reply is an ONC RPC Reply (RFC 5531, section 9) without its XID.
type Reply struct {
	// Denied makes it MSG_DENIED with RejectStat: RPC_MISMATCH with Low
	// and High, or AUTH_ERROR with AuthStat. Else it is MSG_ACCEPTED with
	// AcceptStat: SUCCESS and Results, PROG_MISMATCH with Low and High, or
	// another error alone.
	Denied     bool
	AcceptStat uint32
	RejectStat uint32
	AuthStat   uint32
	Low, High  uint32
	// Cred is the Call's credential: with RPCSEC_GSS the verifier is a
	// checksum and the results are wrapped as its service says.
	Cred    Cred
	Results Body
}

// AppendTo appends the Reply with xid to x.
func (r *Reply) AppendTo(x *XDR, xid uint32) {
	x.U32(xid, rpcReply)
	if r.Denied {
		x.U32(msgDenied, r.RejectStat)
		switch r.RejectStat {
		case RPCMismatch:
			x.U32(r.Low, r.High)
		case AuthError:
			x.U32(r.AuthStat)
		}
		return
	}
	x.U32(msgAccepted)
	r.Cred.appendVerf(x, true)
	x.U32(r.AcceptStat)
	switch r.AcceptStat {
	case Success:
		r.Cred.appendBody(x, r.Results, true)
	case ProgMismatch:
		x.U32(r.Low, r.High)
	}
}

// Encode returns the Reply with xid.
func (r *Reply) Encode(xid uint32) []byte {
	var x XDR
	r.AppendTo(&x, xid)
	return x.B
}

// An RPC is an ONC RPC message: a *Call or a *Reply.
type RPC interface {
	AppendTo(x *XDR, xid uint32)
}

// encodeSized appends m with xid to b, grown to size octets where it has
// a data item inline to grow (in steps of 4), and returns it with the
// reduced items' offsets (from the message's first octet). size 0 or less
// than m's own size leaves m as it is.
func encodeSized(m RPC, xid uint32, size int) ([]byte, []int) {
	x := XDR{}
	m.AppendTo(&x, xid)
	if extra := (size - len(x.B)) &^ (growStep - 1); extra > 0 {
		x = XDR{B: x.B[:0], Grow: extra}
		m.AppendTo(&x, xid)
	}
	return x.B, x.Reduced
}
