package dissect_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The data path under hostile input (issue 26): nothing dropped without a
// word, no length believed that the wire never carried. Each case runs a
// generator (a `craft --flood` kind, or frames built here) in the default
// mode (--datapath findings), and asserts the exact outcome: the drops by
// holder, the summary warning that says each holder's count, the findings
// on the records the drops touch. The small versions run in the normal
// suite; RDMACM_LONG_TESTS=1 (CI sets it) runs them at the scale of the
// issue too.

// runFlood writes n units of a flood kind and dissects them with cfg.
func runFlood(t *testing.T, kind string, n int, cfg dissect.Config) *dpCollect {
	t.Helper()
	var buf bytes.Buffer
	if _, err := craft.Flood(&buf, kind, n); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), kind+".pcap")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var c dpCollect
	if _, err := dissect.Run(context.Background(), []string{p}, nil, cfg, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// findingCodes are the codes of fs.
func findingCodes(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code.String())
	}
	return out
}

// scales are the sizes a case runs at: small, and with RDMACM_LONG_TESTS
// the large one too.
func scales(small, large int) []int {
	if longTests() {
		return []int{small, large}
	}
	return []int{small}
}

// Multi-packet Sends without their setup, more in progress than
// --max-send-buffers (and, large, more directions than
// --max-rc-directions): each Send refused a buffer is counted and said,
// though no record shows it (the heuristic never decides on a Send whose
// first octets were not kept).
func TestHostileOpenSends(t *testing.T) {
	for _, n := range scales(300, 300000) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cfg := dissect.Config{DatapathLimits: datapath.Limits{HeadBuffers: 100}}
			want := map[record.DropHolder]int{record.DropSendBuffers: 200}
			if n > 300 {
				// The default limits: 4096 directions followed, the least
				// recently active given up first, its buffer (when it had
				// one of the 1024) going to the direction that takes its
				// place: in every 4096 directions, 1024 keep their first
				// octets.
				cfg = dissect.Config{}
				const dirs, bufs = datapath.DefaultDirections, datapath.DefaultHeadBuffers
				want = map[record.DropHolder]int{record.DropRCDirections: n - dirs, record.DropSendBuffers: n - (n/dirs*bufs + min(n%dirs, bufs))}
			}
			c := runFlood(t, craft.FloodRCDirections, n, cfg)
			checkDrops(t, c.sum, want)
			if len(c.rpcs) != 0 {
				t.Errorf("%d rpc records", len(c.rpcs))
			}
		})
	}
}

// SEND Middle and Last packets whose First is not in the capture: each is
// counted and said.
func TestHostileOrphanPackets(t *testing.T) {
	for _, n := range scales(100, 100000) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := runFlood(t, craft.FloodRCOrphanPackets, n, dissect.Config{})
			checkDrops(t, c.sum, map[record.DropHolder]int{record.DropOrphanPackets: 2 * n})
			if len(c.rpcs) != 0 || c.sum.RPCMessages != 0 {
				t.Errorf("%d rpc records, %d RPC-over-RDMA messages", len(c.rpcs), c.sum.RPCMessages)
			}
		})
	}
}

// More RDMA Reads outstanding than the 256 tracked per side: all are
// counted (the Read limit finding says how many were outstanding), those
// past 256 are said on the connection and the run.
func TestHostileReads(t *testing.T) {
	for _, n := range scales(1000, 100000) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := runFlood(t, craft.FloodRCReads, n, dissect.Config{})
			checkDrops(t, c.sum, map[record.DropHolder]int{record.DropRDMAReads: n - 256})
			if len(c.conns) != 1 || c.conns[0].Datapath == nil {
				t.Fatalf("%d connections", len(c.conns))
			}
			x := c.conns[0]
			if got := x.Datapath.MaxOutstandingRDMAReads; got != [2]int{n, 0} {
				t.Errorf("max outstanding Reads %v", got)
			}
			want := []string{
				fmt.Sprintf("rdma-read-limit-exceeded: frame 20: 17 RDMA Read Requests outstanding from the initiator, more than the 16 its connection setup allows it (REQ Initiator Depth 16, REP Responder Resources 16); over the limit %d times, at most %d outstanding", n-16, n),
				fmt.Sprintf("state-limit-reached: frame 260: more than 256 RDMA Read Requests (and atomics) outstanding from the initiator, more than any connection setup allows: %d of them were counted as outstanding, but their responses were not matched one by one", n-256),
			}
			var got []string
			for _, f := range x.Findings {
				// The flood's Reads pull handles no Call advertised: its
				// chunk violations are beside the point here.
				if f.Code != finding.RemoteInvalidationOneSided && f.Code != finding.ChunkViolation {
					got = append(got, f.Code.String()+": "+f.Message)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("connection findings\n got %q\nwant %q", got, want)
			}
		})
	}
}

