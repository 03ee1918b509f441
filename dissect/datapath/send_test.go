package datapath

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The PSN bookkeeping and the reassembly of Sends (send.go), packet by
// packet on the rig of follower_test.go, where follower_test.go does not
// reach. IBTA Vol 1, chapter 9: each request packet of a side takes the
// next PSN (24 bits, wrapping), a READ Request ceil(length / path MTU) of
// them; a PSN seen before is a retransmission; responses carry the PSN of
// the request they answer, and a NAK's PSN is the one the responder
// expected: what comes before it is done. The rig's path MTU is 256
// (PathMTU 1).

// pk is one packet of a case: its side, opcode and PSN, its payload (all
// of it on the wire) and what else it carries.
type pk struct {
	side    int
	op      uint8
	psn     uint32
	payload []byte
	set     func(*Packet)
}

func dma(n uint32) func(*Packet)   { return func(p *Packet) { p.DMALength = n } }
func ieth(k uint32) func(*Packet)  { return func(p *Packet) { p.IETH = k } }
func aeth(syn uint8) func(*Packet) { return func(p *Packet) { p.Syndrome, p.HasAETH = syn, true } }

// play sends the packets of a case on the rig.
func (r *rig) play(ps []pk) {
	for _, p := range ps {
		r.pkt(p.side, p.op, p.psn, p.payload, -1, p.set)
	}
}

func (r *rig) chk() *Checker { return r.fl.byConn[r.conn.Number].chk }

// got is what a record says of its Send's extent.
type got struct {
	opcode string
	length int
	known  bool
}

func extents(rs []*record.RPC) []got {
	var out []got
	for _, x := range rs {
		out = append(out, got{x.Opcode, x.Length, x.LengthKnown})
	}
	return out
}

