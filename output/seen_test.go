package output_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// noCM writes the traffic of craft's --no-cm kind, after a TCP exchange
// on port (0: none).
func noCM(t *testing.T, name, kind string, port uint16) string {
	t.Helper()
	frames, err := craft.NoCM{Kind: kind, Port: port}.Frames()
	if err != nil {
		t.Fatal(err)
	}
	return writeCapture(t, name, frames)
}

// unknownULP writes a connection of no known upper layer (rdma_cm on port
// 18515 without private data, as rping or perftest -R) with traffic that
// is not RPC-over-RDMA, then, between two other hosts, perftest's traffic
// connected over TCP on port 18515.
func unknownULP(t *testing.T) string {
	t.Helper()
	x := craft.Exchange{Transport: craft.RoCEv2, ServiceID: 0x0000000001064853,
		Initiator: craft.Peer{Absent: true}, Responder: craft.Peer{Absent: true}}
	c, err := x.Connect()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		c.Send(craft.Initiator, []byte("rdma-ping-0123456789abcdefghijklmnopqrstuvwxyz"), craft.SendOpts{})
		c.Ack(craft.Responder, c.LastPSN(craft.Initiator))
	}
	c.Disconnect()
	frames, err := c.Frames()
	if err != nil {
		t.Fatal(err)
	}
	perftest, err := craft.NoCM{Kind: craft.NoCMRC, Index: 1, Port: craft.PerftestPort}.Frames()
	if err != nil {
		t.Fatal(err)
	}
	frames = append(frames, perftest...)
	for i := range frames {
		frames[i].Time = craft.DefaultStart.Add(time.Duration(i) * 10 * time.Microsecond)
	}
	return writeCapture(t, "unknown-ulp.pcap", frames)
}

// paragraph is the explanation of a text output without connections: its
// lines from "No connection message" to the blank line.
func paragraph(out string) []string {
	_, rest, _ := strings.Cut(out, "\nNo connection message")
	para, _, _ := strings.Cut("No connection message"+rest, "\n\n")
	return strings.Split(para, "\n")
}

