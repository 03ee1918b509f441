package craft

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// unhex reads hex words, one group of words a line, each line's comment
// after "//" left out.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "//")
		b.WriteString(strings.Join(strings.Fields(line), ""))
	}
	out, err := hex.DecodeString(b.String())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The layouts written out by hand from RFC 5531, RFC 1813 and RFC 8881
// for a few messages, against what the encoders write.
func TestEncodeExact(t *testing.T) {
	fh := []byte("fh-00001")
	session := [16]byte{0x5e, 0x55, 15: 0x01}
	seqPutRead := Compound{Minor: 1, Session: session, Seq: 9, Slot: 2,
		Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh, FH: fh}, {Op: OpRead, Offset: 0x10000, Count: 8192, Chunk: true}}}
	putStale := seqPutRead
	putStale.Ops = []NFS4Op{{Op: OpSequence}, {Op: OpPutfh, FH: fh, Status: NFSErrStale}, {Op: OpRead, Count: 8192}}
	const fattr3File = `
		00000001 000001a4 00000001 00000000 00000000 // NF3REG, mode 0644, nlink 1, uid 0, gid 0
		00000000 00100000 00000000 00100000          // size, used: 1 MiB
		00000000 00000000                            // rdev
		00000000 00006a3b 00000000 00001235          // fsid, fileid
		6a3b5c00 1dcd6500 6a3b5c00 1dcd6500 6a3b5c00 1dcd6500 // atime, mtime, ctime`
	tests := []struct {
		name string
		msg  RPC
		want string
	}{
		{"NFSv3 READ Call, AUTH_SYS", NFS3Call(NFS3{Proc: NFS3Read, FH: fh, Offset: 4096, Count: 8192}, SysCred()), `
			11223344 00000000 00000002 // xid, CALL, rpcvers 2
			000186a3 00000003 00000006 // NFS, version 3, READ
			00000001 0000002c          // AUTH_SYS, 44 octets
			6a3b5c00                   // stamp
			00000012 636c69656e742e6578616d706c652e6e65740000 // "client.example.net"
			00000000 00000000 00000001 00000000 // uid 0, gid 0, gids {0}
			00000000 00000000          // verifier AUTH_NONE
			00000008 66682d3030303031  // file
			00000000 00001000          // offset
			00002000                   // count`},
		{"NFSv3 READ Reply, data inline", NFS3Reply(NFS3{Proc: NFS3Read, Count: 5, EOF: true}), `
			11223344 00000001 00000000 // xid, REPLY, MSG_ACCEPTED
			00000000 00000000 00000000 // verifier AUTH_NONE, SUCCESS
			00000000                   // NFS3_OK
			00000001 ` + fattr3File + `
			00000005 00000001          // count, eof
			00000005 3c434a5158000000  // data, padded`},
		{"NFSv3 READ Reply, data in a write chunk", NFS3Reply(NFS3{Proc: NFS3Read, Count: 8192, Chunk: true}), `
			11223344 00000001 00000000 00000000 00000000 00000000 00000000
			00000001 ` + fattr3File + `
			00002000 00000000          // count, eof
			00002000                   // the data's length; its octets are in the chunk`},
		{"NFSv3 GETATTR Reply, NFS3ERR_STALE", NFS3Reply(NFS3{Proc: NFS3Getattr, Status: NFSErrStale}), `
			11223344 00000001 00000000 00000000 00000000 00000000
			00000046                   // NFS3ERR_STALE, and no attributes`},
		{"COMPOUND(SEQUENCE, PUTFH, READ) Call", CompoundCall(seqPutRead, Cred{}), `
			11223344 00000000 00000002 000186a3 00000004 00000001 // NFS 4, COMPOUND
			00000000 00000000 00000000 00000000 // AUTH_NONE credential and verifier
			00000000                   // tag ""
			00000001 00000003          // minorversion 1, 3 operations
			00000035 5e550000000000000000000000000001 // SEQUENCE: sessionid
			00000009 00000002 00000002 00000000 // sequenceid, slotid, highest_slotid, cachethis
			00000016 00000008 66682d3030303031 // PUTFH
			00000019 00000001 6a3b5c000000000100000007 // READ: stateid
			00000000 00010000 00002000 // offset, count`},
		{"COMPOUND(SEQUENCE, PUTFH, READ) Reply, data in a write chunk", CompoundReply(seqPutRead), `
			11223344 00000001 00000000 00000000 00000000 00000000
			00000000 00000000 00000003 // NFS4_OK, tag "", 3 results
			00000035 00000000 5e550000000000000000000000000001 // SEQUENCE, NFS4_OK, sessionid
			00000009 00000002 0000003f 0000003f 00000000 // sequenceid, slotid, highest, target, status_flags
			00000016 00000000          // PUTFH, NFS4_OK
			00000019 00000000 00000000 00002000 // READ, NFS4_OK, eof, the data's length`},
		{"COMPOUND Reply that stops at PUTFH, NFS4ERR_STALE", CompoundReply(putStale), `
			11223344 00000001 00000000 00000000 00000000 00000000
			00000046 00000000 00000002 // NFS4ERR_STALE, tag "", 2 results
			00000035 00000000 5e550000000000000000000000000001 00000009 00000002 0000003f 0000003f 00000000
			00000016 00000046          // PUTFH, NFS4ERR_STALE`},
		{"MSG_DENIED AUTH_ERROR RPCSEC_GSS_CREDPROBLEM", &Reply{Denied: true, RejectStat: AuthError, AuthStat: GSSCredProblem}, `
			11223344 00000001 00000001 00000001 0000000d`},
		{"MSG_DENIED RPC_MISMATCH", &Reply{Denied: true, RejectStat: RPCMismatch, Low: 2, High: 2}, `
			11223344 00000001 00000001 00000000 00000002 00000002`},
		{"PROG_MISMATCH", &Reply{AcceptStat: ProgMismatch, Low: 2, High: 4}, `
			11223344 00000001 00000000 00000000 00000000 00000002 00000002 00000004`},
		{"CB_COMPOUND(CB_SEQUENCE, CB_RECALL) Call", CBCompoundCall(CBCompound{Minor: 1, Ident: 7, Session: session, Seq: 3,
			Ops: []CBOp{{Op: CBOpSequence}, {Op: CBOpRecall, FH: fh}}}, Cred{}), `
			11223344 00000000 00000002 40000000 00000001 00000001 // callback program, version 1, CB_COMPOUND
			00000000 00000000 00000000 00000000
			00000000 00000001 00000007 00000002 // tag "", minorversion 1, callback_ident 7, 2 operations
			0000000b 5e550000000000000000000000000001 00000003 00000000 00000000 00000000 00000000 // CB_SEQUENCE, no referring calls
			00000004 00000001 6a3b5c000000000100000007 00000000 00000008 66682d3030303031 // CB_RECALL: stateid, truncate, fh`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var x XDR
			tc.msg.AppendTo(&x, 0x11223344)
			if want := unhex(t, tc.want); !bytes.Equal(x.B, want) {
				t.Errorf("got\n%x\nwant\n%x", x.B, want)
			}
		})
	}
}

