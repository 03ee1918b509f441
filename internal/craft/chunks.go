package craft

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Long messages and chunks on the InfiniBand family (RFC 8166, section
// 3.5): a Long Call, whose RPC message the responder pulls from a
// position-zero read chunk with RDMA Reads; a Long Reply, which the
// responder RDMA-Writes into the requester's reply chunk before its
// RDMA_NOMSG; and, on demand, each way an RDMA operation or a Reply can
// break the chunks its Call offered (chunk-violation).

// ChunkFindings are the finding codes of long messages and chunks that
// NFSTraffic can produce on demand (InfiniBand family only).
var ChunkFindings = []string{"chunk-violation", "inline-threshold-too-small"}

// ChunkViolations are the kinds of chunk violation NFSTraffic can produce
// (Traffic.Violations), each once:
//   - write-past-end: an RDMA Write one octet past its write chunk segment;
//   - write-unknown-handle: an RDMA Write to a handle no Call advertised;
//   - read-outside: an RDMA Read Request that runs past its read chunk
//     segment;
//   - reply-claims-more: a Reply whose write list claims more octets than
//     its Call offered;
//   - reply-unknown-handle: a Reply whose write list names a handle its
//     Call did not offer.
var ChunkViolations = []string{"write-past-end", "write-unknown-handle", "read-outside", "reply-claims-more", "reply-unknown-handle"}

// longSegment is the most octets a crafted chunk segment of a long
// message holds: a page, as Linux registers them.
const longSegment = 4096

// The sizes of the long messages, beyond the inline threshold of their
// direction.
const (
	longWriteOver  = 2000 // an RPCSEC_GSS WRITE: two segments at 4096
	longLookupOver = 200  // an RPCSEC_GSS LOOKUP path: just over
	longListOver   = 3000 // an NFSv4.1 READDIR Reply
)

// checkChunks refuses violation kinds that are not ChunkViolations.
func (t *Traffic) checkChunks() error {
	for _, v := range t.Violations {
		if !slices.Contains(ChunkViolations, v) {
			return fmt.Errorf("craft: no chunk violation %q (want one of %s)", v, strings.Join(ChunkViolations, ", "))
		}
	}
	return nil
}

// violations are the kinds of chunk violation t asks for: those it names,
// or all of them when it asks for chunk-violation without naming any.
func (t *Traffic) violations() []string {
	if len(t.Violations) > 0 {
		return t.Violations
	}
	if slices.Contains(t.Findings, "chunk-violation") {
		return ChunkViolations
	}
	return nil
}

// LongCall sends call, grown to size octets when it has a data item to
// grow, as a Long Call: an RDMA_NOMSG Call from the initiator whose
// position-zero read chunk holds the RPC message in segments of at most
// 4096 octets (handles handle, handle+1, ... at va on), then, segment by
// segment, the responder's RDMA READ Request and the initiator's READ
// Responses that carry the message. It returns the XID and the message.
func (n *NFS) LongCall(call RPC, size int, handle uint32, va uint64) (uint32, []byte) {
	xid := n.XID
	n.XID++
	msg, _ := encodeSized(call, xid, size)
	var rl []layers.RPCRDMAReadSegment
	for at := 0; at < len(msg); at += longSegment {
		seg := layers.RPCRDMASegment{Handle: handle + uint32(len(rl)), Length: uint32(min(longSegment, len(msg)-at)), Offset: va + uint64(at)}
		rl = append(rl, layers.RPCRDMAReadSegment{RPCRDMASegment: seg})
	}
	n.send(Initiator, xid, RPCMessage{Proc: layers.RPCRDMANoMsg, ReadList: rl}, SendOpts{})
	at := 0
	for _, r := range rl {
		psn := n.C.ReadRequest(Responder, r.Handle, r.Offset, int(r.Length))
		n.C.RespondData(Responder, psn, msg[at:at+int(r.Length)])
		at += int(r.Length)
	}
	return xid, msg
}

// LongReply writes reply, grown to size octets when it has a data item to
// grow, as the Long Reply to the Call of xid: the responder's RDMA WRITEs
// fill the segments of chunk (the Call's reply chunk) in order, the
// initiator acknowledges them, then the responder sends the RDMA_NOMSG
// Reply whose reply chunk gives the octets written in each segment. It
// returns the message.
func (n *NFS) LongReply(xid uint32, reply RPC, size int, chunk layers.RPCRDMAChunk, o SendOpts) []byte {
	msg, _ := encodeSized(reply, xid, size)
	got := slices.Clone(chunk)
	at := 0
	for i, s := range chunk {
		l := min(int(s.Length), len(msg)-at)
		if l > 0 {
			n.C.WriteData(Responder, s.Handle, s.Offset, msg[at:at+l])
		}
		got[i].Length = uint32(l)
		at += l
	}
	n.C.Ack(Initiator, n.C.LastPSN(Responder))
	n.Reply(xid, RPCMessage{Proc: layers.RPCRDMANoMsg, ReplyChunk: got, HasReplyChunk: true}, o)
	return msg
}

// gss makes call and reply use an RPCSEC_GSS integrity credential, with
// the plan's next sequence number: the checksum covers the arguments, so no data item
// moves to a chunk (Linux's client then sends a WRITE of any size inline,
// or as a Long Call).
func (p *nfsPlan) gss(call *Call, reply *Reply) (*Call, *Reply) {
	p.gssSeq++
	cred := GSSCred(GSSIntegrity, p.gssSeq)
	call.Cred, reply.Cred = cred, cred
	return call, reply
}

// lookupPath is an NFSv4.1 COMPOUND that walks a path of names from the
// file handle (SEQUENCE, PUTFH, LOOKUP of each name, GETFH, GETATTR),
// with as many names as make its Call at least size octets.
func (p *nfsPlan) lookupPath(size int) (*Call, *Reply) {
	var ops []NFS4Op
	for {
		ops = append(ops, NFS4Op{Op: OpLookup, Name: fmt.Sprintf("directory-%03d-%s", len(ops), longName)})
		c := Compound{Minor: 1, Session: p.session, Seq: p.seq, Ops: append([]NFS4Op{{Op: OpSequence}, {Op: OpPutfh}}, ops...)}
		if b, _ := CompoundCall(c, SysCred()).Encode(0); len(b) >= size {
			break
		}
	}
	return p.v41(append(ops, NFS4Op{Op: OpGetfh}, NFS4Op{Op: OpGetattr})...)
}

// longName makes the names of a LOOKUP path long, as a deep tree of
// generated names has them: few enough operations to list them all.
var longName = strings.Repeat("0123456789abcdef", 12)

// listing is a directory listing whose Reply is long: an NFSv4.1 READDIR
// unless the plan is NFSv3 only (then READDIRPLUS).
func (p *nfsPlan) listing() (*Call, *Reply) {
	if p.version == NFSv3 {
		return p.v3(NFS3{Proc: NFS3Readdirplus, Count: 16384, Entries: 36, EOF: true})
	}
	return p.v41(NFS4Op{Op: OpReaddir, Count: 16384, Entries: 80, EOF: true})
}

// longMessages sends the long messages of the exchange: two Long Calls,
// an RPCSEC_GSS WRITE of its data inline (two segments) and one just over
// the threshold (an RPCSEC_GSS LOOKUP path; in NFSv3 a smaller WRITE),
// each answered inline; and a Long Reply (a directory listing) written
// into a reply chunk of two segments. toRes and toIni are the inline
// thresholds; inv says whether Replies to Calls with chunks invalidate.
func (n *NFS) longMessages(p *nfsPlan, toRes, toIni int, inv bool) {
	const va = 0x00007f0000600000
	// An RPCSEC_GSS WRITE, its data inline: a Long Call of two segments.
	call, reply := p.gss(p.write(0, false, true))
	xid, _ := n.LongCall(call, toRes+longWriteOver, 0x00060001, va)
	n.Reply(xid, RPCMessage{RPC: reply}, SendOpts{WithInv: inv, Invalidate: 0x00060001})
	// A Long Call just over the threshold.
	if p.version == NFSv3 {
		call, reply = p.gss(p.write(0, false, false))
	} else {
		call, reply = p.gss(p.lookupPath(toRes + longLookupOver))
	}
	xid, _ = n.LongCall(call, toRes+longLookupOver, 0x00060011, va+0x10000)
	n.Reply(xid, RPCMessage{RPC: reply}, SendOpts{WithInv: inv, Invalidate: 0x00060011})
	// A Long Reply in two segments.
	chunk := layers.RPCRDMAChunk{{Handle: 0x00060021, Length: longSegment, Offset: va + 0x20000},
		{Handle: 0x00060022, Length: longSegment, Offset: va + 0x30000}}
	call, reply = p.listing()
	xid = n.Call(RPCMessage{RPC: call, ReplyChunk: chunk, HasReplyChunk: true})
	n.LongReply(xid, reply, toIni+longListOver, chunk, SendOpts{WithInv: inv, Invalidate: 0x00060021})
}

// chunkViolations sends, for each kind, an NFS Call with a chunk and what
// breaks it (ChunkViolations), with the Reply.
func (n *NFS) chunkViolations(p *nfsPlan, kinds []string, inv bool) {
	const (
		va   = 0x00007f0000700000
		size = 4096
	)
	c := n.C
	for i, kind := range kinds {
		handle := 0x00070001 + uint32(i)<<4
		seg := layers.RPCRDMASegment{Handle: handle, Length: size, Offset: va + uint64(i)<<16}
		o := SendOpts{WithInv: inv, Invalidate: handle}
		if kind == "read-outside" {
			// A WRITE whose data the responder reads four octets too far.
			call, reply := p.write(size, true, false)
			r := layers.RPCRDMAReadSegment{Position: Position(call), RPCRDMASegment: seg}
			xid := n.Call(RPCMessage{RPC: call, ReadList: []layers.RPCRDMAReadSegment{r}})
			c.Read(Responder, handle, seg.Offset+4, size)
			n.Reply(xid, RPCMessage{RPC: reply}, o)
			continue
		}
		// A READ into a write chunk.
		call, reply := p.read(size, true)
		xid := n.Call(RPCMessage{RPC: call, WriteList: []layers.RPCRDMAChunk{{seg}}})
		written, claimed := seg, seg
		switch kind {
		case "write-past-end":
			written.Length++
		case "write-unknown-handle":
			written.Handle |= 0xff00
		case "reply-claims-more":
			claimed.Length *= 2
		case "reply-unknown-handle":
			claimed.Handle |= 0xff00
		}
		c.Write(Responder, written.Handle, written.Offset, int(written.Length))
		c.Ack(Initiator, c.LastPSN(Responder))
		n.Reply(xid, RPCMessage{RPC: reply, WriteList: []layers.RPCRDMAChunk{{claimed}}}, o)
	}
}
