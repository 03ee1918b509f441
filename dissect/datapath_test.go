package dissect_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The data path end to end, on captures crafted with craft.NFSTraffic over
// RoCEv2, RoCEv1 and native InfiniBand: the rpc records and the figures of
// each connection, every finding and its neighbour that raises none, and
// what the capture can do to a Send (retransmissions, a PSN gap, padding),
// traffic without its setup, and a reconnection.

// dpCollect keeps the rpc records too.
type dpCollect struct {
	collect
	rpcs []*record.RPC
}

func (c *dpCollect) RPC(r *record.RPC) error { c.rpcs = append(c.rpcs, r); return nil }

// dpTransports are the three IB-family carriers.
var dpTransports = []craft.Transport{craft.RoCEv2, craft.RoCEv1, craft.InfiniBand}

// bothR is an exchange where both sides set R and advertise 4096/4096.
func bothR(tr craft.Transport) craft.Exchange {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	return craft.Exchange{Transport: tr, Initiator: p, Responder: p}
}

// runFrames writes frames to a capture and dissects it with the data path
// in mode.
func runDatapathFrames(t *testing.T, mode datapath.Mode, frames []craft.Frame) *dpCollect {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dp.pcap")
	if err := craft.WriteFile(p, frames); err != nil {
		t.Fatal(err)
	}
	var c dpCollect
	if _, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{Datapath: mode}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func nfs(t *testing.T, x craft.Exchange, tr craft.Traffic) []craft.Frame {
	t.Helper()
	frames, err := x.NFSTraffic(tr)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// rpcRow is what the NFS exchange tests compare of each rpc record.
type rpcRow struct {
	Frame  int
	Dir    record.Direction
	Opcode string
	Proc   string
	XID    uint32
	Length int
	Frames int
}

// rpcRows are the rows of c's rpc records, each checked to carry no
// finding, a known length, the transport of c's connection and its
// request frame conn.
func rpcRows(t *testing.T, c *dpCollect, conn int) []rpcRow {
	t.Helper()
	var got []rpcRow
	for _, r := range c.rpcs {
		if len(r.Findings) > 0 {
			t.Errorf("frame %d: %v", r.Frame, codes(r.Findings))
		}
		if len(c.conns) == 0 || r.Connection != conn || r.Transport != c.conns[0].Transport || !r.LengthKnown || r.Header == nil {
			t.Fatalf("frame %d: connection %d, transport %s, length known %v", r.Frame, r.Connection, r.Transport, r.LengthKnown)
		}
		got = append(got, rpcRow{r.Frame, r.Direction, r.Opcode, layers.RPCRDMAProcName(r.Header.Proc), r.Header.XID, r.Length, len(r.Frames)})
	}
	return got
}

// checkNFSExchange checks what the clean NFS-like exchange (craft's
// NFSTraffic with no finding, both sides R and 4096/4096) gave beyond its
// rpc rows: the READ Reply's invalidation and write chunk, the long Call's
// frames, the connection's figures (with its frames data frames) and no
// finding.
func checkNFSExchange(t *testing.T, c *dpCollect, longCall []int, frames int) {
	t.Helper()
	if r := c.rpcs[3]; !r.Invalidate || r.InvalidateRKey != 0x00010001 || len(r.Header.WriteList) != 1 ||
		r.Header.WriteList[0][0] != (record.Segment{Handle: 0x00010001, Length: 8192, Offset: 0x00007f0000100000}) {
		t.Errorf("the READ Reply: %+v %+v", r, r.Header)
	}
	if r := c.rpcs[6]; !reflect.DeepEqual(r.Frames, longCall) {
		t.Errorf("the long Call's frames %v", r.Frames)
	}
	if len(c.conns) != 1 {
		t.Fatalf("%d connections", len(c.conns))
	}
	want := &record.Datapath{RPCMessages: [2]int{5, 5}, LargestInline: [2]int{3001, 188}, SendWithInvalidate: 3,
		MaxOutstandingCalls: 1, CreditsGranted: 32, HasCredits: true, RDMAReadLimit: [2]int{16, 16},
		HasReadLimit: [2]bool{true, true}, MaxOutstandingRDMAReads: [2]int{0, 1}, Frames: frames,
		Rule: datapath.RulePrivateData.String()}
	got := *c.conns[0].Datapath
	calls, replies := 0, 0
	for _, p := range got.RPCProcedures {
		calls, replies = calls+p.Calls, replies+p.Replies
	}
	// The fifth Reply is an RDMA_NOMSG (a Long Reply): its RPC message is in
	// the reply chunk, decoded from the Writes into it.
	if calls != 5 || replies != 5 || got.UnansweredCalls != 0 || got.ReverseCalls != 0 {
		t.Errorf("RPC: %d Calls, %d Replies by procedure (%+v), %d unanswered, %d reverse", calls, replies, got.RPCProcedures,
			got.UnansweredCalls, got.ReverseCalls)
	}
	// The READ's 8192 octets and the Long Reply's 6000 written by the
	// responder, the WRITE's 4096 pulled from the initiator; the
	// READDIRPLUS Reply went long, and 6144 would have carried it.
	if got.LongMessages != [2]int{0, 1} || got.InlineNeeded != [2]int{0, 6144} ||
		got.ExplicitRDMAOctets != [2]int64{4096, 14192} || got.ChunkViolations != 0 {
		t.Errorf("chunks: long %v, needed %v, octets %v, violations %d", got.LongMessages, got.InlineNeeded,
			got.ExplicitRDMAOctets, got.ChunkViolations)
	}
	if fs := codes(c.conns[0].Findings); !reflect.DeepEqual(fs, []string{"inline-threshold-too-small"}) {
		t.Errorf("connection findings %v", fs)
	}
	got.RPCProcedures, got.NFSOperations = nil, nil
	// Every Send acknowledged, nothing lost or sent again (health_test.go
	// has the rest).
	if h := got.Health; c.conns[0].Transport != record.IWARP && (h == nil || h.ACKs[0] == 0 || h.ACKs[1] == 0 || h.Retransmitted != [2]int{} || h.Missing != [2]int{}) {
		t.Errorf("health %+v", h)
	}
	got.Health = nil
	got.LongMessages, got.InlineNeeded, got.ExplicitRDMAOctets = [2]int{}, [2]int{}, [2]int64{}
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("datapath\n%+v\nwant\n%+v", &got, want)
	}
	var fs []string
	for _, code := range codes(c.conns[0].Findings) {
		if code != "inline-threshold-too-small" {
			fs = append(fs, code)
		}
	}
	if len(fs) != 0 || c.sum.RPCMessages != 10 || c.sum.DatapathOrphanFrames != 0 {
		t.Errorf("connection findings %v, summary %d rpc messages, %d orphan frames", codes(c.conns[0].Findings),
			c.sum.RPCMessages, c.sum.DatapathOrphanFrames)
	}
}

// rpcRecordCodes are the finding codes of every rpc record, in order.
func rpcRecordCodes(rs []*record.RPC) []string {
	var out []string
	for _, r := range rs {
		out = append(out, codes(r.Findings)...)
	}
	return out
}

func TestDatapathNFSExchange(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			frames := nfs(t, bothR(tr), craft.Traffic{})
			c := runDatapathFrames(t, datapath.ModeAll, frames)
			got := rpcRows(t, c, 1)
			i2r, r2i := record.InitiatorToResponder, record.ResponderToInitiator
			want := []rpcRow{
				{4, i2r, "SEND_ONLY", "RDMA_MSG", 0x5f000000, 68, 1},
				{6, r2i, "SEND_ONLY", "RDMA_MSG", 0x5f000000, 52, 1},
				{8, i2r, "SEND_ONLY", "RDMA_MSG", 0x5f000001, 264, 1},
				{19, r2i, "SEND_ONLY_WITH_INVALIDATE", "RDMA_MSG", 0x5f000001, 156, 1},
				{21, i2r, "SEND_ONLY", "RDMA_MSG", 0x5f000002, 192, 1},
				{28, r2i, "SEND_ONLY_WITH_INVALIDATE", "RDMA_MSG", 0x5f000002, 188, 1},
				{32, i2r, "SEND_LAST", "RDMA_MSG", 0x5f000003, 3001, 3},
				{34, r2i, "SEND_ONLY", "RDMA_MSG", 0x5f000003, 140, 1},
				{36, i2r, "SEND_ONLY", "RDMA_MSG", 0x5f000004, 192, 1},
				{45, r2i, "SEND_ONLY_WITH_INVALIDATE", "RDMA_NOMSG", 0x5f000004, 48, 1},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rpc records\n%v\nwant\n%v", got, want)
			}
			checkNFSExchange(t, c, []int{30, 31, 32}, 43)
			// The default mode writes no record for messages without a
			// finding; off follows nothing.
			if c := runDatapathFrames(t, datapath.ModeFindings, frames); len(c.rpcs) != 0 || c.sum.RPCMessages != 10 || c.conns[0].Datapath == nil {
				t.Errorf("findings mode: %d records, %d messages", len(c.rpcs), c.sum.RPCMessages)
			}
			if c := runDatapathFrames(t, datapath.ModeOff, frames); len(c.rpcs) != 0 || c.sum.RPCMessages != 0 || c.conns[0].Datapath != nil {
				t.Errorf("off: %d records, %d messages, datapath %+v", len(c.rpcs), c.sum.RPCMessages, c.conns[0].Datapath)
			}
		})
	}
}