// A data item in a chunk keeps its length inline: the read chunk's
// Position is where its octets would start, the end of the Call.
func TestEncodeReducedWrite(t *testing.T) {
	for _, call := range []*Call{
		NFS3Call(NFS3{Proc: NFS3Write, Count: 4096, Chunk: true}, SysCred()),
		CompoundCall(Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh}, {Op: OpWrite, Count: 4096, Chunk: true}}}, SysCred()),
	} {
		b, pos := call.Encode(1)
		if pos == 0 || int(pos) != len(b) || binary.BigEndian.Uint32(b[pos-4:]) != 4096 {
			t.Errorf("Position %d in a Call of %d octets ending %x", pos, len(b), b[len(b)-8:])
		}
		if got := Position(call); got != pos {
			t.Errorf("Position() %d, Encode %d", got, pos)
		}
	}
	// Inline, the data is there, padded.
	b, pos := NFS3Call(NFS3{Proc: NFS3Write, Count: 5}, SysCred()).Encode(1)
	if pos != 0 || !bytes.HasSuffix(b, []byte{0, 0, 0, 5, 0x3c, 0x43, 0x4a, 0x51, 0x58, 0, 0, 0}) {
		t.Errorf("inline WRITE: Position %d, ends %x", pos, b[len(b)-12:])
	}
}

