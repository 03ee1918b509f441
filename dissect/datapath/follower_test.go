package datapath

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The follower driven packet by packet: what the end-to-end tests in
// package dissect cannot reach easily (PSN wrap-around, NAKs, the state
// limits, the snap length, the heuristic on other protocols).

// rig is a follower with one connection 192.0.2.1 → 192.0.2.2, the
// initiator's requests to QP 0x200 from PSN psn0, the responder's to QP
// 0x100 from psn1.
type rig struct {
	t     *testing.T
	fl    *Follower
	out   *Output
	conn  *record.Connection
	conns int // connections numbered so far
	recs  []*record.RPC
	frame int
}

func newRig(t *testing.T, mode Mode, lim Limits, psn0, psn1 uint32, rpcrdma bool) *rig {
	r := &rig{t: t}
	r.out = NewOutput(mode, lim, "t")
	r.fl = NewFollower(r.out)
	c := &record.Connection{Number: 1, Transport: record.RoCEv2, Initiator: ep("192.0.2.1"), Responder: ep("192.0.2.2"), RequestFrame: 1,
		State: record.Established, Inline: &record.InlineThresholds{InitiatorToResponder: 4096, ResponderToInitiator: 4096}}
	if rpcrdma {
		c.InitiatorRPCRDMA = &record.RPCRDMA{RemoteInvalidate: true, SendSize: 4096, ReceiveSize: 4096}
		c.ResponderRPCRDMA = &record.RPCRDMA{RemoteInvalidate: false, SendSize: 4096, ReceiveSize: 4096}
	}
	conn.Decide(c) // as the tracker does before it establishes a connection
	r.conn, r.conns = c, 1
	r.fl.Connection(&conn.Event{Kind: conn.Established, Conn: c,
		Request: &record.CMInfo{LocalQPN: 0x100, StartingPSN: psn1, ResponderResources: 4, InitiatorDepth: 2, PathMTU: 1},
		Reply:   &record.CMInfo{LocalQPN: 0x200, StartingPSN: psn0, ResponderResources: 8, InitiatorDepth: 3}})
	r.frame = 3
	return r
}

// pkt sends one packet from side (0 initiator, 1 responder).
func (r *rig) pkt(side int, op uint8, psn uint32, payload []byte, wire int, set func(*Packet)) {
	r.frame++
	ini, res := Addr{10: 0xff, 11: 0xff, 12: 192, 14: 2, 15: 1}, Addr{10: 0xff, 11: 0xff, 12: 192, 14: 2, 15: 2}
	p := &Packet{Frame: r.frame, Net: NetRoCEv2, Src: ini, Dst: res, OpCode: op, DestQP: 0x200, PSN: psn & psnMask,
		Payload: payload, PayloadLen: wire}
	if side == 1 {
		p.Src, p.Dst, p.DestQP = res, ini, 0x100
	}
	if wire < 0 {
		p.PayloadLen = len(payload)
	}
	if set != nil {
		set(p)
	}
	r.fl.Packet(p)
	r.drain()
}

// drain takes the records the follower made.
func (r *rig) drain() {
	r.fl.out.releaseAll() // Calls' records would wait for their Replies (queue.go): looked at at once here
	r.recs = append(r.recs, r.fl.Take()...)
}

// ended ends connection c, as the tracker's Ended does.
func (r *rig) ended(c *record.Connection) {
	r.fl.Connection(&conn.Event{Kind: conn.Ended, Conn: c})
	r.drain()
}

// ep is the endpoint of an IP address.
func ep(s string) record.Endpoint {
	b := netip.MustParseAddr(s).As16()
	return record.IPEndpoint(b[:])
}

// rpcMsg is an RDMA_MSG header and RPC Call (or Reply) of n octets.
func rpcMsg(xid uint32, reply bool, n int) []byte {
	b := make([]byte, max(n, 36))
	be := binary.BigEndian
	be.PutUint32(b[0:], xid)
	be.PutUint32(b[4:], 1)
	be.PutUint32(b[8:], 16)
	be.PutUint32(b[28:], xid)
	if reply {
		be.PutUint32(b[32:], 1)
	}
	return b[:max(n, 36)]
}

func (r *rig) codes() []string {
	var out []string
	for _, x := range r.recs {
		for _, f := range x.Findings {
			out = append(out, f.Code.String())
		}
	}
	return out
}

// PSNs wrap around at 2^24; a READ Request takes one PSN per path MTU
// (256 octets here).
func TestFollowerPSNWrap(t *testing.T) {
	r := newRig(t, ModeAll, Limits{}, 0xfffffe, 0, true)
	call := rpcMsg(7, false, 600)
	r.pkt(0, layers.OpSendFirst, 0xfffffe, call[:256], -1, nil)
	r.pkt(0, layers.OpSendMiddle, 0xffffff, call[256:512], -1, nil)
	r.pkt(0, layers.OpSendLast, 0, call[512:], -1, nil)
	r.pkt(0, layers.OpReadRequest, 1, nil, 0, func(p *Packet) { p.DMALength = 1000 }) // 4 PSNs: 1 to 4
	r.pkt(0, layers.OpSendOnly, 5, rpcMsg(8, false, 40), -1, nil)
	if len(r.recs) != 2 || r.recs[0].Length != 600 || !r.recs[0].LengthKnown || r.recs[1].Header.XID != 8 {
		t.Fatalf("records %+v", r.recs)
	}
	d := r.fl.byConn[r.conn.Number].chk
	if d.lostCalls {
		t.Error("a gap seen where the PSNs wrapped around")
	}
}

