package oncrpc

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

// Hostile input: counts of 2^32-1, lengths past the end, and every prefix
// of every valid message. The decoders must not panic, must not work for
// long, and must say what they could not read.

func TestHostileCounts(t *testing.T) {
	const huge = ^uint32(0)
	cases := []struct {
		name string
		msg  []byte
		call *CallInfo
		copt CallOptions
		err  error
		nops int
		end  OpsEnd
	}{
		{
			name: "op count 2^32-1, three operations",
			msg:  nfs4Call().str("").u32(1, huge).cat(seqArgs(), putfhArgs(), readArgs()).b,
			err:  ErrTruncated, nops: 3, end: OpsTruncated,
		},
		{
			name: "op count 2^32-1, operations past MaxOps",
			msg: func() []byte {
				e := nfs4Call().str("").u32(0, huge)
				for range MaxOps + 1 {
					e.u32(24) // PUTROOTFH
				}
				return e.b
			}(),
			nops: MaxOps, end: OpsMaxOps,
		},
		{
			name: "result count 2^32-1",
			msg:  acceptedHead(xid).u32(NFS4OK).str("").u32(huge).cat(seqRes(), putfhRes(NFS4OK)).b,
			call: nfs4Compound,
			err:  ErrTruncated, nops: 2, end: OpsTruncated,
		},
		{
			name: "TEST_STATEID with 2^32-1 stateids",
			msg:  nfs4Call().cat(compoundArgs(1, seqArgs(), newEnc().u32(55, huge).stateid())).b,
			err:  ErrTruncated, nops: 2, end: OpsTruncated,
		},
		{
			name: "GETATTR with a bitmap of 2^32-1 words",
			msg:  nfs4Call().cat(compoundArgs(1, putfhArgs(), newEnc().u32(OpGetattr, huge, 1, 2))).b,
			err:  ErrTruncated, nops: 2, end: OpsTruncated,
		},
		{
			name: "CB_SEQUENCE with 2^32-1 referring call lists",
			msg: callHead(xid, LinuxCallbackProgram, 1, 1).authNone().authNone().
				cat(cbCompoundArgs(1, 1, newEnc().u32(CBOpSequence).session().u32(1, 0, 0, 0).u32(huge).session().u32(0))).b,
			copt: CallOptions{CallbackProgram: LinuxCallbackProgram},
			err:  ErrTruncated, nops: 1, end: OpsTruncated,
		},
		{
			name: "READ_PLUS with 2^32-1 contents",
			msg:  acceptedHead(xid).cat(compoundRes(NFS4OK, putfhRes(NFS4OK), newEnc().u32(68, NFS4OK, 1, huge, 1).u64(0).u64(4096))).b,
			call: nfs4Compound,
			err:  ErrTruncated, nops: 2, end: OpsTruncated,
		},
		{
			name: "SECINFO with 2^32-1 flavors",
			msg:  acceptedHead(xid).cat(compoundRes(NFS4OK, putfhRes(NFS4OK), newEnc().u32(33, NFS4OK, huge, 1, 1))).b,
			call: nfs4Compound,
			err:  ErrTruncated, nops: 2, end: OpsTruncated,
		},
		{
			name: "READDIR entries without end",
			msg: func() []byte {
				e := newEnc().u32(26, NFS4OK).verf()
				for range 1000 {
					e.u32(1).u64(1).str("name").fattr()
				}
				return acceptedHead(xid).cat(compoundRes(NFS4OK, putfhRes(NFS4OK), e)).b
			}(),
			call: nfs4Compound,
			err:  ErrTruncated, nops: 2, end: OpsTruncated,
		},
		{
			name: "a tag of 2^32-1 octets",
			msg:  nfs4Call().u32(huge, 1, 2, 3).b,
			err:  ErrTruncated, end: OpsTruncated,
		},
		{
			name: "a LOOKUP name past the end",
			msg:  nfs4Call().cat(compoundArgs(0, putfhArgs(), newEnc().u32(15, 0xfffffff0).str("x"))).b,
			err:  ErrTruncated, nops: 2, end: OpsTruncated,
		},
		{
			name: "a file handle longer than NFS4_FHSIZE",
			msg:  nfs4Call().cat(compoundArgs(0, newEnc().u32(OpPutfh, huge), getattrArgs())).b,
			nops: 1, end: OpsBadLayout,
		},
		{
			name: "an RPCSEC_GSS body of 2^32-1 octets",
			msg: callHead(xid, ProgNFS, 4, 1).gssCred(GSSData, 1, GSSIntegrity).gssVerf().
				u32(huge, 1).cat(compoundArgs(1, seqArgs())).b,
			err: ErrTruncated, nops: 1, end: OpsComplete, // the list is whole, its body is not
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m Message
			var err error
			start := time.Now()
			if c.call == nil {
				err = DecodeCall(c.msg, c.copt, &m)
			} else {
				err = DecodeReply(c.msg, *c.call, ReplyOptions{}, &m)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
			if err != c.err || m.NOps != c.nops || m.OpsEnd != c.end {
				t.Errorf("error %v, %d ops, %v; want %v, %d ops, %v", err, m.NOps, m.OpsEnd, c.err, c.nops, c.end)
			}
		})
	}
}

