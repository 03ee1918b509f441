package craft

// The RPC messages of the crafted NFS traffic, step by step: which NFS
// version and procedure each Call is, and its Reply. NFSTraffic on either
// family and the workloads take their messages from here.

// NFS versions of the crafted traffic (Traffic.NFSVersion).
const (
	NFSMix = ""     // NFSv3 and NFSv4.1, step by step
	NFSv3  = "nfs3" // NFSv3 only
	NFSv4  = "nfs4" // NFSv4.1 only (and NFSv4 NULL)
)

// NFSVersions are the values Traffic.NFSVersion takes, the mix first.
var NFSVersions = []string{NFSMix, NFSv3, NFSv4}

// The sizes of the NFS exchange's data.
const (
	readSize  = 8192 // the READ into a write chunk
	writeSize = 4096 // the WRITE from a read chunk
	// longReplySize is the long Reply written into the reply chunk: more
	// than the inline threshold, in 6 RDMA WRITE packets of 1024 octets
	// and 5 DDP segments of 1400.
	longReplySize = 6000
	// rdmaMsgLen is the RDMA_MSG header without chunks.
	rdmaMsgLen = 28
)

// nfsPlan gives the Calls and Replies of the crafted NFS traffic.
type nfsPlan struct {
	version string
	session [16]byte
	seq     uint32 // the next SEQUENCE's sequenceid
	cbSeq   uint32 // the next CB_SEQUENCE's
	gssSeq  uint32 // the last RPCSEC_GSS sequence number (chunks.go)
}

func newNFSPlan(version string) *nfsPlan {
	p := &nfsPlan{version: version, seq: 1, cbSeq: 1}
	copy(p.session[:], "\x6a\x3b\x5c\x00\x00\x00\x00\x01\x00\x00\x00\x03\x00\x00\x00\x00")
	return p
}

// v4 says whether a step is NFSv4.1: always or never when one version is
// chosen, as mix says in the mix.
func (p *nfsPlan) v4(mix bool) bool {
	switch p.version {
	case NFSv3:
		return false
	case NFSv4:
		return true
	}
	return mix
}

// v3 is the Call and Reply of the NFSv3 operation o, with AUTH_SYS.
func (p *nfsPlan) v3(o NFS3) (*Call, *Reply) { return NFS3Call(o, SysCred()), NFS3Reply(o) }

// compound is a COMPOUND of SEQUENCE, PUTFH and ops, on the plan's
// session with the next sequenceid.
func (p *nfsPlan) compound(ops ...NFS4Op) Compound {
	c := Compound{Minor: 1, Session: p.session, Seq: p.seq, Ops: append([]NFS4Op{{Op: OpSequence}, {Op: OpPutfh}}, ops...)}
	p.seq++
	return c
}

// v41 is the Call and Reply of a COMPOUND of SEQUENCE, PUTFH and ops,
// with AUTH_SYS.
func (p *nfsPlan) v41(ops ...NFS4Op) (*Call, *Reply) {
	c := p.compound(ops...)
	return CompoundCall(c, SysCred()), CompoundReply(c)
}

// null is a NULL Call with AUTH_NONE (a client's ping) and its Reply.
func (p *nfsPlan) null() (*Call, *Reply) {
	vers := uint32(3)
	if p.v4(false) {
		vers = 4
	}
	return &Call{Prog: ProgNFS, Vers: vers, Proc: NFS3Null}, &Reply{}
}

// read is a READ of count octets, its data in a write chunk when chunk;
// NFSv4.1 in the mix.
func (p *nfsPlan) read(count uint32, chunk bool) (*Call, *Reply) {
	if p.v4(true) {
		return p.v41(NFS4Op{Op: OpRead, Count: count, Chunk: chunk})
	}
	return p.v3(NFS3{Proc: NFS3Read, Count: count, Chunk: chunk})
}

