package oncrpc

import "testing"

// compoundPair is a COMPOUND(SEQUENCE, PUTFH, READ) Call and its Reply,
// as an NFSv4.1 client and server send them.
func compoundPair() (call, reply []byte) {
	call = nfs4Call().cat(compoundArgs(1, seqArgs(), putfhArgs(), readArgs())).b
	reply = acceptedHead(xid).cat(compoundRes(NFS4OK, seqRes(), putfhRes(NFS4OK), readRes(octets(512)))).b
	return call, reply
}

// TestNoAllocs checks that decoding allocates nothing, whatever the
// message: a COMPOUND Call and Reply, RPCSEC_GSS integrity, an error.
func TestNoAllocs(t *testing.T) {
	call, reply := compoundPair()
	integ := callHead(xid, ProgNFS, 4, 1).gssCred(GSSData, 77, GSSIntegrity).gssVerf().
		integ(77, compoundArgs(1, seqArgs(), putfhArgs(), getattrArgs())).b
	var m Message
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"COMPOUND call", func() { _ = DecodeCall(call, CallOptions{}, &m) }},
		{"COMPOUND reply", func() { _ = DecodeReply(reply, *nfs4Compound, ReplyOptions{}, &m) }},
		{"RPCSEC_GSS integrity call", func() { _ = DecodeCall(integ, CallOptions{}, &m) }},
		{"truncated call", func() { _ = DecodeCall(call[:len(call)-3], CallOptions{}, &m) }},
		{"names", func() { sink, sink, sink = m.StatusName(), m.OpName(0), m.ProcName() }},
	} {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocations", c.name, n)
		}
	}
}

// sink keeps the names TestNoAllocs asks for.
var sink string

// BenchmarkDecodeCompound decodes a COMPOUND(SEQUENCE, PUTFH, READ) Call
// and its Reply.
func BenchmarkDecodeCompound(b *testing.B) {
	call, reply := compoundPair()
	b.ReportAllocs()
	b.SetBytes(int64(len(call) + len(reply)))
	var m Message
	for b.Loop() {
		if err := DecodeCall(call, CallOptions{}, &m); err != nil {
			b.Fatal(err)
		}
		if err := DecodeReply(reply, *nfs4Compound, ReplyOptions{}, &m); err != nil {
			b.Fatal(err)
		}
	}
}
