package craft

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// IWARPFindings are the iWARP-only data-path finding codes
// IWARPExchange.NFSTraffic can produce on demand, besides
// DatapathFindings.
var IWARPFindings = []string{"mpa-crc-mismatch", "mpa-crc-missing", "rdmap-terminate", "fpdu-framing-lost"}

// iwarpSegment is the largest DDP payload of the crafted FPDUs (a
// 1500-octet MTU less the headers).
const iwarpSegment = 1400

// iwarpVA is where the initiator's buffers of the NFS-like exchange start.
const iwarpVA = 0x00007f0000100000

// InlineThresholds are the inline thresholds the exchange negotiates, each
// way, as Exchange.InlineThresholds.
func (x *IWARPExchange) InlineThresholds() (toResponder, toInitiator int) {
	e := Exchange{Initiator: x.Initiator, Responder: x.Responder}
	return e.InlineThresholds()
}

// NFSTraffic builds the MPA exchange and, after it, the NFS-like exchange
// of Exchange.NFSTraffic as RDMAP messages: Calls and Replies in Sends
// (a long Call in several DDP segments), RDMA Writes into write and reply
// chunks, RDMA Reads of read chunks (a Read Request and its Read
// Response), Send with Invalidate for the Replies to Calls with chunks
// when both sides set R (or t asks). Each finding of t.Findings adds (or
// changes) a step that raises it, as on RoCE; rdma-read-limit-exceeded
// makes the exchange MPA revision 2 with a Request IRD of 1. The iWARP
// findings: mpa-crc-mismatch and mpa-crc-missing spoil the CRC of a Call's
// FPDU (CRC is in use unless x.NoCRC); rdmap-terminate ends the exchange
// with the initiator's Terminate (DDP, untagged buffer, message too long;
// the responder's, when fpdu-framing-lost is asked too);
// fpdu-framing-lost turns markers on towards the responder and spoils one
// inside a last, long Call.
func (x *IWARPExchange) NFSTraffic(t Traffic) ([]Frame, error) {
	for _, f := range t.Findings {
		if !slices.Contains(DatapathFindings, f) && !slices.Contains(IWARPFindings, f) {
			return nil, fmt.Errorf("craft: cannot produce finding %q (want one of %s, %s)", f,
				strings.Join(DatapathFindings, ", "), strings.Join(IWARPFindings, ", "))
		}
	}
	want := func(code string) bool { return slices.Contains(t.Findings, code) }
	xx := x.forFindings(want)
	inv := t.Invalidate || want("send-with-invalidate-not-allowed") ||
		!xx.Initiator.Absent && !xx.Responder.Absent && xx.Initiator.RemoteInvalidate && xx.Responder.RemoteInvalidate
	n := iwNFS{xid: 0x5f000000, credits: 32}
	n.exchange(inv, want)
	n.findings(&xx, want)
	xx.Traffic = append(slices.Clone(x.Traffic), n.msgs...)
	return xx.Frames()
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

// exchange adds the usual NFS-like exchange, the steps of
// Exchange.NFSTraffic, with Send with Invalidate for the Replies to Calls
// with chunks when inv; credits-exceeded and invalidate-stag-unknown, when
// wanted, change steps of it.
func (n *iwNFS) exchange(inv bool, want func(string) bool) {
	null := n.call(RPCMessage{}, IWARPMessage{})
	if want("credits-exceeded") {
		n.call(RPCMessage{}, IWARPMessage{})
	}
	n.reply(null, RPCMessage{}, false, 0)
	w1 := layers.RPCRDMASegment{Handle: 0x00010001, Length: 8192, Offset: iwarpVA}
	read := n.call(RPCMessage{WriteList: []layers.RPCRDMAChunk{{w1}}, Size: 164}, IWARPMessage{})
	n.write(w1.Handle, w1.Offset, 8192)
	stag := w1.Handle
	if want("invalidate-stag-unknown") {
		stag = 0x0001ffff
	}
	n.reply(read, RPCMessage{WriteList: []layers.RPCRDMAChunk{{w1}}, Size: 140}, inv || want("invalidate-stag-unknown"), stag)
	r1 := layers.RPCRDMAReadSegment{Position: 128, RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00020001, Length: 4096, Offset: iwarpVA + 0x10000}}
	write := n.call(RPCMessage{ReadList: []layers.RPCRDMAReadSegment{r1}, Size: 200}, IWARPMessage{})
	n.readRequest(r1.Handle, r1.Offset, 4096)
	n.readResponse(4096)
	n.reply(write, RPCMessage{Size: 136}, inv, r1.Handle)
	long := n.call(RPCMessage{Size: 3001}, IWARPMessage{})
	n.reply(long, RPCMessage{Size: 100}, false, 0)
	c1 := layers.RPCRDMASegment{Handle: 0x00030001, Length: 16384, Offset: iwarpVA + 0x20000}
	lr := n.call(RPCMessage{ReplyChunk: layers.RPCRDMAChunk{c1}, HasReplyChunk: true, Size: 180}, IWARPMessage{})
	n.write(c1.Handle, c1.Offset, 6000)
	got := c1
	got.Length = 6000
	n.reply(lr, RPCMessage{Proc: layers.RPCRDMANoMsg, ReplyChunk: layers.RPCRDMAChunk{got}, HasReplyChunk: true}, inv, c1.Handle)
}

