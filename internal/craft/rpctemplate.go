package craft

import (
	"bytes"
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Templates of RPC-over-RDMA Sends for the workloads: each Send is encoded
// once, with marker values where its XIDs, its chunk's handle and its
// SEQUENCE's sequenceid go, and patched in place for each use, so that a
// workload of a gigabyte writes its messages without encoding them anew.

// The marker values a template is encoded with.
const (
	markXID    = 0x5e1e0001
	markHandle = 0x5e1e0002
	markSeq    = 0x5e1e0003
)

// rpcTemplate is an encoded Send and where its variable words are.
type rpcTemplate struct {
	b                 []byte
	xids, handles, sq []int
}

// newTemplate encodes m, whose XID is set here, and whose chunk handles
// and SEQUENCE sequenceids the caller set to markHandle and markSeq.
func newTemplate(m RPCMessage) rpcTemplate {
	m.XID = markXID
	return rawTemplate(m.Bytes())
}

// rawTemplate is a template of encoded octets that hold the markers.
func rawTemplate(b []byte) rpcTemplate {
	return rpcTemplate{b: b, xids: words(b, markXID), handles: words(b, markHandle), sq: words(b, markSeq)}
}

// words returns the offsets of the 4-aligned words of b that hold v.
func words(b []byte, v uint32) []int {
	var w [4]byte
	binary.BigEndian.PutUint32(w[:], v)
	var out []int
	for off := 0; off+4 <= len(b); off += 4 {
		if bytes.Equal(b[off:off+4], w[:]) {
			out = append(out, off)
		}
	}
	return out
}

// patch sets the template's XIDs, handles and sequenceids and returns its
// octets, which stay the template's: the caller copies them before the
// next patch.
func (t *rpcTemplate) patch(xid, handle, seq uint32) []byte {
	for _, o := range t.xids {
		binary.BigEndian.PutUint32(t.b[o:], xid)
	}
	for _, o := range t.handles {
		binary.BigEndian.PutUint32(t.b[o:], handle)
	}
	for _, o := range t.sq {
		binary.BigEndian.PutUint32(t.b[o:], seq)
	}
	return t.b
}

// rpcOp is the Call and the Reply of one operation, as templates.
type rpcOp struct {
	call, reply rpcTemplate
}

// workloadOps are the operations of the workloads, for NFSv3 (index 0)
// and NFSv4.1 (index 1): a READ of a data size into a write chunk, a
// WRITE of as much from a read chunk, small operations inline, and long
// messages (NFS workload only).
type workloadOps struct {
	read, write [2]rpcOp
	small       [2][]rpcOp
	// longCall is an RPCSEC_GSS WRITE sent as a Long Call, longReply a
	// directory listing answered as a Long Reply.
	longCall, longReply [2]longOp
}

// longOp is a long message's templates: the RDMA_NOMSG Send, the RPC
// message that travels in a chunk, and the other side's inline Send (the
// Reply to a Long Call, the Call of a Long Reply).
type longOp struct {
	nomsg, msg, inline rpcTemplate
}

// The workload's long messages: their RPC messages' octets.
const (
	workloadLongCall  = 6000 // two segments of a read chunk
	workloadLongReply = 7000
)

// newWorkloadOps encodes the workloads' operations with credits and data
// of size octets, whose chunk segment starts at va.
func newWorkloadOps(credits uint32, size int, va uint64) *workloadOps {
	ops := &workloadOps{}
	for i, version := range []string{NFSv3, NFSv4} {
		p := newNFSPlan(version)
		p.seq = markSeq
		pair := func(call, reply RPC, callMsg, replyMsg RPCMessage) rpcOp {
			callMsg.RPC, callMsg.Credits = call, credits
			replyMsg.RPC, replyMsg.Credits, replyMsg.Reply = reply, credits, true
			return rpcOp{newTemplate(callMsg), newTemplate(replyMsg)}
		}
		// Each compound takes the next sequenceid: set it back to the
		// marker.
		next := func() { p.seq = markSeq }

		seg := layers.RPCRDMASegment{Handle: markHandle, Length: uint32(size), Offset: va}
		call, reply := p.read(uint32(size), true)
		ops.read[i] = pair(call, reply, RPCMessage{WriteList: []layers.RPCRDMAChunk{{seg}}}, RPCMessage{WriteList: []layers.RPCRDMAChunk{{seg}}})
		next()
		call, reply = p.write(uint32(size), true, i == 1)
		rs := layers.RPCRDMAReadSegment{Position: Position(call), RPCRDMASegment: seg}
		ops.write[i] = pair(call, reply, RPCMessage{ReadList: []layers.RPCRDMAReadSegment{rs}}, RPCMessage{})
		next()
		var small [][2]RPC
		if i == 0 {
			for _, o := range []NFS3{{Proc: NFS3Getattr}, {Proc: NFS3Lookup, Name: "data.bin"}, {Proc: NFS3Access, Access: 0x1f},
				{Proc: NFS3Commit, Count: uint32(size)}} {
				c, r := p.v3(o)
				small = append(small, [2]RPC{c, r})
			}
		} else {
			for _, ops := range [][]NFS4Op{{{Op: OpGetattr}}, {{Op: OpLookup, Name: "data.bin"}, {Op: OpGetfh}, {Op: OpGetattr}},
				{{Op: OpAccess, Access: 0x1f}}, {{Op: OpCommit, Count: uint32(size)}},
				{{Op: OpOpen, Name: "data.bin"}, {Op: OpGetfh}}} {
				c, r := p.v41(ops...)
				next()
				small = append(small, [2]RPC{c, r})
			}
		}
		for _, s := range small {
			ops.small[i] = append(ops.small[i], pair(s[0], s[1], RPCMessage{}, RPCMessage{}))
		}
		ops.longCall[i], ops.longReply[i] = longOps(p, i == 1, credits, va)
		next()
	}
	return ops
}

// longOps encodes the long messages of the workloads on plan p (NFSv4.1
// when v4): a Long Call of an RPCSEC_GSS WRITE whose read chunk has
// segments of at most 4096 octets from va, and a Long Reply of a directory
// listing written at va.
func longOps(p *nfsPlan, v4 bool, credits uint32, va uint64) (call, reply longOp) {
	c, r := p.gss(p.write(0, false, v4))
	p.seq = markSeq
	b, _ := encodeSized(c, markXID, workloadLongCall)
	var rl []layers.RPCRDMAReadSegment
	for at := 0; at < len(b); at += longSegment {
		rl = append(rl, layers.RPCRDMAReadSegment{RPCRDMASegment: layers.RPCRDMASegment{Handle: markHandle,
			Length: uint32(min(longSegment, len(b)-at)), Offset: va + uint64(at)}})
	}
	call = longOp{nomsg: newTemplate(RPCMessage{Proc: layers.RPCRDMANoMsg, Credits: credits, ReadList: rl}), msg: rawTemplate(b),
		inline: newTemplate(RPCMessage{RPC: r, Credits: credits, Reply: true})}
	if v4 {
		c, r = p.v41(NFS4Op{Op: OpReaddir, Count: 16384, Entries: 80, EOF: true})
	} else {
		c, r = p.v3(NFS3{Proc: NFS3Readdirplus, Count: 16384, Entries: 36, EOF: true})
	}
	p.seq = markSeq
	b, _ = encodeSized(r, markXID, workloadLongReply)
	seg := layers.RPCRDMASegment{Handle: markHandle, Length: 16384, Offset: va}
	reply.inline = newTemplate(RPCMessage{RPC: c, Credits: credits, ReplyChunk: layers.RPCRDMAChunk{seg}, HasReplyChunk: true})
	seg.Length = uint32(len(b))
	reply.nomsg = newTemplate(RPCMessage{Proc: layers.RPCRDMANoMsg, Credits: credits, ReplyChunk: layers.RPCRDMAChunk{seg}, HasReplyChunk: true})
	reply.msg = rawTemplate(b)
	return call, reply
}
