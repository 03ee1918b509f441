package craft

import (
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// IWARPFindings are the iWARP-only data-path finding codes
// IWARPExchange.NFSTraffic can produce on demand, besides
// DatapathFindings.
var IWARPFindings = []string{"mpa-crc-mismatch", "mpa-crc-missing", "rdmap-terminate", "fpdu-framing-lost"}

// iwarpSegment is the largest DDP payload of the crafted FPDUs (a
// 1500-octet MTU less the headers).
const iwarpSegment = 1400

// iwarpVA is where the initiator's buffers of the NFS exchange start.
const iwarpVA = 0x00007f0000100000

// InlineThresholds are the inline thresholds the exchange negotiates, each
// way, as Exchange.InlineThresholds.
func (x *IWARPExchange) InlineThresholds() (toResponder, toInitiator int) {
	e := Exchange{Initiator: x.Initiator, Responder: x.Responder}
	return e.InlineThresholds()
}

// NFSTraffic builds the MPA exchange and, after it, the NFS exchange of
// Exchange.NFSTraffic as RDMAP messages: Calls and Replies in Sends (a
// long Call in several DDP segments), RDMA Writes into write and reply
// chunks, RDMA Reads of read chunks (a Read Request and its Read
// Response), Send with Invalidate for the Replies to Calls with chunks
// when both sides set R (or t asks), and the backchannel CB_COMPOUND with
// t.Callback. Each finding of t.Findings adds (or changes) a step that
// raises it, as on RoCE; rdma-read-limit-exceeded makes the exchange MPA
// revision 2 with a Request IRD of 1; rpc-call-unanswered and
// rpc-call-resent close the connection (FIN both ways) after its traffic,
// and rpc-call-resent connects again (a new source port) to send its Call
// again. The iWARP findings: mpa-crc-mismatch and mpa-crc-missing spoil the
// CRC of a Call's FPDU (CRC is in use unless x.NoCRC); rdmap-terminate ends
// the exchange with the initiator's Terminate (DDP, untagged buffer,
// message too long; the responder's, when fpdu-framing-lost is asked too);
// fpdu-framing-lost turns markers on towards the responder and spoils one
// inside a last, long Call.
func (x *IWARPExchange) NFSTraffic(t Traffic) ([]Frame, error) {
	if err := t.check(DatapathFindings, RPCFindings, IWARPFindings); err != nil {
		return nil, err
	}
	want := func(code string) bool { return slices.Contains(t.Findings, code) }
	xx := x.forFindings(want)
	inv := t.Invalidate || want("send-with-invalidate-not-allowed") ||
		!xx.Initiator.Absent && !xx.Responder.Absent && xx.Initiator.RemoteInvalidate && xx.Responder.RemoteInvalidate
	n := iwNFS{xid: 0x5f000000, cbXID: 0x6b000000, credits: 32, plan: newNFSPlan(t.NFSVersion)}
	n.exchange(inv, t.Callback, want)
	n.findings(&xx, want)
	resent, resentReply := n.rpcFindings(want)
	xx.Traffic = append(slices.Clone(x.Traffic), n.msgs...)
	xx.Close = xx.Close || want("rpc-call-unanswered") || want("rpc-call-resent")
	frames, err := xx.Frames()
	if err != nil || resent == nil {
		return frames, err
	}
	// The same client connects again and sends the Call again, with its
	// XID; this time the server answers.
	x2 := xx
	x2.Attempt++
	x2.Start = frames[len(frames)-1].Time.Add(time.Second)
	n2 := iwNFS{credits: n.credits}
	n2.send(false, resent.XID, *resent, IWARPMessage{})
	n2.reply(resent.XID, *resentReply, false, 0)
	x2.Traffic = n2.msgs
	more, err := x2.Frames()
	return append(frames, more...), err
}

// forFindings is the exchange set up as the findings wanted need it: MPA
// revision 2 (the default) with a Request IRD of 1 for
// rdma-read-limit-exceeded, the responder's R cleared for
// send-with-invalidate-not-allowed, CRC for the CRC findings and markers
// towards the responder for fpdu-framing-lost.
func (x *IWARPExchange) forFindings(want func(string) bool) IWARPExchange {
	xx := *x
	if xx.Rev == 0 {
		xx.Rev = 2
	}
	if want("rdma-read-limit-exceeded") {
		xx.Rev, xx.RequestIRD = 2, 1
	}
	if want("send-with-invalidate-not-allowed") {
		xx.Responder.RemoteInvalidate = false
	}
	if want("mpa-crc-mismatch") || want("mpa-crc-missing") {
		xx.NoCRC = false
	}
	if want("fpdu-framing-lost") {
		xx.ResponderMarkers = true // the responder asks for markers: the initiator's FPDUs carry them
	}
	return xx
}

// exchange adds the usual NFS exchange, the steps of
// Exchange.NFSTraffic, with Send with Invalidate for the Replies to Calls
// with chunks when inv, and the backchannel CB_COMPOUND when callback;
// credits-exceeded and invalidate-stag-unknown, when wanted, change steps
// of it.
func (n *iwNFS) exchange(inv, callback bool, want func(string) bool) {
	p := n.plan
	call, reply := p.null()
	null := n.call(RPCMessage{RPC: call}, IWARPMessage{})
	if want("credits-exceeded") {
		second := n.call(RPCMessage{RPC: call}, IWARPMessage{})
		n.reply(null, RPCMessage{RPC: reply}, false, 0)
		null = second
	}
	n.reply(null, RPCMessage{RPC: reply}, false, 0)
	w1 := layers.RPCRDMASegment{Handle: 0x00010001, Length: readSize, Offset: iwarpVA}
	call, reply = p.read(readSize, true)
	read := n.call(RPCMessage{RPC: call, WriteList: []layers.RPCRDMAChunk{{w1}}}, IWARPMessage{})
	n.write(w1.Handle, w1.Offset, fill(readSize, byte(w1.Handle)))
	stag := w1.Handle
	if want("invalidate-stag-unknown") {
		stag = 0x0001ffff
	}
	n.reply(read, RPCMessage{RPC: reply, WriteList: []layers.RPCRDMAChunk{{w1}}}, inv || want("invalidate-stag-unknown"), stag)
	call, reply = p.write(writeSize, true, false)
	r1 := layers.RPCRDMAReadSegment{Position: Position(call), RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00020001, Length: writeSize, Offset: iwarpVA + 0x10000}}
	write := n.call(RPCMessage{RPC: call, ReadList: []layers.RPCRDMAReadSegment{r1}}, IWARPMessage{})
	n.readRequest(r1.Handle, r1.Offset, writeSize)
	n.readResponse(writeSize)
	n.reply(write, RPCMessage{RPC: reply}, inv, r1.Handle)
	call, reply = p.writeInline(3001, false)
	long := n.call(RPCMessage{RPC: call, Size: 3001}, IWARPMessage{})
	n.reply(long, RPCMessage{RPC: reply}, false, 0)
	c1 := layers.RPCRDMASegment{Handle: 0x00030001, Length: 16384, Offset: iwarpVA + 0x20000}
	call, reply = p.readdir()
	lr := n.call(RPCMessage{RPC: call, ReplyChunk: layers.RPCRDMAChunk{c1}, HasReplyChunk: true}, IWARPMessage{})
	long1, _ := encodeSized(reply, lr, longReplySize)
	n.write(c1.Handle, c1.Offset, long1)
	got := c1
	got.Length = uint32(len(long1))
	n.reply(lr, RPCMessage{Proc: layers.RPCRDMANoMsg, ReplyChunk: layers.RPCRDMAChunk{got}, HasReplyChunk: true}, inv, c1.Handle)
	if callback {
		call, reply = p.callback()
		xid := n.cbXID
		n.cbXID++
		n.send(true, xid, RPCMessage{RPC: call}, IWARPMessage{})
		m := RPCMessage{RPC: reply, Reply: true}
		n.send(false, xid, m, IWARPMessage{})
	}
}

