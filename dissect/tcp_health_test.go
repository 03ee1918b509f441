package dissect_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The TCP health of iWARP connections (the reassembler's counts, the
// tcp-* findings), on the cases craft writes (craft --transport iwarp
// --tcp-health), on clean traffic, and on the real captures.

// tcpFindings are the iWARP TCP transport findings.
var tcpFindings = []finding.Code{finding.TCPRetransmission, finding.TCPSegmentsMissing, finding.TCPReset}

// tcpHealthOf is the one connection's TCP health and its tcp-* findings,
// by code (each at most once per direction: the messages joined).
func tcpHealthOf(t *testing.T, c *dpCollect) (*record.Health, map[finding.Code][]string) {
	t.Helper()
	if len(c.conns) != 1 || c.conns[0].Datapath == nil || c.conns[0].Datapath.Health == nil {
		t.Fatalf("%d connections, or no health", len(c.conns))
	}
	h := c.conns[0].Datapath.Health
	if h.Kind != record.HealthTCP {
		t.Fatalf("health kind %q, want %q", h.Kind, record.HealthTCP)
	}
	fs := map[finding.Code][]string{}
	for _, f := range c.conns[0].Findings {
		for _, code := range tcpFindings {
			if f.Code == code {
				fs[code] = append(fs[code], f.Message)
			}
		}
	}
	return h, fs
}

// tsharkCount counts the frames of p that tshark's display filter matches;
// ok is false without tshark.
func tsharkCount(t *testing.T, p, filter string) (int, bool) {
	t.Helper()
	if _, err := lookTshark(); err != nil {
		return 0, false
	}
	out, err := exec.Command("tshark", "-r", p, "-Y", filter, "-T", "fields", "-e", "frame.number").Output()
	if err != nil {
		t.Fatalf("tshark -Y %q: %v", filter, err)
	}
	return len(strings.Fields(string(out))), true
}

const lowerBound = "the capture lost those segments, not the wire (the peer acknowledged them, or the stream went on past them), " +
	"so every count of this connection is a lower bound"

// TestTCPHealthCases: each case craft writes gives its exact counts and
// finding, and nothing else of TCP. tshark agrees on the counts: on these
// captures its notions and ours coincide (a retransmission is a whole
// segment sent again; the zero window is a pure ACK, not an RST), though
// its tcp.analysis.retransmission also flags a segment that only partly
// overlaps what was seen, which is not counted here, and its
// tcp.window_size == 0 and tcp.flags.reset == 1 count every RST (after
// both FINs, or after the sender's own FIN), which are not.
func TestTCPHealthCases(t *testing.T) {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p}
	type want struct {
		retx, missing, zero, resets [2]int
		says                        map[finding.Code][]string
	}
	cases := map[string]want{
		// The initiator's second Call (frame 8) goes again as frame 9.
		craft.TCPRetransmit: {retx: [2]int{1, 0}, says: map[finding.Code][]string{finding.TCPRetransmission: {
			"the initiator sent 1 TCP segment again (frame 9): every octet of it had been seen before (a retransmission after a timeout or a fast retransmit)"}}},
		// A segment of the responder's RDMA Write is not in the capture;
		// the segment after it is frame 28.
		craft.TCPMissing: {missing: [2]int{0, 1}, says: map[finding.Code][]string{finding.TCPSegmentsMissing: {
			"1 gap in the responder's TCP sequence was never filled (the octets after it came in frame 28): " + lowerBound}}},
		// The responder advertises a zero window once, then opens it.
		craft.TCPZeroWindow: {zero: [2]int{0, 1}, says: map[finding.Code][]string{}},
		// The initiator resets the connection after its traffic (frame 33),
		// every Call answered.
		craft.TCPReset: {resets: [2]int{1, 0}, says: map[finding.Code][]string{finding.TCPReset: {
			"frame 33: the initiator reset the TCP connection (RST) before it was closed with a FIN each way"}}},
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			frames, err := x.TCPHealthTraffic([]string{name}, craft.Traffic{})
			if err != nil {
				t.Fatal(err)
			}
			path := writeFrames(t, name+".pcap", frames)
			h, fs := tcpHealthOf(t, runDatapathFile(t, datapath.ModeFindings, path))
			if h.TCPRetransmitted != w.retx || h.TCPMissing != w.missing || h.TCPZeroWindows != w.zero || h.TCPResets != w.resets {
				t.Errorf("retransmitted %v missing %v zero windows %v resets %v; want %v %v %v %v",
					h.TCPRetransmitted, h.TCPMissing, h.TCPZeroWindows, h.TCPResets, w.retx, w.missing, w.zero, w.resets)
			}
			if len(fs) != len(w.says) {
				t.Errorf("findings %v, want %v", fs, w.says)
			}
			for code, msgs := range w.says {
				if strings.Join(fs[code], "\n") != strings.Join(msgs, "\n") {
					t.Errorf("%s: %q, want %q", code, fs[code], msgs)
				}
			}
			for filter, n := range map[string]int{
				"tcp.analysis.retransmission":                  w.retx[0] + w.retx[1],
				"tcp.analysis.lost_segment":                    w.missing[0] + w.missing[1],
				"tcp.window_size == 0 && tcp.flags.reset == 0": w.zero[0] + w.zero[1],
				"tcp.flags.reset == 1":                         w.resets[0] + w.resets[1],
			} {
				if got, ok := tsharkCount(t, path, filter); ok && got != n {
					t.Errorf("tshark -Y %q: %d frames, we count %d", filter, got, n)
				}
			}
		})
	}
}