// write is a WRITE of count octets, its data in a read chunk when chunk;
// NFSv3 in the mix, unless v4.
func (p *nfsPlan) write(count uint32, chunk, v4 bool) (*Call, *Reply) {
	if p.v4(v4) {
		return p.v41(NFS4Op{Op: OpWrite, Count: count, Stable: Unstable, Chunk: chunk})
	}
	return p.v3(NFS3{Proc: NFS3Write, Count: count, Stable: Unstable, Chunk: chunk})
}

// writeInline is a WRITE whose data goes inline, as long as makes its
// Send, after an RDMA_MSG header without chunks, size octets (the last
// 1 to 3 of them zeros when size is not a multiple of 4: see
// RPCMessage.Size); NFSv4.1 in the mix, unless v3.
func (p *nfsPlan) writeInline(size int, v3 bool) (*Call, *Reply) {
	v4 := p.v4(!v3)
	seq := p.seq
	call, _ := p.write(0, false, v4)
	p.seq = seq
	b, _ := call.Encode(0)
	return p.write(uint32(max(0, (size-rdmaMsgLen-len(b))&^(growStep-1))), false, v4)
}

// readdir is a directory listing whose Reply is long (its length set by
// the Reply's Size): NFSv3 READDIRPLUS in the mix, else READDIR in a
// COMPOUND.
func (p *nfsPlan) readdir() (*Call, *Reply) {
	if p.v4(false) {
		return p.v41(NFS4Op{Op: OpReaddir, Count: 16384, Entries: 80, EOF: true})
	}
	return p.v3(NFS3{Proc: NFS3Readdirplus, Count: 16384, Entries: 36, EOF: true})
}

// getattr is a GETATTR; NFSv3 in the mix.
func (p *nfsPlan) getattr() (*Call, *Reply) {
	if p.v4(false) {
		return p.v41(NFS4Op{Op: OpGetattr})
	}
	return p.v3(NFS3{Proc: NFS3Getattr})
}

// lookup is a LOOKUP of name; NFSv4.1 (with GETFH and GETATTR) in the
// mix.
func (p *nfsPlan) lookup(name string) (*Call, *Reply) {
	if p.v4(true) {
		return p.v41(NFS4Op{Op: OpLookup, Name: name}, NFS4Op{Op: OpGetfh}, NFS4Op{Op: OpGetattr})
	}
	return p.v3(NFS3{Proc: NFS3Lookup, Name: name})
}

// callback is the server's CB_COMPOUND (CB_SEQUENCE, CB_RECALL of a
// delegation) on the backchannel, and the client's Reply.
func (p *nfsPlan) callback() (*Call, *Reply) {
	c := CBCompound{Minor: 1, Ident: 1, Session: p.session, Seq: p.cbSeq,
		Ops: []CBOp{{Op: CBOpSequence}, {Op: CBOpRecall}}}
	p.cbSeq++
	cred := Cred{Flavor: AuthSys, Stamp: authSysStamp, Machine: "server.example.net", GIDs: []uint32{0}}
	return CBCompoundCall(c, cred), CBCompoundReply(c)
}

// procUnavail is a Call of a procedure NFSv3 does not have (22), and the
// Reply PROC_UNAVAIL.
func (p *nfsPlan) procUnavail() (*Call, *Reply) {
	return NFS3Call(NFS3{Proc: 22}, SysCred()), &Reply{AcceptStat: ProcUnavail}
}

// gssDenied is a GETATTR with an RPCSEC_GSS credential (integrity) whose
// context the server no longer knows, and the Reply MSG_DENIED,
// AUTH_ERROR, RPCSEC_GSS_CREDPROBLEM.
func (p *nfsPlan) gssDenied() (*Call, *Reply) {
	cred := GSSCred(GSSIntegrity, 7)
	call, _ := p.getattr()
	call.Cred = cred
	return call, &Reply{Denied: true, RejectStat: AuthError, AuthStat: GSSCredProblem}
}

// Position is the XDR Position of the read chunk that holds the data item
// c moved to a chunk (0: none).
func Position(c *Call) uint32 {
	_, pos := c.Encode(0)
	return pos
}