// RPCSEC_GSS: the credential, the checksum verifier, and the arguments
// wrapped for integrity (databody_integ, then the checksum) or privacy.
func TestEncodeGSS(t *testing.T) {
	args := NFS3{Proc: NFS3Getattr, FH: []byte("fh-00001")}
	b, _ := NFS3Call(args, GSSCred(GSSIntegrity, 7)).Encode(1)
	want := unhex(t, `
		00000001 00000000 00000002 000186a3 00000003 00000001
		00000006 00000024          // RPCSEC_GSS, 36 octets
		00000001 00000000 00000007 00000002 // version 1, RPCSEC_GSS_DATA, seq_num 7, integrity
		00000010 9a4e01000000002a6b65726200000001 // the context handle
		00000006 0000001c 040400ffffffffff 0000000000000007 c5ccd3dae1e8eff6fd040b12 // a MIC token
		00000010 00000007 00000008 66682d3030303031 // databody_integ: seq_num, the arguments
		0000001c 040400ffffffffff 0000000000000007 c5ccd3dae1e8eff6fd040b12 // checksum`)
	if !bytes.Equal(b, want) {
		t.Errorf("integrity\n%x\nwant\n%x", b, want)
	}
	// The server's checksums say it sent them (SentByAcceptor).
	r := NFS3Reply(NFS3{Proc: NFS3Getattr, Status: NFSErrStale})
	r.Cred = GSSCred(GSSIntegrity, 7)
	if b := r.Encode(1); !bytes.Equal(b[12:24], unhex(t, "00000006 0000001c 040401ff")) {
		t.Errorf("the Reply's verifier %x", b[12:24])
	}
	// Privacy hides the arguments: a Wrap token as long as they are and
	// more.
	b, _ = NFS3Call(args, GSSCred(GSSPrivacy, 8)).Encode(1)
	body := b[24+8+36+8+28:]
	if n := binary.BigEndian.Uint32(body); int(n) != len(body)-4 || n < 16+4+12 || !bytes.Equal(body[4:6], []byte{5, 4}) ||
		bytes.Contains(body, []byte("fh-00001")) {
		t.Errorf("privacy body %x", body)
	}
	// A data item cannot go in a chunk inside a wrapping.
	defer func() {
		if recover() == nil {
			t.Error("a WRITE in a read chunk wrapped for integrity was encoded")
		}
	}()
	NFS3Call(NFS3{Proc: NFS3Write, Count: 4096, Chunk: true}, GSSCred(GSSIntegrity, 9)).Encode(1)
}

// RPCMessage.Size grows the first data item inline, in whole XDR units,
// and pads the rest with zeros after the complete message.
func TestRPCMessageSize(t *testing.T) {
	call := NFS3Call(NFS3{Proc: NFS3Write, Count: 100}, SysCred())
	for _, size := range []int{3001, 3000, 4100} {
		b := (&RPCMessage{XID: 1, Credits: 32, RPC: call, Size: size}).Bytes()
		if len(b) != size {
			t.Fatalf("Size %d: %d octets", size, len(b))
		}
		var m oncrpc.Message
		if err := oncrpc.DecodeCall(b[rdmaMsgLen:], oncrpc.CallOptions{}, &m); err != nil || m.Procedure != NFS3Write {
			t.Errorf("Size %d: %v %+v", size, err, m)
		}
		// The WRITE's count and data length both say what is there.
		rpc := b[rdmaMsgLen:]
		count := binary.BigEndian.Uint32(rpc[m.BodyOffset+4+32+8:])
		end := m.BodyOffset + 4 + 32 + 8 + 4 + 4 + 4 + int(count)
		if binary.BigEndian.Uint32(rpc[m.BodyOffset+4+32+16:]) != count || len(rpc)-end != size%4 ||
			!bytes.Equal(rpc[end:], make([]byte, size%4)) {
			t.Errorf("Size %d: count %d, message ends at %d of %d", size, count, end, len(rpc))
		}
	}
	// Nothing to grow: zeros after the NULL Call.
	b := (&RPCMessage{XID: 1, Size: 100}).Bytes()
	if len(b) != 100 || !bytes.Equal(b[rdmaMsgLen+40:], make([]byte, 100-rdmaMsgLen-40)) {
		t.Errorf("NULL Call padded: %x", b)
	}
	// The long Reply of the NFS exchange is 6000 octets in every version.
	for _, v := range NFSVersions {
		_, reply := newNFSPlan(v).readdir()
		if b, _ := encodeSized(reply, 1, longReplySize); len(b) != longReplySize {
			t.Errorf("NFS version %q: a long Reply of %d octets", v, len(b))
		}
	}
	// A broken message keeps its own XID.
	other := uint32(0xbad0bad0)
	b = (&RPCMessage{XID: 1, RPC: call, RPCXID: &other}).Bytes()
	if binary.BigEndian.Uint32(b) != 1 || binary.BigEndian.Uint32(b[rdmaMsgLen:]) != other {
		t.Errorf("RPCXID: %x", b[:rdmaMsgLen+4])
	}
}

