package datapath

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The Checker on its own, fed Sends, Read Requests and completions as a
// transport would: what it says of each RPC-over-RDMA message, of the
// connection, and the figures it keeps. The expectations are worked out from
// RFC 8166 (the transport header, credits, chunks), RFC 8797 (inline
// thresholds, remote invalidation) and the IBTA and RFC 6581 Read depths,
// as the findings' catalogue entries cite them. The checks of checks.go,
// header.go, calls.go and conn_findings.go one by one are in
// checks_test.go.

// words is XDR: each value a big-endian 4-octet word.
func words(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.BigEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// rpcCall is an ONC RPC Call (RFC 5531): xid, CALL, RPC version 2, NFS
// (100003) version 3 procedure NULL, AUTH_NONE credential and verifier.
func rpcCall(xid uint32) []byte { return words(xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0) }

// rpcReply is an accepted, successful Reply: xid, REPLY, MSG_ACCEPTED,
// AUTH_NONE verifier, SUCCESS.
func rpcReply(xid uint32) []byte { return words(xid, 1, 0, 0, 0, 0) }

// encode writes an RPC-over-RDMA header (RFC 8166, section 4) and what
// follows it.
func encode(h *layers.RPCRDMAHeader, rest []byte) []byte {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, h, gopacket.Payload(rest)); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// hdr is a version 1 header of procedure proc.
func hdr(xid, credit, proc uint32) *layers.RPCRDMAHeader {
	return &layers.RPCRDMAHeader{XID: xid, Vers: 1, Credit: credit, Proc: proc}
}

// callOf is an RDMA_MSG carrying a Call: 28 + 40 octets.
func callOf(xid uint32) []byte { return encode(hdr(xid, 32, layers.RPCRDMAMsg), rpcCall(xid)) }

// replyOf is an RDMA_MSG carrying the Reply to XID xid and granting
// credit: 28 + 24 octets.
func replyOf(xid, credit uint32) []byte {
	return encode(hdr(xid, credit, layers.RPCRDMAMsg), rpcReply(xid))
}

// sized pads a Send with zeros (its RPC message's arguments or results) to
// n octets.
func sized(b []byte, n int) []byte { return append(b, make([]byte, n-len(b))...) }

// seg is an RDMA segment (RFC 8166: handle, length, offset) of the handle
// given.
func seg(handle uint32) layers.RPCRDMASegment {
	return layers.RPCRDMASegment{Handle: handle, Length: 4096, Offset: 0x7f0000001000}
}

// chunked is an RDMA_MSG Call advertising a read chunk, a write chunk and
// a reply chunk, of the handles given (0: none).
func chunked(xid, read, write, reply uint32) []byte {
	h := hdr(xid, 32, layers.RPCRDMAMsg)
	if read != 0 {
		h.ReadList = []layers.RPCRDMAReadSegment{{Position: 40, RPCRDMASegment: seg(read)}}
	}
	if write != 0 {
		h.WriteList = []layers.RPCRDMAChunk{{seg(write)}}
	}
	if reply != 0 {
		h.ReplyChunk, h.HasReplyChunk = layers.RPCRDMAChunk{seg(reply)}, true
	}
	return encode(h, rpcCall(xid))
}

// bench is one Checker on an Output of its own, and the records it made.
type bench struct {
	t     *testing.T
	out   *Output
	chk   *Checker
	frame int
	recs  []*record.RPC
}

var (
	iniEP = record.IPEndpoint([]byte{192, 0, 2, 1})
	resEP = record.IPEndpoint([]byte{192, 0, 2, 2})
	t0    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
)

func newBench(t *testing.T, mode Mode, lim Limits, n Negotiated) *bench {
	out := NewOutput(mode, lim, "t.pcap")
	return &bench{t: t, out: out, chk: NewChecker(out, n, Peers{iniEP, resEP}, record.RoCEv2)}
}

// send hands the checker a whole Send of side carrying msg (SEND Only), as
// changed by opts, and returns the record it made, or nil.
func (b *bench) send(side int, msg []byte, opts ...func(*Send)) *record.RPC {
	b.frame++
	s := &Send{Side: side, Opcode: "SEND_ONLY", Length: len(msg), LengthKnown: true, Complete: true, Frame: b.frame,
		Frames: []int{b.frame}, Time: t0.Add(time.Duration(b.frame) * time.Millisecond), Head: msg, HeadWhole: true}
	for _, o := range opts {
		o(s)
	}
	b.chk.Send(s)
	b.out.releaseAll() // a Call's record would wait for its Reply (queue.go): each Send's is looked at at once here
	rs := b.out.Take()
	switch len(rs) {
	case 0:
		return nil
	case 1:
		b.recs = append(b.recs, rs[0])
		return rs[0]
	}
	b.t.Fatalf("%d records for one Send", len(rs))
	return nil
}

// invalidate makes a Send With Invalidate of stag.
func invalidate(stag uint32) func(*Send) {
	return func(s *Send) { s.Opcode, s.Invalidate, s.InvalidateSTag = "SEND_ONLY_WITH_INVALIDATE", true, stag }
}

// want is a finding expected: its code, and the part of its message that
// carries the values (the whole message where it is short).
type want struct {
	code finding.Code
	msg  string
}

func checkFindings(t *testing.T, what string, got []finding.Finding, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Errorf("%s: %d findings, want %d:", what, len(got), len(wants))
		for _, f := range got {
			t.Errorf("  %s: %s", f.Code, f.Message)
		}
		return
	}
	for i, w := range wants {
		if got[i].Code != w.code || !strings.Contains(got[i].Message, w.msg) {
			t.Errorf("%s: finding %d is %s %q, want %s containing %q", what, i, got[i].Code, got[i].Message, w.code, w.msg)
		}
	}
}