// Each finding craft produces on demand, on each transport: exactly that
// finding, on the record (or connection) it belongs to.
func TestDatapathFindings(t *testing.T) {
	cases := []struct {
		code  string
		frame int // the rpc record that carries it; 0: the connection
	}{
		{"inline-threshold-exceeded", 51},
		{"send-with-invalidate-not-allowed", 19}, // and 28, 45: every Reply that invalidates
		{"invalidate-stag-unknown", 19},
		{"credits-exceeded", 6},
		{"rpcrdma-header-invalid", 47},
		{"rpcrdma-error-reply", 49},
		{"rdma-read-limit-exceeded", 0},
	}
	for _, tr := range dpTransports {
		for _, tc := range cases {
			t.Run(string(tr)+" "+tc.code, func(t *testing.T) {
				c := runDatapathFrames(t, datapath.ModeFindings, nfs(t, bothR(tr), craft.Traffic{Findings: []string{tc.code}}))
				var all []string
				for _, r := range c.rpcs {
					all = append(all, codes(r.Findings)...)
				}
				conn := codes(c.conns[0].Findings)
				if tc.frame == 0 {
					if len(all) != 0 || !slices.Contains(conn, tc.code) {
						t.Fatalf("rpc findings %v, connection %v", all, conn)
					}
					return
				}
				if len(c.rpcs) == 0 || c.rpcs[0].Frame != tc.frame || codes(c.rpcs[0].Findings)[0] != tc.code {
					t.Fatalf("records %v, findings %v", frameList(c.rpcs), all)
				}
				for _, code := range all {
					if code != tc.code {
						t.Errorf("also %s", code)
					}
				}
				if slices.Contains(conn, "rdma-read-limit-exceeded") {
					t.Errorf("connection findings %v", conn)
				}
			})
		}
	}
}