// Reads are retired by the last packet of their response, by an ACK at or
// past them, not by a NAK at them; the limit is the lower depth.
func TestFollowerReads(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 100, 500, false)
	// The responder issues Reads: its limit is min(REP Initiator Depth 3,
	// REQ Responder Resources 4) = 3.
	for i := range 4 {
		r.pkt(1, layers.OpReadRequest, 500+uint32(i), nil, 0, func(p *Packet) { p.DMALength = 100 })
	}
	r.pkt(0, layers.OpReadResponseOnly, 500, nil, 0, nil)
	r.pkt(0, layers.OpAcknowledge, 502, nil, 0, func(p *Packet) { p.Syndrome = 0x60 }) // NAK at 502: 501 done
	r.pkt(1, layers.OpReadRequest, 504, nil, 0, func(p *Packet) { p.DMALength = 100 })
	chk := r.fl.byConn[r.conn.Number].chk
	if chk.reads[1] != 3 {
		t.Errorf("%d Reads outstanding, want 3 (502, 503, 504)", chk.reads[1])
	}
	r.pkt(0, layers.OpAcknowledge, 504, nil, 0, func(p *Packet) { p.Syndrome = 0x1f })
	if chk.reads[1] != 0 {
		t.Errorf("%d Reads outstanding after an ACK past them", chk.reads[1])
	}
	r.fl.Annotate(r.conn)
	fs := r.conn.Findings
	if len(fs) != 1 || fs[0].Code != finding.RDMAReadLimitExceeded ||
		!strings.Contains(fs[0].Message, "frame 7: 4 RDMA Read Requests outstanding from the responder, more than the 3") ||
		!strings.Contains(fs[0].Message, "REP Initiator Depth 3, REQ Responder Resources 4") {
		t.Errorf("findings %+v", fs)
	}
	if d := r.conn.Datapath; d.MaxOutstandingRDMAReads != [2]int{0, 4} || d.RDMAReadLimit != [2]int{2, 3} {
		t.Errorf("%+v", d)
	}
	// A Read not RPC-over-RDMA traffic still counts: no RPC findings.
	if len(r.recs) != 0 || r.out.RPCMessages != 0 {
		t.Errorf("records on a connection that is not RPC-over-RDMA: %d", len(r.recs))
	}
}

// The heuristic decides from the first Sends, and keeps out what is not
// RPC-over-RDMA: NVMe-oF capsules are not taken for it.
func TestFollowerHeuristic(t *testing.T) {
	r := newRig(t, ModeAll, Limits{}, 0, 0, false)
	nvme := make([]byte, 64) // an NVMe-oF command capsule: opcode 0x7f (Fabrics), NSID 0
	nvme[0] = 0x7f
	for i := range 6 {
		r.pkt(0, layers.OpSendOnly, uint32(i), nvme, -1, nil)
	}
	if len(r.recs) != 0 || r.fl.byConn[r.conn.Number].chk.Rule() != RuleNone {
		t.Errorf("NVMe taken for RPC-over-RDMA: %d records, rule %v", len(r.recs), r.fl.byConn[r.conn.Number].chk.Rule())
	}
	r = newRig(t, ModeAll, Limits{}, 0, 0, false)
	r.pkt(0, layers.OpSendOnly, 0, rpcMsg(1, false, 40), -1, nil)
	r.pkt(1, layers.OpSendOnly, 0, rpcMsg(1, true, 40), -1, nil)
	if len(r.recs) != 2 || r.fl.byConn[r.conn.Number].chk.Rule() != RuleHeuristic {
		t.Fatalf("RPC-over-RDMA not found by the heuristic: %d records", len(r.recs))
	}
	r.fl.Annotate(r.conn)
	if r.conn.Datapath.Rule != RuleHeuristic.String() {
		t.Errorf("rule %q", r.conn.Datapath.Rule)
	}
	for _, c := range []struct {
		conn *record.Connection
		want Rule
	}{
		{&record.Connection{InitiatorRPCRDMA: &record.RPCRDMA{}}, RulePrivateData},
		{&record.Connection{ResponderRPCRDMA: &record.RPCRDMA{}}, RulePrivateData},
		{&record.Connection{HasServiceID: true, ServiceID: 0x0000000001064e51}, RuleService},
		{&record.Connection{HasServiceID: true, ServiceID: 0x000000000106114c}, RuleUndecided},
		{&record.Connection{HasPort: true, Port: 20049}, RuleService},
		{&record.Connection{HasServiceID: true, ServiceID: 0x2000000000004e51}, RuleUndecided}, // not an IP CM Service ID
		{&record.Connection{HasServiceID: true, ServiceID: 0x1000000000004e51}, RuleOtherULP},  // IPoIB connected mode's
	} {
		conn.Decide(c.conn) // the connection rules decide, the traffic rule reads it
		if got := setupRule(c.conn); got != c.want {
			t.Errorf("setupRule(%+v) = %v, want %v", c.conn, got, c.want)
		}
	}
}