// The encoders against dissect/oncrpc, written separately from them: each
// Call decodes to its program, version, procedure, credential and
// operations; each Reply, decoded with its Call's CallInfo, to its status
// and operations.
func TestEncodeDecodes(t *testing.T) {
	stale := []NFS4Op{{Op: OpSequence}, {Op: OpPutfh, Status: NFSErrStale}, {Op: OpRead, Count: 4096}}
	all4 := []NFS4Op{{Op: OpSequence}, {Op: OpPutrootfh}, {Op: OpLookup, Name: "export"}, {Op: OpGetfh}, {Op: OpAccess, Access: 0x1f},
		{Op: OpOpen, Name: "a.txt"}, {Op: OpRead, Count: 100, EOF: true}, {Op: OpWrite, Count: 33, Stable: FileSync},
		{Op: OpCommit}, {Op: OpGetattr}, {Op: OpClose}, {Op: OpReaddir, Entries: 3, EOF: true}}
	tests := []struct {
		name           string
		call           *Call
		reply          *Reply
		readChunk      bool   // the Call's data is in a read chunk
		written        uint32 // the Reply's data is in write chunk 0
		ops            []uint32
		status         uint32
		kind           oncrpc.StatusKind
		replyOps       []uint32
		opStatus       uint32
		gss            oncrpc.GSSService
		encrypted      bool
		accept, reject uint32
		denied         bool
	}{
		{name: "NFSv3 NULL", call: &Call{Prog: ProgNFS, Vers: 3}, reply: &Reply{}},
		{name: "NFSv3 GETATTR", call: NFS3Call(NFS3{Proc: NFS3Getattr}, SysCred()), reply: NFS3Reply(NFS3{Proc: NFS3Getattr}),
			kind: oncrpc.StatusNFS3},
		{name: "NFSv3 LOOKUP NOENT", call: NFS3Call(NFS3{Proc: NFS3Lookup, Name: "x"}, SysCred()),
			reply: NFS3Reply(NFS3{Proc: NFS3Lookup, Status: NFSErrNoent}), status: NFSErrNoent, kind: oncrpc.StatusNFS3},
		{name: "NFSv3 READ JUKEBOX", call: NFS3Call(NFS3{Proc: NFS3Read, Count: 10}, SysCred()),
			reply: NFS3Reply(NFS3{Proc: NFS3Read, Status: NFSErrJukebox}), status: NFSErrJukebox, kind: oncrpc.StatusNFS3},
		{name: "NFSv3 READ into a write chunk", call: NFS3Call(NFS3{Proc: NFS3Read, Count: 8192}, SysCred()),
			reply: NFS3Reply(NFS3{Proc: NFS3Read, Count: 8192, Chunk: true}), written: 1, kind: oncrpc.StatusNFS3},
		{name: "NFSv3 WRITE from a read chunk", call: NFS3Call(NFS3{Proc: NFS3Write, Count: 4096, Chunk: true}, SysCred()), readChunk: true,
			reply: NFS3Reply(NFS3{Proc: NFS3Write, Count: 4096}), kind: oncrpc.StatusNFS3},
		{name: "NFSv3 READDIRPLUS", call: NFS3Call(NFS3{Proc: NFS3Readdirplus, Count: 8192}, SysCred()),
			reply: NFS3Reply(NFS3{Proc: NFS3Readdirplus, Entries: 20}), kind: oncrpc.StatusNFS3},
		{name: "NFSv3 FSINFO", call: NFS3Call(NFS3{Proc: NFS3Fsinfo}, SysCred()), reply: NFS3Reply(NFS3{Proc: NFS3Fsinfo}), kind: oncrpc.StatusNFS3},
		{name: "NFSv3 ACCESS", call: NFS3Call(NFS3{Proc: NFS3Access, Access: 0x1f}, SysCred()),
			reply: NFS3Reply(NFS3{Proc: NFS3Access, Access: 0x1f}), kind: oncrpc.StatusNFS3},
		{name: "NFSv3 COMMIT", call: NFS3Call(NFS3{Proc: NFS3Commit}, SysCred()), reply: NFS3Reply(NFS3{Proc: NFS3Commit}), kind: oncrpc.StatusNFS3},
		{name: "NFSv3 READDIR", call: NFS3Call(NFS3{Proc: NFS3Readdir, Count: 4096}, SysCred()),
			reply: NFS3Reply(NFS3{Proc: NFS3Readdir, Entries: 5, EOF: true}), kind: oncrpc.StatusNFS3},
		{name: "COMPOUND of every operation", call: CompoundCall(Compound{Minor: 1, Ops: all4}, SysCred()),
			reply: CompoundReply(Compound{Minor: 1, Ops: all4}), ops: opcodes(all4), kind: oncrpc.StatusNFS4, replyOps: opcodes(all4)},
		{name: "COMPOUND READ into a write chunk", call: CompoundCall(Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh}, {Op: OpRead, Count: 8192}}}, SysCred()),
			reply:   CompoundReply(Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh}, {Op: OpRead, Count: 8192, Chunk: true}, {Op: OpGetattr}}}),
			written: 1, ops: []uint32{OpSequence, OpPutfh, OpRead}, kind: oncrpc.StatusNFS4, replyOps: []uint32{OpSequence, OpPutfh, OpRead, OpGetattr}},
		{name: "COMPOUND WRITE from a read chunk, then GETATTR", readChunk: true,
			call:  CompoundCall(Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh}, {Op: OpWrite, Count: 4096, Chunk: true}, {Op: OpGetattr}}}, SysCred()),
			reply: CompoundReply(Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh}, {Op: OpWrite, Count: 4096}, {Op: OpGetattr}}}),
			ops:   []uint32{OpSequence, OpPutfh, OpWrite, OpGetattr}, kind: oncrpc.StatusNFS4, replyOps: []uint32{OpSequence, OpPutfh, OpWrite, OpGetattr}},
		{name: "COMPOUND PUTFH NFS4ERR_STALE", call: CompoundCall(Compound{Minor: 1, Ops: stale}, SysCred()), reply: CompoundReply(Compound{Minor: 1, Ops: stale}),
			ops: opcodes(stale), status: NFSErrStale, kind: oncrpc.StatusNFS4, replyOps: []uint32{OpSequence, OpPutfh}, opStatus: NFSErrStale},
		{name: "CB_COMPOUND", call: CBCompoundCall(CBCompound{Minor: 1, Ops: []CBOp{{Op: CBOpSequence}, {Op: CBOpRecall}}}, SysCred()),
			reply: CBCompoundReply(CBCompound{Minor: 1, Ops: []CBOp{{Op: CBOpSequence}, {Op: CBOpRecall}}}),
			ops:   []uint32{CBOpSequence, CBOpRecall}, kind: oncrpc.StatusNFS4, replyOps: []uint32{CBOpSequence, CBOpRecall}},
		{name: "CB_COMPOUND CB_RECALL fails", call: CBCompoundCall(CBCompound{Minor: 1, Ops: []CBOp{{Op: CBOpSequence}, {Op: CBOpRecall}}}, Cred{}),
			reply: CBCompoundReply(CBCompound{Minor: 1, Ops: []CBOp{{Op: CBOpSequence}, {Op: CBOpRecall, Status: NFSErrJukebox}}}),
			ops:   []uint32{CBOpSequence, CBOpRecall}, status: NFSErrJukebox, kind: oncrpc.StatusNFS4, replyOps: []uint32{CBOpSequence, CBOpRecall}, opStatus: NFSErrJukebox},
		{name: "RPCSEC_GSS none", call: NFS3Call(NFS3{Proc: NFS3Getattr}, GSSCred(GSSNone, 1)), reply: gssReply(NFS3Reply(NFS3{Proc: NFS3Getattr}), GSSNone),
			kind: oncrpc.StatusNFS3, gss: oncrpc.GSSNone},
		{name: "RPCSEC_GSS integrity", call: CompoundCall(Compound{Minor: 1, Ops: stale}, GSSCred(GSSIntegrity, 2)),
			reply: gssReply(CompoundReply(Compound{Minor: 1, Ops: stale}), GSSIntegrity), ops: opcodes(stale), status: NFSErrStale,
			kind: oncrpc.StatusNFS4, replyOps: []uint32{OpSequence, OpPutfh}, opStatus: NFSErrStale, gss: oncrpc.GSSIntegrity},
		{name: "RPCSEC_GSS privacy", call: NFS3Call(NFS3{Proc: NFS3Getattr}, GSSCred(GSSPrivacy, 3)),
			reply: gssReply(NFS3Reply(NFS3{Proc: NFS3Getattr}), GSSPrivacy), gss: oncrpc.GSSPrivacy, encrypted: true},
		{name: "PROC_UNAVAIL", call: NFS3Call(NFS3{Proc: 22}, SysCred()), reply: &Reply{AcceptStat: ProcUnavail}, accept: ProcUnavail},
		{name: "PROG_UNAVAIL", call: &Call{Prog: 100099, Vers: 1, Proc: 1}, reply: &Reply{AcceptStat: ProgUnavail}, accept: ProgUnavail},
		{name: "GARBAGE_ARGS", call: NFS3Call(NFS3{Proc: NFS3Getattr}, SysCred()), reply: &Reply{AcceptStat: GarbageArgs}, accept: GarbageArgs},
		{name: "SYSTEM_ERR", call: NFS3Call(NFS3{Proc: NFS3Getattr}, SysCred()), reply: &Reply{AcceptStat: SystemErr}, accept: SystemErr},
		{name: "PROG_MISMATCH", call: &Call{Prog: ProgNFS, Vers: 5}, reply: &Reply{AcceptStat: ProgMismatch, Low: 3, High: 4}, accept: ProgMismatch},
		{name: "RPC_MISMATCH", call: &Call{Prog: ProgNFS, Vers: 3}, reply: &Reply{Denied: true, RejectStat: RPCMismatch, Low: 2, High: 2},
			denied: true, reject: RPCMismatch},
		{name: "AUTH_ERROR", call: NFS3Call(NFS3{Proc: NFS3Getattr}, GSSCred(GSSIntegrity, 4)), gss: oncrpc.GSSIntegrity,
			reply: &Reply{Denied: true, RejectStat: AuthError, AuthStat: GSSCredProblem}, denied: true, reject: AuthError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, pos := tc.call.Encode(0x01020304)
			if tc.readChunk != (pos != 0) {
				t.Fatalf("Position %d", pos)
			}
			var c oncrpc.Message
			err := oncrpc.DecodeCall(b, oncrpc.CallOptions{CallbackProgram: oncrpc.LinuxCallbackProgram, ReadPosition: pos}, &c)
			if err != nil || c.XID != 0x01020304 || c.Program != tc.call.Prog || c.Version != tc.call.Vers || c.Procedure != tc.call.Proc ||
				c.AuthFlavor != tc.call.Cred.Flavor || c.GSSService != tc.gss || c.Encrypted != tc.encrypted {
				t.Fatalf("Call: %v %+v", err, c)
			}
			if got := c.Ops[:c.NOps]; !equalOps(got, tc.ops) || tc.ops != nil && c.OpsEnd != oncrpc.OpsComplete {
				t.Errorf("Call's operations %v (%s), want %v", got, c.OpsEnd, tc.ops)
			}
			if tc.ops != nil && c.OpsTotal != uint32(len(tc.ops)) {
				t.Errorf("Call's count %d", c.OpsTotal)
			}
			tc.reply.Cred = tc.call.Cred
			var r oncrpc.Message
			err = oncrpc.DecodeReply(tc.reply.Encode(0x01020304), c.CallInfo(), oncrpc.ReplyOptions{Written: tc.written}, &r)
			if err != nil || r.XID != 0x01020304 || r.Encrypted != tc.encrypted || r.AcceptStat != tc.accept || r.RejectStat != tc.reject ||
				(r.ReplyStat == oncrpc.MsgDenied) != tc.denied || r.Status != tc.status || r.StatusKind != tc.kind || r.OpStatus != tc.opStatus {
				t.Fatalf("Reply: %v %+v", err, r)
			}
			if got := r.Ops[:r.NOps]; !equalOps(got, tc.replyOps) || tc.replyOps != nil && r.OpsEnd != oncrpc.OpsComplete {
				t.Errorf("Reply's operations %v (%s), want %v", got, r.OpsEnd, tc.replyOps)
			}
			switch {
			case tc.reply.AcceptStat == ProgMismatch, tc.reply.Denied && tc.reply.RejectStat == RPCMismatch:
				if r.MismatchLow != tc.reply.Low || r.MismatchHigh != tc.reply.High {
					t.Errorf("mismatch %d-%d", r.MismatchLow, r.MismatchHigh)
				}
			case tc.reply.Denied:
				if r.AuthStat != tc.reply.AuthStat {
					t.Errorf("auth_stat %d", r.AuthStat)
				}
			}
		})
	}
}

