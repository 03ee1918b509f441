package dissect_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Chunks on the InfiniBand family (issue 29): every chunk violation craft
// produces and its clean neighbour, Long Calls put together from their
// Read Responses (also out of order), Long Replies from Writes over several
// packets, a retransmitted Write, and the threshold advice with its
// figures, on RoCEv2, RoCEv1 and native InfiniBand.

// opIndex is the index of the n-th frame (from 0) with opcode op at or
// after from, or -1.
func opIndex(tr craft.Transport, frames []craft.Frame, from, n int, op uint8) int {
	for i := from; i < len(frames); i++ {
		if o, _ := rcOp(tr, frames[i]); o == int(op) {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return -1
}

// restamp makes the frames' times rise again after frames were moved or
// copied: each at least a microsecond after the one before.
func restamp(frames []craft.Frame) []craft.Frame {
	out := slices.Clone(frames)
	for i := 1; i < len(out); i++ {
		if !out[i].Time.After(out[i-1].Time) {
			out[i].Time = out[i-1].Time.Add(time.Microsecond)
		}
	}
	return out
}

// chunkFindings are the connection's chunk-violation messages, and the
// codes of its other findings but inline-threshold-too-small.
func chunkFindings(c *dpCollect) (violations, other []string) {
	for _, f := range c.conns[0].Findings {
		switch f.Code.String() {
		case "chunk-violation":
			violations = append(violations, f.Message)
		case "inline-threshold-too-small":
		default:
			other = append(other, f.Code.String())
		}
	}
	for _, r := range c.rpcs {
		other = append(other, codes(r.Findings)...)
	}
	return violations, other
}

// rpcByXID is the rpc record of the message of xid and type ("call",
// "reply"), nil when none.
func rpcByXID(c *dpCollect, xid uint32, typ string) *record.RPC {
	for _, r := range c.rpcs {
		if m := r.Message; m != nil && m.XID == xid && m.Type == typ {
			return r
		}
	}
	return nil
}

// Each chunk violation craft makes, alone: exactly one chunk-violation on
// the connection, which names the frame, the handle and the segment. The
// octets of a Write or Read outside every segment are not counted (the
// peer refuses it); the usual exchange moves 4096 and 14192.
func TestChunkViolations(t *testing.T) {
	usual := [2]int64{4096, 14192}
	cases := []struct {
		kind   string
		want   string
		octets [2]int64
	}{
		{"write-past-end", "frame 49: an RDMA Write from the responder of 4097 octets at offset 0x00007f0000700000, outside the " +
			"write chunk segment the Call of XID 0x5f000005 advertised for handle 0x00070001 (offset 0x00007f0000700000, 4096 octets)", usual},
		{"write-unknown-handle", "frame 49: an RDMA Write from the responder to handle 0x0007ff01 (offset 0x00007f0000700000, " +
			"4096 octets), which no outstanding Call advertised", usual},
		{"read-outside", "frame 49: an RDMA Read Request from the responder of 4096 octets at offset 0x00007f0000700004, outside " +
			"the read chunk segment the Call of XID 0x5f000005 advertised for handle 0x00070001 (offset 0x00007f0000700000, 4096 octets)", usual},
		{"reply-claims-more", "frame 54: the Reply to XID 0x5f000005 claims 8192 octets in handle 0x00070001, where its Call " +
			"offered 4096 (write chunk)", [2]int64{4096, 14192 + 4096}},
		{"reply-unknown-handle", "frame 54: the Reply to XID 0x5f000005 names handle 0x0007ff01, which its Call did not offer " +
			"for a write chunk", [2]int64{4096, 14192 + 4096}},
	}
	for _, tr := range dpTransports {
		for _, tc := range cases {
			t.Run(string(tr)+" "+tc.kind, func(t *testing.T) {
				c := runDatapathFrames(t, datapath.ModeFindings, nfs(t, bothR(tr), craft.Traffic{Violations: []string{tc.kind}}))
				v, other := chunkFindings(c)
				d := c.conns[0].Datapath
				if !reflect.DeepEqual(v, []string{tc.want}) || len(other) != 0 || d.ChunkViolations != 1 {
					t.Errorf("violations %q, other findings %v, figure %d\nwant %q", v, other, d.ChunkViolations, tc.want)
				}
				if d.ExplicitRDMAOctets != tc.octets {
					t.Errorf("octets %v, want %v", d.ExplicitRDMAOctets, tc.octets)
				}
			})
		}
		t.Run(string(tr)+" all", func(t *testing.T) {
			c := runDatapathFrames(t, datapath.ModeFindings, nfs(t, bothR(tr), craft.Traffic{Findings: []string{"chunk-violation"}}))
			if v, other := chunkFindings(c); len(v) != len(craft.ChunkViolations) || len(other) != 0 || c.conns[0].Datapath.ChunkViolations != len(v) {
				t.Errorf("violations %q, other findings %v", v, other)
			}
		})
	}
}

// The neighbours of each violation: an RDMA operation exactly at a
// segment's end, or a Reply that claims exactly what was offered, is
// fine; one octet more, or another handle or kind of chunk, is not.
func TestChunkNeighbours(t *testing.T) {
	const (
		h  = 0x00abc001
		va = 0x00007f00deadb000
		n  = 4096
	)
	seg := layers.RPCRDMASegment{Handle: h, Length: n, Offset: va}
	write := []layers.RPCRDMAChunk{{seg}}
	read := []layers.RPCRDMAReadSegment{{Position: 100, RPCRDMASegment: seg}}
	// writes has the responder write (handle, at, octets) into the Call's
	// write chunk, and the Reply claim claimed.
	writes := func(handle uint32, at uint64, octets int, claimed layers.RPCRDMASegment) func(*craft.NFS) {
		return func(x *craft.NFS) {
			xid := x.Call(craft.RPCMessage{WriteList: write})
			x.C.Write(craft.Responder, handle, at, octets)
			x.Reply(xid, craft.RPCMessage{WriteList: []layers.RPCRDMAChunk{{claimed}}}, craft.SendOpts{})
		}
	}
	reads := func(handle uint32, at uint64, octets int) func(*craft.NFS) {
		return func(x *craft.NFS) {
			xid := x.Call(craft.RPCMessage{ReadList: read})
			x.C.Read(craft.Responder, handle, at, octets)
			x.Reply(xid, craft.RPCMessage{}, craft.SendOpts{})
		}
	}
	more, other := seg, seg
	more.Length++
	other.Handle++
	cases := []struct {
		name       string
		do         func(*craft.NFS)
		violations int
	}{
		{"a Write that fills the segment", writes(h, va, n, seg), 0},
		{"a Write one octet past its end", writes(h, va, n+1, seg), 1},
		{"a Write that ends at its end", writes(h, va+96, n-96, seg), 0},
		{"a Write one octet before its start", writes(h, va-1, 16, seg), 1},
		{"a Write to another handle", writes(h+1, va, 16, seg), 1},
		{"a Reply that claims one octet more", writes(h, va, n, more), 1},
		{"a Reply that names another handle", writes(h, va, n, other), 1},
		{"a Read of the whole segment", reads(h, va, n), 0},
		{"a Read that ends at its end", reads(h, va+1, n-1), 0},
		{"a Read one octet past its end", reads(h, va+1, n), 1},
		{"a Read of another handle", reads(h+1, va, 16), 1},
		{"a Write into a read chunk", func(x *craft.NFS) {
			xid := x.Call(craft.RPCMessage{ReadList: read})
			x.C.Write(craft.Responder, h, va, 16)
			x.Reply(xid, craft.RPCMessage{}, craft.SendOpts{})
		}, 1},
		{"a Read of a write chunk", func(x *craft.NFS) {
			xid := x.Call(craft.RPCMessage{WriteList: write})
			x.C.Read(craft.Responder, h, va, 16)
			x.Reply(xid, craft.RPCMessage{}, craft.SendOpts{})
		}, 1},
		{"a Write after the Reply retired its Call", func(x *craft.NFS) {
			writes(h, va, n, seg)(x)
			x.C.Write(craft.Responder, h, va, 16)
		}, 1},
	}
	for _, tr := range dpTransports {
		for _, tc := range cases {
			t.Run(string(tr)+" "+tc.name, func(t *testing.T) {
				ex := bothR(tr)
				c, err := ex.Connect()
				if err != nil {
					t.Fatal(err)
				}
				x := craft.NFS{C: c, XID: 0x1000, Credits: 8}
				tc.do(&x)
				frames, _ := c.Frames()
				got := runDatapathFrames(t, datapath.ModeFindings, frames)
				v, other := chunkFindings(got)
				if len(v) != tc.violations || got.conns[0].Datapath.ChunkViolations != tc.violations || len(other) != 0 {
					t.Errorf("violations %q (figure %d), other findings %v; want %d", v, got.conns[0].Datapath.ChunkViolations, other, tc.violations)
				}
			})
		}
	}
}

// longXIDs are the XIDs of the --long messages after the usual exchange:
// the RPCSEC_GSS WRITE and the LOOKUP path (Long Calls), the READDIR (a
// Long Reply).
const (
	longWriteXID  = 0x5f000005
	longLookupXID = 0x5f000006
	longListXID   = 0x5f000007
)

// checkLongCall checks the rpc records of a Long Call of xid: the
// RDMA_NOMSG Call carries the decode (carried_in read_chunk) and is paired
// with its Reply, inline.
func checkLongCall(t *testing.T, c *dpCollect, xid uint32, ops []string) {
	t.Helper()
	call, reply := rpcByXID(c, xid, "call"), rpcByXID(c, xid, "reply")
	if call == nil || reply == nil {
		t.Fatalf("XID %#x: call %v, reply %v", xid, call, reply)
	}
	m := call.Message
	if call.Header.Proc != layers.RPCRDMANoMsg || m.CarriedIn != "read_chunk" || m.ProgramName != "NFS" || m.Version != 4 ||
		m.ProcedureName != "COMPOUND" || !reflect.DeepEqual(m.Operations, ops) || m.OpsEnd != "" ||
		m.AuthFlavor != "RPCSEC_GSS" || m.AuthService != "integrity" || m.ReplyFrame != reply.Frame {
		t.Errorf("the Long Call of XID %#x: proc %d %+v", xid, call.Header.Proc, m)
	}
	if r := reply.Message; r.CarriedIn != "send" || r.CallFrame != call.Frame || r.NFSStatus != "NFS4_OK" || !reflect.DeepEqual(r.Operations, ops) {
		t.Errorf("its Reply: %+v", r)
	}
}

// lookups is the operation list of a LOOKUP path of n names.
func lookups(n int) []string {
	ops := []string{"SEQUENCE", "PUTFH"}
	for range n {
		ops = append(ops, "LOOKUP")
	}
	return append(ops, "GETFH", "GETATTR")
}

// Long Calls and Long Replies: decoded from the chunks, paired, counted as
// inline messages, and what they cost.
func TestChunkLongMessages(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			c := runDatapathFrames(t, datapath.ModeAll, nfs(t, bothR(tr), craft.Traffic{Long: true}))
			// The RPCSEC_GSS WRITE over two segments, six Read Response
			// packets; the LOOKUP path over two packets, its names past
			// the first 4096 octets kept not listed.
			checkLongCall(t, c, longWriteXID, []string{"SEQUENCE", "PUTFH", "WRITE"})
			if m := rpcByXID(c, longLookupXID, "call").Message; m.CarriedIn != "read_chunk" || m.OpsEnd != "truncated" ||
				!reflect.DeepEqual(m.Operations, lookups(19)[:len(m.Operations)]) || len(m.Operations) < 10 {
				t.Errorf("the LOOKUP path: %+v", m)
			}
			// The Long Replies: the NFSv3 READDIRPLUS in six Write
			// packets, the NFSv4.1 READDIR in two Writes of four and
			// three packets.
			for _, lr := range []struct {
				xid  uint32
				proc string
				ops  []string
			}{{0x5f000004, "READDIRPLUS", nil}, {longListXID, "COMPOUND", []string{"SEQUENCE", "PUTFH", "READDIR"}}} {
				call, reply := rpcByXID(c, lr.xid, "call"), rpcByXID(c, lr.xid, "reply")
				if call == nil || reply == nil {
					t.Fatalf("XID %#x: %v %v", lr.xid, call, reply)
				}
				if m := reply.Message; reply.Header.Proc != layers.RPCRDMANoMsg || m.CarriedIn != "reply_chunk" || m.ProcedureName != lr.proc ||
					!reflect.DeepEqual(m.Operations, lr.ops) || m.CallFrame != call.Frame || !m.HasResponseTime || call.Message.ReplyFrame != reply.Frame {
					t.Errorf("the Long Reply of XID %#x: %+v", lr.xid, m)
				}
			}
			d := c.conns[0].Datapath
			// The initiator's octets pulled: the WRITE's 4096 and the two
			// Long Calls' 6096 and 4580; the responder's written: the
			// READ's 8192, the Long Replies' 6000 and 7096. 6124 and 7124
			// octets inline would have carried the longest.
			if d.LongMessages != [2]int{2, 2} || d.InlineNeeded != [2]int{6144, 7168} || d.ExplicitRDMAOctets != [2]int64{4096 + 6096 + 4580, 21288} ||
				d.ChunkViolations != 0 {
				t.Errorf("long %v, needed %v, octets %v, violations %d", d.LongMessages, d.InlineNeeded, d.ExplicitRDMAOctets, d.ChunkViolations)
			}
			// Counted as the inline ones: 5 COMPOUND Calls and Replies.
			for _, p := range d.RPCProcedures {
				if p.ProcedureName == "COMPOUND" && (p.Calls != 5 || p.Replies != 5) {
					t.Errorf("COMPOUND: %d Calls, %d Replies", p.Calls, p.Replies)
				}
			}
			if _, other := chunkFindings(c); len(other) != 0 {
				t.Errorf("findings %v", other)
			}
		})
	}
}

