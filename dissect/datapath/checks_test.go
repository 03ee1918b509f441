package datapath

import (
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The checks of checks.go, header.go, calls.go and conn_findings.go, one
// finding at a time, on a bench of checker_test.go: inline thresholds, Send
// With Invalidate and its STag, credits, the transport header, RDMA_ERROR
// and the Read limits.

func TestCheckerInlineThreshold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		neg    Negotiated
		side   int
		length int
		known  bool // the Send's length is known
		want   string
	}{
		{"initiator, at the threshold", both(), 0, 2048, true, ""},
		{"initiator, one octet over", both(), 0, 2049, true,
			"a Send of 2049 octets from the initiator, over the initiator→responder inline threshold of 2048 (the smaller of the initiator Send Size and the responder Receive Size): the responder cannot receive it"},
		{"responder, at the threshold", both(), 1, 4096, true, ""},
		{"responder, one octet over", both(), 1, 4097, true,
			"a Send of 4097 octets from the responder, over the responder→initiator inline threshold of 4096 (the smaller of the responder Send Size and the initiator Receive Size): the initiator cannot receive it"},
		{"neither sent RFC 8797 data, initiator", withData(false, false), 0, 1025, true,
			"over the initiator→responder inline threshold of 1024 (neither side sent RFC 8797 data: the default of 1024)"},
		{"neither sent RFC 8797 data, responder", withData(false, false), 1, 1025, true,
			"over the responder→initiator inline threshold of 1024 (neither side sent RFC 8797 data: the default of 1024)"},
		{"only the initiator sent it, its Send", withData(true, false), 0, 1025, true,
			"threshold of 1024 (the responder sent no RFC 8797 data: its Receive Size counts as 1024)"},
		{"only the initiator sent it, the responder's Send", withData(true, false), 1, 1025, true,
			"threshold of 1024 (the responder sent no RFC 8797 data: its Send Size counts as 1024)"},
		{"only the responder sent it, the initiator's Send", withData(false, true), 0, 1025, true,
			"threshold of 1024 (the initiator sent no RFC 8797 data: its Send Size counts as 1024)"},
		{"only the responder sent it, its Send", withData(false, true), 1, 1025, true,
			"threshold of 1024 (the initiator sent no RFC 8797 data: its Receive Size counts as 1024)"},
		{"the Linux server's own sizes", linux(true), 1, 4097, true, "responder→initiator inline threshold of 4096"},
		{"a Send of unknown length is not judged", both(), 0, 5000, false, ""},
		{"nor one on a connection whose setup was not seen", Negotiated{Rule: RuleHeuristic}, 0, 300000, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, ModeFindings, Limits{}, tc.neg)
			msg := callOf(1)
			if tc.side == 1 {
				msg = replyOf(1, 32)
			}
			r := b.send(tc.side, sized(msg, tc.length), func(s *Send) { s.LengthKnown = tc.known })
			var ws []want
			if tc.want != "" {
				ws = []want{{finding.InlineThresholdExceeded, tc.want}}
			}
			checkFindings(t, "the Send", findingsOf(r), ws)
			largest := [2]int{}
			if tc.known {
				largest[tc.side] = tc.length
			}
			if f := b.chk.Figures(); f.LargestInline != largest {
				t.Errorf("largest inline %v, want %v", f.LargestInline, largest)
			}
		})
	}
}