// findingsOf are the findings of a record, none without one.
func findingsOf(r *record.RPC) []finding.Finding {
	if r == nil {
		return nil
	}
	return r.Findings
}

// Negotiated setups. both: both sides sent RFC 8797 data and set R; the
// initiator's Send Size 4096 and Receive Size 4096, the responder's 8192
// and 2048, so 2048 initiator→responder and 4096 back (RFC 8797, section
// 4.2: the sender's Send Size against the receiver's Receive Size). Reads:
// the initiator's REQ Initiator Depth 16 against the REP's Responder
// Resources 8, the responder's REP Initiator Depth 4 against the REQ's
// Responder Resources 8.
func both() Negotiated {
	return Negotiated{Known: true, Connection: 1, Rule: RulePrivateData,
		Inline:           record.InlineThresholds{InitiatorToResponder: 2048, ResponderToInitiator: 4096},
		InitiatorRPCRDMA: true, ResponderRPCRDMA: true, InitiatorR: true, ResponderR: true, RemoteInvalidation: true,
		ReadLimit: [2]int{8, 4}, HasReadLimit: [2]bool{true, true},
		readWhy: [2]readWhy{{cmReads, 16, 8}, {cmReads | mirrored, 4, 8}}}
}

// linux is what Linux peers negotiate: the client sets R with 4096-octet
// sizes, the server clears R (RFC 8797 data of its own, or none).
func linux(serverData bool) Negotiated {
	n := both()
	n.Inline = record.InlineThresholds{InitiatorToResponder: 4096, ResponderToInitiator: 4096}
	n.ResponderR, n.RemoteInvalidation, n.ResponderRPCRDMA = false, false, serverData
	if !serverData {
		n.Inline = record.InlineThresholds{InitiatorToResponder: 1024, ResponderToInitiator: 1024}
	}
	return n
}

// withData is a setup where only the sides named sent RFC 8797 data (4096
// both ways each), so that the other's sizes count as 1024.
func withData(ini, res bool) Negotiated {
	n := both()
	n.InitiatorRPCRDMA, n.ResponderRPCRDMA = ini, res
	n.InitiatorR, n.ResponderR, n.RemoteInvalidation = ini, res, ini && res
	n.Inline = record.InlineThresholds{InitiatorToResponder: 1024, ResponderToInitiator: 1024}
	if ini && res {
		n.Inline = record.InlineThresholds{InitiatorToResponder: 4096, ResponderToInitiator: 4096}
	}
	if !ini && !res {
		n.Rule = RuleService // NFS/RDMA's port
	}
	return n
}

