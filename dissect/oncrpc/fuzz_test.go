package oncrpc

import (
	"errors"
	"testing"
)

// FuzzDecode gives any octets to every decoder: as a whole message, and
// after a valid COMPOUND Call or Reply header so that the walkers see them
// too. Nothing may panic; every error must be an *Error; a Message must
// hold together.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases() {
		f.Add(c.msg.b)
	}
	call, reply := compoundPair()
	f.Add(call)
	f.Add(reply)

	callHeader := nfs4Call().b
	cbHeader := callHead(xid, LinuxCallbackProgram, 1, 1).authNone().authNone().b
	replyHeader := acceptedHead(xid).b
	calls := []CallInfo{*nfs3Read, *nfs4Compound, *cbCompound, *gssInteg, *gssPriv, *mountMnt, *nlm4Lock, *unknown,
		{Known: true, Program: ProgNFS, Version: 2, Procedure: 1},
		{Known: true, Program: ProgNFSACL, Version: 3, Procedure: 1},
		{Known: true, Program: ProgNLM, Version: 1, Procedure: 20}}

	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		check := func(what string, err error) {
			t.Helper()
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("%s: error %v is not an *Error", what, err)
			}
			if m.NOps < 0 || m.NOps > MaxOps || (m.OpsEnd == OpsMaxOps && m.NOps != MaxOps) {
				t.Fatalf("%s: %d ops, %v", what, m.NOps, m.OpsEnd)
			}
			if m.NOps > 0 && !m.Compound {
				t.Fatalf("%s: ops without a COMPOUND", what)
			}
			if uint64(m.NOps) > uint64(m.OpsTotal) {
				t.Fatalf("%s: %d ops listed of %d", what, m.NOps, m.OpsTotal)
			}
		}
		opts := CallOptions{CallbackProgram: LinuxCallbackProgram, Backchannel: true, ReadPosition: uint32(len(b) / 2)}
		check("call", DecodeCall(b, CallOptions{}, &m))
		check("call with options", DecodeCall(b, opts, &m))
		check("COMPOUND call", DecodeCall(append(callHeader[:len(callHeader):len(callHeader)], b...), opts, &m))
		check("CB_COMPOUND call", DecodeCall(append(cbHeader[:len(cbHeader):len(cbHeader)], b...), opts, &m))
		for _, c := range calls {
			check("reply", DecodeReply(b, c, ReplyOptions{Written: 0x5}, &m))
			check("reply after a header", DecodeReply(append(replyHeader[:len(replyHeader):len(replyHeader)], b...), c, ReplyOptions{}, &m))
		}
		_, _, _ = Peek(b)
	})
}
