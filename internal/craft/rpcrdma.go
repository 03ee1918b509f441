package craft

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// RPCMessage is an RPC-over-RDMA version 1 message to send in an RDMA
// Send: its transport header (RFC 8166, section 4) and, after an RDMA_MSG,
// a minimal ONC RPC Call or Reply (RFC 5531) padded to Size.
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

	Reply  bool    // the RPC message is a Reply (else a Call)
	RPCXID *uint32 // the RPC message's XID, when it is not XID (a broken message)
	// Size is the octets of the whole Send; 0 is the header and the
	// smallest RPC message.
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
	var rpc []byte
	if m.Proc == layers.RPCRDMAMsg || m.Proc == layers.RPCRDMAMsgP {
		rpc = m.rpc()
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, h, gopacket.Payload(rpc)); err != nil {
		panic(err) // only a buffer failure could fail this
	}
	out := buf.Bytes()
	if len(out) < m.Size {
		out = append(out, make([]byte, m.Size-len(out))...)
	}
	return out
}

// rpc is the RPC message: a Call of NFSv3 NULL with AUTH_NONE, or an
// accepted, successful Reply.
func (m *RPCMessage) rpc() []byte {
	xid := m.XID
	if m.RPCXID != nil {
		xid = *m.RPCXID
	}
	w := func(b []byte, vs ...uint32) []byte {
		for _, v := range vs {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		return b
	}
	if m.Reply {
		return w(nil, xid, 1, 0, 0, 0, 0) // REPLY, MSG_ACCEPTED, verifier AUTH_NONE, SUCCESS
	}
	return w(nil, xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0) // CALL, RPC 2, NFS 3, NULL, AUTH_NONE credential and verifier
}