// TestSaysWhatWasSeen: a capture without CM says what its traffic was,
// line for line: connected out of band over TCP (perftest's port 18515,
// or another port before the traffic), DC and UD traffic that never uses
// CM; the advice to capture earlier only for connected traffic with no
// sign of how it was set up.
func TestSaysWhatWasSeen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files func(t *testing.T) []string
		want  []string
	}{
		{"perftest", func(t *testing.T) []string { return []string{noCM(t, "rc.pcap", craft.NoCMRC, craft.PerftestPort)} }, []string{
			"No connection message in 14 frames. The capture holds 6 RoCEv2 RDMA data frames",
			"(packets other than CM MADs) and 8 TCP segments, none of them starting an MPA",
			"Request or Reply. The RC traffic (6 frames) was connected out of band over TCP",
			"(port 18515): no CM, so no private data.",
		}},
		{"another port before the traffic", func(t *testing.T) []string { return []string{noCM(t, "rc.pcap", craft.NoCMRC, 9000)} }, []string{
			"No connection message in 14 frames. The capture holds 6 RoCEv2 RDMA data frames",
			"(packets other than CM MADs) and 8 TCP segments, none of them starting an MPA",
			"Request or Reply. The RC traffic (6 frames) was connected out of band over TCP",
			"(port 9000): no CM, so no private data.",
		}},
		{"UC out of band", func(t *testing.T) []string { return []string{noCM(t, "uc.pcap", craft.NoCMUC, craft.PerftestPort)} }, []string{
			"No connection message in 11 frames. The capture holds 3 RoCEv2 RDMA data frames",
			"(packets other than CM MADs) and 8 TCP segments, none of them starting an MPA",
			"Request or Reply. The UC traffic (3 frames) was connected out of band over TCP",
			"(port 18515): no CM, so no private data.",
		}},
		{"DC", func(t *testing.T) []string { return []string{noCM(t, "dc.pcap", craft.NoCMDC, 0)} }, []string{
			"No connection message in 6 frames. The capture holds 6 RoCEv2 RDMA data frames",
			"(packets other than CM MADs). The DC traffic (6 frames) never uses CM: no",
			"private data to check.",
		}},
		{"UD after a TCP exchange", func(t *testing.T) []string { return []string{noCM(t, "ud.pcap", craft.NoCMUD, craft.PerftestPort)} }, []string{
			"No connection message in 11 frames. The capture holds 3 RoCEv2 RDMA data frames",
			"(packets other than CM MADs) and 8 TCP segments, none of them starting an MPA",
			"Request or Reply. The UD traffic (3 frames) never uses CM: no private data to",
			"check.",
		}},
		{"DC and UD", func(t *testing.T) []string {
			return []string{noCM(t, "dc.pcap", craft.NoCMDC, 0), noCM(t, "ud.pcap", craft.NoCMUD, 0)}
		}, []string{
			"No connection message in 9 frames. The capture holds 9 RoCEv2 RDMA data frames",
			"(packets other than CM MADs). The DC and UD traffic (9 frames) never uses CM: no",
			"private data to check.",
		}},
		{"RC without any sign of its setup: the old advice", func(t *testing.T) []string { return []string{noCM(t, "rc.pcap", craft.NoCMRC, 0)} }, []string{
			"No connection message in 6 frames. The capture holds 6 RoCEv2 RDMA data frames",
			"(packets other than CM MADs). The connection setup is not in this capture: the",
			"RDMA traffic was captured after its connections were set up. Start capturing",
			"before the mount (or before the application connects), then mount.",
		}},
		{"out of band and without a sign", func(t *testing.T) []string {
			return []string{noCM(t, "perftest.pcap", craft.NoCMRC, craft.PerftestPort), noCM(t, "rc.pcap", craft.NoCMRC, 0),
				noCM(t, "dc.pcap", craft.NoCMDC, 0)}
		}, []string{
			"No connection message in 26 frames. The capture holds 18 RoCEv2 RDMA data frames",
			"(packets other than CM MADs) and 8 TCP segments, none of them starting an MPA",
			"Request or Reply. The RC traffic (6 frames) was connected out of band over TCP",
			"(port 18515): no CM, so no private data. The DC traffic (6 frames) never uses",
			"CM: no private data to check. The setup of the other RC traffic (6 frames) is",
			"not in this capture: it was captured after its connections were set up. Start",
			"capturing before the mount (or before the application connects), then mount.",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files(t)
			got := paragraph(string(renderAny(t, output.Options{}, files...)))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("explanation:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			md := string(renderAny(t, output.Options{Format: output.Markdown, Command: "rdmacm-pd dissect -T markdown"}, files...))
			verdict := "**Verdict:** no connection attempt was found. " + strings.Join(strings.Fields(strings.Join(tc.want, " ")), " ")
			if !strings.Contains(md, verdict+"\n") {
				t.Errorf("Markdown without the verdict %q:\n%s", verdict, md)
			}
		})
	}
}