// Length fields that claim more than the wire carried, and SEND packets
// that break the path MTU: the lengths are what the wire carried, the
// findings are on the Sends' records (and for the packet part of no Send,
// on the run), and no Send is judged against the inline threshold on a
// length the wire never carried or a packet the rule forbids.
func TestHostileLyingLengths(t *testing.T) {
	for _, n := range scales(30, 100000) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := runFlood(t, craft.FloodRCLyingLengths, n, dissect.Config{})
			checkDrops(t, c.sum, nil)
			type row struct {
				frame, length int
				codes         []string
			}
			var got []row
			for _, r := range c.rpcs {
				got = append(got, row{r.Frame, r.Length, findingCodes(r.Findings)})
			}
			// Call 2: its First (1024), the Middles (44 octets from each
			// frame, 960 from each honest one), its Last (100).
			honest := n / 3
			call2 := []string{"length-mismatch", "rc-packet-length-invalid"}
			if n+2 > 256 {
				call2 = append(call2, "state-limit-reached") // its frames past 256 are not listed
			}
			want := []row{{4, 68, []string{"length-mismatch"}},
				{7 + n, 1024 + 44*(n-honest) + 960*honest + 100, call2}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("rpc records %+v, want %+v", got, want)
			}
			lies := c.rpcs[1].Findings
			if lies[0].Message != fmt.Sprintf("length fields of %d of the Send's packets claim more than their frames carried on the wire; their lengths were taken from the frames (the first, frame 7: UDP Length 65535 puts the end of the packet 65467 octets beyond the end of the frame, which the capture did not cut)", n-honest) ||
				lies[1].Message != fmt.Sprintf("%d of the Send's packets break the path MTU rule (the first, frame 7: a SEND_MIDDLE of 44 octets, where the path MTU of 1024 makes every First and Middle packet exactly that long): the Send's length is not judged against the inline threshold", n) {
				t.Errorf("findings %+v", lies)
			}
			notes := c.sum.Notes
			if len(notes) != 1 || notes[0].Message != fmt.Sprintf("%s: the length fields of 1 RC packet part of no RPC-over-RDMA Send claim more than its frame carried on the wire; its length was taken from the frame (first at frame %d: UDP Length 65535 puts the end of the packet 65395 octets beyond the end of the frame, which the capture did not cut)",
				filepath.Join(filepath.Dir(c.sum.Inputs[0].Name), craft.FloodRCLyingLengths+".pcap"), 8+n) {
				t.Errorf("warnings %+v", notes)
			}
			if c.sum.Findings[finding.InlineThresholdExceeded] != 0 || c.sum.Findings[finding.LengthMismatch] != 3 || c.sum.Findings[finding.RCPacketLengthInvalid] != 1 {
				t.Errorf("findings %v", c.sum.Findings)
			}
		})
	}
}

// A header whose read list runs past the 2048 octets kept of its Send: the
// record says the list was cut and how many segments were read (not "the
// header holds 84 segments"), the run counts and says it.
func TestHostileReadListCut(t *testing.T) {
	for _, segs := range scales(200, 43690) {
		t.Run(fmt.Sprint(segs), func(t *testing.T) {
			x := bothR(craft.RoCEv2)
			x.PathMTU = 5 // 4096
			c, err := x.Connect()
			if err != nil {
				t.Fatal(err)
			}
			list := make([]layers.RPCRDMAReadSegment, segs)
			for i := range list {
				list[i] = layers.RPCRDMAReadSegment{Position: 0, RPCRDMASegment: layers.RPCRDMASegment{Handle: uint32(i), Length: 4096}}
			}
			c.Send(craft.Initiator, (&craft.RPCMessage{XID: 1, Credits: 32, Proc: layers.RPCRDMANoMsg, ReadList: list}).Bytes(), craft.SendOpts{})
			frames, err := c.Frames()
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []datapath.Mode{datapath.ModeFindings, datapath.ModeAll} {
				r := runDatapathFrames(t, mode, frames)
				checkDrops(t, r.sum, map[record.DropHolder]int{record.DropReadLists: 1})
				if len(r.rpcs) != 1 {
					t.Fatalf("%d rpc records", len(r.rpcs))
				}
				var cut []string
				for _, f := range r.rpcs[0].Findings {
					if f.Code == finding.StateLimitReached {
						cut = append(cut, f.Message)
					}
				}
				want := []string{"the header's read list runs past the 2048 octets kept of the Send, which cut it: 84 segments were read before the cut (64 shown and checked); how many more the list holds is not known",
					"the Call advertises more than 16 STags; a Send With Invalidate naming another is not judged"}
				if n := len(frames) - 3; n > 256 { // after the setup
					want = append(want, fmt.Sprintf("the Send has %d frames; the first 256 are listed", n))
				}
				if !slices.Equal(cut, want) {
					t.Errorf("state-limit-reached %q", cut)
				}
			}
		})
	}
}