// TestHostileLengths gives lengths past the end to the header's opaques.
func TestHostileLengths(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  []byte
		err  error
	}{
		{"a credential of 2^32-1 octets", callHead(xid, ProgNFS, 3, 0).u32(AuthSys, ^uint32(0)).b, ErrAuthLength},
		{"a credential past the end", callHead(xid, ProgNFS, 3, 0).u32(AuthSys, 400).fixed(100).b, ErrTruncated},
		{"a verifier past the end", callHead(xid, ProgNFS, 3, 0).authNone().u32(AuthNone, 8).b, ErrTruncated},
		{"a GSS handle past the credential", callHead(xid, ProgNFS, 3, 0).u32(AuthGSS).
			opaque(newEnc().u32(1, 0, 1, 1, 0x100).b).authNone().b, ErrGSSCred},
	} {
		var m Message
		if err := DecodeCall(c.msg, CallOptions{}, &m); err != c.err {
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
		}
	}
}

// TestPrefixes decodes every prefix of every valid message of TestDecode:
// no panic, and an error that is ErrTruncated or none; an operation list
// cut short says OpsTruncated and lists a prefix of the whole one.
func TestPrefixes(t *testing.T) {
	for _, c := range decodeCases() {
		if c.err != nil {
			continue
		}
		var full Message
		if err := c.decode(c.msg.b, &full); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for n := range len(c.msg.b) {
			var m Message
			err := c.decode(c.msg.b[:n], &m)
			if err != nil && err != ErrTruncated {
				t.Errorf("%s, %d octets: error %v", c.name, n, err)
				continue
			}
			if m.NOps > full.NOps || !slices.Equal(m.Ops[:m.NOps], full.Ops[:m.NOps]) {
				t.Errorf("%s, %d octets: ops %v, the whole message's %v", c.name, n, m.Ops[:m.NOps], full.Ops[:full.NOps])
			}
			switch {
			case err == ErrTruncated && m.Compound && m.OpsEnd != OpsTruncated:
				t.Errorf("%s, %d octets: truncated, but the list ends %v", c.name, n, m.OpsEnd)
			case err == nil && full.Compound && (m.NOps != full.NOps || m.OpsEnd != full.OpsEnd):
				t.Errorf("%s, %d octets: no error, %d ops %v; the whole message %d ops %v",
					c.name, n, m.NOps, m.OpsEnd, full.NOps, full.OpsEnd)
			}
		}
	}
}

// TestGarbage feeds large runs of one octet value and of a pattern: no
// panic, an Error, work bounded by the length.
func TestGarbage(t *testing.T) {
	calls := []CallInfo{*nfs3Read, *nfs4Compound, *cbCompound, *gssInteg, *mountMnt, *nlm4Lock}
	for _, fill := range []byte{0x00, 0x01, 0x7f, 0xff} {
		for _, head := range [][]byte{nil, nfs4Call().b, acceptedHead(xid).b} {
			b := append(append([]byte(nil), head...), bytes.Repeat([]byte{fill}, 1<<16)...)
			var m Message
			check := func(err error) {
				var e *Error
				if err != nil && !errors.As(err, &e) {
					t.Errorf("fill %#x: error %v is not an *Error", fill, err)
				}
			}
			check(DecodeCall(b, CallOptions{CallbackProgram: LinuxCallbackProgram, Backchannel: true}, &m))
			for _, c := range calls {
				check(DecodeReply(b, c, ReplyOptions{Written: ^uint32(0)}, &m))
			}
		}
	}
}