// Send With Invalidate: only from the responder, only when both peers set
// R (RFC 8797, section 4.1).
func TestCheckerSendWithInvalidate(t *testing.T) {
	const notAllowed = finding.SendWithInvalidateNotAllowed
	withR := func(ini, res, iniData, resData bool) Negotiated {
		n := both()
		n.InitiatorR, n.ResponderR, n.RemoteInvalidation = ini, res, ini && res
		n.InitiatorRPCRDMA, n.ResponderRPCRDMA = iniData, resData
		return n
	}
	for _, tc := range []struct {
		name string
		neg  Negotiated
		side int // of the Send With Invalidate
		want string
	}{
		{"both set R", both(), 1, ""},
		{"the Linux case: the server clears R, yet invalidates", linux(true), 1,
			"a Send With Invalidate (R_Key 0x00000077) from the responder, where the responder itself advertised R=0 and only the initiator set R (Linux servers do exactly this): replies must use plain Send unless both set R"},
		{"the server sent no RFC 8797 data at all", linux(false), 1,
			"where the responder itself advertised R=0 (it sent no RFC 8797 data, which counts as R=0) and only the initiator set R (Linux servers do exactly this)"},
		{"the initiator cleared R", withR(false, true, true, true), 1, "from the responder, where the initiator did not set R: replies must use plain Send"},
		{"the initiator sent no RFC 8797 data", withR(false, true, false, true), 1,
			"where the initiator did not set R (it sent no RFC 8797 data, which counts as R=0): replies"},
		{"neither set R", withR(false, false, true, true), 1, "where neither peer set R: replies must use plain Send unless both set R"},
		{"from the initiator, even with R on both sides", both(), 0,
			"a Send With Invalidate (R_Key 0x00000077) from the initiator: RFC 8797 lets only the responder use it, for RPC Replies"},
		{"a setup not seen is not judged", Negotiated{Rule: RuleHeuristic}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, ModeFindings, Limits{}, tc.neg)
			checkFindings(t, "the Call", findingsOf(b.send(0, chunked(1, 0, 0x77, 0))), nil)
			msg := replyOf(1, 32)
			if tc.side == 0 {
				msg = callOf(2)
			}
			var ws []want
			if tc.side == 0 { // a second Call: over the one credit before any Reply
				ws = append(ws, want{finding.CreditsExceeded, "makes 2 Calls outstanding"})
			}
			if tc.want != "" {
				ws = append(ws, want{notAllowed, tc.want})
			}
			r := b.send(tc.side, msg, invalidate(0x77))
			checkFindings(t, "the Send With Invalidate", findingsOf(r), ws)
			if r != nil && (!r.Invalidate || r.InvalidateRKey != 0x77 || r.Opcode != "SEND_ONLY_WITH_INVALIDATE") {
				t.Errorf("record %+v", r)
			}
			if f := b.chk.Figures(); f.SendWithInvalidate != 1 {
				t.Errorf("%d Sends With Invalidate counted", f.SendWithInvalidate)
			}
		})
	}
}