func frameList(rs []*record.RPC) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.Frame)
	}
	return out
}

// The neighbours that must raise nothing: a Call exactly at the inline
// threshold, each way; a well-formed Send With Invalidate (the NFS exchange
// above); a Read limit reached but not exceeded.
func TestDatapathNeighbours(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			x := bothR(tr)
			x.Responder.SendSize = 8192
			x.Initiator.ReceiveSize = 2048 // responder→initiator: 2048
			c, err := x.Connect()
			if err != nil {
				t.Fatal(err)
			}
			n := craft.NFS{C: c, XID: 1, Credits: 4}
			at := n.Call(craft.RPCMessage{Size: 4096})
			n.Reply(at, craft.RPCMessage{Size: 2048}, craft.SendOpts{})
			over := n.Call(craft.RPCMessage{Size: 4097})
			n.Reply(over, craft.RPCMessage{Size: 2049}, craft.SendOpts{})
			// Reads up to the limit: the REQ's Responder Resources are 16.
			var psns []uint32
			for i := range 16 {
				psns = append(psns, c.ReadRequest(craft.Responder, uint32(0x100+i), 0, 100))
			}
			for _, p := range psns {
				c.Respond(craft.Responder, p, 100)
			}
			frames, _ := c.Frames()
			got := runDatapathFrames(t, datapath.ModeFindings, frames)
			var lens []int
			for _, r := range got.rpcs {
				lens = append(lens, r.Length)
				if codes(r.Findings)[0] != "inline-threshold-exceeded" || len(r.Findings) != 1 {
					t.Errorf("frame %d: %v", r.Frame, codes(r.Findings))
				}
			}
			if !reflect.DeepEqual(lens, []int{4097, 2049}) {
				t.Errorf("over the threshold: %v, want the two Sends one octet over", lens)
			}
			d := got.conns[0].Datapath
			// The Reads pull handles no Call advertised: chunk violations,
			// 8 described and a count of the rest.
			var other []string
			for _, code := range codes(got.conns[0].Findings) {
				if code != "chunk-violation" {
					other = append(other, code)
				}
			}
			if len(other) != 0 || d.ChunkViolations != 16 || d.MaxOutstandingRDMAReads != [2]int{0, 16} || d.LargestInline != [2]int{4097, 2049} {
				t.Errorf("connection %v, %+v", codes(got.conns[0].Findings), d)
			}
		})
	}
}

