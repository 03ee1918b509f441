package craft

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// An NFS-like exchange on a crafted connection: what an NFS/RDMA mount
// does, Call by Call, with the responder's Send With Invalidate when both
// sides set R; and, on demand, the traffic that raises each data-path
// finding.

// DatapathFindings are the finding codes NFSTraffic can produce on demand.
var DatapathFindings = []string{"inline-threshold-exceeded", "send-with-invalidate-not-allowed", "invalidate-stag-unknown",
	"credits-exceeded", "rpcrdma-header-invalid", "rpcrdma-error-reply", "rdma-read-limit-exceeded"}

// Traffic chooses what NFSTraffic adds to the usual exchange.
type Traffic struct {
	// Findings are codes of DatapathFindings to produce, once each.
	Findings []string
	// Invalidate makes the responder use Send With Invalidate for its
	// Replies to Calls with chunks even when the negotiation does not allow
	// it (as Linux servers do when only the client set R);
	// send-with-invalidate-not-allowed asks for it too. Without it, the
	// responder uses it exactly when both sides set R.
	Invalidate bool
}

// InlineThresholds are the inline thresholds the exchange negotiates, each
// way: a side without RFC 8797 data counts as 1024/1024.
func (x *Exchange) InlineThresholds() (toResponder, toInitiator int) {
	size := func(p Peer, send bool) int {
		if p.Absent {
			return layers.DefaultInline
		}
		if send {
			return orInt(p.SendSize, layers.DefaultInline)
		}
		return orInt(p.ReceiveSize, layers.DefaultInline)
	}
	return min(size(x.Initiator, true), size(x.Responder, false)), min(size(x.Responder, true), size(x.Initiator, false))
}

