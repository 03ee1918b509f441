package dissect_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// TestRealCapturesDatapath: in the third-party captures with CM and RC
// traffic, QPN pairing gives every RC frame its connection (the figures are
// those of the capture, counted by hand from tshark's listing), and no
// RPC-over-RDMA finding (nor record) comes from traffic that is not
// RPC-over-RDMA (rdma_cm ping-pong on port 7471, NVMe-oF discovery). The
// captures without CM traffic give no connection and all their RC frames
// to none; where the capture lost the SEND First of multi-packet Sends
// (rocev1.pcap, rocev2_test.pcap), their Middle and Last packets are
// counted and said (the counts are tshark's listing, followed by PSN as
// the data path does), and nothing else is dropped.
func TestRealCapturesDatapath(t *testing.T) {
	// The roce-lab pair: an RDMA WRITE Only and its ACK, an RDMA READ of
	// 4096 octets in four responses, both from the initiator (192.168.x.25
	// or .5); REQ and REP ask one Read each way.
	lab := &record.Datapath{RDMAReadLimit: [2]int{1, 1}, HasReadLimit: [2]bool{true, true},
		MaxOutstandingRDMAReads: [2]int{1, 0}, Frames: 7}
	cases := []struct {
		name   string
		want   *record.Datapath
		orphan int // RC frames of no connection
		pieces int // SEND Middle and Last packets without their First
	}{
		{"roce-lab-test.pcap", lab, 0, 0},
		{"roce-lab-roce_capture_read-write-ecn.pcap", lab, 0, 0},
		// NVMe-oF discovery: the host's command capsules (SEND Only) and
		// the target's ACKs, the target's one RDMA READ of 1024 octets and
		// its response Only, the responses (SEND Only) and their ACKs,
		// frames 4 to 27 and the two after the DREQ (29, 30): 26 in all.
		// The host issues no Read (its REQ's Initiator Depth is 0); the
		// target may issue 8.
		{"nvme-discover2.pcap", &record.Datapath{RDMAReadLimit: [2]int{0, 8}, HasReadLimit: [2]bool{true, true},
			MaxOutstandingRDMAReads: [2]int{0, 1}, Frames: 26}, 0, 0},
		{"proxy-roce.pcap", nil, 105, 0},
		{"rocev1.pcap", nil, 2468, 844},
		{"rocev2_test.pcap", nil, 708, 175},
		{"ib_send_bw_over_roce.pcap", nil, 10, 0},
		{"dc_rc-small.pcap", nil, 21, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := realCapture(t, tc.name)
			c := runDatapathFile(t, datapath.ModeAll, p)
			if len(c.rpcs) != 0 || c.sum.RPCMessages != 0 {
				t.Errorf("%d rpc records on traffic that is not RPC-over-RDMA (frames %v)", len(c.rpcs), frameList(c.rpcs))
			}
			for code, n := range c.sum.Findings {
				if code.String() != "rpcrdma-absent" && !(code == finding.StateLimitReached && n == 1 && tc.pieces > 0) {
					t.Errorf("finding %s", code)
				}
			}
			var drops map[record.DropHolder]int
			if tc.pieces > 0 {
				drops = map[record.DropHolder]int{record.DropOrphanPackets: tc.pieces}
			}
			checkDrops(t, c.sum, drops)
			// tshark's heuristic agrees: none of it is RPC-over-RDMA.
			if tshark, err := lookTshark(); err == nil {
				if rows := tsharkRows(t, tshark, p, "rpcordma", []string{"frame.number"}); len(rows) != 0 {
					t.Errorf("tshark finds rpcordma in %d frames", len(rows))
				}
			}
			if c.sum.DatapathOrphanFrames != tc.orphan {
				t.Errorf("%d RC frames of no connection, want %d", c.sum.DatapathOrphanFrames, tc.orphan)
			}
			if tc.want == nil {
				if len(c.conns) != 0 {
					t.Errorf("%d connections", len(c.conns))
				}
				return
			}
			if len(c.conns) != 1 {
				t.Fatalf("%d connections", len(c.conns))
			}
			got := *c.conns[0].Datapath
			got.Health = nil // the transport's health: TestRealCapturesHealth
			if !reflect.DeepEqual(&got, tc.want) {
				t.Errorf("datapath\n%+v\nwant\n%+v", &got, tc.want)
			}
			for _, f := range c.conns[0].Findings {
				if !strings.HasPrefix(f.Code.String(), "remote-invalidation") && f.Code.String() != "rpcrdma-one-sided" {
					t.Errorf("connection finding %s: %s", f.Code, f.Message)
				}
			}
		})
	}
}

// runFile dissects one capture with the data path in mode.
func runDatapathFile(t *testing.T, mode datapath.Mode, path string) *dpCollect {
	t.Helper()
	var c dpCollect
	if _, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{Datapath: mode}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}