// A Long Call whose Read Responses the capture shows out of order, and a
// Write retransmitted after the Reply: the same decode and figures, no
// violation.
func TestChunkOrder(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			frames := nfs(t, bothR(tr), craft.Traffic{Long: true})
			clean := runDatapathFrames(t, datapath.ModeAll, frames).conns[0].Datapath
			// The first Long Call's first Read: First, Middle, Middle,
			// Last. The second Middle comes before the first, the Last
			// before both.
			first := opIndex(tr, frames, 44, 0, layers.OpReadResponseFirst)
			if op, _ := rcOp(tr, frames[first+3]); op != layers.OpReadResponseLast {
				t.Fatalf("frame %d: opcode %#x", first+4, op)
			}
			moved := slices.Clone(frames)
			moved[first+1].Data, moved[first+2].Data, moved[first+3].Data = frames[first+3].Data, frames[first+2].Data, frames[first+1].Data
			c := runDatapathFrames(t, datapath.ModeAll, moved)
			checkLongCall(t, c, longWriteXID, []string{"SEQUENCE", "PUTFH", "WRITE"})
			if d := c.conns[0].Datapath; d.ExplicitRDMAOctets != clean.ExplicitRDMAOctets || d.ChunkViolations != 0 || d.LongMessages != clean.LongMessages {
				t.Errorf("out of order: octets %v, long %v, violations %d", d.ExplicitRDMAOctets, d.LongMessages, d.ChunkViolations)
			}

			// The READ's Write (8 packets): its First and a Middle sent
			// again at once, then all of it and its Reply after the
			// Reply, as after lost packets: counted once, and no
			// violation although the Reply retired the Call.
			w := opIndex(tr, frames, 0, 0, layers.OpWriteFirst)
			reply := opIndex(tr, frames, w, 0, layers.OpSendOnlyInvalidate)
			if op, _ := rcOp(tr, frames[w+7]); op != layers.OpWriteLast {
				t.Fatalf("frame %d: opcode %#x", w+8, op)
			}
			for name, again := range map[string][]craft.Frame{
				"at once":         slices.Concat(frames[:w+3], frames[w:w+1], frames[w+2:w+3], frames[w+3:]),
				"after the Reply": slices.Concat(frames[:reply+1], frames[w:reply+1], frames[reply+1:]),
			} {
				c = runDatapathFrames(t, datapath.ModeAll, restamp(again))
				if d := c.conns[0].Datapath; d.ExplicitRDMAOctets != clean.ExplicitRDMAOctets || d.ChunkViolations != 0 || d.LongMessages != clean.LongMessages {
					t.Errorf("retransmitted %s: octets %v (want %v), violations %d", name, d.ExplicitRDMAOctets, clean.ExplicitRDMAOctets, d.ChunkViolations)
				}
				if v, _ := chunkFindings(c); len(v) != 0 {
					t.Errorf("retransmitted %s: violations %q", name, v)
				}
			}
		})
	}
}