// TestTCPHealthHoleBeforeFIN: the initiator's last segment (its last Call)
// is not in the capture and nothing of the direction follows it but the
// FIN: the hole is counted when the direction ends, named by the FIN's
// frame.
func TestTCPHealthHoleBeforeFIN(t *testing.T) {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p, Drop: []int{20}}
	frames, err := x.TCPHealthTraffic(nil, craft.Traffic{})
	if err != nil {
		t.Fatal(err)
	}
	path := writeFrames(t, "fin.pcap", frames)
	h, fs := tcpHealthOf(t, runDatapathFile(t, datapath.ModeFindings, path))
	if h.TCPMissing != [2]int{1, 0} || h.TCPRetransmitted != [2]int{} || h.TCPResets != [2]int{} || h.TCPZeroWindows != [2]int{} {
		t.Errorf("%+v", h)
	}
	// Frames: 26 data segments but the one dropped, then the FIN (32).
	want := "1 gap in the initiator's TCP sequence was never filled (the octets after it came in frame 32): " + lowerBound
	if got := fs[finding.TCPSegmentsMissing]; len(fs) != 1 || len(got) != 1 || got[0] != want {
		t.Errorf("findings %v, want %q", fs, want)
	}
}

// TestTCPHealthClean: clean iWARP NFS traffic (the shipped capture, and
// crafted: FPDUs cut across segments, segments put out of order) has zero
// counts and no tcp-* finding: a segment out of order is neither a
// retransmission nor a hole.
func TestTCPHealthClean(t *testing.T) {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	paths := []string{filepath.Join("..", "pcaps", "iwarp-nfs-traffic.pcap")}
	for i, x := range []craft.IWARPExchange{
		{Rev: 2, Initiator: p, Responder: p, Close: true},
		{Rev: 1, Initiator: p, Responder: p, TCPSegment: 100},
		{Rev: 2, Initiator: p, Responder: p, TCPSegment: 700, Reorder: []int{3, 9}, Close: true},
		{Rev: 2, Initiator: p, Responder: p, InitiatorMarkers: true, ResponderMarkers: true, Reorder: []int{1}},
	} {
		frames, err := x.NFSTraffic(craft.Traffic{})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, writeFrames(t, "clean"+string(rune('a'+i))+".pcap", frames))
	}
	for _, path := range paths {
		h, fs := tcpHealthOf(t, runDatapathFile(t, datapath.ModeFindings, path))
		if h.TCPRetransmitted != [2]int{} || h.TCPMissing != [2]int{} || h.TCPZeroWindows != [2]int{} || h.TCPResets != [2]int{} || len(fs) != 0 {
			t.Errorf("%s: %+v, findings %v", path, h, fs)
		}
	}
}