// A Send With Invalidate may invalidate only an STag of the Call it
// answers (RFC 8797, section 4.1): the handles of its read list, write list
// and reply chunk.
func TestCheckerInvalidateSTag(t *testing.T) {
	const unknown = finding.InvalidateSTagUnknown
	many := func(n int, distinct bool) []byte {
		h := hdr(1, 32, layers.RPCRDMAMsg)
		for i := range n {
			handle := uint32(0x100)
			if distinct {
				handle += uint32(i)
			}
			h.ReadList = append(h.ReadList, layers.RPCRDMAReadSegment{Position: 40, RPCRDMASegment: seg(handle)})
		}
		return encode(h, rpcCall(1))
	}
	for _, tc := range []struct {
		name     string
		neg      Negotiated
		call     []byte // nil: none
		before   func(*bench)
		stag     uint32
		callWant []want
		want     []want
	}{
		{name: "an STag of the Call's reply chunk", neg: both(), call: chunked(1, 0x66, 0x77, 0x88), stag: 0x88},
		{name: "an STag of its read list", neg: both(), call: chunked(1, 0x66, 0x77, 0x88), stag: 0x66},
		{name: "an STag the Call did not advertise", neg: both(), call: chunked(1, 0x66, 0x77, 0x88), stag: 0x99,
			want: []want{{unknown, "R_Key 0x00000099 is not among the STags the Call of frame 1 (XID 0x00000001) advertised: 0x00000066, 0x00000077, 0x00000088"}}},
		{name: "a Call without chunks", neg: both(), call: callOf(1), stag: 0x99,
			want: []want{{unknown, "R_Key 0x00000099 is not among the STags the Call of frame 1 (XID 0x00000001) advertised: none"}}},
		{name: "no outstanding Call", neg: both(), stag: 0x99,
			want: []want{{unknown, "R_Key 0x00000099: no outstanding Call has XID 0x00000001, so the STag belongs to no Call of this Reply"}}},
		{name: "no Call, after the requester's frames went missing", neg: both(), before: func(b *bench) { b.chk.Lost(0) }, stag: 0x99},
		{name: "no Call, on a connection whose setup was not seen", neg: Negotiated{Rule: RuleHeuristic}, stag: 0x99},
		{name: "the Call of a connection whose setup was not seen is still known", neg: Negotiated{Rule: RuleHeuristic},
			call: chunked(1, 0, 0x77, 0), stag: 0x99, want: []want{{unknown, "R_Key 0x00000099 is not among the STags"}}},
		{name: "16 distinct STags are all kept", neg: both(), call: many(16, true), stag: 0x99,
			want: []want{{unknown, "advertised: 0x00000100, 0x00000101, 0x00000102, 0x00000103, 0x00000104, 0x00000105, 0x00000106, 0x00000107, " +
				"0x00000108, 0x00000109, 0x0000010a, 0x0000010b, 0x0000010c, 0x0000010d, 0x0000010e, 0x0000010f"}}},
		{name: "the 16th is kept", neg: both(), call: many(16, true), stag: 0x10f},
		{name: "beyond 16, another is not judged", neg: both(), call: many(17, true), stag: 0x99,
			callWant: []want{{finding.StateLimitReached, "the Call advertises more than 16 STags; a Send With Invalidate naming another is not judged"}}},
		{name: "one STag repeated 20 times is one", neg: both(), call: many(20, false), stag: 0x99,
			want: []want{{unknown, "advertised: 0x00000100"}}},
		{name: "a header with more segments than kept: not judged", neg: both(), call: many(65, false), stag: 0x99,
			callWant: []want{{finding.StateLimitReached, "the header holds 65 RDMA segments; the first 64 are shown and checked"}}},
		{name: "the Call was answered already", neg: both(), call: chunked(1, 0, 0x77, 0),
			before: func(b *bench) { b.send(1, replyOf(1, 32), invalidate(0x77)) }, stag: 0x77,
			want: []want{{unknown, "R_Key 0x00000077: no outstanding Call has XID 0x00000001"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, ModeFindings, Limits{}, tc.neg)
			if tc.call != nil {
				checkFindings(t, "the Call", findingsOf(b.send(0, tc.call)), tc.callWant)
			}
			if tc.before != nil {
				tc.before(b)
			}
			checkFindings(t, "the Reply", findingsOf(b.send(1, replyOf(1, 32), invalidate(tc.stag))), tc.want)
			if len(b.chk.calls) != 0 || b.out.calls != 0 {
				t.Errorf("%d Calls still outstanding (%d on the output)", len(b.chk.calls), b.out.calls)
			}
		})
	}
}

// A Send With Invalidate whose header does not decode, or that is not a
// Reply, is judged by who sent it only.
func TestCheckerInvalidateUndecoded(t *testing.T) {
	b := newBench(t, ModeFindings, Limits{}, linux(true))
	b.send(0, chunked(1, 0, 0x77, 0))
	r := b.send(1, words(1, 1, 32, 0, 9), invalidate(0x99)) // a read list discriminator of 9
	checkFindings(t, "the Send", findingsOf(r), []want{
		{finding.RPCRDMAHeaderInvalid, "the read list's discriminator at octet 16 is 9, not 0 or 1"},
		{finding.SendWithInvalidateNotAllowed, "R_Key 0x00000099"}})
	// A backchannel Call (RFC 8167) from the responder, with Invalidate.
	call := chunked(7, 0, 0x55, 0)
	r = b.send(1, call, invalidate(0x99))
	checkFindings(t, "the backchannel Call", findingsOf(r), []want{{finding.SendWithInvalidateNotAllowed, "R_Key 0x00000099"}})
	if len(b.chk.calls) != 2 {
		t.Errorf("%d Calls outstanding, want the forward and the backchannel one", len(b.chk.calls))
	}
}

