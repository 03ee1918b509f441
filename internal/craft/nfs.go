package craft

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// An NFS exchange on a crafted connection: what an NFS/RDMA mount does,
// Call by Call, in real NFSv3 and NFSv4.1 messages (nfsplan.go), with the
// responder's Send With Invalidate when both sides set R; and, on demand,
// the traffic that raises each data-path or RPC finding.

// DatapathFindings are the finding codes NFSTraffic can produce on demand.
var DatapathFindings = []string{"inline-threshold-exceeded", "send-with-invalidate-not-allowed", "invalidate-stag-unknown",
	"credits-exceeded", "rpcrdma-header-invalid", "rpcrdma-error-reply", "rdma-read-limit-exceeded"}

// RPCFindings are the codes of the RPC-level findings NFSTraffic can
// produce on demand, besides DatapathFindings: a Reply that reports an
// error, a Call that never gets a Reply, a Call sent again with the same
// XID.
var RPCFindings = []string{"rpc-reply-error", "rpc-call-unanswered", "rpc-call-resent"}

// Traffic chooses what NFSTraffic adds to the usual exchange.
type Traffic struct {
	// Findings are codes of DatapathFindings or RPCFindings to produce,
	// once each.
	Findings []string
	// Invalidate makes the responder use Send With Invalidate for its
	// Replies to Calls with chunks even when the negotiation does not allow
	// it (as Linux servers do when only the client set R);
	// send-with-invalidate-not-allowed asks for it too. Without it, the
	// responder uses it exactly when both sides set R.
	Invalidate bool
	// NFSVersion is the NFS version of the Calls: NFSv3, NFSv4 (4.1) or
	// NFSMix, a mix step by step.
	NFSVersion string
	// Callback adds, after the usual exchange, the server's CB_COMPOUND
	// Call (CB_SEQUENCE, CB_RECALL) on the backchannel of the same
	// connection (RFC 8167) and the client's Reply.
	Callback bool
	// Long adds long messages (InfiniBand family): two Long Calls whose
	// RPC messages the responder pulls from position-zero read chunks,
	// and a Long Reply written into a reply chunk of two segments
	// (chunks.go). inline-threshold-too-small asks for them too.
	Long bool
	// Violations are kinds of ChunkViolations to produce (InfiniBand
	// family); chunk-violation without any asks for them all.
	Violations []string
}