// rcOp is the BTH opcode of a frame, or -1 for a CM frame.
func rcOp(tr craft.Transport, f craft.Frame) (op int, psn uint32) {
	first := gopacket.Decoder(golayers.LayerTypeEthernet)
	if tr == craft.InfiniBand {
		first = golayers.LinkType(layers.LinkTypeIB)
	}
	p := gopacket.NewPacket(f.Data, first, gopacket.Default)
	b, ok := p.Layer(layers.LayerTypeBTH).(*layers.BTH)
	if !ok || b.OpCode == layers.OpUDSendOnly {
		return -1, 0
	}
	return int(b.OpCode), b.PSN
}

// A multi-packet Send with padding, retransmitted packets (counted once), and
// a PSN gap (the length unknown, so never a finding).
func TestDatapathSendReassembly(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			frames := nfs(t, bothR(tr), craft.Traffic{Findings: []string{"inline-threshold-exceeded"}})
			// Frames 47 to 51 are the 4100-octet Call (First, three Middle,
			// Last); 30 to 32 the 3001-octet one, whose Last has a pad of 3.
			if op, _ := rcOp(tr, frames[46]); op != layers.OpSendFirst {
				t.Fatalf("frame 47 has opcode %#x", op)
			}
			// Retransmissions: the long Call's Middle again after its Last,
			// and the NULL Call's SEND Only once more: counted once each.
			re := slices.Concat(frames[:32], frames[30:31], frames[3:4], frames[32:])
			c := runDatapathFrames(t, datapath.ModeAll, re)
			if n := len(c.rpcs); n != 12 || c.conns[0].Datapath.RPCMessages != [2]int{6, 6} {
				t.Errorf("%d records, %v messages: a retransmission counted again", n, c.conns[0].Datapath.RPCMessages)
			}
			if r := c.rpcs[6]; r.Length != 3001 || !reflect.DeepEqual(r.Frames, []int{30, 31, 32}) {
				t.Errorf("the padded Send: %d octets in frames %v", r.Length, r.Frames)
			}
			if got := rpcRecordCodes(c.rpcs); !reflect.DeepEqual(got, []string{"inline-threshold-exceeded"}) {
				t.Errorf("findings %v", got)
			}
			if c.conns[0].Datapath.Frames != 51+2 {
				t.Errorf("%d frames counted, want every RC frame", c.conns[0].Datapath.Frames)
			}

			// A gap: the second Middle packet of the 4100-octet Call (frame
			// 49) is missing, so its Last is now frame 50. Its length is
			// unknown; nothing is judged on it.
			gap := slices.Concat(frames[:48], frames[49:])
			c = runDatapathFrames(t, datapath.ModeAll, gap)
			var big *record.RPC
			for _, r := range c.rpcs {
				if r.Frame == 50 {
					big = r
				}
			}
			if big == nil || big.LengthKnown || len(big.Findings) != 0 || !reflect.DeepEqual(big.Frames, []int{47, 48, 49, 50}) {
				t.Fatalf("the Send with a gap: %+v", big)
			}
			if big.Header == nil || big.Header.XID != 0x5f000005 {
				t.Errorf("its header (in the first packet) was not read: %+v", big.Header)
			}
			if got := rpcRecordCodes(c.rpcs); len(got) != 0 {
				t.Errorf("findings after the gap %v", got)
			}
		})
	}
}