// The Linux case: the server advertised R=0, the client R=1, and the server
// invalidates all the same.
func TestFollowerLinuxInvalidate(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 0, 0, true)
	call := rpcMsg(9, false, 64)
	binary.BigEndian.PutUint32(call[20:], 1)                                                                                           // a write chunk of one segment, handle 0x77
	b := append(append(append([]byte(nil), call[:24]...), 0, 0, 0, 1, 0, 0, 0, 0x77, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), // count, segment, the list's end
		call[24:]...)
	r.pkt(0, layers.OpSendOnly, 0, b, -1, nil)
	r.pkt(1, layers.OpSendOnlyInvalidate, 0, rpcMsg(9, true, 40), -1, func(p *Packet) { p.IETH = 0x77 })
	if got := r.codes(); !reflect.DeepEqual(got, []string{"send-with-invalidate-not-allowed"}) {
		t.Fatalf("findings %v", got)
	}
	msg := r.recs[0].Findings[0].Message
	if !strings.Contains(msg, "the responder itself advertised R=0 and only the initiator set R (Linux servers do exactly this)") {
		t.Errorf("message %q", msg)
	}
}

// A Send the capture's snap length cut inside its header is not judged:
// capture-truncated says so; its length still comes from the headers (19
// packets at the path MTU of 256, the capture keeping 20 octets of each,
// and a Last of 136).
func TestFollowerSnapLength(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 0, 0, true)
	msg := rpcMsg(3, false, 5000)
	for i := range 20 {
		op, n := uint8(layers.OpSendMiddle), 256
		switch i {
		case 0:
			op = layers.OpSendFirst
		case 19:
			op, n = layers.OpSendLast, 136
		}
		r.pkt(0, op, uint32(i), msg[i*256:i*256+20], n, nil)
	}
	if got := r.codes(); !slices.Equal(got, []string{"inline-threshold-exceeded", "capture-truncated"}) {
		t.Errorf("findings %v", got)
	}
	if r.recs[0].Length != 5000 || r.recs[0].Header == nil || r.recs[0].Header.XID != 3 {
		t.Errorf("record %+v", r.recs[0])
	}
}

// The state limits: directions without a setup beyond Limits.Directions
// (the least recently active given up, and said), Calls beyond
// CallsPerConnection, multi-packet Sends beyond HeadBuffers.
func TestFollowerLimits(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{Directions: 2, CallsPerConnection: 2, HeadBuffers: 1}, 0, 0, true)
	for i := range 3 { // three Calls without a Reply: the third is not followed
		r.pkt(0, layers.OpSendOnly, uint32(i), rpcMsg(uint32(i), false, 40), -1, nil)
	}
	// The second makes 2 outstanding over a grant of 1; the third is not
	// followed (so not counted either).
	want := []string{"credits-exceeded", "state-limit-reached"}
	if got := r.codes(); !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	if r.out.CallsUntracked != 1 {
		t.Errorf("%d Calls untracked", r.out.CallsUntracked)
	}
	// Two multi-packet Sends in progress at once (one per side) with one
	// head buffer: the second's first octets are not kept.
	r.recs = nil
	call := rpcMsg(10, false, 500)
	r.pkt(0, layers.OpSendFirst, 3, call[:256], -1, nil)
	r.pkt(1, layers.OpSendFirst, 0, call[:256], -1, nil)
	r.pkt(1, layers.OpSendLast, 1, call[256:], -1, nil)
	r.pkt(0, layers.OpSendLast, 4, call[256:], -1, nil)
	if r.fl.HeadsRefused != 1 || len(r.recs) != 2 || r.recs[0].Header != nil ||
		!strings.Contains(r.recs[0].Findings[0].Message, "were not kept") {
		t.Errorf("heads refused %d, records %+v", r.fl.HeadsRefused, r.recs)
	}
	// Directions without a setup: 3 at a limit of 2.
	for i := range 3 {
		r.fl.Packet(&Packet{Frame: 100 + i, Net: NetRoCEv2, Src: Addr{15: byte(i)}, Dst: Addr{15: 9}, OpCode: layers.OpSendOnly,
			DestQP: 7, Payload: rpcMsg(1, false, 40), PayloadLen: 40})
	}
	if r.fl.OrphanEvictions != 1 || r.fl.OrphanFrames != 3 {
		t.Errorf("evictions %d, frames of no connection %d", r.fl.OrphanEvictions, r.fl.OrphanFrames)
	}
	// Each holder that dropped something says how many in one note (the
	// Call of the first multi-packet Send was not followed either).
	checkDropNotes(t, r.fl, map[record.DropHolder]int{record.DropRCDirections: 1, record.DropCalls: 2, record.DropSendBuffers: 1})
}

// dropNoteWords tell the note of each holder of the data path.
var dropNoteWords = map[record.DropHolder]string{
	record.DropRCDirections:  "of RC traffic without",
	record.DropRCConnections: "RC traffic was given up",
	record.DropCalls:         " not followed: more than",
	record.DropSendBuffers:   "(--max-send-buffers)",
	record.DropRDMAReads:     "came while 256 of the same side",
	record.DropReadLists:     "chunk lists that run past",
	record.DropOrphanPackets: "came without the SEND First",
}