// TestTCPHealthReal: the real iWARP capture (softiwarp) has no tcp-*
// finding and zero counts. Its responder sends a FIN, then, when the
// initiator's Sends keep coming to a socket it closed, two RSTs (RFC 9293,
// section 3.6.1: data lost after a CLOSE): tshark counts them
// (tcp.flags.reset == 1, and their Win=0 in tcp.window_size == 0), but
// they follow the responder's own FIN, which had ended its stream, so they
// are not resets in the middle of the connection.
func TestTCPHealthReal(t *testing.T) {
	path := realCapture(t, "softuiwarp-uiwarp.pcap")
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	h, fs := tcpHealthOf(t, runDatapathFile(t, datapath.ModeFindings, path))
	if h.TCPRetransmitted != [2]int{} || h.TCPMissing != [2]int{} || h.TCPZeroWindows != [2]int{} || h.TCPResets != [2]int{} || len(fs) != 0 {
		t.Errorf("%+v, findings %v", h, fs)
	}
	if n, ok := tsharkCount(t, path, "tcp.flags.reset == 1"); ok && n != 2 {
		t.Errorf("tshark sees %d RSTs, want 2 (both after the responder's FIN)", n)
	}
}

// TestTerminateNamesPeerSend: a Terminate names the last Send its peer sent
// before it (here the responder's Reply of frame 32, a Send With
// Invalidate, before the initiator's Terminate of frame 33); when the
// peer's FPDUs could no longer be read
// (the golden iwarp-datapath capture of package output), it names none.
func TestTerminateNamesPeerSend(t *testing.T) {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p}
	frames, err := x.NFSTraffic(craft.Traffic{Findings: []string{"rdmap-terminate"}})
	if err != nil {
		t.Fatal(err)
	}
	c := runDatapathFile(t, datapath.ModeFindings, writeFrames(t, "term.pcap", frames))
	want := "frame 33: the initiator terminated the connection: DDP, untagged buffer error: DDP message too long for the available buffer " +
		"(layer 1, type 2, code 0x05); the responder's last Send before it: SEND_WITH_INVALIDATE, 48 octets, frame 32"
	var got []string
	for _, f := range c.conns[0].Findings {
		if f.Code == finding.RDMAPTerminate {
			got = append(got, f.Message)
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("rdmap-terminate %q, want %q", got, want)
	}
}

// TestTCPResetCallsOutstanding: an RST while a Call has no Reply says so
// (a Call ahead of the usual traffic that is never answered).
func TestTCPResetCallsOutstanding(t *testing.T) {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	call := (&craft.RPCMessage{XID: 0x7e000001, Credits: 32, Proc: layers.RPCRDMAMsg}).Bytes()
	call = append(call, make([]byte, 40)...)
	x := craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p, Traffic: []craft.IWARPMessage{{Opcode: layers.RDMAPOpSend, Payload: call}}}
	frames, err := x.TCPHealthTraffic([]string{craft.TCPReset}, craft.Traffic{})
	if err != nil {
		t.Fatal(err)
	}
	_, fs := tcpHealthOf(t, runDatapathFile(t, datapath.ModeFindings, writeFrames(t, "reset.pcap", frames)))
	want := "frame 34: the initiator reset the TCP connection (RST) before it was closed with a FIN each way, with 1 Call outstanding"
	if got := fs[finding.TCPReset]; len(got) != 1 || got[0] != want {
		t.Errorf("tcp-reset %q, want %q", got, want)
	}
}