// Without RPC-over-RDMA named by the setup, the first Sends decide
// (Wireshark's heuristic): an RDMA_MSG whose RPC message repeats rdma_xid
// says yes; heuristicTries Sends that say nothing or no say no.
func TestCheckerHeuristic(t *testing.T) {
	nomsg := encode(&layers.RPCRDMAHeader{XID: 9, Vers: 1, Proc: layers.RPCRDMANoMsg, HasReplyChunk: true, ReplyChunk: layers.RPCRDMAChunk{seg(0x88)}}, nil)
	junk := make([]byte, 64) // an NVMe-oF capsule, say
	junk[0] = 0x7f
	for _, tc := range []struct {
		name    string
		sends   [][]byte
		rule    Rule
		records int // in ModeAll
	}{
		{"the first Send decides", [][]byte{callOf(1), replyOf(1, 32)}, RuleHeuristic, 2},
		{"Sends that say too little, then one that says yes", [][]byte{nomsg, words(9, 1, 1, 4, 2), nomsg, callOf(1)}, RuleHeuristic, 1},
		{"four that say no", [][]byte{junk, junk, junk, junk, callOf(1)}, RuleNone, 0},
		{"too little and no, four in all", [][]byte{nomsg, junk, words(9, 1, 1, 4, 2), nomsg, callOf(1)}, RuleNone, 0},
		{"three that say no", [][]byte{junk, junk, junk}, RuleUndecided, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, ModeAll, Limits{}, Negotiated{})
			for i, s := range tc.sends {
				b.send(i%2, s)
			}
			if b.chk.Rule() != tc.rule || len(b.recs) != tc.records || b.out.RPCMessages != tc.records {
				t.Errorf("rule %v, %d records, %d messages; want %v, %d", b.chk.Rule(), len(b.recs), b.out.RPCMessages, tc.rule, tc.records)
			}
			want := ""
			if tc.rule == RuleHeuristic {
				want = "heuristic: first Sends parse as RPC-over-RDMA"
			}
			if f := b.chk.Figures(); f.Rule != want {
				t.Errorf("figures' rule %q, want %q", f.Rule, want)
			}
		})
	}
}