// Traffic whose CM exchange is not in the capture: decoded (the heuristic
// finds RPC-over-RDMA), counted in the summary, never judged.
func TestDatapathWithoutSetup(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			frames := nfs(t, bothR(tr), craft.Traffic{Findings: []string{"inline-threshold-exceeded", "credits-exceeded",
				"send-with-invalidate-not-allowed", "rdma-read-limit-exceeded"}})
			var data []craft.Frame
			for _, f := range frames {
				if op, _ := rcOp(tr, f); op >= 0 {
					data = append(data, f)
				}
			}
			c := runDatapathFrames(t, datapath.ModeAll, data)
			if len(c.conns) != 0 || c.sum.DatapathOrphanFrames != len(data) {
				t.Errorf("%d connections, %d orphan frames of %d", len(c.conns), c.sum.DatapathOrphanFrames, len(data))
			}
			// The 10 of the NFS exchange, the big Call and its Reply, the
			// second NULL and its Reply, the Call with a read chunk of two
			// segments and its Reply.
			if len(c.rpcs) != 16 || c.sum.RPCMessages != 16 {
				t.Errorf("%d records, %d messages", len(c.rpcs), c.sum.RPCMessages)
			}
			for _, r := range c.rpcs {
				if r.Connection != 0 || r.Direction != record.NoDirection || len(r.Findings) != 0 || r.Header == nil {
					t.Errorf("frame %d: connection %d, direction %q, findings %v", r.Frame, r.Connection, r.Direction, codes(r.Findings))
				}
			}
			// Without setup, header problems are still problems.
			c = runDatapathFrames(t, datapath.ModeFindings, dataOnly(tr, nfs(t, bothR(tr), craft.Traffic{Findings: []string{"rpcrdma-header-invalid", "rpcrdma-error-reply"}})))
			if got := rpcRecordCodes(c.rpcs); !reflect.DeepEqual(got, []string{"rpcrdma-header-invalid", "rpcrdma-error-reply"}) {
				t.Errorf("findings without setup %v", got)
			}
		})
	}
}

func dataOnly(tr craft.Transport, frames []craft.Frame) []craft.Frame {
	var out []craft.Frame
	for _, f := range frames {
		if op, _ := rcOp(tr, f); op >= 0 {
			out = append(out, f)
		}
	}
	return out
}