// findings adds, after the usual exchange, the steps that raise the
// other data-path findings wanted on the exchange xx.
func (n *iwNFS) findings(xx *IWARPExchange, want func(string) bool) {
	p := n.plan
	if want("inline-threshold-exceeded") {
		toRes, _ := xx.InlineThresholds()
		call, reply := p.writeInline(toRes+4, true)
		big := n.call(RPCMessage{RPC: call, Size: toRes + 4}, IWARPMessage{})
		n.reply(big, RPCMessage{RPC: reply}, false, 0)
	}
	if want("rpcrdma-header-invalid") {
		other := uint32(0xbad0bad0)
		call, _ := p.getattr()
		n.call(RPCMessage{RPC: call, RPCXID: &other}, IWARPMessage{})
	}
	if want("rpcrdma-error-reply") {
		call, _ := p.getattr()
		e := n.call(RPCMessage{RPC: call}, IWARPMessage{})
		n.reply(e, RPCMessage{Proc: layers.RPCRDMAError, Err: layers.RPCRDMAErrChunk}, false, 0)
	}
	if want("rdma-read-limit-exceeded") {
		call, reply := p.write(2*2048, true, false)
		r2 := layers.RPCRDMAReadSegment{Position: Position(call), RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00040001, Length: 2048, Offset: iwarpVA + 0x30000}}
		r3 := r2
		r3.Handle, r3.Offset = 0x00040002, iwarpVA+0x40000
		big := n.call(RPCMessage{RPC: call, ReadList: []layers.RPCRDMAReadSegment{r2, r3}}, IWARPMessage{})
		n.readRequest(r2.Handle, r2.Offset, 2048) // two Reads at once, where the Request's IRD allows one
		n.readRequest(r3.Handle, r3.Offset, 2048)
		n.readResponse(2048)
		n.readResponse(2048)
		n.reply(big, RPCMessage{RPC: reply}, false, 0)
	}
	if want("mpa-crc-mismatch") {
		call, reply := p.getattr()
		e := n.call(RPCMessage{RPC: call}, IWARPMessage{BadCRC: true})
		n.reply(e, RPCMessage{RPC: reply}, false, 0)
	}
	if want("mpa-crc-missing") {
		call, reply := p.getattr()
		e := n.call(RPCMessage{RPC: call}, IWARPMessage{ZeroCRC: true})
		n.reply(e, RPCMessage{RPC: reply}, false, 0)
	}
	if want("fpdu-framing-lost") {
		call, _ := p.writeInline(3001, false)
		n.call(RPCMessage{RPC: call, Size: 3001}, IWARPMessage{BadMarker: true, MaxSegment: 3001})
	}
	if want("rdmap-terminate") {
		// From the initiator; from the responder when the initiator's
		// FPDUs can no longer be followed (fpdu-framing-lost too).
		n.msgs = append(n.msgs, IWARPMessage{FromResponder: want("fpdu-framing-lost"), Opcode: layers.RDMAPOpTerminate,
			Term: &layers.RDMAPTerminate{Layer: 1, EType: 2, ErrorCode: 0x05}})
	}
}

