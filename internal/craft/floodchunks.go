package craft

import (
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// FloodRCChunks is N Long Calls on RoCEv2 connections of ChunkFloodCalls
// Calls each, none answered: after a NULL whose Reply grants 1024 credits,
// each Call is an RDMA_NOMSG with a position-zero read chunk and a reply
// chunk of one segment of 8192 octets; the responder's RDMA READ Request
// for the read chunk gets only the First of its Responses, and its RDMA
// WRITE into the reply chunk only its First packet. Every Call keeps its
// segments and the first octets of its two long messages, and its Read
// stays outstanding: a connection holds more segments than are tracked,
// more Reads than are matched, and together more long messages than the
// memory budget holds.
const FloodRCChunks = "rc-chunks"

// ChunkFloodCalls is how many Calls each FloodRCChunks connection sends.
const ChunkFloodCalls = 300

// floodRCChunks writes n Calls of FloodRCChunks through emit.
func floodRCChunks(n int, emit func([]byte) error) error {
	const (
		size = 8192
		va   = 0x00007f0000000000
	)
	for i := 0; n > 0; i++ {
		x := Exchange{Transport: RoCEv2, Index: i & 0xffff, Attempt: i >> 16,
			Initiator: Peer{SendSize: 4096, ReceiveSize: 4096}, Responder: Peer{SendSize: 4096, ReceiveSize: 4096}}
		c, err := x.Connect()
		if err != nil {
			return err
		}
		nfs := NFS{C: c, XID: 1, Credits: 1024}
		nfs.Reply(nfs.Call(RPCMessage{}), RPCMessage{}, SendOpts{})
		for j := range min(n, ChunkFloodCalls) {
			read := layers.RPCRDMASegment{Handle: 0x10000 + uint32(j), Length: size, Offset: va + uint64(j)<<16}
			reply := layers.RPCRDMASegment{Handle: 0x20000 + uint32(j), Length: size, Offset: va + 1<<32 + uint64(j)<<16}
			nfs.Call(RPCMessage{Proc: layers.RPCRDMANoMsg, ReadList: []layers.RPCRDMAReadSegment{{RPCRDMASegment: read}},
				ReplyChunk: layers.RPCRDMAChunk{reply}, HasReplyChunk: true})
			psn := c.ReadRequest(Responder, read.Handle, read.Offset, size)
			c.Respond(Responder, psn, size)
			c.frames = c.frames[:len(c.frames)-size/c.mtu+1] // only the First Response
			c.Write(Responder, reply.Handle, reply.Offset, size)
			c.frames = c.frames[:len(c.frames)-size/c.mtu+1] // only the First packet
			c.psn[Responder] = (c.psn[Responder] - size/uint32(c.mtu) + 1) & 0xffffff
		}
		n -= ChunkFloodCalls
		fs, err := c.Frames()
		if err != nil {
			return err
		}
		if err := emitAll(fs, emit); err != nil {
			return err
		}
	}
	return nil
}