// check refuses what t cannot produce: findings not in lists, an
// unknown NFS version.
func (t *Traffic) check(lists ...[]string) error {
	var known []string
	for _, l := range lists {
		known = append(known, l...)
	}
	for _, f := range t.Findings {
		if !slices.Contains(known, f) {
			return fmt.Errorf("craft: cannot produce finding %q (want one of %s)", f, strings.Join(known, ", "))
		}
	}
	if !slices.Contains(NFSVersions, t.NFSVersion) {
		return fmt.Errorf("craft: NFS version %q (want %s or %s, or none for a mix)", t.NFSVersion, NFSv3, NFSv4)
	}
	return nil
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

// NFSTraffic builds the exchange's setup, an NFS exchange and its
// disconnection (DREQ, DREP). In the mix of NFS versions (t.NFSVersion
// says otherwise):
//
//  1. an NFSv3 NULL Call and its Reply, which grants 32 credits;
//  2. an NFSv4.1 READ (SEQUENCE, PUTFH, READ): a Call with a write chunk,
//     the responder's RDMA WRITE of 8192 octets into it, the Reply;
//  3. an NFSv3 WRITE: a Call with a read chunk, the responder's RDMA READ
//     of 4096 octets from it, the Reply;
//  4. an NFSv4.1 WRITE whose data makes the Call 3001 octets (a
//     multi-packet Send with padding), its Reply;
//  5. an NFSv3 READDIRPLUS: a Call with a reply chunk, the responder's
//     RDMA WRITE of its long Reply (6000 octets) into it, and the
//     RDMA_NOMSG Send that says so;
//
// each Send acknowledged. The Replies to Calls with chunks invalidate the
// Call's STag (SEND with Invalidate) when both sides set R (or t asks).
// With t.Callback, the server's CB_COMPOUND and the client's Reply follow.
// Each finding of t.Findings adds (or changes) a step that raises it:
// credits-exceeded sends a second NULL before the first Reply;
// rdma-read-limit-exceeded lowers the REQ's Responder Resources to 1 and
// has the responder issue two Reads at once; send-with-invalidate-not-allowed
// clears the responder's R (as Linux servers advertise) and uses Send With
// Invalidate all the same; rpc-call-resent sends a Call again on the same
// connection, then leaves one unanswered, reconnects (a second connection
// between the same hosts) and sends it again there.
func (x *Exchange) NFSTraffic(t Traffic) ([]Frame, error) {
	if err := t.check(DatapathFindings, RPCFindings, ChunkFindings); err != nil {
		return nil, err
	}
	if err := t.checkChunks(); err != nil {
		return nil, err
	}
	want := func(code string) bool { return slices.Contains(t.Findings, code) }
	xx := *x
	if want("inline-threshold-too-small") {
		xx.Responder.ReceiveSize = layers.DefaultInline // the Long Calls need more
	}
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
	p := newNFSPlan(t.NFSVersion)
	n := NFS{C: c, XID: 0x5f000000 + x.ids()<<8, CBXID: 0x6b000000 + x.ids()<<8, Credits: 32}

	// 1. NULL, and the grant.
	call, reply := p.null()
	null := n.Call(RPCMessage{RPC: call})
	if want("credits-exceeded") {
		second := n.Call(RPCMessage{RPC: call}) // before the first Reply: the grant is still 1
		n.Reply(null, RPCMessage{RPC: reply}, SendOpts{})
		null = second
	}
	n.Reply(null, RPCMessage{RPC: reply}, SendOpts{})
	// 2. READ into a write chunk.
	const va = 0x00007f0000100000
	w1 := layers.RPCRDMASegment{Handle: 0x00010001, Length: readSize, Offset: va}
	call, reply = p.read(readSize, true)
	read := n.Call(RPCMessage{RPC: call, WriteList: []layers.RPCRDMAChunk{{w1}}})
	c.Write(Responder, w1.Handle, w1.Offset, readSize)
	c.Ack(Initiator, c.LastPSN(Responder))
	stag := w1.Handle
	if want("invalidate-stag-unknown") {
		stag = 0x0001ffff // no Call advertised it
	}
	n.Reply(read, RPCMessage{RPC: reply, WriteList: []layers.RPCRDMAChunk{{w1}}},
		SendOpts{WithInv: inv || want("invalidate-stag-unknown"), Invalidate: stag})
	// 3. WRITE from a read chunk.
	call, reply = p.write(writeSize, true, false)
	r1 := layers.RPCRDMAReadSegment{Position: Position(call), RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00020001, Length: writeSize, Offset: va + 0x10000}}
	write := n.Call(RPCMessage{RPC: call, ReadList: []layers.RPCRDMAReadSegment{r1}})
	c.Read(Responder, r1.Handle, r1.Offset, writeSize)
	n.Reply(write, RPCMessage{RPC: reply}, SendOpts{WithInv: inv, Invalidate: r1.Handle})
	// 4. A long inline Call, over three packets with a pad (with
	// inline-threshold-too-small, as long as its 1024 threshold allows).
	toRes, toIni := xx.InlineThresholds()
	size := 3001
	if want("inline-threshold-too-small") {
		size = toRes
	}
	call, reply = p.writeInline(size, false)
	long := n.Call(RPCMessage{RPC: call, Size: size})
	n.Reply(long, RPCMessage{RPC: reply}, SendOpts{})
	// 5. A long Reply through the reply chunk.
	c1 := layers.RPCRDMASegment{Handle: 0x00030001, Length: 16384, Offset: va + 0x20000}
	call, reply = p.readdir()
	lr := n.Call(RPCMessage{RPC: call, ReplyChunk: layers.RPCRDMAChunk{c1}, HasReplyChunk: true})
	n.LongReply(lr, reply, longReplySize, layers.RPCRDMAChunk{c1}, SendOpts{WithInv: inv, Invalidate: c1.Handle})
	if t.Callback {
		call, reply = p.callback()
		n.CBReply(n.CBCall(RPCMessage{RPC: call}), RPCMessage{RPC: reply})
	}
	// Long messages and chunk violations.
	if t.Long || want("inline-threshold-too-small") {
		n.longMessages(p, toRes, toIni, inv)
	}
	n.chunkViolations(p, t.violations(), inv)

	// The findings on demand.
	if want("inline-threshold-exceeded") {
		call, reply = p.writeInline(toRes+4, true)
		big := n.Call(RPCMessage{RPC: call, Size: toRes + 4})
		n.Reply(big, RPCMessage{RPC: reply}, SendOpts{})
	}
	if want("rpcrdma-header-invalid") {
		other := uint32(0xbad0bad0)
		call, _ = p.getattr()
		n.Call(RPCMessage{RPC: call, RPCXID: &other}) // the responder does not answer a Call it cannot parse
	}
	if want("rpcrdma-error-reply") {
		call, _ = p.getattr()
		e := n.Call(RPCMessage{RPC: call})
		n.Reply(e, RPCMessage{Proc: layers.RPCRDMAError, Err: layers.RPCRDMAErrChunk}, SendOpts{})
	}
	if want("rdma-read-limit-exceeded") {
		// One read chunk of two segments, read at once where the REQ
		// allows one Read.
		call, reply = p.write(2*2048, true, false)
		r2 := layers.RPCRDMAReadSegment{Position: Position(call), RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00040001, Length: 2048, Offset: va + 0x30000}}
		r3 := r2
		r3.Handle, r3.Offset = 0x00040002, va+0x40000
		big := n.Call(RPCMessage{RPC: call, ReadList: []layers.RPCRDMAReadSegment{r2, r3}})
		p2 := c.ReadRequest(Responder, r2.Handle, r2.Offset, 2048)
		p3 := c.ReadRequest(Responder, r3.Handle, r3.Offset, 2048)
		c.Respond(Responder, p2, 2048)
		c.Respond(Responder, p3, 2048)
		n.Reply(big, RPCMessage{RPC: reply}, SendOpts{})
	}
	if want("rpc-reply-error") {
		call, reply = p.procUnavail()
		n.Reply(n.Call(RPCMessage{RPC: call}), RPCMessage{RPC: reply}, SendOpts{})
		call, reply = p.gssDenied()
		n.Reply(n.Call(RPCMessage{RPC: call}), RPCMessage{RPC: reply}, SendOpts{})
	}
	var resent, resentReply RPCMessage
	var resentXID uint32
	if want("rpc-call-resent") {
		// Sent again while the first has no Reply (a retransmission
		// after a timeout), then answered once.
		call, reply = p.getattr()
		m := RPCMessage{RPC: call}
		xid := n.Call(m)
		n.Resend(xid, m)
		n.Reply(xid, RPCMessage{RPC: reply}, SendOpts{})
		// Left unanswered when the connection goes: sent again on the
		// next connection.
		call, reply = p.lookup("notes.txt")
		resent, resentReply = RPCMessage{RPC: call}, RPCMessage{RPC: reply}
		resentXID = n.Call(resent)
	}
	if want("rpc-call-unanswered") {
		call, _ = p.getattr()
		n.Call(RPCMessage{RPC: call})
	}
	c.Disconnect()
	frames, err := c.Frames()
	if err != nil || !want("rpc-call-resent") {
		return frames, err
	}
	// The same client connects again and sends the Call again, with its
	// XID; this time the server answers.
	x2 := xx
	x2.Attempt++
	x2.Start = frames[len(frames)-1].Time.Add(time.Second)
	c2, err := x2.Connect()
	if err != nil {
		return nil, err
	}
	n2 := NFS{C: c2, XID: n.XID, Credits: n.Credits}
	n2.Resend(resentXID, resent)
	n2.Reply(resentXID, resentReply, SendOpts{})
	c2.Disconnect()
	more, err := c2.Frames()
	return append(frames, more...), err
}