// findings adds, after the usual exchange, the steps that raise the
// other findings wanted on the exchange xx.
func (n *iwNFS) findings(xx *IWARPExchange, want func(string) bool) {
	if want("inline-threshold-exceeded") {
		toRes, _ := xx.InlineThresholds()
		big := n.call(RPCMessage{Size: toRes + 4}, IWARPMessage{})
		n.reply(big, RPCMessage{}, false, 0)
	}
	if want("rpcrdma-header-invalid") {
		other := uint32(0xbad0bad0)
		n.call(RPCMessage{RPCXID: &other}, IWARPMessage{})
	}
	if want("rpcrdma-error-reply") {
		e := n.call(RPCMessage{}, IWARPMessage{})
		n.reply(e, RPCMessage{Proc: layers.RPCRDMAError, Err: layers.RPCRDMAErrChunk}, false, 0)
	}
	if want("rdma-read-limit-exceeded") {
		r2 := layers.RPCRDMAReadSegment{Position: 128, RPCRDMASegment: layers.RPCRDMASegment{Handle: 0x00040001, Length: 2048, Offset: iwarpVA + 0x30000}}
		r3 := r2
		r3.Position, r3.Handle, r3.Offset = 1152, 0x00040002, iwarpVA+0x40000
		big := n.call(RPCMessage{ReadList: []layers.RPCRDMAReadSegment{r2, r3}, Size: 220}, IWARPMessage{})
		n.readRequest(r2.Handle, r2.Offset, 2048) // two Reads at once, where the Request's IRD allows one
		n.readRequest(r3.Handle, r3.Offset, 2048)
		n.readResponse(2048)
		n.readResponse(2048)
		n.reply(big, RPCMessage{}, false, 0)
	}
	if want("mpa-crc-mismatch") {
		e := n.call(RPCMessage{}, IWARPMessage{BadCRC: true})
		n.reply(e, RPCMessage{}, false, 0)
	}
	if want("mpa-crc-missing") {
		e := n.call(RPCMessage{}, IWARPMessage{ZeroCRC: true})
		n.reply(e, RPCMessage{}, false, 0)
	}
	if want("fpdu-framing-lost") {
		n.call(RPCMessage{Size: 3001}, IWARPMessage{BadMarker: true, MaxSegment: 3001})
	}
	if want("rdmap-terminate") {
		// From the initiator; from the responder when the initiator's
		// FPDUs can no longer be followed (fpdu-framing-lost too).
		n.msgs = append(n.msgs, IWARPMessage{FromResponder: want("fpdu-framing-lost"), Opcode: layers.RDMAPOpTerminate,
			Term: &layers.RDMAPTerminate{Layer: 1, EType: 2, ErrorCode: 0x05}})
	}
}

// iwNFS builds the RDMAP messages of an NFS-like exchange: Calls from the
// initiator, Replies, Writes and Read Requests from the responder, Read
// Responses from the initiator.
type iwNFS struct {
	xid, credits uint32
	msgs         []IWARPMessage
	sink         uint32 // the last Read Request's sink STag
	reads        []int  // the Read Requests not yet answered, by index in msgs
}

func (n *iwNFS) call(m RPCMessage, as IWARPMessage) uint32 {
	m.XID, m.Credits = n.xid, n.credits
	n.xid++
	as.Opcode, as.Payload = layers.RDMAPOpSend, m.Bytes()
	if as.MaxSegment == 0 {
		as.MaxSegment = iwarpSegment
	}
	n.msgs = append(n.msgs, as)
	return m.XID
}

func (n *iwNFS) reply(xid uint32, m RPCMessage, invalidate bool, stag uint32) {
	m.XID, m.Reply, m.Credits = xid, true, n.credits
	s := IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpSend, Payload: m.Bytes(), MaxSegment: iwarpSegment}
	if invalidate {
		s.Opcode, s.InvalidateSTag = layers.RDMAPOpSendInvalidate, stag
	}
	n.msgs = append(n.msgs, s)
}

func (n *iwNFS) write(stag uint32, to uint64, size int) {
	n.msgs = append(n.msgs, IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpWrite, STag: stag, TO: to,
		Payload: fill(size, byte(stag)), MaxSegment: iwarpSegment})
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