// checkDropNotes checks that the follower counts exactly the drops want
// by holder, and that its notes say each holder's count, one note each.
func checkDropNotes(t *testing.T, fl *Follower, want map[record.DropHolder]int) {
	t.Helper()
	got := map[record.DropHolder]int{}
	fl.Drops(func(h record.DropHolder, n int) {
		if n > 0 {
			got[h] += n
		}
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("drops %v, want %v", got, want)
	}
	said := map[record.DropHolder]int{}
	for _, n := range fl.Notes() {
		for h, words := range dropNoteWords {
			if n.Code == finding.StateLimitReached && strings.Contains(n.Message, words) {
				var count int
				if _, err := fmt.Sscanf(n.Message[strings.Index(n.Message, ": ")+2:], "%d", &count); err != nil {
					t.Errorf("note %q: %v", n.Message, err)
				}
				if _, dup := said[h]; dup {
					t.Errorf("two notes for %v", h)
				}
				said[h] = count
			}
		}
	}
	if !reflect.DeepEqual(said, want) {
		t.Errorf("notes say %v, want %v", said, want)
	}
}

// Sends still in progress at the end of the input are handed on, in the
// order of their last frames; a DREP ends the connection's matching.
func TestFollowerFlushAndEnd(t *testing.T) {
	r := newRig(t, ModeAll, Limits{}, 0, 0, true)
	call := rpcMsg(11, false, 600)
	r.pkt(1, layers.OpSendFirst, 0, call[:256], -1, nil)
	r.pkt(0, layers.OpSendFirst, 0, call[:256], -1, nil)
	r.fl.Flush()
	r.drain()
	if len(r.recs) != 2 || r.recs[0].Frame != 4 || r.recs[1].Frame != 5 || r.recs[0].LengthKnown {
		t.Fatalf("flushed %+v", r.recs)
	}
	r.ended(r.conn)
	r.pkt(0, layers.OpSendOnly, 1, rpcMsg(12, false, 40), -1, nil)
	if r.fl.OrphanFrames != 1 {
		t.Errorf("a frame after the end still matched the connection")
	}
	// After the record was handed on, what the traffic shows later comes
	// in an update: the figures as they are then, and the findings the
	// record did not get (a state limit, live capture).
	r2 := newRig(t, ModeFindings, Limits{}, 0, 0, false)
	r2.pkt(1, layers.OpSendOnly, 0, nil, 0, nil) // traffic before the record goes out
	r2.fl.Annotate(r2.conn)
	if r2.conn.Datapath == nil || r2.conn.Datapath.Frames != 1 || len(r2.conn.Findings) != 0 {
		t.Fatalf("record handed on with %+v, %v", r2.conn.Datapath, r2.conn.Findings)
	}
	for i := range 5 {
		r2.pkt(1, layers.OpReadRequest, 1+uint32(i), nil, 0, func(p *Packet) { p.DMALength = 1 })
	}
	r2.fl.Finish()
	us := r2.fl.TakeUpdates()
	if len(us) != 1 || us[0].Number != r2.conn.Number || us[0].RequestFrame != 1 || us[0].Datapath == nil || us[0].Datapath.Frames != 6 ||
		len(us[0].Findings) != 1 || us[0].Findings[0].Code != finding.RDMAReadLimitExceeded {
		t.Errorf("updates %+v", us)
	}
	r2.fl.Finish() // nothing new since: no update
	if notes, us := r2.fl.Notes(), r2.fl.TakeUpdates(); len(notes) != 0 || len(us) != 0 {
		t.Errorf("notes %+v, updates %+v after the update", notes, us)
	}

	// A record handed on before any of its traffic: its first frame and
	// all its findings come in the update made when the connection ends.
	r3 := newRig(t, ModeFindings, Limits{}, 0, 0, false)
	r3.fl.Annotate(r3.conn)
	if r3.conn.Datapath != nil {
		t.Fatalf("figures before any traffic: %+v", r3.conn.Datapath)
	}
	for i := range 4 {
		r3.pkt(1, layers.OpReadRequest, uint32(i), nil, 0, func(p *Packet) { p.DMALength = 1 })
	}
	r3.ended(r3.conn)
	us = r3.fl.TakeUpdates()
	if len(us) != 1 || us[0].Datapath == nil || us[0].Datapath.Frames != 4 || len(us[0].Findings) != 1 ||
		us[0].Findings[0].Code != finding.RDMAReadLimitExceeded {
		t.Errorf("update %+v, figures %+v", us[0], us[0].Datapath)
	}
}

// extra establishes another connection between the rig's addresses: the
// initiator's requests to QP qp, the responder's to qp+1, from PSN 0.
func (r *rig) extra(qp uint32) *record.Connection {
	r.frame++
	r.conns++
	c := &record.Connection{Number: r.conns, Transport: record.RoCEv2, Initiator: ep("192.0.2.1"), Responder: ep("192.0.2.2"), RequestFrame: r.frame,
		State: record.Established, InitiatorRPCRDMA: &record.RPCRDMA{SendSize: 4096, ReceiveSize: 4096},
		Inline: &record.InlineThresholds{InitiatorToResponder: 4096, ResponderToInitiator: 4096}}
	conn.Decide(c)
	r.fl.Connection(&conn.Event{Kind: conn.Established, Conn: c, Frame: r.frame,
		Request: &record.CMInfo{LocalQPN: qp + 1, ResponderResources: 4, InitiatorDepth: 2, PathMTU: 1},
		Reply:   &record.CMInfo{LocalQPN: qp, ResponderResources: 8, InitiatorDepth: 3}})
	r.drain()
	return c
}

// to sends one packet from the initiator to QP qp.
func (r *rig) to(qp uint32, op uint8, psn uint32, payload []byte) {
	r.pkt(0, op, psn, payload, -1, func(p *Packet) { p.DestQP = qp })
}

// Connections beyond Limits.Connections: the least recently active is given
// up, its Send in progress delivered, its figures and a state-limit-reached
// on its record; its later frames are of no connection.
func TestFollowerConnectionLimit(t *testing.T) {
	r := newRig(t, ModeAll, Limits{Connections: 2}, 0, 0, true) // the rig's connection: QP 0x200
	b := r.extra(0x300)
	r.pkt(0, layers.OpSendOnly, 0, rpcMsg(1, false, 40), -1, nil) // the rig's connection is active
	call := rpcMsg(2, false, 600)
	r.to(0x300, layers.OpSendFirst, 0, call[:256])
	r.fl.byConn[b.Number].used = false // b was active before the hand last passed
	r.fl.byConn[r.conn.Number].used = true
	c := r.extra(0x400)
	if r.fl.ConnectionsRetired != 1 || r.fl.byConn[b.Number] != nil || r.fl.byConn[r.conn.Number] == nil || r.fl.byConn[c.Number] == nil {
		t.Fatalf("retired %d; followed: rig %v, b %v, c %v", r.fl.ConnectionsRetired,
			r.fl.byConn[r.conn.Number] != nil, r.fl.byConn[b.Number] != nil, r.fl.byConn[c.Number] != nil)
	}
	if len(r.recs) != 2 || r.recs[1].Header.XID != 2 || r.recs[1].LengthKnown {
		t.Errorf("the Send in progress was not delivered as far as it came: %+v", r.recs)
	}
	r.fl.Annotate(b) // its record goes out
	if d := b.Datapath; d == nil || d.Frames != 1 || d.RPCMessages != [2]int{1, 0} {
		t.Errorf("figures of the retired connection %+v", d)
	}
	if len(b.Findings) != 1 || b.Findings[0].Code != finding.StateLimitReached ||
		!strings.Contains(b.Findings[0].Message, "more than 2 connections' traffic was followed at once: this one's, the least recently active, was given up at frame 7") {
		t.Errorf("findings %+v", b.Findings)
	}
	r.fl.Annotate(b) // nothing is added twice
	if len(b.Findings) != 1 {
		t.Errorf("findings added again: %+v", b.Findings)
	}
	r.to(0x300, layers.OpSendLast, 1, call[256:])
	if r.fl.OrphanFrames != 1 {
		t.Errorf("%d frames of no connection", r.fl.OrphanFrames)
	}
	r.to(0x400, layers.OpSendOnly, 0, rpcMsg(3, false, 40))
	if len(r.recs) != 3 || r.recs[2].Connection != c.RequestFrame {
		t.Errorf("the new connection is not followed: %+v", r.recs)
	}
}

// A DREP ends a connection: its Send in progress is delivered then, its
// figures go to its record, and the follower forgets it.
func TestFollowerEndDelivers(t *testing.T) {
	r := newRig(t, ModeAll, Limits{}, 0, 0, true)
	r.pkt(0, layers.OpSendFirst, 0, rpcMsg(5, false, 600)[:256], -1, nil)
	r.ended(r.conn)
	if len(r.recs) != 1 || r.recs[0].LengthKnown || r.recs[0].Header.XID != 5 {
		t.Errorf("records %+v", r.recs)
	}
	r.fl.Annotate(r.conn) // its record goes out
	if r.conn.Datapath == nil || r.conn.Datapath.Frames != 1 || len(r.fl.byConn) != 0 || len(r.fl.conns) != 0 || r.fl.bufsOut != 0 {
		t.Errorf("figures %+v; still held: %d connections, %d buffers", r.conn.Datapath, len(r.fl.byConn), r.fl.bufsOut)
	}
}

// Memory a connection's burst leaves: the Calls' capacity shrinks as they
// are answered; a Send that finds no buffer keeps its first four frames,
// and says so.
func TestFollowerKeepsLittle(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{HeadBuffers: 1}, 0, 0, true)
	for i := range 1000 {
		r.pkt(0, layers.OpSendOnly, uint32(i), rpcMsg(uint32(i), false, 40), -1, nil)
	}
	chk := r.fl.byConn[r.conn.Number].chk
	if len(chk.calls) != 1000 {
		t.Fatalf("%d Calls outstanding", len(chk.calls))
	}
	for i := range 1000 {
		r.pkt(1, layers.OpSendOnly, uint32(i), rpcMsg(uint32(i), true, 40), -1, nil)
	}
	if len(chk.calls) != 0 || cap(chk.calls) > keptCalls || r.out.calls != 0 {
		t.Errorf("%d Calls (capacity %d) after every Reply", len(chk.calls), cap(chk.calls))
	}
	r.recs = nil
	long := rpcMsg(6, false, 256*8)
	r.pkt(1, layers.OpSendFirst, 1000, long[:256], -1, nil) // takes the one buffer
	r.pkt(0, layers.OpSendFirst, 1000, long[:256], -1, nil)
	for i := 1; i < 7; i++ {
		r.pkt(0, layers.OpSendMiddle, 1000+uint32(i), long[256*i:256*(i+1)], -1, nil)
	}
	r.pkt(0, layers.OpSendLast, 1007, long[256*7:], -1, nil)
	if len(r.recs) != 1 || len(r.recs[0].Frames) != 4 || r.recs[0].Length != 2048 {
		t.Fatalf("records %+v", r.recs)
	}
	var msgs []string
	for _, f := range r.recs[0].Findings {
		msgs = append(msgs, f.Message)
	}
	if !slices.Contains(msgs, "the Send has 8 frames; the first 4 are listed") {
		t.Errorf("findings %q", msgs)
	}
}