func gssReply(r *Reply, service uint32) *Reply {
	r.Cred = GSSCred(service, 1)
	return r
}

func opcodes(ops []NFS4Op) []uint32 {
	var out []uint32
	for _, o := range ops {
		out = append(out, o.Op)
	}
	return out
}

func equalOps(a, b []uint32) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return bytes.Equal(u32s(a), u32s(b))
}

func u32s(v []uint32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.BigEndian.AppendUint32(b, x)
	}
	return b
}

// The workloads' templates: each Send has its two XIDs, its chunk's
// handle (in the Call and, for a READ, in the Reply) and, in NFSv4.1, its
// sequenceid once each way; patched, it decodes with the values given.
func TestWorkloadTemplates(t *testing.T) {
	ops := newWorkloadOps(32, 65536, 0x7f0000000000)
	check := func(name string, tp *rpcTemplate, handles, seqs int, reply bool) {
		t.Helper()
		if len(tp.xids) != 2 || len(tp.handles) != handles || len(tp.sq) != seqs {
			t.Errorf("%s: XIDs at %v, handles at %v, sequenceids at %v", name, tp.xids, tp.handles, tp.sq)
		}
		b := tp.patch(0x0a0b0c0d, 0x00aa00bb, 77)
		var h layers.RPCRDMAHeader
		if err := h.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil || h.XID != 0x0a0b0c0d {
			t.Fatalf("%s: %v %+v", name, err, h)
		}
		for _, s := range h.ReadList {
			if s.Handle != 0x00aa00bb {
				t.Errorf("%s: read segment %+v", name, s)
			}
		}
		for _, ch := range h.WriteList {
			if ch[0].Handle != 0x00aa00bb {
				t.Errorf("%s: write chunk %+v", name, ch)
			}
		}
		if xid, typ, err := oncrpc.Peek(h.Payload); err != nil || xid != 0x0a0b0c0d || (typ == oncrpc.Reply) != reply {
			t.Errorf("%s: RPC XID %#x, type %d, %v", name, xid, typ, err)
		}
	}
	for v := range 2 {
		check("read call", &ops.read[v].call, 1, v, false)
		check("read reply", &ops.read[v].reply, 1, v, true)
		check("write call", &ops.write[v].call, 1, v, false)
		check("write reply", &ops.write[v].reply, 0, v, true)
		for i := range ops.small[v] {
			check("small call", &ops.small[v][i].call, 0, v, false)
			check("small reply", &ops.small[v][i].reply, 0, v, true)
		}
	}
}