// TestUnknownULPSeen: a connection of no known upper layer whose traffic is
// not RPC-over-RDMA shows "-" for its inline thresholds and remote
// invalidation in the text and Markdown tables and says no thresholds in
// the verdict; rpcrdma-absent comes once, on its REQ; the perftest traffic
// beside it is said to be connected out of band.
func TestUnknownULPSeen(t *testing.T) {
	path := unknownULP(t)
	text := string(renderAny(t, output.Options{Quiet: true}, path))
	golden(t, "unknown-ulp.txt", []byte(text))
	for _, want := range []string{
		"  1  disconnected        -        -    -  info     -  port 18515",
		"  1  -/-      -/-        0        -      0\n",
		"  1  0/16       0/16         0       8  0/0   -/-\n",
		"    1  info    rpcrdma-absent: no usable RPC-over-RDMA private data in REQ: this",
		"Some RC traffic (6 frames) was connected out of band over TCP (port 18515): no\nCM, so no private data.",
		"Verdict: connection 1 (192.0.2.1 → 192.0.2.2): disconnected; worst finding: info\n  rpcrdma-absent.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text without %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "rpcrdma-absent:"); n != 1 {
		t.Errorf("rpcrdma-absent %d times, want once:\n%s", n, text)
	}
	// The Markdown report (no golden file: its tables are laid out
	// elsewhere): the connection's row shows no threshold, the verdict
	// none, and the capture section the traffic set up out of band.
	md := string(renderAny(t, output.Options{Format: output.Markdown, Command: "rdmacm-pd dissect -T markdown unknown-ulp.pcap"}, path))
	_, conns, _ := strings.Cut(md, "## Connections\n")
	row := regexp.MustCompile(`(?m)^\| 1 \|.*$`).FindString(conns)
	if row == "" || strings.Contains(row, "1024") || !strings.Contains(row, "| - | - |") {
		t.Errorf("Markdown connection row %q: want its thresholds as -", row)
	}
	for _, want := range []string{
		"**Verdict:** connection 1 (192.0.2.1 → 192.0.2.2): **disconnected**; worst finding: info `rpcrdma-absent`.\n",
		"\nSome RC traffic (6 frames) was connected out of band over TCP (port 18515): no CM, so no private data.\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown without %q:\n%s", want, md)
		}
	}
	if !strings.Contains(md, "\n| `rpcrdma-absent` | info | 1 |\n") {
		t.Errorf("Markdown does not count rpcrdma-absent once:\n%s", md)
	}
}

// realCapture is a third-party capture (../shared/captures/real, or where
// RDMACM_REAL_CAPTURES points), read in place; the test skips without it.
func realCapture(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("RDMACM_REAL_CAPTURES")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "captures", "real")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real capture %s not present: %v", name, err)
	}
	return p
}

// TestSaysWhatWasSeenReal: the real captures without CM say what their
// traffic was; the rdma_cm tutorial's connections (port 18515, no private
// data, traffic that is not RPC-over-RDMA) get one rpcrdma-absent each and
// no thresholds.
func TestSaysWhatWasSeenReal(t *testing.T) {
	for name, want := range map[string]string{
		"ib_send_bw_over_roce.pcap": "The RC traffic (10 frames) was connected out of band over TCP (port 18515): no CM, so no private data.",
		"proxy-roce.pcap":           "The RC traffic (105 frames) was connected out of band over TCP (port 9000): no CM, so no private data.",
		"dc_dc-small.pcap":          "The DC traffic (19 frames) never uses CM: no private data to check.",
		"uc_uc_sg_send_uc-sg.pcap": "The connection setup is not in this capture: the RDMA traffic was captured after its connections " +
			"were set up. Start capturing before the mount (or before the application connects), then mount.",
	} {
		t.Run(name, func(t *testing.T) {
			out := string(renderAny(t, output.Options{Quiet: true}, realCapture(t, name)))
			para := strings.Join(strings.Fields(strings.Join(paragraph(out), " ")), " ")
			if !strings.HasSuffix(para, " "+want) || strings.Contains(para, "before the mount") != strings.Contains(want, "before the mount") {
				t.Errorf("explanation %q, want it to end %q", para, want)
			}
		})
	}
	t.Run("rdma-ib-tutorial-rdma_cm.pcap", func(t *testing.T) {
		out := string(renderAny(t, output.Options{Quiet: true}, realCapture(t, "rdma-ib-tutorial-rdma_cm.pcap")))
		if n := strings.Count(out, "rpcrdma-absent:"); n != 2 {
			t.Errorf("rpcrdma-absent %d times, want 2 (one per connection):\n%s", n, out)
		}
		for _, want := range []string{
			"  1  disconnected        -        -    -  info     -  port 18515\n",
			"  2  disconnected        -        -    -  info     -  port 18515\n",
			"- connections 1, 2 (2): disconnected; worst finding: info rpcrdma-absent\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("without %q:\n%s", want, out)
			}
		}
	})
}