// What a Send's packets show wrong in their lengths goes to the Send's
// "rpc" record: length fields that claim more than the wire carried
// (length-mismatch, the packet's length taken from the frame), payloads
// that break the path MTU rule (rc-packet-length-invalid, and the Send is
// not judged against the inline threshold). Packets part of no
// RPC-over-RDMA Send are counted for the run instead.
func TestFollowerLengthFlaws(t *testing.T) {
	lie := func(s string) func(*Packet) { return func(p *Packet) { p.LengthLie = s } }
	call := rpcMsg(1, false, 256)
	t.Run("a First short of the path MTU", func(t *testing.T) {
		r := newRig(t, ModeFindings, Limits{}, 0, 0, true)
		r.pkt(0, layers.OpSendFirst, 0, call[:200], -1, nil)
		r.pkt(0, layers.OpSendLast, 1, make([]byte, 100), -1, nil)
		if len(r.recs) != 1 || len(r.recs[0].Findings) != 1 || r.recs[0].Findings[0].Message !=
			"one of the Send's packets breaks the path MTU rule (frame 4: a SEND_FIRST of 200 octets, where the path MTU of 256 makes every First and Middle packet exactly that long): the Send's length is not judged against the inline threshold" {
			t.Errorf("records %+v", r.recs)
		}
	})
	t.Run("Middles that lie and are too long: not judged", func(t *testing.T) {
		r := newRig(t, ModeFindings, Limits{}, 0, 0, true)
		r.pkt(0, layers.OpSendFirst, 0, call, -1, nil)
		for i := range 3 { // 3 × 5000 octets: past the 4096 threshold, but not judged
			r.pkt(0, layers.OpSendMiddle, uint32(1+i), nil, 5000, lie("UDP Length 65535 puts the end of the packet ..."))
		}
		r.pkt(0, layers.OpSendLast, 4, make([]byte, 100), -1, nil)
		want := []string{"length-mismatch", "rc-packet-length-invalid"}
		if got := r.codes(); !slices.Equal(got, want) {
			t.Fatalf("findings %v, want %v", got, want)
		}
		if m := r.recs[0].Findings[0].Message; m != "length fields of 3 of the Send's packets claim more than their frames carried on the wire; their lengths were taken from the frames (the first, frame 5: UDP Length 65535 puts the end of the packet ...)" {
			t.Errorf("length-mismatch %q", m)
		}
		if m := r.recs[0].Findings[1].Message; m != "3 of the Send's packets break the path MTU rule (the first, frame 5: a SEND_MIDDLE of 5000 octets, where the path MTU of 256 makes every First and Middle packet exactly that long): the Send's length is not judged against the inline threshold" {
			t.Errorf("rc-packet-length-invalid %q", m)
		}
		if f := r.chk().Figures(); f.LargestInline[0] != 0 {
			t.Errorf("largest inline %d", f.LargestInline[0])
		}
		if n := r.fl.Notes(); len(n) != 0 {
			t.Errorf("notes %+v", n)
		}
	})
	t.Run("a Send Only over the path MTU", func(t *testing.T) {
		r := newRig(t, ModeFindings, Limits{}, 0, 0, true)
		r.pkt(0, layers.OpSendOnly, 0, call, 300, nil)
		if got := r.codes(); !slices.Equal(got, []string{"rc-packet-length-invalid"}) {
			t.Errorf("findings %v", got)
		}
	})
	t.Run("part of no RPC-over-RDMA Send: the run's notes", func(t *testing.T) {
		r := newRig(t, ModeFindings, Limits{}, 0, 0, true)
		r.pkt(0, layers.OpWriteOnly, 0, nil, 100, lie("IPv4 Total Length 9000 puts ...")) // not a Send
		r.pkt(0, layers.OpSendMiddle, 1, nil, 100, lie("UDP Length 9000 puts ..."))       // no First
		r.pkt(0, layers.OpWriteOnly, 0, nil, 100, lie("IPv4 Total Length 9000 puts ...")) // a retransmission
		notes := r.fl.Notes()
		var got []string
		for _, n := range notes {
			got = append(got, n.Code.String()+": "+n.Message)
		}
		want := []string{
			"state-limit-reached: t: 1 SEND Middle or Last packet came without the SEND First of the Send (it is not in the capture): not reassembled or checked",
			"length-mismatch: t: the length fields of 3 RC packets part of no RPC-over-RDMA Send claim more than their frames carried on the wire; their lengths were taken from the frames (first at frame 4: IPv4 Total Length 9000 puts ...)",
			"rc-packet-length-invalid: t: 1 SEND packet part of no RPC-over-RDMA message breaks the path MTU rule (first at frame 5: a SEND_MIDDLE of 100 octets, where the path MTU of 256 makes every First and Middle packet exactly that long)",
		}
		if !slices.Equal(got, want) {
			t.Errorf("notes\n got %q\nwant %q", got, want)
		}
	})
	t.Run("a Send of another upper layer: the run's notes", func(t *testing.T) {
		r := newRig(t, ModeFindings, Limits{}, 0, 0, false)
		r.pkt(0, layers.OpSendOnly, 0, make([]byte, 64), 300, lie("UDP Length 9000 puts ..."))
		var got []string
		for _, n := range r.fl.Notes() {
			got = append(got, n.Code.String())
		}
		if !slices.Equal(got, []string{"length-mismatch", "rc-packet-length-invalid"}) || len(r.recs) != 0 {
			t.Errorf("notes %v, records %d", got, len(r.recs))
		}
	})
}

