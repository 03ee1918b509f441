package craft

import (
	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// RPCMessage is an RPC-over-RDMA version 1 message to send in an RDMA
// Send: its transport header (RFC 8166, section 4) and, after an RDMA_MSG
// or RDMA_MSGP, an ONC RPC Call or Reply (RFC 5531).
type RPCMessage struct {
	XID     uint32
	Vers    uint32 // 0 means 1
	Credits uint32
	Proc    uint32 // layers.RPCRDMAMsg, RPCRDMANoMsg, RPCRDMAError...

	ReadList      []layers.RPCRDMAReadSegment
	WriteList     []layers.RPCRDMAChunk
	ReplyChunk    layers.RPCRDMAChunk
	HasReplyChunk bool

	Err, VersLow, VersHigh uint32 // RDMA_ERROR

	// RPC is the RPC message (a *Call or a *Reply), with XID as its XID.
	// nil: a Call of NFSv3 NULL with AUTH_NONE, or (Reply) an accepted
	// Reply without results, as to a NULL.
	RPC    RPC
	Reply  bool    // with RPC nil: the RPC message is a Reply (else a Call)
	RPCXID *uint32 // the RPC message's XID, when it is not XID (a broken message)
	// Size is the octets of the whole Send. A message shorter than that
	// grows its first data item written inline (an NFS WRITE's or READ
	// Reply's data, a READDIR Reply's last name) by whole XDR units; what
	// still lacks, when the message has no such item or Size is not a
	// multiple of 4, is zeros after the complete message. 0: the message
	// as it is.
	Size int
}

// Bytes encodes the message.
func (m *RPCMessage) Bytes() []byte {
	h := &layers.RPCRDMAHeader{XID: m.XID, Vers: m.Vers, Credit: m.Credits, Proc: m.Proc, ReadList: m.ReadList,
		WriteList: m.WriteList, ReplyChunk: m.ReplyChunk, HasReplyChunk: m.HasReplyChunk, Err: m.Err,
		VersLow: m.VersLow, VersHigh: m.VersHigh}
	if h.Vers == 0 {
		h.Vers = layers.RPCRDMAVersion
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, h); err != nil {
		panic(err) // only a buffer failure could fail this
	}
	out := buf.Bytes()
	if m.Proc == layers.RPCRDMAMsg || m.Proc == layers.RPCRDMAMsgP {
		rpc, _ := encodeSized(m.message(), m.rpcXID(), m.Size-len(out))
		out = append(out, rpc...)
	}
	if len(out) < m.Size {
		out = append(out, make([]byte, m.Size-len(out))...) // zeros after a complete message
	}
	return out
}

// rpcXID is the XID of the RPC message.
func (m *RPCMessage) rpcXID() uint32 {
	if m.RPCXID != nil {
		return *m.RPCXID
	}
	return m.XID
}

// nullCall and nullReply are the RPC messages of an RPCMessage without
// one.
var (
	nullCall  = &Call{Prog: ProgNFS, Vers: 3, Proc: NFS3Null}
	nullReply = &Reply{}
)

// message is the RPC message.
func (m *RPCMessage) message() RPC {
	switch {
	case m.RPC != nil:
		return m.RPC
	case m.Reply:
		return nullReply
	}
	return nullCall
}