// looksRPCRDMA on one Send: +1 an RPC-over-RDMA message with its RPC
// message, 0 one that may be but says too little, -1 none.
func TestLooksRPCRDMA(t *testing.T) {
	for _, tc := range []struct {
		name  string
		head  []byte
		whole bool
		want  int
	}{
		{"an RDMA_MSG Call", callOf(1), true, 1},
		{"an RDMA_MSG Reply", replyOf(1, 1), true, 1},
		{"an RDMA_MSG whose RPC XID differs", encode(hdr(1, 1, 0), rpcCall(2)), true, -1},
		{"an RDMA_MSG of msg_type 2", encode(hdr(1, 1, 0), words(1, 2)), true, -1},
		{"an RDMA_MSG with only the RPC XID", encode(hdr(1, 1, 0), words(1)), true, -1},
		{"an RDMA_NOMSG with a chunk", encode(&layers.RPCRDMAHeader{XID: 1, Vers: 1, Proc: 1, HasReplyChunk: true, ReplyChunk: layers.RPCRDMAChunk{seg(1)}}, nil), true, 0},
		{"an RDMA_NOMSG with a chunk and more", encode(&layers.RPCRDMAHeader{XID: 1, Vers: 1, Proc: 1, HasReplyChunk: true, ReplyChunk: layers.RPCRDMAChunk{seg(1)}}, words(0)), true, -1},
		{"an RDMA_NOMSG without chunks", words(1, 1, 1, 1, 0, 0, 0), true, -1},
		{"ERR_CHUNK", words(1, 1, 1, 4, 2), true, 0},
		{"ERR_VERS", words(1, 1, 1, 4, 1, 1, 1), true, 0},
		{"ERR_CHUNK with more", words(1, 1, 1, 4, 2, 0), true, -1},
		{"rdma_err 3", words(1, 1, 1, 4, 3), true, -1},
		{"RDMA_MSGP", encode(&layers.RPCRDMAHeader{XID: 1, Vers: 1, Proc: 2}, rpcCall(1)), true, -1},
		{"RDMA_DONE", words(1, 1, 1, 3), true, -1},
		{"rdma_vers 2", words(1, 2, 1, 0, 0, 0, 0), true, -1},
		{"rdma_proc 9", words(1, 1, 1, 9), true, -1},
		{"a header that does not parse", words(1, 1, 1, 0, 5), true, -1},
		{"a header cut where the octets kept end", callOf(1)[:20], false, 0},
		{"a Send shorter than a header", words(1, 1), true, -1},
	} {
		var h layers.RPCRDMAHeader
		err := h.DecodeFromBytes(tc.head, gopacket.NilDecodeFeedback)
		if got := looksRPCRDMA(&h, err, &Send{Head: tc.head, HeadWhole: tc.whole}); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A connection of another upper layer: its Sends are counted, never read as
// RPC-over-RDMA; an iSER target's Send With Invalidate that the initiator
// forbade is a connection finding, said once with the count.
func TestCheckerOtherULP(t *testing.T) {
	n := Negotiated{Known: true, Connection: 1, Rule: RuleOtherULP, ISERForbidsInvalidate: true}
	b := newBench(t, ModeAll, Limits{}, n)
	b.send(0, callOf(1))
	b.send(1, replyOf(1, 1), invalidate(0x77))
	b.send(0, callOf(2), invalidate(0x66)) // the initiator's: not the target's
	b.send(1, replyOf(2, 1), invalidate(0x78))
	if len(b.recs) != 0 || b.out.RPCMessages != 0 || b.chk.Rule() != RuleOtherULP {
		t.Errorf("%d records, %d messages, rule %v", len(b.recs), b.out.RPCMessages, b.chk.Rule())
	}
	checkFindings(t, "the connection", b.chk.Findings(), []want{{finding.ISERSendWithInvalidateUnsupported,
		"frame 2: the target sent a Send With Invalidate of STag 0x00000077 although the initiator's iSER CM header (frame 1) says it does not support Send With Invalidate; 2 such Sends With Invalidate in all"}})
	if f := b.chk.Figures(); f.SendWithInvalidate != 3 || f.Rule != "" || f.RPCMessages != [2]int{} {
		t.Errorf("figures %+v", f)
	}
}

// ModeAll records every RPC-over-RDMA message, ModeFindings those with a
// finding; both count them all. A record names its connection, direction,
// peers, frames, time and header.
func TestCheckerModes(t *testing.T) {
	for _, mode := range []Mode{ModeAll, ModeFindings} {
		b := newBench(t, mode, Limits{}, both())
		b.send(0, chunked(1, 0x66, 0x77, 0x88))
		b.send(1, replyOf(1, 32), invalidate(0x77))
		b.send(1, sized(replyOf(2, 32), 5000)) // over the threshold
		want := map[Mode]int{ModeAll: 3, ModeFindings: 1}[mode]
		if len(b.recs) != want || b.out.RPCMessages != 3 {
			t.Fatalf("%v: %d records, %d messages", mode, len(b.recs), b.out.RPCMessages)
		}
		if mode == ModeFindings {
			continue
		}
		r := b.recs[0]
		// 16 octets of fixed part, 4 + 20 of read segment and 4 to end the
		// list, 8 + 16 of write chunk and 4, 4 + 4 + 16 of reply chunk:
		// 96, then the Call's 40.
		wantHeader := &record.RPCRDMAHeader{XID: 1, Vers: 1, Credits: 32, Proc: 0,
			ReadList:   []record.ReadSegment{{Position: 40, Segment: record.Segment{Handle: 0x66, Length: 4096, Offset: 0x7f0000001000}}},
			WriteList:  [][]record.Segment{{{Handle: 0x77, Length: 4096, Offset: 0x7f0000001000}}},
			ReplyChunk: []record.Segment{{Handle: 0x88, Length: 4096, Offset: 0x7f0000001000}}, HasReplyChunk: true}
		if r.File != "t.pcap" || r.Frame != 1 || !reflect.DeepEqual(r.Frames, []int{1}) || !r.Time.Equal(t0.Add(time.Millisecond)) ||
			r.Time.Location() != time.UTC || r.Transport != record.RoCEv2 || r.Src != iniEP || r.Dst != resEP || r.Connection != 1 ||
			r.Direction != record.InitiatorToResponder || r.Opcode != "SEND_ONLY" || r.Length != 136 || !r.LengthKnown ||
			!reflect.DeepEqual(r.Header, wantHeader) {
			t.Errorf("record %+v\nheader %+v", r, r.Header)
		}
		if r := b.recs[1]; r.Src != resEP || r.Dst != iniEP || r.Direction != record.ResponderToInitiator || !r.Invalidate || r.InvalidateRKey != 0x77 {
			t.Errorf("record %+v", r)
		}
	}
	// Without the setup, which side is the initiator is not known.
	b := newBench(t, ModeAll, Limits{}, Negotiated{Rule: RuleHeuristic})
	if r := b.send(0, callOf(1)); r.Direction != record.NoDirection || r.Connection != 0 {
		t.Errorf("record %+v", r)
	}
}

// grant gives the checker a Reply granting n credits, answering no Call.
func (b *bench) grant(n uint32) { b.send(1, replyOf(0xffff, n)) }

// The Calls a connection, and all of them, may track (Limits): beyond, a
// Call is not followed, said on its record and once on the connection, and
// its Reply is not judged.
func TestCheckerCallLimits(t *testing.T) {
	b := newBench(t, ModeFindings, Limits{CallsPerConnection: 2}, both())
	b.grant(64)
	for xid := uint32(1); xid <= 2; xid++ {
		checkFindings(t, "a Call", findingsOf(b.send(0, callOf(xid))), nil)
	}
	checkFindings(t, "the third Call", findingsOf(b.send(0, callOf(3))), []want{{finding.StateLimitReached,
		"more than 2 Calls outstanding on this connection, or 65536 on all: this one is not followed, and its Reply is not checked"}})
	checkFindings(t, "the Reply to it", findingsOf(b.send(1, replyOf(3, 64), invalidate(0x99))), nil)
	checkFindings(t, "the connection", b.chk.Findings(), []want{{finding.StateLimitReached,
		"Calls beyond 2 outstanding on this connection (or 65536 on all) were not followed: their Replies were not checked"}})
	if b.out.CallsUntracked != 1 {
		t.Errorf("%d Calls untracked", b.out.CallsUntracked)
	}

	// Two connections on one output share CallBudget.
	out := NewOutput(ModeFindings, Limits{CallBudget: 3}, "t")
	one := &bench{t: t, out: out, chk: NewChecker(out, both(), Peers{iniEP, resEP}, record.RoCEv2)}
	two := &bench{t: t, out: out, chk: NewChecker(out, both(), Peers{iniEP, resEP}, record.RoCEv2)}
	one.grant(64)
	two.grant(64)
	one.send(0, callOf(1))
	one.send(0, callOf(2))
	two.send(0, callOf(1))
	checkFindings(t, "the fourth Call of the output", findingsOf(two.send(0, callOf(2))), []want{{finding.StateLimitReached,
		"more than 1024 Calls outstanding on this connection, or 3 on all"}})
	one.chk.Close() // its Calls are released
	checkFindings(t, "a Call after the other connection ended", findingsOf(two.send(0, callOf(3))), nil)
	if out.calls != 2 || out.CallsUntracked != 1 {
		t.Errorf("%d Calls tracked, %d untracked", out.calls, out.CallsUntracked)
	}
}

// Lost: a side's frames are missing from the capture. The responder's lost
// frames may hold Replies: the Calls outstanding are forgotten. Either way a
// Reply without its Call is no longer judged.
func TestCheckerLost(t *testing.T) {
	t.Run("the responder's", func(t *testing.T) {
		b := newBench(t, ModeFindings, Limits{}, both())
		b.send(0, callOf(1))
		b.chk.Lost(1)
		if len(b.chk.calls) != 0 || b.out.calls != 0 {
			t.Errorf("%d Calls kept", len(b.chk.calls))
		}
		checkFindings(t, "the next Call", findingsOf(b.send(0, callOf(2))), nil) // one outstanding, not two
		checkFindings(t, "a Reply to an unseen Call", findingsOf(b.send(1, replyOf(9, 1), invalidate(0x99))), nil)
	})
	t.Run("the initiator's", func(t *testing.T) {
		b := newBench(t, ModeFindings, Limits{}, both())
		b.send(0, callOf(1))
		b.chk.Lost(0)
		checkFindings(t, "the next Call", findingsOf(b.send(0, callOf(2))), []want{{finding.CreditsExceeded, "makes 2 Calls outstanding"}})
		checkFindings(t, "a Reply to an unseen Call", findingsOf(b.send(1, replyOf(9, 1), invalidate(0x99))), nil)
	})
	t.Run("without the setup", func(t *testing.T) {
		b := newBench(t, ModeFindings, Limits{}, Negotiated{Rule: RuleHeuristic})
		b.send(0, callOf(1))
		b.chk.Lost(0)
		if len(b.chk.calls) != 0 || b.out.calls != 0 {
			t.Errorf("%d Calls kept", len(b.chk.calls))
		}
	})
}

// Connection findings the transport raises are kept up to maxConnNotes.
func TestCheckerNotes(t *testing.T) {
	b := newBench(t, ModeFindings, Limits{}, both())
	for i := range maxConnNotes + 3 {
		b.chk.Note(finding.New(finding.MPACRCMismatch, "frame %d", i))
	}
	fs := b.chk.Findings()
	if len(fs) != maxConnNotes+1 || fs[0].Message != "frame 0" || fs[maxConnNotes-1].Message != "frame 31" {
		t.Fatalf("%d findings", len(fs))
	}
	checkFindings(t, "the last", fs[maxConnNotes:], []want{{finding.StateLimitReached,
		"3 further findings on this connection's traffic were not kept (at most 32 are)"}})
}

// The frames of a Send listed on its record are bounded.
func TestCheckerFrames(t *testing.T) {
	b := newBench(t, ModeAll, Limits{}, both())
	many := make([]int, 300)
	for i := range many {
		many[i] = i + 1
	}
	r := b.send(0, callOf(1), func(s *Send) { s.Frames, s.Frame = many, 300 })
	if len(r.Frames) != 256 || r.Frames[255] != 256 {
		t.Errorf("%d frames listed", len(r.Frames))
	}
	checkFindings(t, "a Send of 300 frames", r.Findings, []want{{finding.StateLimitReached, "the Send has 300 frames; the first 256 are listed"}})
	r = b.send(1, replyOf(1, 2), func(s *Send) { s.Frames, s.FramesDropped = []int{1, 2, 3, 4}, 5 })
	checkFindings(t, "a Send of 9 frames", r.Findings, []want{{finding.StateLimitReached, "the Send has 9 frames; the first 4 are listed"}})
	many[0] = 99 // the record keeps its own copy
	if b.recs[0].Frames[0] != 1 {
		t.Error("the record shares the transport's frames")
	}
}

// The figures exist once some of the connection's traffic was seen; the
// rule shows only when it says RPC-over-RDMA.
func TestCheckerFigures(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		want string
	}{
		{RulePrivateData, "RFC 8797 private data"},
		{RuleService, "NFS/RDMA port 20049"},
		{RuleUndecided, ""},
		{RuleNone, ""},
		{RuleOtherULP, ""},
	} {
		n := both()
		n.Rule = tc.rule
		b := newBench(t, ModeFindings, Limits{}, n)
		if b.chk.Figures() != nil {
			t.Error("figures before any traffic")
		}
		b.chk.Frame()
		b.chk.Frame()
		f := b.chk.Figures()
		if f == nil || f.Frames != 2 || f.Rule != tc.want || f.RDMAReadLimit != [2]int{8, 4} || f.HasReadLimit != [2]bool{true, true} {
			t.Errorf("%v: figures %+v", tc.rule, f)
		}
	}
	b := newBench(t, ModeFindings, Limits{}, both())
	b.chk.ReadRequest(1, 1)
	if b.chk.Figures() == nil {
		t.Error("no figures after a Read Request")
	}
	b.chk.Close()
	if b.chk.reads != [2]int{} {
		t.Errorf("Reads outstanding after Close: %v", b.chk.reads)
	}
}

func TestRuleAndModeNames(t *testing.T) {
	for r, want := range map[Rule]string{RuleUndecided: "undecided", RulePrivateData: "RFC 8797 private data",
		RuleService: "NFS/RDMA port 20049", RuleHeuristic: "heuristic: first Sends parse as RPC-over-RDMA",
		RuleNone: "not RPC-over-RDMA", RuleOtherULP: "another upper layer", Rule(99): "undecided"} {
		if r.String() != want {
			t.Errorf("%d: %q, want %q", r, r.String(), want)
		}
		if r.IsRPCRDMA() != (r == RulePrivateData || r == RuleService || r == RuleHeuristic) {
			t.Errorf("%v: IsRPCRDMA %v", r, r.IsRPCRDMA())
		}
	}
	for _, s := range []string{"all", "findings", "off"} {
		m, ok := ParseMode(s)
		if !ok || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, ok)
		}
	}
	if _, ok := ParseMode("some"); ok {
		t.Error("ParseMode accepts \"some\"")
	}
}

// Limits left zero take the defaults; larger ones cost memory beyond the
// base budget.
func TestLimits(t *testing.T) {
	l := Limits{CallsPerConnection: -1}.withDefaults()
	if l != (Limits{CallsPerConnection: DefaultCallsPerConnection, CallBudget: DefaultCallBudget, Directions: DefaultDirections,
		HeadBuffers: DefaultHeadBuffers, Connections: DefaultConnections}) {
		t.Errorf("%+v", l)
	}
	if n := (Limits{Connections: 10}).ExtraMemory(); n != 0 {
		t.Errorf("fewer than the defaults cost %d", n)
	}
	more := Limits{Connections: DefaultConnections + 1, Directions: DefaultDirections + 1, CallBudget: DefaultCallBudget + 1,
		HeadBuffers: DefaultHeadBuffers + 1}
	if n := more.ExtraMemory(); n != int64(connCost+dirCost+callCost+headCost) {
		t.Errorf("one more of each costs %d", n)
	}
}