// TestResultCost: what a result kept for its record is charged is close to
// what it takes on the heap (the budget bounds the results of connections
// whose traffic ended before their records went).
func TestResultCost(t *testing.T) {
	const n = 20000
	b := budget.New(1 << 30)
	fl := NewFollower(NewOutput(ModeFindings, Limits{Budget: b}, ""))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		f := finding.New(finding.StateLimitReached,
			"more than %d connections' traffic was followed at once: this one's, none of which had come yet, was given up at frame %d; frames of it after that are counted as of no connection", 8192, i)
		fl.ended(i+1, &handed{}, i, record.RoCEv2, Peers{}, result{fig: &record.Datapath{Frames: i}, findings: []finding.Finding{f}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc-before.HeapAlloc) / n
	charged := float64(b.Stats().Used) / n
	t.Logf("%.0f octets of heap a result, %.0f charged", heap, charged)
	if charged < 0.9*heap || charged > 2*heap {
		t.Errorf("%.0f octets charged a result for %.0f on the heap", charged, heap)
	}
	for i := range n {
		fl.Annotate(&record.Connection{Number: i + 1})
	}
	if len(fl.results) != 0 || b.Stats().Used != 0 {
		t.Errorf("%d results, %d octets charged after their records went", len(fl.results), b.Stats().Used)
	}
	runtime.KeepAlive(fl)
}

// TestParkCost: connections set aside before their traffic (parkCost) and
// their tombstones once given up (tombCost) are charged about what they
// take on the heap; a parked connection is followed again at its first
// frame, and one given up says so only when its traffic comes.
func TestParkCost(t *testing.T) {
	const n = 20000
	b := budget.New(1 << 30)
	out := NewOutput(ModeFindings, Limits{Budget: b, Connections: 1}, "")
	fl := NewFollower(out)
	establish := func(i int) {
		c := &record.Connection{Number: i + 1, Transport: record.RoCEv2, Initiator: ep(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&0xff, i&0xff)),
			Responder: ep("192.0.2.2"), RequestFrame: 3*i + 1, State: record.Established, Inline: &record.InlineThresholds{InitiatorToResponder: 1024, ResponderToInitiator: 1024}}
		fl.Connection(&conn.Event{Kind: conn.Established, Conn: c, Frame: 3*i + 3,
			Request: &record.CMInfo{LocalQPN: 0x100, ResponderResources: 1, InitiatorDepth: 1, PathMTU: 1},
			Reply:   &record.CMInfo{LocalQPN: 0x200, ResponderResources: 1, InitiatorDepth: 1}})
	}
	var before, mid, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		establish(i) // each parks the one before: at most one connection followed
	}
	runtime.GC()
	runtime.ReadMemStats(&mid)
	heap, charged := float64(mid.HeapAlloc-before.HeapAlloc)/n, float64(b.Stats().Used)/n
	t.Logf("parked: %.0f octets of heap a connection, %.0f charged", heap, charged)
	if fl.nParked != n-1 || charged < 0.9*heap || charged > 2*heap {
		t.Errorf("%d parked: %.0f octets charged a connection for %.0f on the heap", fl.nParked, charged, heap)
	}
	// Connections followed, each with a frame of its traffic: what they
	// are charged (connCost, which covers their traffic's state).
	{
		ab := budget.New(1 << 30)
		af := NewFollower(NewOutput(ModeFindings, Limits{Budget: ab, Connections: 2 * n}, ""))
		runtime.GC()
		runtime.ReadMemStats(&mid)
		for i := range n {
			c := &record.Connection{Number: i + 1, Transport: record.RoCEv2, Initiator: ep(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&0xff, i&0xff)),
				Responder: ep("192.0.2.2"), RequestFrame: 3*i + 1, State: record.Established, Inline: &record.InlineThresholds{InitiatorToResponder: 1024, ResponderToInitiator: 1024}}
			af.Connection(&conn.Event{Kind: conn.Established, Conn: c, Frame: 3*i + 3,
				Request: &record.CMInfo{LocalQPN: 0x100, ResponderResources: 1, InitiatorDepth: 1, PathMTU: 1},
				Reply:   &record.CMInfo{LocalQPN: 0x200, ResponderResources: 1, InitiatorDepth: 1}})
			af.Packet(&Packet{Frame: 3*i + 4, Net: NetRoCEv2, Src: c.Initiator.Addr, Dst: c.Responder.Addr, OpCode: layers.OpReadRequest, DestQP: 0x200, DMALength: 64})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap, charged := float64(after.HeapAlloc-mid.HeapAlloc)/n, float64(ab.Stats().Used)/n
		t.Logf("followed, traffic begun: %.0f octets of heap a connection, %.0f charged", heap, charged)
		if charged < 0.9*heap || charged > 2*heap {
			t.Errorf("followed: %.0f octets charged a connection for %.0f on the heap", charged, heap)
		}
		runtime.KeepAlive(af)
	}
	// Tombstones alone (the parked connections' index entries leave the
	// index's room behind, which is measured apart from them): as many
	// again, buried straight.
	tb := budget.New(1 << 30)
	tf := NewFollower(NewOutput(ModeFindings, Limits{Budget: tb}, ""))
	runtime.GC()
	runtime.ReadMemStats(&mid)
	for i := range n {
		var src, dst Addr
		binary.BigEndian.PutUint32(src[12:], uint32(i))
		tf.bury(&flow{id: i + 1, net: NetRoCEv2, keys: [2]flowKey{{NetRoCEv2, src, dst, 0x200}, {NetRoCEv2, dst, src, 0x100}}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap, charged = float64(after.HeapAlloc-mid.HeapAlloc)/n, float64(tb.Stats().Used)/n
	t.Logf("tombstones: %.0f octets of heap each, %.0f charged", heap, charged)
	if len(tf.tombIDs) != n || charged < 0.9*heap || charged > 2*heap {
		t.Errorf("%d tombstones: %.0f octets charged each for %.0f on the heap", len(tf.tombIDs), charged, heap)
	}
	runtime.KeepAlive(tf)
	for fl.dropParked() {
	}
	// The traffic of the first connection comes: its record (not yet
	// handed on) is told, and the tombstone goes.
	fl.Packet(&Packet{Frame: 100000, Net: NetRoCEv2, Src: addrOf("10.0.0.0"), Dst: addrOf("192.0.2.2"), OpCode: layers.OpSendOnly, DestQP: 0x200})
	c := &record.Connection{Number: 1}
	fl.Annotate(c)
	if len(c.Findings) != 1 || !strings.Contains(c.Findings[0].Message, "given up before its traffic, which began at frame 100000") ||
		fl.ConnectionsRetired != 1 || len(fl.tombIDs) != n-2 {
		t.Errorf("findings %v, retired %d, %d tombstones", c.Findings, fl.ConnectionsRetired, len(fl.tombIDs))
	}
	runtime.KeepAlive(fl)
}

// addrOf is the Addr of an IPv4 address.
func addrOf(s string) Addr { return Addr(netip.MustParseAddr(s).As16()) }

// TestShed: a full budget that the data path holds the most of has it give
// up an eighth of what it holds, the least recently active connections
// first: one whose traffic has not begun is set aside (no finding), one
// whose traffic has begun is given up and says so on its record.
func TestShed(t *testing.T) {
	const n = 64
	for _, begun := range []bool{false, true} {
		b := budget.New(1 << 30)
		fl := NewFollower(NewOutput(ModeFindings, Limits{Budget: b, Connections: 2 * n}, ""))
		for i := range n {
			c := &record.Connection{Number: i + 1, Transport: record.RoCEv2, Initiator: ep(fmt.Sprintf("10.0.0.%d", i+1)),
				Responder: ep("192.0.2.2"), RequestFrame: 3*i + 1, State: record.Established, Inline: &record.InlineThresholds{InitiatorToResponder: 1024, ResponderToInitiator: 1024}}
			fl.Connection(&conn.Event{Kind: conn.Established, Conn: c, Frame: 3*i + 3,
				Request: &record.CMInfo{LocalQPN: 0x100, ResponderResources: 1, InitiatorDepth: 1, PathMTU: 1},
				Reply:   &record.CMInfo{LocalQPN: 0x200, ResponderResources: 1, InitiatorDepth: 1}})
			if begun {
				fl.Packet(&Packet{Frame: 1000 + i, Net: NetRoCEv2, Src: c.Initiator.Addr, Dst: c.Responder.Addr, OpCode: layers.OpReadRequest, DestQP: 0x200, DMALength: 64})
			}
		}
		before := b.Stats().Held[budget.Datapath]
		fl.Shed(2000)
		after := b.Stats().Held[budget.Datapath]
		if after > before*7/8 || after < before*3/4 {
			t.Errorf("begun %v: held %d, then %d after Shed: not an eighth less", begun, before, after)
		}
		gone := n - len(fl.conns)
		if gone == 0 || begun && (fl.ConnectionsRetired != gone || fl.nParked != 0) || !begun && (fl.nParked != gone || fl.ConnectionsRetired != 0) {
			t.Errorf("begun %v: %d followed, %d parked, %d given up", begun, len(fl.conns), fl.nParked, fl.ConnectionsRetired)
		}
		said := 0
		for i := range n {
			c := &record.Connection{Number: i + 1}
			fl.Annotate(c)
			for _, f := range c.Findings {
				if f.Code == finding.StateLimitReached && strings.Contains(f.Message, "was given up at frame 2000") {
					said++
				}
			}
		}
		if begun && said != gone || !begun && said != 0 {
			t.Errorf("begun %v: %d of %d connections given up say so", begun, said, gone)
		}
	}
}