// A reconnection between the same peers brings new QPNs and, here, smaller
// thresholds: each connection's traffic is judged against its own.
func TestDatapathReconnection(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			first := bothR(tr)
			c1, err := first.Connect()
			if err != nil {
				t.Fatal(err)
			}
			n1 := craft.NFS{C: c1, XID: 0x100, Credits: 8}
			n1.Reply(n1.Call(craft.RPCMessage{Size: 2000}), craft.RPCMessage{}, craft.SendOpts{})
			c1.Disconnect()
			second := bothR(tr)
			second.Attempt = 1
			second.Initiator.SendSize, second.Responder.ReceiveSize = 1024, 1024
			c2, err := second.Connect()
			if err != nil {
				t.Fatal(err)
			}
			n2 := craft.NFS{C: c2, XID: 0x200, Credits: 8}
			n2.Reply(n2.Call(craft.RPCMessage{Size: 2000}), craft.RPCMessage{}, craft.SendOpts{})
			f1, _ := c1.Frames()
			f2, _ := c2.Frames()
			all := slices.Concat(f1, f2)
			for i := range all {
				all[i].Time = craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)
			}
			c := runDatapathFrames(t, datapath.ModeFindings, all)
			if len(c.conns) != 2 {
				t.Fatalf("%d connections", len(c.conns))
			}
			if len(c.rpcs) != 1 || c.rpcs[0].Connection != c.conns[1].RequestFrame || codes(c.rpcs[0].Findings)[0] != "inline-threshold-exceeded" {
				t.Fatalf("records %v, findings %v", frameList(c.rpcs), rpcRecordCodes(c.rpcs))
			}
			for i, conn := range c.conns {
				if d := conn.Datapath; d == nil || d.RPCMessages != [2]int{1, 1} || d.LargestInline[0] != 2000 {
					t.Errorf("connection %d: %+v", i+1, d)
				}
			}
			if c.sum.DatapathOrphanFrames != 0 {
				t.Errorf("%d frames went to no connection", c.sum.DatapathOrphanFrames)
			}
		})
	}
}

// TestSnapLength128: the same NFS traffic captured at 128 octets a frame
// (tcpdump -s 128). The REQ keeps its Communication ID, Service ID and QPN
// but not its Starting PSN, nor anyone's private data: the connection still
// pairs, its traffic is followed and counted (the first packet gives the
// Starting PSN: nothing is missing), and what was cut (the thresholds, R)
// is unknown, not the defaults: nothing is judged against it.
func TestSnapLength128(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			frames := nfs(t, bothR(tr), craft.Traffic{})
			p := filepath.Join(t.TempDir(), "cut.pcap")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := craft.WriteCut(f, frames, 128); err != nil {
				t.Fatal(err)
			}
			f.Close()
			var c dpCollect
			if _, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{Datapath: datapath.ModeAll}, &c); err != nil {
				t.Fatal(err)
			}
			if len(c.conns) != 1 {
				t.Fatalf("%d connections", len(c.conns))
			}
			x := c.conns[0]
			d := x.Datapath
			if tr == craft.RoCEv1 {
				// RoCEv1's 40-octet GRH leaves 30 octets of the REQ: its
				// Communication ID and Service ID, not its QPN. It pairs,
				// but its traffic cannot be told from others'.
				if x.State != record.Established || !x.PrivateDataCut || d != nil || len(x.Findings) != 0 {
					t.Errorf("state %s, cut %v, datapath %+v, findings %v", x.State, x.PrivateDataCut, d, codes(x.Findings))
				}
				return
			}
			if x.State != record.Established || !x.PrivateDataCut || x.Inline != nil || d == nil || c.sum.RPCMessages != 10 {
				t.Fatalf("state %s, cut %v, inline %v, datapath %v, %d rpc messages", x.State, x.PrivateDataCut, x.Inline, d, c.sum.RPCMessages)
			}
			if d.Health == nil || d.Health.Missing != [2]int{} || d.Health.Retransmitted != [2]int{} {
				t.Errorf("health %+v: the Starting PSN was not learnt", d.Health)
			}
			for _, r := range c.rpcs {
				for _, f := range r.Findings {
					if f.Code != finding.CaptureTruncated && f.Code != finding.RPCRDMAHeaderInvalid {
						t.Errorf("frame %d: %s: %s", r.Frame, f.Code, f.Message)
					}
				}
			}
			for _, f := range x.Findings {
				t.Errorf("connection finding %s: %s", f.Code, f.Message)
			}
		})
	}
}