// A READ Request whose DMA Length is near 2^32 takes ceil(length / path
// MTU) PSNs, counted without overflow: no false gap follows it, so a Send
// With Invalidate of an STag its Call never advertised is still judged
// (before, the overflow made a gap that hid it). The length, over 2^31,
// is said on the connection.
func TestHostileDMALength(t *testing.T) {
	x := bothR(craft.RoCEv2) // path MTU 1024
	c, err := x.Connect()
	if err != nil {
		t.Fatal(err)
	}
	// The Call, the responder's READ Request (as an NFS server pulls a
	// read chunk), the Reply: a false gap before the Reply would make the
	// responder's Sends look lost, and the Call with them.
	n := craft.NFS{C: c, XID: 1, Credits: 32}
	xid := n.Call(craft.RPCMessage{WriteList: []layers.RPCRDMAChunk{{{Handle: 0x100, Length: 8192}}}})
	c.ReadRequest(craft.Responder, 0x5000, 0, 1<<32-1)
	n.Reply(xid, craft.RPCMessage{}, craft.SendOpts{WithInv: true, Invalidate: 0x999})
	frames, err := c.Frames()
	if err != nil {
		t.Fatal(err)
	}
	r := runDatapathFrames(t, datapath.ModeFindings, frames)
	checkDrops(t, r.sum, nil)
	if len(r.rpcs) != 1 || !slices.Equal(findingCodes(r.rpcs[0].Findings), []string{"invalidate-stag-unknown"}) {
		t.Errorf("rpc records %+v", r.rpcs)
	}
	if len(r.conns) != 1 || !slices.Contains(findingCodes(r.conns[0].Findings), "rdma-length-invalid") {
		t.Fatalf("connections %+v", r.conns)
	}
	for _, f := range r.conns[0].Findings {
		if f.Code == finding.RDMALengthInvalid && f.Message != "frame 6: RC RDMA READ Request from the responder, DMA Length 4294967295, over the 2^31 octets of the largest message; 1 such request on this connection" {
			t.Errorf("rdma-length-invalid %q", f.Message)
		}
	}
}

// Long Calls whose Reads and Writes never complete, 300 outstanding on
// each connection: every Call's segments past the 512 tracked on its
// connection, every Read past the 256 matched, and, on a small memory
// budget, every long message it cannot hold (and every connection given
// up for it) are counted and said, on the connection and the run; the
// budget is not overrun beyond what Calls force, and all of it is given
// back.
func TestHostileChunks(t *testing.T) {
	for _, n := range scales(3000, 30000) {
		for _, limit := range []int64{budget.DefaultLimit << (n / 10000), 4 << 20} {
			t.Run(fmt.Sprintf("%d %d MiB", n, limit>>20), func(t *testing.T) {
				b := budget.New(limit)
				c := runFlood(t, craft.FloodRCChunks, n, dissect.Config{Budget: b})
				// What each connection says, in its record and updates (a
				// later count replaces an earlier one).
				type key struct {
					conn int
					what string
				}
				last := map[key]int{}
				count := func(conn int, fs []finding.Finding) {
					for _, f := range fs {
						var k int
						var what string
						if f.Code == finding.StateLimitReached {
							fmt.Sscanf(f.Message, "%d %s", &k, &what)
							last[key{conn, what}] = max(last[key{conn, what}], k)
						}
					}
				}
				for _, x := range c.conns {
					count(x.Number, x.Findings)
				}
				for _, u := range c.updates {
					count(u.Number, u.Findings)
				}
				said := map[string]int{}
				for k, n := range last {
					said[k.what] += n
				}
				want := map[record.DropHolder]int{}
				for h, k := range c.sum.Drops {
					if k > 0 {
						want[record.DropHolder(h)] = k
					}
				}
				checkDrops(t, c.sum, want) // each said on the run, with its count
				segs, longs := want[record.DropChunkSegments], want[record.DropLongMessages]
				if said["chunk"] != segs || said["long"] != longs {
					t.Errorf("the connections say %d segments and %d long messages, the run %d and %d", said["chunk"], said["long"], segs, longs)
				}
				conns, over := n/craft.ChunkFloodCalls, craft.ChunkFloodCalls-256 // Calls past the 512 segments of 256
				if limit >= budget.DefaultLimit {
					// Room for all: the segments and Reads past the limits only.
					if !reflect.DeepEqual(want, map[record.DropHolder]int{record.DropRDMAReads: conns * over, record.DropChunkSegments: conns * 2 * over}) {
						t.Errorf("drops %v", want)
					}
				} else if segs == 0 || longs == 0 || want[record.DropRDMAReads] == 0 {
					t.Errorf("drops %v", want)
				}
				s := b.Stats()
				if s.Peak > s.Limit+s.Limit/8 || s.Used != 0 {
					t.Errorf("budget: peak %d of %d, %d still charged", s.Peak, s.Limit, s.Used)
				}
			})
		}
	}
}