// Credits (RFC 8166, section 3.3.1): a requester may have no more Calls
// outstanding than the latest grant; 1 before the first Reply; a grant of 0
// counts as 1.
func TestCheckerCredits(t *testing.T) {
	const exceeded = finding.CreditsExceeded
	b := newBench(t, ModeFindings, Limits{}, both())
	for i, step := range []struct {
		side int
		msg  []byte
		want []want
	}{
		{0, callOf(1), nil},
		{0, callOf(2), []want{{exceeded, "the Call of XID 0x00000002 makes 2 Calls outstanding, over the responder's grant of 1 (no Reply yet: a requester counts on one credit until the first)"}}},
		{1, replyOf(1, 0), nil},
		{0, callOf(3), []want{{exceeded, "the Call of XID 0x00000003 makes 2 Calls outstanding, over the responder's grant of 1 (the latest Reply granted 0, which RFC 8166 forbids; it counts as 1)"}}},
		{1, replyOf(2, 3), nil}, // outstanding: 3
		{0, callOf(4), nil},
		{0, callOf(5), nil},
		{0, callOf(6), []want{{exceeded, "makes 4 Calls outstanding, over the responder's grant of 3 (the latest Reply's rdma_credit)"}}},
		{1, replyOf(3, 8), nil}, // outstanding: 4, 5, 6
		{0, callOf(7), nil},
		{0, callOf(7), []want{{finding.RPCCallResent, "the Call of XID 0x00000007 was sent before in frame 10, which had no Reply yet: this is a retransmission"}}}, // still one Call
		{1, callOf(100), nil}, // a backchannel Call is not the forward channel's
		{0, replyOf(100, 1), nil},
	} {
		checkFindings(t, "step "+string(rune('a'+i)), findingsOf(b.send(step.side, step.msg)), step.want)
	}
	f := b.chk.Figures()
	if f.MaxOutstandingCalls != 4 || f.CreditsGranted != 8 || !f.HasCredits || f.RPCMessages != [2]int{9, 4} {
		t.Errorf("figures %+v", f)
	}
	if len(b.chk.calls) != 4 {
		t.Errorf("%d Calls outstanding, want 4 (4, 5, 6, 7)", len(b.chk.calls))
	}
	// Without the setup, no grant is known: nothing is judged.
	b = newBench(t, ModeFindings, Limits{}, Negotiated{Rule: RuleHeuristic})
	for xid := range uint32(5) {
		checkFindings(t, "a Call without setup", findingsOf(b.send(0, callOf(xid))), nil)
	}
	if f := b.chk.Figures(); f.MaxOutstandingCalls != 0 {
		t.Errorf("Calls counted without the setup: %+v", f)
	}
}