// inline-threshold-too-small on a connection whose responder receives
// 1024 octets: the Long Calls' advice, and the Long Replies' the other
// way.
func TestChunkThresholdAdvice(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			c := runDatapathFrames(t, datapath.ModeFindings, nfs(t, bothR(tr), craft.Traffic{Findings: []string{"inline-threshold-too-small"}}))
			var got []string
			for _, f := range c.conns[0].Findings {
				if f.Code.String() == "inline-threshold-too-small" {
					got = append(got, f.Message)
				}
			}
			want := []string{
				"2 messages from the initiator went long (NFS4 COMPOUND ×2): the initiator→responder inline threshold is 1024 " +
					"(the smaller of the initiator Send Size and the responder Receive Size); 3072 would have carried them inline: " +
					"the responder's Receive Size (and the initiator's Send Size) would have to be at least 3072",
				"2 messages from the responder went long (NFS3 READDIRPLUS ×1, NFS4 COMPOUND ×1): the responder→initiator inline " +
					"threshold is 4096 (the smaller of the responder Send Size and the initiator Receive Size); 7168 would have " +
					"carried them inline: the initiator's Receive Size (and the responder's Send Size) would have to be at least 7168",
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("advice\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			d := c.conns[0].Datapath
			// The Long Calls: the WRITE's 3024 octets, the LOOKUP path's
			// 1340.
			if d.LongMessages != [2]int{2, 2} || d.InlineNeeded != [2]int{3072, 7168} || d.ExplicitRDMAOctets != [2]int64{4096 + 3024 + 1340, 21288} {
				t.Errorf("long %v, needed %v, octets %v", d.LongMessages, d.InlineNeeded, d.ExplicitRDMAOctets)
			}
			if _, other := chunkFindings(c); len(other) != 0 {
				t.Errorf("findings %v", other)
			}
		})
	}
}