// rpcFindings adds the steps of the RPC findings wanted, as
// Exchange.NFSTraffic does, and returns the Call to send again on the next
// connection (with its XID) and its Reply, for rpc-call-resent.
func (n *iwNFS) rpcFindings(want func(string) bool) (*RPCMessage, *RPCMessage) {
	p := n.plan
	if want("rpc-reply-error") {
		call, reply := p.procUnavail()
		n.reply(n.call(RPCMessage{RPC: call}, IWARPMessage{}), RPCMessage{RPC: reply}, false, 0)
		call, reply = p.gssDenied()
		n.reply(n.call(RPCMessage{RPC: call}, IWARPMessage{}), RPCMessage{RPC: reply}, false, 0)
	}
	var resent, resentReply *RPCMessage
	if want("rpc-call-resent") {
		call, reply := p.getattr()
		m := RPCMessage{RPC: call}
		xid := n.call(m, IWARPMessage{})
		n.send(false, xid, m, IWARPMessage{})
		n.reply(xid, RPCMessage{RPC: reply}, false, 0)
		call, reply = p.lookup("notes.txt")
		resent, resentReply = &RPCMessage{RPC: call}, &RPCMessage{RPC: reply}
		resent.XID = n.call(*resent, IWARPMessage{})
	}
	if want("rpc-call-unanswered") {
		call, _ := p.getattr()
		n.call(RPCMessage{RPC: call}, IWARPMessage{})
	}
	return resent, resentReply
}