// The initiator's requests from PSN 100, the responder's from 200.
func TestFollowerPSNs(t *testing.T) {
	call := sized(callOf(1), 600)
	for _, tc := range []struct {
		name  string
		psn0  uint32
		mtu   int // the connection's path MTU, when not the rig's 256
		ps    []pk
		want  []got
		lost  bool // the checker was told frames are missing
		calls int  // Calls outstanding at the end
	}{
		{name: "in order", ps: []pk{{0, layers.OpSendOnly, 100, callOf(1), nil}, {1, layers.OpSendOnly, 200, replyOf(1, 8), nil}},
			want: []got{{"SEND_ONLY", 68, true}, {"SEND_ONLY", 52, true}}},
		{name: "a Send Only sent again counts once", ps: []pk{{0, layers.OpSendOnly, 100, callOf(1), nil}, {0, layers.OpSendOnly, 100, callOf(1), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, calls: 1},
		{name: "a Middle sent again counts once",
			ps: []pk{{0, layers.OpSendFirst, 100, call[:256], nil}, {0, layers.OpSendMiddle, 101, call[256:512], nil},
				{0, layers.OpSendMiddle, 101, call[256:512], nil}, {0, layers.OpSendLast, 102, call[512:], nil}},
			want: []got{{"SEND_LAST", 600, true}}, calls: 1},
		{name: "a Middle missing: the length is not known",
			ps:   []pk{{0, layers.OpSendFirst, 100, call[:256], nil}, {0, layers.OpSendLast, 102, call[512:], nil}},
			want: []got{{"SEND_LAST", 344, false}}, lost: true, calls: 1},
		{name: "packets missing between two Sends of the initiator: its Calls stay",
			ps:   []pk{{0, layers.OpSendOnly, 100, callOf(1), nil}, {0, layers.OpSendOnly, 103, callOf(2), nil}},
			want: []got{{"SEND_ONLY", 68, true}, {"SEND_ONLY", 68, true}}, lost: true, calls: 2},
		{name: "packets of the responder missing: the Calls may have been answered",
			ps:   []pk{{0, layers.OpSendOnly, 100, callOf(1), nil}, {1, layers.OpSendOnly, 202, replyOf(9, 8), nil}},
			want: []got{{"SEND_ONLY", 68, true}, {"SEND_ONLY", 52, true}}, lost: true},
		{name: "PSNs wrap after 2^24 - 1", psn0: 0xffffff,
			ps:   []pk{{0, layers.OpSendOnly, 0xffffff, callOf(1), nil}, {1, layers.OpSendOnly, 200, replyOf(1, 8), nil}, {0, layers.OpSendOnly, 0, callOf(2), nil}},
			want: []got{{"SEND_ONLY", 68, true}, {"SEND_ONLY", 52, true}, {"SEND_ONLY", 68, true}}, calls: 1},
		{name: "a PSN behind the next is a retransmission, however far",
			ps:   []pk{{0, layers.OpSendOnly, 100, callOf(1), nil}, {0, layers.OpSendOnly, (100 - 1<<22) & psnMask, callOf(2), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, calls: 1},
		{name: "a PSN ahead of the next, by less than half the space, follows a gap",
			ps:   []pk{{0, layers.OpSendOnly, 100, callOf(1), nil}, {0, layers.OpSendOnly, 101 + 1<<22 + 1, callOf(2), nil}},
			want: []got{{"SEND_ONLY", 68, true}, {"SEND_ONLY", 68, true}}, lost: true, calls: 2},
		{name: "a READ Request of 1000 octets takes 4 PSNs",
			ps:   []pk{{0, layers.OpReadRequest, 100, nil, dma(1000)}, {0, layers.OpSendOnly, 104, callOf(1), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, calls: 1},
		{name: "after it, PSN 103 is one seen before",
			ps:   []pk{{0, layers.OpReadRequest, 100, nil, dma(1000)}, {0, layers.OpSendOnly, 103, callOf(1), nil}},
			want: nil},
		{name: "after it, PSN 105 follows a gap",
			ps:   []pk{{0, layers.OpReadRequest, 100, nil, dma(1000)}, {0, layers.OpSendOnly, 105, callOf(1), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, lost: true, calls: 1},
		{name: "256 octets take 1 PSN, 257 take 2, none take 1",
			ps: []pk{{0, layers.OpReadRequest, 100, nil, dma(256)}, {0, layers.OpReadRequest, 101, nil, dma(257)},
				{0, layers.OpReadRequest, 103, nil, dma(0)}, {0, layers.OpSendOnly, 104, callOf(1), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, calls: 1},
		{name: "a path MTU of 4096", mtu: 4096,
			ps:   []pk{{0, layers.OpReadRequest, 100, nil, dma(8193)}, {0, layers.OpSendOnly, 103, callOf(1), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, calls: 1},
		{name: "path MTU unknown: the next request tells where the sequence goes on", mtu: -1,
			ps: []pk{{0, layers.OpReadRequest, 100, nil, dma(1000)}, {0, layers.OpSendOnly, 150, callOf(1), nil},
				{0, layers.OpSendOnly, 151, callOf(2), nil}},
			want: []got{{"SEND_ONLY", 68, true}, {"SEND_ONLY", 68, true}}, calls: 2},
		{name: "atomics and RDMA WRITEs take a PSN a packet",
			ps: []pk{{0, layers.OpCmpSwap, 100, nil, nil}, {0, layers.OpFetchAdd, 101, nil, nil},
				{0, layers.OpWriteFirst, 102, make([]byte, 256), nil}, {0, layers.OpWriteLast, 103, make([]byte, 10), nil},
				{0, layers.OpWriteOnlyImm, 104, make([]byte, 10), nil}, {0, layers.OpSendOnly, 105, callOf(1), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, calls: 1},
		{name: "a UD opcode is none of the connection's requests",
			ps:   []pk{{0, 0x64, 500, callOf(9), nil}, {0, 0x24, 600, callOf(9), nil}, {0, layers.OpSendOnly, 100, callOf(1), nil}},
			want: []got{{"SEND_ONLY", 68, true}}, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			psn0 := uint32(100)
			if tc.psn0 != 0 {
				psn0 = tc.psn0
			}
			r := newRig(t, ModeAll, Limits{}, psn0, 200, true)
			switch {
			case tc.mtu < 0:
				r.fl.byConn[r.conn.Number].mtu = 0
			case tc.mtu > 0:
				r.fl.byConn[r.conn.Number].mtu = tc.mtu
			}
			r.play(tc.ps)
			if g := extents(r.recs); !slices.Equal(g, tc.want) {
				t.Errorf("records %+v, want %+v", g, tc.want)
			}
			c := r.chk()
			if c.lostCalls != tc.lost || len(c.calls) != tc.calls {
				t.Errorf("lost %v, %d Calls outstanding; want %v, %d", c.lostCalls, len(c.calls), tc.lost, tc.calls)
			}
			if f := c.Figures(); f.Frames != len(tc.ps) {
				t.Errorf("%d frames counted, want every one of %d", f.Frames, len(tc.ps))
			}
		})
	}
}

// Reads and atomics the responder issued, from PSN 200: a Read of 100
// octets (PSN 200), one of 600 (201 to 203), a compare and swap (204); the
// initiator's responses complete them.
func TestFollowerResponses(t *testing.T) {
	for _, tc := range []struct {
		name string
		ps   []pk
		left int // Reads outstanding after
	}{
		{"none", nil, 3},
		{"a READ Response Only at the first's PSN", []pk{{0, layers.OpReadResponseOnly, 200, nil, nil}}, 2},
		{"READ Response First and Middle complete nothing",
			[]pk{{0, layers.OpReadResponseFirst, 201, nil, nil}, {0, layers.OpReadResponseMiddle, 202, nil, nil}}, 3},
		{"a READ Response Last at the second's last PSN completes both", []pk{{0, layers.OpReadResponseLast, 203, nil, nil}}, 1},
		{"an ATOMIC Acknowledge at the third's", []pk{{0, layers.OpAtomicAcknowledge, 204, nil, nil}}, 0},
		{"an ACK past them all", []pk{{0, layers.OpAcknowledge, 210, nil, aeth(0x1f)}}, 0},
		{"a response before the first's end", []pk{{0, layers.OpReadResponseLast, 199, nil, nil}}, 3},
		{"a NAK at the second's last PSN: only the first is done", []pk{{0, layers.OpAcknowledge, 203, nil, aeth(0x60)}}, 2},
		{"a NAK inside the second: the first is done", []pk{{0, layers.OpAcknowledge, 201, nil, aeth(0x61)}}, 2},
		{"an RNR NAK at the first: none is done", []pk{{0, layers.OpAcknowledge, 200, nil, aeth(0x21)}}, 3},
		{"an ACK at the first", []pk{{0, layers.OpAcknowledge, 200, nil, aeth(0x00)}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, ModeFindings, Limits{}, 100, 200, false)
			r.play([]pk{{1, layers.OpReadRequest, 200, nil, dma(100)}, {1, layers.OpReadRequest, 201, nil, dma(600)},
				{1, layers.OpCmpSwap, 204, nil, nil}})
			r.play(tc.ps)
			c := r.chk()
			if c.reads[1] != tc.left || len(r.fl.byConn[r.conn.Number].sides[1].reads) != tc.left {
				t.Errorf("%d Reads outstanding (%d PSNs kept), want %d", c.reads[1], len(r.fl.byConn[r.conn.Number].sides[1].reads), tc.left)
			}
			if c.reads[0] != 0 || c.lostCalls {
				t.Errorf("the initiator's side touched: %d Reads, lost %v", c.reads[0], c.lostCalls)
			}
		})
	}
}

// More Reads outstanding than any setup allows (readsPerSide): the oldest
// is no longer tracked one by one, but stays outstanding (counted, and
// said) until a response answers it or a later one.
func TestFollowerReadsBound(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 100, 200, false)
	const n = readsPerSide + 744 // 1000 Reads outstanding
	for i := range n {
		r.pkt(1, layers.OpReadRequest, 200+uint32(i), nil, 0, dma(1))
	}
	c := r.chk()
	st := &r.fl.byConn[r.conn.Number].sides[1]
	if c.reads[1] != n || len(st.reads) != readsPerSide || st.reads[0] != 200+744 || st.forgot != 744 {
		t.Errorf("%d Reads outstanding, %d kept from PSN %d, %d forgotten", c.reads[1], len(st.reads), st.reads[0], st.forgot)
	}
	if f := c.Figures(); f.MaxOutstandingRDMAReads[1] != n {
		t.Errorf("figures %+v", f)
	}
	fs := c.Findings()
	if len(fs) != 2 || fs[0].Code != finding.RDMAReadLimitExceeded || !strings.Contains(fs[0].Message, "at most 1000 outstanding") ||
		fs[1].Code != finding.StateLimitReached || !strings.Contains(fs[1].Message, "744 of them were counted as outstanding") {
		t.Errorf("findings %+v", fs)
	}
	checkDropNotes(t, r.fl, map[record.DropHolder]int{record.DropRDMAReads: 744})
	// The response to the 744th: the forgotten ones are done, no other.
	r.pkt(0, layers.OpReadResponseOnly, 200+743, nil, 0, aeth(0))
	if c.reads[1] != readsPerSide || st.forgot != 0 {
		t.Errorf("after the 744th's response: %d outstanding, %d forgotten", c.reads[1], st.forgot)
	}
	// One to the last: all done.
	r.pkt(0, layers.OpReadResponseOnly, 200+n-1, nil, 0, aeth(0))
	if c.reads[1] != 0 || len(st.reads) != 0 {
		t.Errorf("after the last response: %d outstanding, %d kept", c.reads[1], len(st.reads))
	}
}

// A later response completes the Reads no longer tracked, which come
// before it.
func TestFollowerReadsForgottenDone(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 100, 200, false)
	for i := range readsPerSide + 2 {
		r.pkt(1, layers.OpReadRequest, 200+uint32(i), nil, 0, dma(1))
	}
	r.pkt(0, layers.OpReadResponseOnly, 200+readsPerSide, nil, 0, aeth(0)) // the 257th
	if c := r.chk(); c.reads[1] != 1 {
		t.Errorf("%d outstanding, want 1", c.reads[1])
	}
}

// A READ Request takes ceil(DMA Length / path MTU) PSNs for any 32-bit
// length (no overflow near 2^32), and one over 2^31 is said
// (rdma-length-invalid), once per connection with a count.
func TestFollowerDMALength(t *testing.T) {
	for _, tc := range []struct {
		length uint32
		psns   uint32
		bad    bool
	}{
		{1, 1, false}, {256, 1, false}, {257, 2, false}, {1 << 31, 1 << 23, false},
		{1<<31 + 1, 1<<23 + 1, true}, {1<<32 - 256, 1<<24 - 1, true}, {1<<32 - 1, 1 << 24, true},
	} {
		r := newRig(t, ModeFindings, Limits{}, 100, 200, false)
		r.pkt(0, layers.OpReadRequest, 100, nil, 0, dma(tc.length))
		st := &r.fl.byConn[r.conn.Number].sides[0]
		if want := (100 + tc.psns) & psnMask; st.next != want {
			t.Errorf("DMA Length %d: next PSN %d, want %d", tc.length, st.next, want)
		}
		var codes []string
		for _, f := range r.chk().Findings() {
			codes = append(codes, f.Code.String())
		}
		if got := slices.Contains(codes, "rdma-length-invalid"); got != tc.bad {
			t.Errorf("DMA Length %d: findings %v", tc.length, codes)
		}
	}
	r := newRig(t, ModeFindings, Limits{}, 100, 200, false)
	r.pkt(0, layers.OpWriteOnly, 100, nil, 0, dma(1<<32-1))
	r.pkt(0, layers.OpWriteOnly, 101, nil, 0, dma(1<<31+1))
	fs := r.chk().Findings()
	if len(fs) != 1 || fs[0].Message != "frame 4: RC RDMA WRITE Only from the initiator, DMA Length 4294967295, over the 2^31 octets of the largest message; 2 such requests on this connection" {
		t.Errorf("findings %+v", fs)
	}
}

// Sends in pieces: First, Middle..., Last; a piece out of place ends or
// is dropped; what each opcode names.
func TestFollowerSendPieces(t *testing.T) {
	// Two packets at the path MTU of 256 (First, Last), or three.
	call, call3 := sized(callOf(1), 500), sized(callOf(1), 600)
	reply := sized(replyOf(1, 8), 500)
	long := sized(callOf(1), 12*256)
	var longPs []pk
	for i := range 12 {
		op := uint8(layers.OpSendMiddle)
		switch i {
		case 0:
			op = layers.OpSendFirst
		case 11:
			op = layers.OpSendLast
		}
		longPs = append(longPs, pk{0, op, 100 + uint32(i), long[256*i : 256*(i+1)], nil})
	}
	for _, tc := range []struct {
		name    string
		ps      []pk
		wire    int // when > 0: the first packet's wire length, its payload cut short
		want    []got
		frames  [][]int
		inv     uint32 // the R_Key the last record invalidates
		codes   []string
		orphans int // Middle and Last packets without their First
	}{
		{name: "a First ends the Send in progress, as far as it came",
			ps: []pk{{0, layers.OpSendFirst, 100, call[:256], nil}, {0, layers.OpSendFirst, 101, call[:256], nil},
				{0, layers.OpSendLast, 102, call[256:], nil}},
			want: []got{{"SEND_FIRST", 256, false}, {"SEND_LAST", 500, true}}, frames: [][]int{{4}, {5, 6}},
			codes: []string{"rpc-call-resent"}}, // the same Call (XID 1), begun again
		{name: "a Send Only ends it too",
			ps:   []pk{{0, layers.OpSendFirst, 100, call[:256], nil}, {0, layers.OpSendOnly, 101, callOf(2), nil}},
			want: []got{{"SEND_FIRST", 256, false}, {"SEND_ONLY", 68, true}}, frames: [][]int{{4}, {5}},
			codes: []string{"credits-exceeded"}}, // two Calls outstanding, no Reply yet
		{name: "a Middle and a Last without their First are dropped",
			ps: []pk{{0, layers.OpSendMiddle, 100, call3[256:512], nil}, {0, layers.OpSendLast, 101, call3[512:], nil}}, orphans: 2},
		{name: "SEND Last with Invalidate",
			ps:   []pk{{1, layers.OpSendFirst, 200, reply[:256], nil}, {1, layers.OpSendLastInvalidate, 201, reply[256:], ieth(0x77)}},
			want: []got{{"SEND_LAST_WITH_INVALIDATE", 500, true}}, frames: [][]int{{4, 5}}, inv: 0x77,
			codes: []string{"send-with-invalidate-not-allowed", "invalidate-stag-unknown"}},
		{name: "SEND Only with Invalidate",
			ps:   []pk{{1, layers.OpSendOnlyInvalidate, 200, replyOf(1, 8), ieth(0x78)}},
			want: []got{{"SEND_ONLY_WITH_INVALIDATE", 52, true}}, frames: [][]int{{4}}, inv: 0x78,
			codes: []string{"send-with-invalidate-not-allowed", "invalidate-stag-unknown"}},
		{name: "with Immediate",
			ps: []pk{{0, layers.OpSendFirst, 100, call[:256], nil}, {0, layers.OpSendLastImm, 101, call[256:], nil},
				{1, layers.OpSendOnlyImm, 200, replyOf(1, 8), nil}},
			want: []got{{"SEND_LAST_WITH_IMMEDIATE", 500, true}, {"SEND_ONLY_WITH_IMMEDIATE", 52, true}}, frames: [][]int{{4, 5}, {6}}},
		{name: "longer than the first octets kept", ps: longPs,
			want: []got{{"SEND_LAST", 3072, true}}, frames: [][]int{{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}},
		{name: "a First the capture cut: the octets after it are not contiguous", wire: 256,
			ps: []pk{{0, layers.OpSendFirst, 100, call3[:20], nil}, {0, layers.OpSendMiddle, 101, call3[256:512], nil},
				{0, layers.OpSendLast, 102, call3[512:], nil}},
			want: []got{{"SEND_LAST", 600, true}}, frames: [][]int{{4, 5, 6}}, codes: []string{"capture-truncated"}},
		{name: "a Send Only the capture cut", wire: 68, ps: []pk{{0, layers.OpSendOnly, 100, callOf(1)[:12], nil}},
			want: []got{{"SEND_ONLY", 68, true}}, frames: [][]int{{4}}, codes: []string{"capture-truncated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, ModeAll, Limits{}, 100, 200, true)
			for i, p := range tc.ps {
				wire := -1
				if i == 0 && tc.wire > 0 {
					wire = tc.wire
				}
				r.pkt(p.side, p.op, p.psn, p.payload, wire, p.set)
			}
			if g := extents(r.recs); !slices.Equal(g, tc.want) {
				t.Fatalf("records %+v, want %+v", g, tc.want)
			}
			for i, x := range r.recs {
				if !slices.Equal(x.Frames, tc.frames[i]) {
					t.Errorf("record %d: frames %v, want %v", i, x.Frames, tc.frames[i])
				}
				if x.Header == nil && !slices.Contains(tc.codes, "capture-truncated") {
					t.Errorf("record %d: no header", i)
				}
			}
			if n := len(r.recs); n > 0 {
				last := r.recs[n-1]
				if last.Invalidate != (tc.inv != 0) || last.InvalidateRKey != tc.inv {
					t.Errorf("invalidate %v 0x%x, want 0x%x", last.Invalidate, last.InvalidateRKey, tc.inv)
				}
			}
			if c := r.codes(); !slices.Equal(c, tc.codes) {
				t.Errorf("findings %v, want %v", c, tc.codes)
			}
			if r.fl.bufsOut != 0 {
				t.Errorf("%d buffers still out", r.fl.bufsOut)
			}
			if r.fl.OrphanPackets != tc.orphans {
				t.Errorf("%d orphan packets, want %d", r.fl.OrphanPackets, tc.orphans)
			}
		})
	}
}

// A direction whose setup was not seen: its other requests are not
// followed, so a PSN jump between Sends says nothing, one inside a Send is
// a gap, and one seen before a retransmission.
func TestFollowerOrphanPSNs(t *testing.T) {
	call := sized(callOf(1), 600)
	for _, tc := range []struct {
		name string
		ps   []pk // side ignored: one direction
		want []got
	}{
		{"in order", []pk{{0, layers.OpSendFirst, 7, call[:256], nil}, {0, layers.OpSendLast, 8, call[256:], nil}},
			[]got{{"SEND_LAST", 600, true}}},
		{"a gap inside a Send", []pk{{0, layers.OpSendFirst, 7, call[:256], nil}, {0, layers.OpSendLast, 9, call[256:], nil}},
			[]got{{"SEND_LAST", 600, false}}},
		{"a jump between Sends", []pk{{0, layers.OpSendOnly, 7, callOf(1), nil}, {0, layers.OpSendFirst, 20, call[:256], nil},
			{0, layers.OpSendLast, 21, call[256:], nil}},
			[]got{{"SEND_ONLY", 68, true}, {"SEND_LAST", 600, true}}},
		{"a retransmission", []pk{{0, layers.OpSendOnly, 7, callOf(1), nil}, {0, layers.OpSendOnly, 7, callOf(1), nil}},
			[]got{{"SEND_ONLY", 68, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, ModeAll, Limits{}, 100, 200, true)
			for i, p := range tc.ps {
				r.fl.Packet(&Packet{Frame: 10 + i, Net: NetRoCEv2, Src: Addr{15: 7}, Dst: Addr{15: 8}, OpCode: p.op, DestQP: 0x77, PSN: p.psn,
					Payload: p.payload, PayloadLen: len(p.payload)})
				r.drain()
			}
			if g := extents(r.recs); !slices.Equal(g, tc.want) {
				t.Errorf("records %+v, want %+v", g, tc.want)
			}
			if r.fl.OrphanFrames != len(tc.ps) {
				t.Errorf("%d frames of no connection", r.fl.OrphanFrames)
			}
		})
	}
}

// rcFrame is an RC frame as the decoder hands it over, decoded only when
// asked.
type rcFrame struct {
	op       uint8
	qp, dst4 uint32
	p        *Packet
	decoded  bool
}

func (f *rcFrame) Key() (uint8, uint32, uint32) { return f.op, f.qp, f.dst4 }
func (f *rcFrame) Packet() *Packet              { f.decoded = true; return f.p }

// RC decodes only the frames that may matter: Sends, and frames whose key
// a connection followed has.
func TestFollowerRC(t *testing.T) {
	r := newRig(t, ModeAll, Limits{}, 100, 200, true)
	res := Addr{10: 0xff, 11: 0xff, 12: 192, 14: 2, 15: 2}
	ini := Addr{10: 0xff, 11: 0xff, 12: 192, 14: 2, 15: 1}
	for _, tc := range []struct {
		name    string
		f       rcFrame
		decoded bool
		orphans int
	}{
		{"an ACK of no connection", rcFrame{op: layers.OpAcknowledge, qp: 0x999, dst4: 0xc0000202}, false, 1},
		{"a READ Request of the connection",
			rcFrame{op: layers.OpReadRequest, qp: 0x200, dst4: 0xc0000202,
				p: &Packet{Frame: 50, Net: NetRoCEv2, Src: ini, Dst: res, OpCode: layers.OpReadRequest, DestQP: 0x200, PSN: 100, DMALength: 1}},
			true, 0},
		{"a Send of no connection",
			rcFrame{op: layers.OpSendOnly, qp: 0x999, dst4: 0xc0000202,
				p: &Packet{Frame: 51, Net: NetRoCEv2, Src: ini, Dst: res, OpCode: layers.OpSendOnly, DestQP: 0x999, Payload: callOf(1), PayloadLen: 68}},
			true, 1},
	} {
		before := r.fl.OrphanFrames
		r.fl.RC(&tc.f)
		if tc.f.decoded != tc.decoded || r.fl.OrphanFrames-before != tc.orphans {
			t.Errorf("%s: decoded %v, %d frames of no connection", tc.name, tc.f.decoded, r.fl.OrphanFrames-before)
		}
	}
	if c := r.chk(); c.reads[0] != 1 {
		t.Errorf("the connection's READ Request not counted: %d", c.reads[0])
	}
	r.fl.out.releaseAll()
	if r.fl.RPCMessages() != 1 || r.fl.CallsUntracked() != 0 || len(r.fl.Take()) != 1 {
		t.Errorf("%d messages", r.fl.RPCMessages())
	}
}

// Each network names its endpoints its own way: IP addresses (RoCEv2),
// GIDs (RoCEv1), LIDs (native InfiniBand).
func TestFollowerNets(t *testing.T) {
	gid := Addr{0xfe, 0x80, 15: 1}
	for _, tc := range []struct {
		net       Net
		src       Addr
		transport record.Transport
		want      string
	}{
		{NetRoCEv2, Addr{10: 0xff, 11: 0xff, 12: 198, 13: 51, 14: 100, 15: 1}, record.RoCEv2, "198.51.100.1"},
		{NetRoCEv1, gid, record.RoCEv1, "fe80::1"},
		{NetIB, LIDAddr(0x1234), record.InfiniBand, "LID 4660"},
	} {
		out := NewOutput(ModeAll, Limits{}, "t")
		fl := NewFollower(out)
		fl.SetFile("eth0")
		fl.Packet(&Packet{Frame: 1, Net: tc.net, Src: tc.src, OpCode: layers.OpSendOnly, DestQP: 5, Payload: callOf(1), PayloadLen: 68})
		fl.Flush() // the Call's record waits for its Reply until the input ends
		rs := fl.Take()
		if len(rs) != 1 || rs[0].Src.String() != tc.want || rs[0].Transport != tc.transport || rs[0].File != "eth0" {
			t.Errorf("%v: records %+v", tc.net, rs)
		}
		fl.Close()
	}
}

// The connections the follower takes from the tracker: those of the
// InfiniBand family with their CM bodies and addresses it can match.
func TestFollowerEstablished(t *testing.T) {
	ib := &record.CMInfo{LocalQPN: 0x100, SLID: 1, DLID: 2, PathMTU: 5}
	for _, tc := range []struct {
		name      string
		transport record.Transport
		ini       record.Endpoint
		req, rep  *record.CMInfo
		followed  bool
	}{
		{"RoCEv2", record.RoCEv2, ep("192.0.2.1"), &record.CMInfo{LocalQPN: 0x100}, &record.CMInfo{LocalQPN: 0x200}, true},
		{"RoCEv1", record.RoCEv1, record.GIDEndpoint([16]byte{0xfe, 0x80, 15: 1}), &record.CMInfo{LocalQPN: 0x100}, &record.CMInfo{LocalQPN: 0x200}, true},
		{"native InfiniBand, on the LRH's LIDs", record.InfiniBand, record.LIDEndpoint(1), ib, &record.CMInfo{LocalQPN: 0x200}, true},
		{"without the REP's body", record.RoCEv2, ep("192.0.2.1"), &record.CMInfo{}, nil, false},
		{"without the initiator's address", record.RoCEv2, record.Endpoint{}, &record.CMInfo{}, &record.CMInfo{}, false},
		{"a transport of another family", record.Transport("other"), ep("192.0.2.1"), &record.CMInfo{}, &record.CMInfo{}, false},
	} {
		fl := NewFollower(NewOutput(ModeAll, Limits{}, "t"))
		c := &record.Connection{Number: 1, Transport: tc.transport, Initiator: tc.ini, Responder: ep("192.0.2.2"), RequestFrame: 1,
			State: record.Established}
		conn.Decide(c)
		fl.Connection(&conn.Event{Kind: conn.Established, Conn: c, Request: tc.req, Reply: tc.rep})
		f := fl.byConn[1]
		if (f != nil) != tc.followed {
			t.Errorf("%s: followed %v", tc.name, f != nil)
			continue
		}
		if f != nil && tc.transport == record.InfiniBand && (f.keys[0].src != LIDAddr(1) || f.keys[0].dst != LIDAddr(2) || f.mtu != 4096) {
			t.Errorf("%s: keys %+v, MTU %d", tc.name, f.keys, f.mtu)
		}
	}
}

func TestIsSend(t *testing.T) {
	for op := range 0x100 {
		want := op <= 0x05 || op == 0x16 || op == 0x17 // SEND First ... Only with Immediate, and with Invalidate
		if IsSend(uint8(op)) != want {
			t.Errorf("IsSend(0x%02x) = %v", op, !want)
		}
	}
}