// The transport header a receiver must reject (RFC 8166, sections 4.2, 4.3
// and 4.5.2), or cannot check.
func TestCheckerHeaderInvalid(t *testing.T) {
	const invalid = finding.RPCRDMAHeaderInvalid
	msgp := encode(&layers.RPCRDMAHeader{XID: 1, Vers: 1, Credit: 32, Proc: layers.RPCRDMAMsgP, Align: 1024, Thresh: 1024}, rpcCall(1))
	var longList layers.RPCRDMAHeader = *hdr(1, 32, layers.RPCRDMAMsg)
	for i := range 100 {
		longList.ReadList = append(longList.ReadList, layers.RPCRDMAReadSegment{Position: 40, RPCRDMASegment: seg(uint32(i))})
	}
	long := encode(&longList, rpcCall(1)) // 100 segments of 24 octets: past the first 2048
	// Two read segments, then a write chunk of 200 segments of 16 octets.
	var longChunk layers.RPCRDMAHeader = *hdr(2, 32, layers.RPCRDMAMsg)
	longChunk.ReadList = longList.ReadList[:2]
	longChunk.WriteList = []layers.RPCRDMAChunk{make(layers.RPCRDMAChunk, 200)}
	wlong := encode(&longChunk, rpcCall(2))
	cut := func(n int, why string) func(*Send) {
		return func(s *Send) { s.Head, s.HeadWhole, s.HeadCut = s.Head[:n], false, why }
	}
	for _, tc := range []struct {
		name   string
		side   int
		msg    []byte
		opt    func(*Send)
		header bool // the record shows the fixed part
		want   []want
	}{
		// What the header's octets are, as XDR.
		{name: "a read list discriminator of 2", msg: words(1, 1, 32, 0, 2), header: true,
			want: []want{{invalid, "the read list's discriminator at octet 16 is 2, not 0 or 1"}}},
		{name: "a write list discriminator of 5", msg: words(1, 1, 32, 0, 0, 5), header: true,
			want: []want{{invalid, "the write list's discriminator at octet 20 is 5, not 0 or 1"}}},
		{name: "a reply chunk discriminator of 7", msg: words(1, 1, 32, 0, 0, 0, 7), header: true,
			want: []want{{invalid, "the reply chunk's discriminator at octet 24 is 7, not 0 or 1"}}},
		{name: "fewer octets than the fixed part", msg: words(1, 1, 32),
			want: []want{{invalid, "the Send has 12 octets, fewer than the 16 of an RPC-over-RDMA header's fixed part"}}},
		{name: "an empty Send", msg: nil,
			want: []want{{invalid, "the Send has 0 octets, fewer than the 16"}}},
		{name: "only the fixed part", msg: words(1, 1, 32, 0), header: true,
			want: []want{{invalid, "the read list runs past the end of the Send (16 octets)"}}},
		{name: "a read segment cut short", msg: words(1, 1, 32, 0, 1, 40, 0x66), header: true,
			want: []want{{invalid, "the read list runs past the end of the Send (28 octets)"}}},
		{name: "a write chunk of 2 segments with none there", msg: words(1, 1, 32, 0, 0, 1, 2, 0x77), header: true,
			want: []want{{invalid, "the write list runs past the end of the Send (32 octets)"}}},
		{name: "no reply chunk discriminator", msg: words(1, 1, 32, 0, 0, 0), header: true,
			want: []want{{invalid, "the reply chunk runs past the end of the Send (24 octets)"}}},
		{name: "RDMA_MSGP without its align and thresh", msg: words(1, 1, 32, 2, 1024), header: true,
			want: []want{{invalid, "the header runs past the end of the Send (20 octets)"}}},
		{name: "RDMA_ERROR without rdma_err", side: 1, msg: words(1, 1, 32, 4), header: true,
			want: []want{{invalid, "the error runs past the end of the Send (16 octets)"}}},
		{name: "ERR_VERS without its versions", side: 1, msg: words(1, 1, 32, 4, 1, 1), header: true,
			want: []want{{invalid, "the error runs past the end of the Send (24 octets)"}}},

		// What the transport kept of the Send.
		{name: "the first octets were not kept", msg: callOf(1), opt: cut(0, "limit"),
			want: []want{{finding.StateLimitReached, "the first octets of the Send were not kept (more than 1024 multi-packet Sends were in progress at once, --max-send-buffers, or the memory budget was full): its header is not checked"}}},
		{name: "the capture cut it in the header", msg: chunked(1, 0x66, 0, 0), opt: cut(20, "capture"), header: true,
			want: []want{{finding.CaptureTruncated, "the capture holds 20 octets of the Send, which end inside its RPC-over-RDMA header: the header is not checked"}}},
		{name: "the capture cut it in the fixed part", msg: callOf(1), opt: cut(10, "capture"),
			want: []want{{finding.CaptureTruncated, "the capture holds 10 octets of the Send"}}},
		// A backchannel Call, under the responder's threshold. Its first
		// 2048 octets hold 84 of its segments, more than a decode keeps.
		{name: "a header longer than the octets kept", side: 1, msg: long, opt: cut(HeadLen, "limit"), header: true,
			want: []want{{finding.StateLimitReached, "the header's read list runs past the 2048 octets kept of the Send, which cut it: 84 segments were read before the cut (64 shown and checked); how many more the list holds is not known"}}},
		{name: "a write chunk longer than the octets kept", side: 1, msg: wlong, opt: cut(HeadLen, "limit"), header: true,
			want: []want{{finding.StateLimitReached, "the header's write list runs past the 2048 octets kept of the Send, which cut it: 2 segments were read before the cut (2 shown and checked); the write chunk at the cut announces 200 segments, none of them read"}}},
		{name: "a header alone in the octets kept is not an RDMA_MSG without message", msg: sized(words(1, 1, 32, 0, 0, 0, 0), 100),
			opt: cut(28, "limit"), header: true},

		// What the header's values are.
		{name: "rdma_vers 2", msg: encode(&layers.RPCRDMAHeader{XID: 1, Vers: 2, Credit: 32}, rpcCall(1)), header: true,
			want: []want{{invalid, "rdma_vers is 2, not 1"}}},
		{name: "rdma_proc 5", msg: words(1, 1, 32, 5, 0, 0, 0), header: true,
			want: []want{{invalid, "rdma_proc 5 is not a procedure of version 1"}}},
		{name: "RDMA_MSGP", msg: msgp, header: true,
			want: []want{{invalid, "RDMA_MSGP is no longer supported (RFC 8166, section 4.6.1): senders must not send it"}}},
		{name: "RDMA_DONE", msg: words(1, 1, 32, 3), header: true,
			want: []want{{invalid, "RDMA_DONE is no longer supported (RFC 8166, section 4.6.2): senders must not send it"}}},
		{name: "RDMA_NOMSG without a chunk", msg: words(1, 1, 32, 1, 0, 0, 0), header: true,
			want: []want{{invalid, "an RDMA_NOMSG with no chunk: its RPC message is nowhere"}}},
		{name: "RDMA_MSG without an RPC message", msg: words(1, 1, 32, 0, 0, 0, 0), header: true,
			want: []want{{invalid, "an RDMA_MSG with no RPC message after its 28-octet header"}}},
		{name: "the RPC XID differs from rdma_xid", msg: encode(hdr(1, 32, layers.RPCRDMAMsg), rpcCall(2)), header: true,
			want: []want{{invalid, "the RPC message's XID 0x00000002 differs from rdma_xid 0x00000001"}}},
		{name: "rdma_err 3", side: 1, msg: words(1, 1, 32, 4, 3), header: true,
			want: []want{{invalid, "rdma_err 3 is neither ERR_VERS (1) nor ERR_CHUNK (2)"},
				{finding.RPCRDMAErrorReply, "RDMA_ERROR with rdma_err 3 for XID 0x00000001"}}},
		{name: "rdma_err 3 of version 2", side: 1, msg: words(1, 2, 32, 4, 3), header: true,
			want: []want{{invalid, "rdma_err 3 is neither"}, {invalid, "rdma_vers is 2, not 1"}, {finding.RPCRDMAErrorReply, "rdma_err 3"}}},
		{name: "ERR_VERS echoes the request's version", side: 1, msg: words(1, 2, 32, 4, 1, 1, 1), header: true,
			want: []want{{finding.RPCRDMAErrorReply, "ERR_VERS"}}},
		{name: "ERR_CHUNK of version 7", side: 1, msg: words(1, 7, 32, 4, 2), header: true,
			want: []want{{invalid, "rdma_vers is 7, not 1"}, {finding.RPCRDMAErrorReply, "ERR_CHUNK"}}},
		{name: "a valid Call", msg: chunked(1, 0x66, 0x77, 0x88), header: true},
		{name: "a valid RDMA_NOMSG Call (a Long Call)", header: true,
			msg: encode(&layers.RPCRDMAHeader{XID: 1, Vers: 1, Credit: 32, Proc: layers.RPCRDMANoMsg,
				ReadList: []layers.RPCRDMAReadSegment{{Position: 0, RPCRDMASegment: seg(0x66)}}}, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, ModeAll, Limits{}, both())
			var opts []func(*Send)
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			r := b.send(tc.side, tc.msg, opts...)
			if r == nil {
				t.Fatal("no record in ModeAll")
			}
			checkFindings(t, "the Send", r.Findings, tc.want)
			if (r.Header != nil) != tc.header {
				t.Errorf("header %+v, want one: %v", r.Header, tc.header)
			}
			// A list cut at the octets kept is counted for the run.
			if cut := strings.Contains(tc.name, "longer than the octets kept"); b.out.ListsCut != map[bool]int{true: 1}[cut] {
				t.Errorf("%d lists cut", b.out.ListsCut)
			}
		})
	}
}