// NFS sends RPC-over-RDMA Calls and Replies on a connection, each Send
// acknowledged by its receiver: Calls from the initiator (the client) and
// their Replies, and backchannel Calls from the responder (RFC 8167) and
// theirs.
type NFS struct {
	C       *Conn
	XID     uint32 // the next Call's XID
	CBXID   uint32 // the next backchannel Call's XID
	Credits uint32 // what Calls request and Replies grant
}

// Call sends m as a Call from the initiator (an RDMA_MSG unless m says
// otherwise) with the next XID, and returns the XID.
func (n *NFS) Call(m RPCMessage) uint32 {
	xid := n.XID
	n.XID++
	n.send(Initiator, xid, m, SendOpts{})
	return xid
}

// Resend sends m again as the Call of xid (a retransmission).
func (n *NFS) Resend(xid uint32, m RPCMessage) { n.send(Initiator, xid, m, SendOpts{}) }

// Reply sends m as the Reply to the Call of xid from the responder.
func (n *NFS) Reply(xid uint32, m RPCMessage, o SendOpts) {
	m.Reply = true
	n.send(Responder, xid, m, o)
}

// CBCall sends m as a backchannel Call from the responder with the next
// backchannel XID, and returns the XID.
func (n *NFS) CBCall(m RPCMessage) uint32 {
	xid := n.CBXID
	n.CBXID++
	n.send(Responder, xid, m, SendOpts{})
	return xid
}

// CBReply sends m as the initiator's Reply to the backchannel Call of xid.
func (n *NFS) CBReply(xid uint32, m RPCMessage) {
	m.Reply = true
	n.send(Initiator, xid, m, SendOpts{})
}

// send sends m from side with xid, and the other side's Acknowledge.
func (n *NFS) send(side Side, xid uint32, m RPCMessage, o SendOpts) {
	m.XID = xid
	if m.Credits == 0 {
		m.Credits = n.Credits
	}
	n.sendRaw(side, m.Bytes(), o)
}

// sendRaw sends an encoded message from side, and the other side's
// Acknowledge.
func (n *NFS) sendRaw(side Side, b []byte, o SendOpts) {
	n.C.Send(side, b, o)
	n.C.Ack(1-side, n.C.LastPSN(side))
}