// iwNFS builds the RDMAP messages of an NFS exchange: Calls from the
// initiator, Replies, Writes and Read Requests from the responder, Read
// Responses from the initiator; backchannel Calls from the responder and
// their Replies from the initiator.
type iwNFS struct {
	xid, cbXID, credits uint32
	plan                *nfsPlan
	msgs                []IWARPMessage
	sink                uint32 // the last Read Request's sink STag
	reads               []int  // the Read Requests not yet answered, by index in msgs
}

// call sends m as a Call with the next XID, and returns the XID.
func (n *iwNFS) call(m RPCMessage, as IWARPMessage) uint32 {
	xid := n.xid
	n.xid++
	n.send(false, xid, m, as)
	return xid
}

// send sends m with xid in a Send from the responder (fromResponder) or
// the initiator, with as's framing.
func (n *iwNFS) send(fromResponder bool, xid uint32, m RPCMessage, as IWARPMessage) {
	m.XID, m.Credits = xid, n.credits
	as.FromResponder, as.Opcode, as.Payload = fromResponder, layers.RDMAPOpSend, m.Bytes()
	if as.MaxSegment == 0 {
		as.MaxSegment = iwarpSegment
	}
	n.msgs = append(n.msgs, as)
}

func (n *iwNFS) reply(xid uint32, m RPCMessage, invalidate bool, stag uint32) {
	m.XID, m.Reply, m.Credits = xid, true, n.credits
	s := IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpSend, Payload: m.Bytes(), MaxSegment: iwarpSegment}
	if invalidate {
		s.Opcode, s.InvalidateSTag = layers.RDMAPOpSendInvalidate, stag
	}
	n.msgs = append(n.msgs, s)
}

// write is the responder's RDMA Write of data into the initiator's
// buffer (stag, to).
func (n *iwNFS) write(stag uint32, to uint64, data []byte) {
	n.msgs = append(n.msgs, IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpWrite, STag: stag, TO: to,
		Payload: data, MaxSegment: iwarpSegment})
}

// readRequest is the responder's Read of the initiator's buffer (stag,
// to), into a sink of its own.
func (n *iwNFS) readRequest(stag uint32, to uint64, size int) {
	n.sink++
	n.reads = append(n.reads, len(n.msgs))
	n.msgs = append(n.msgs, IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpReadRequest,
		Read: &layers.RDMAPReadRequest{SinkSTag: 0x00a00000 + n.sink, SinkTO: 0x1000, Size: uint32(size), SourceSTag: stag, SourceTO: to}})
}

// readResponse is the initiator's Read Response to the oldest Read
// Request outstanding (answered in order).
func (n *iwNFS) readResponse(size int) {
	if len(n.reads) == 0 {
		return
	}
	rr := n.msgs[n.reads[0]].Read
	n.reads = n.reads[1:]
	n.msgs = append(n.msgs, IWARPMessage{Opcode: layers.RDMAPOpReadResponse, STag: rr.SinkSTag, TO: rr.SinkTO,
		Payload: fill(size, 0x5a), MaxSegment: iwarpSegment})
}