// An error of another kind than the layer's two, should it ever return
// one, is said as it is.
func TestCheckerHeaderOtherError(t *testing.T) {
	b := newBench(t, ModeAll, Limits{}, both())
	var fs []finding.Finding
	add := func(c finding.Code, format string, args ...any) { fs = append(fs, finding.New(c, format, args...)) }
	s := &Send{Head: callOf(1), HeadWhole: true}
	if b.chk.headerProblems(s, &layers.RPCRDMAHeader{}, errString("a new kind of error"), add) {
		t.Error("the lists count as read whole")
	}
	checkFindings(t, "headerProblems", fs, []want{{finding.RPCRDMAHeaderInvalid, "a new kind of error"}})
}

type errString string

func (e errString) Error() string { return string(e) }

// RDMA_ERROR answers a Call (RFC 8166, section 4.5): it retires the Call
// and grants credits like any Reply.
func TestCheckerErrorReply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		msg   []byte
		want  string
		error record.RPCRDMAError
	}{
		{"ERR_VERS", words(1, 1, 4, 4, 1, 1, 1), "RDMA_ERROR ERR_VERS for XID 0x00000001: the responder supports RPC-over-RDMA versions 1 to 1",
			record.RPCRDMAError{Code: 1, Low: 1, High: 1, HasRange: true}},
		{"ERR_VERS, a range", words(1, 1, 4, 4, 1, 2, 3), "the responder supports RPC-over-RDMA versions 2 to 3",
			record.RPCRDMAError{Code: 1, Low: 2, High: 3, HasRange: true}},
		{"ERR_CHUNK", words(1, 1, 4, 4, 2), "RDMA_ERROR ERR_CHUNK for XID 0x00000001: the responder could not process the Call's transport header or chunks",
			record.RPCRDMAError{Code: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, ModeFindings, Limits{}, both())
			b.send(0, chunked(1, 0, 0x77, 0))
			r := b.send(1, tc.msg)
			checkFindings(t, "the RDMA_ERROR", findingsOf(r), []want{{finding.RPCRDMAErrorReply, tc.want}})
			if r == nil || r.Header == nil || r.Header.Error == nil || *r.Header.Error != tc.error || r.Header.Proc != 4 {
				t.Fatalf("record %+v", r)
			}
			if len(b.chk.calls) != 0 {
				t.Error("the Call is still outstanding")
			}
			if f := b.chk.Figures(); f.CreditsGranted != 4 || !f.HasCredits {
				t.Errorf("figures %+v", f)
			}
		})
	}
}