// NFSTraffic builds the exchange's setup, an NFS-like exchange and its
// disconnection (DREQ, DREP):
//
//  1. a NULL Call and its Reply, which grants 32 credits;
//  2. a READ: a Call with a write chunk, the responder's RDMA WRITE of 8192
//     octets into it, the Reply;
//  3. a WRITE: a Call with a read chunk, the responder's RDMA READ of 4096
//     octets from it, the Reply;
//  4. a Call of 3001 octets (a multi-packet Send with padding), its Reply;
//  5. a Call with a reply chunk, the responder's RDMA WRITE of its long
//     Reply, and the RDMA_NOMSG Reply;
//
// each Send acknowledged. The Replies to Calls with chunks invalidate the
// Call's STag (SEND with Invalidate) when both sides set R (or t asks).
// Each finding of t.Findings adds (or changes) a step that raises it:
// credits-exceeded sends a second Call before the first Reply;
// rdma-read-limit-exceeded lowers the REQ's Responder Resources to 1 and
// has the responder issue two Reads at once; send-with-invalidate-not-allowed
// clears the responder's R (as Linux servers advertise) and uses Send With
// Invalidate all the same.
func (x *Exchange) NFSTraffic(t Traffic) ([]Frame, error) {
	for _, f := range t.Findings {
		if !slices.Contains(DatapathFindings, f) {
			return nil, fmt.Errorf("craft: cannot produce finding %q (want one of %s)", f, strings.Join(DatapathFindings, ", "))
		}
	}
	want := func(code string) bool { return slices.Contains(t.Findings, code) }
	xx := *x
	if want("rdma-read-limit-exceeded") {
		xx.ReqResponderResources = 1
	}
	if want("send-with-invalidate-not-allowed") {
		xx.Responder.RemoteInvalidate = false // as a Linux server advertises
	}
	c, err := xx.Connect()
	if err != nil {
		return nil, err
	}
	inv := t.Invalidate || want("send-with-invalidate-not-allowed") ||
		!xx.Initiator.Absent && !xx.Responder.Absent && xx.Initiator.RemoteInvalidate && xx.Responder.RemoteInvalidate
	n := NFS{C: c, XID: 0x5f000000 + x.ids()<<8, Credits: 32}

	// 1. NULL, and the grant.
	null := n.Call(RPCMessage{})
	if want("credits-exceeded") {
		n.Call(RPCMessage{}) // a second Call before the first Reply: the grant is still 1
	}
	n.Reply(null, RPCMessage{}, SendOpts{})
	// 2. READ into a write chunk.
	const va = 0x00007f0000100000
	w1 := layers.RPCRDMASegment{Handle: 0x00010001, Length: 8192, Offset: va}
	read := n.Call(RPCMessage{WriteList: []layers.RPCRDMAChunk{{w1}}, Size: 164})
	c.Write(Responder, w1.Handle, w1.Offset, 8192)
	c.Ack(Initiator, c.LastPSN(Responder))
	stag := w1.Handle
	if want("invalidate-stag-unknown") {
		stag = 0x0001ffff // no Call advertised it
	}
	n.Reply(read, RPCMessage{WriteList: []layers.RPCRDMAChunk{{w1}}, Size: 140}, SendOpts{WithInv: inv || want("invalidate-stag-unknown"), Invalidate: stag})
	// 3. WRITE from a read chunk.
	r1 := layers.RPCRDMAReadSegment{Position: 128, RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00020001, Length: 4096, Offset: va + 0x10000}}
	write := n.Call(RPCMessage{ReadList: []layers.RPCRDMAReadSegment{r1}, Size: 200})
	c.Read(Responder, r1.Handle, r1.Offset, 4096)
	n.Reply(write, RPCMessage{Size: 136}, SendOpts{WithInv: inv, Invalidate: r1.Handle})
	// 4. A long inline Call, over three packets with a pad.
	long := n.Call(RPCMessage{Size: 3001})
	n.Reply(long, RPCMessage{Size: 100}, SendOpts{})
	// 5. A long Reply through the reply chunk.
	c1 := layers.RPCRDMASegment{Handle: 0x00030001, Length: 16384, Offset: va + 0x20000}
	lr := n.Call(RPCMessage{ReplyChunk: layers.RPCRDMAChunk{c1}, HasReplyChunk: true, Size: 180})
	c.Write(Responder, c1.Handle, c1.Offset, 6000)
	c.Ack(Initiator, c.LastPSN(Responder))
	got := c1
	got.Length = 6000
	n.Reply(lr, RPCMessage{Proc: layers.RPCRDMANoMsg, ReplyChunk: layers.RPCRDMAChunk{got}, HasReplyChunk: true},
		SendOpts{WithInv: inv, Invalidate: c1.Handle})

	// The findings on demand.
	if want("inline-threshold-exceeded") {
		toRes, _ := x.InlineThresholds()
		big := n.Call(RPCMessage{Size: toRes + 4})
		n.Reply(big, RPCMessage{}, SendOpts{})
	}
	if want("rpcrdma-header-invalid") {
		other := uint32(0xbad0bad0)
		n.Call(RPCMessage{RPCXID: &other}) // the responder does not answer a Call it cannot parse
	}
	if want("rpcrdma-error-reply") {
		e := n.Call(RPCMessage{})
		n.Reply(e, RPCMessage{Proc: layers.RPCRDMAError, Err: layers.RPCRDMAErrChunk}, SendOpts{})
	}
	if want("rdma-read-limit-exceeded") {
		r2 := layers.RPCRDMAReadSegment{Position: 128, RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00040001, Length: 2048, Offset: va + 0x30000}}
		r3 := r2
		r3.Position, r3.Handle, r3.Offset = 1152, 0x00040002, va+0x40000
		big := n.Call(RPCMessage{ReadList: []layers.RPCRDMAReadSegment{r2, r3}, Size: 220})
		p2 := c.ReadRequest(Responder, r2.Handle, r2.Offset, 2048) // two Reads at once, where the REQ allows one
		p3 := c.ReadRequest(Responder, r3.Handle, r3.Offset, 2048)
		c.Respond(Responder, p2, 2048)
		c.Respond(Responder, p3, 2048)
		n.Reply(big, RPCMessage{}, SendOpts{})
	}
	c.Disconnect()
	return c.Frames()
}

// NFS sends RPC-over-RDMA Calls and Replies on a connection, each Send
// acknowledged by its receiver.
type NFS struct {
	C       *Conn
	XID     uint32 // the next Call's XID
	Credits uint32 // what Calls request and Replies grant
}

// Call sends m as a Call from the initiator (an RDMA_MSG unless m says
// otherwise) with the next XID, and returns the XID.
func (n *NFS) Call(m RPCMessage) uint32 {
	m.XID = n.XID
	n.XID++
	if m.Credits == 0 {
		m.Credits = n.Credits
	}
	n.C.Send(Initiator, m.Bytes(), SendOpts{})
	n.C.Ack(Responder, n.C.LastPSN(Initiator))
	return m.XID
}

// Reply sends m as the Reply to the Call of xid from the responder.
func (n *NFS) Reply(xid uint32, m RPCMessage, o SendOpts) {
	m.XID, m.Reply = xid, true
	if m.Credits == 0 {
		m.Credits = n.Credits
	}
	n.C.Send(Responder, m.Bytes(), o)
	n.C.Ack(Initiator, n.C.LastPSN(Responder))
}