// RDMA Reads (and atomics) outstanding from a side, against the lower of
// its own depth and the other's resources (IBTA Vol 1, section 12.6; RFC
// 6581, section 9.1 for MPA IRD and ORD).
func TestCheckerReadLimit(t *testing.T) {
	mpa := both()
	mpa.ReadLimit = [2]int{4, 2}
	mpa.readWhy = [2]readWhy{{mpaReads, 4, 8}, {mpaReads | mirrored, 2, 6}}
	noLimit := both()
	noLimit.HasReadLimit = [2]bool{}
	for _, tc := range []struct {
		name string
		neg  Negotiated
		side int
		ops  string // r: a Read Request, d: a Read done
		want string
		most int
	}{
		{"the initiator at its limit", both(), 0, "rrrrrrrr", "", 8},
		{"the initiator one over", both(), 0, "rrrrrrrrr",
			"frame 9: 9 RDMA Read Requests outstanding from the initiator, more than the 8 its connection setup allows it (REQ Initiator Depth 16, REP Responder Resources 8); over the limit once, at most 9 outstanding", 9},
		{"the responder over, three times", both(), 1, "rrrrrrdr",
			"frame 5: 5 RDMA Read Requests outstanding from the responder, more than the 4 its connection setup allows it (REP Initiator Depth 4, REQ Responder Resources 8); over the limit 3 times, at most 6 outstanding", 6},
		{"Reads done in time", both(), 1, "rrrrdrdrdrdr", "", 4},
		{"done more often than requested: never below none", both(), 1, "ddrrrr", "", 4},
		{"MPA, the initiator over twice", mpa, 0, "rrrrrr",
			"frame 5: 5 RDMA Read Requests outstanding from the initiator, more than the 4 its connection setup allows it (MPA Request ORD 4, MPA Reply IRD 8); over the limit twice, at most 6 outstanding", 6},
		{"MPA, the responder", mpa, 1, "rrr", "more than the 2 its connection setup allows it (MPA Reply ORD 2, MPA Request IRD 6); over the limit once, at most 3", 3},
		{"no limit from the setup", noLimit, 0, "rrrrrrrrrrrr", "", 12},
		{"a setup not seen", Negotiated{ReadLimit: [2]int{1, 1}, HasReadLimit: [2]bool{true, true}}, 0, "rrrr", "", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, ModeFindings, Limits{}, tc.neg)
			frame := 0
			for _, op := range tc.ops {
				if op == 'r' {
					frame++
					b.chk.ReadRequest(tc.side, frame)
				} else {
					b.chk.ReadDone(tc.side)
				}
			}
			var ws []want
			if tc.want != "" {
				ws = []want{{finding.RDMAReadLimitExceeded, tc.want}}
			}
			checkFindings(t, "the connection", b.chk.Findings(), ws)
			f := b.chk.Figures()
			var most [2]int
			most[tc.side] = tc.most
			if f.MaxOutstandingRDMAReads != most || f.RDMAReadLimit != tc.neg.ReadLimit || f.HasReadLimit != tc.neg.HasReadLimit {
				t.Errorf("figures %+v", f)
			}
			if len(b.recs) != 0 || b.out.RPCMessages != 0 {
				t.Error("Reads made records")
			}
		})
	}
}

// A Call whose header the capture cut is still a Call: it is tracked, its
// STags known only in part.
func TestCheckerCutCall(t *testing.T) {
	b := newBench(t, ModeFindings, Limits{}, both())
	call := chunked(1, 0x66, 0x77, 0)
	r := b.send(0, call, func(s *Send) { s.Head, s.HeadWhole, s.HeadCut = call[:40], false, "capture" })
	checkFindings(t, "the cut Call", findingsOf(r), []want{{finding.CaptureTruncated, "the capture holds 40 octets of the Send"}})
	checkFindings(t, "the next Call", findingsOf(b.send(0, callOf(2))), []want{{finding.CreditsExceeded, "makes 2 Calls outstanding"}})
	// Its write chunk's STag was not read: not judged.
	checkFindings(t, "the Reply", findingsOf(b.send(1, replyOf(1, 2), invalidate(0x77))), nil)
}

func TestReadWhy(t *testing.T) {
	for _, tc := range []struct {
		w    readWhy
		want string
	}{
		{readWhy{cmReads, 16, 8}, "REQ Initiator Depth 16, REP Responder Resources 8"},
		{readWhy{cmReads | mirrored, 4, 2}, "REP Initiator Depth 4, REQ Responder Resources 2"},
		{readWhy{mpaReads, 1, 3}, "MPA Request ORD 1, MPA Reply IRD 3"},
		{readWhy{mpaReads | mirrored, 5, 7}, "MPA Reply ORD 5, MPA Request IRD 7"},
	} {
		if got := tc.w.String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// TestCallCost: an outstanding Call is charged to the memory budget while
// it is tracked, and released with it.
func TestCallCost(t *testing.T) {
	b := budget.New(1 << 30)
	bench := newBench(t, ModeFindings, Limits{Budget: b}, both())
	before := b.Stats().Used
	bench.send(0, callOf(1))
	bench.send(0, callOf(2))
	if got := b.Stats().Used - before; got != int64(2*callCost) {
		t.Errorf("two Calls charged %d, want %d", got, 2*callCost)
	}
	bench.send(1, replyOf(1, 8))
	if got := b.Stats().Used - before; got != int64(callCost) {
		t.Errorf("after a Reply %d charged, want %d", got, callCost)
	}
	bench.chk.Close()
	if got := b.Stats().Used - before; got != 0 {
		t.Errorf("after Close %d charged", got)
	}
	// Past the budget, a Call is still followed (its count is bounded by
	// the limits) and charged: the run loop has the largest holder give
	// back.
	full := budget.New(1)
	bench = newBench(t, ModeFindings, Limits{Budget: full}, both())
	bench.send(0, callOf(1))
	if got := full.Stats().Used; got != int64(callCost) || bench.out.CallsUntracked != 0 {
		t.Errorf("past the budget: %d charged, %d untracked", got, bench.out.CallsUntracked)
	}
}
