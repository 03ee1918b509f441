package dissect_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// TestTrafficWorkload: the summary counts what the frames held besides
// connection messages: the workload's RoCEv2 data frames exactly, and at
// least its bulk TCP segments.
func TestTrafficWorkload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wl.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := craft.Workload{Size: 4 << 20, Seed: 3}.Write(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var c collect
	sum, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{}, &c)
	if err != nil {
		t.Fatal(err)
	}
	tr := sum.Traffic
	if tr.RoCEv2 != counts.RoCEData || tr.RoCEv1 != 0 || tr.InfiniBand != 0 || tr.TCPSegments < counts.TCPBulk {
		t.Errorf("traffic %+v; the workload holds %+v", tr, counts)
	}
}

// TestTrafficReal compares the counts with tshark's on the real captures:
// the InfiniBand-family packets that are not CM MADs, and the TCP
// segments.
func TestTrafficReal(t *testing.T) {
	tshark, err := lookTshark()
	if err != nil {
		t.Skip("tshark not installed")
	}
	count := func(path, filter string) int {
		out, err := exec.Command(tshark, "-r", path, "-Y", filter, "-T", "fields", "-e", "frame.number").Output()
		if err != nil {
			t.Fatalf("tshark %s: %v", filter, err)
		}
		return strings.Count(string(out), "\n")
	}
	for _, name := range []string{"rocev1.pcap", "rocev2_test.pcap", "roce-lab-test.pcap", "softroce-demo-infiniband.pcap",
		"softuiwarp-uiwarp.pcap"} {
		t.Run(name, func(t *testing.T) {
			p := realCapture(t, name)
			var c collect
			sum, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c)
			if err != nil {
				t.Fatal(err)
			}
			tr := sum.Traffic
			// tshark decodes RoCEv2 only on port 4791 and native InfiniBand
			// only from ERF or link type 247, as we do here.
			ib := count(p, "infiniband && !(infiniband.mad.mgmtclass == 0x07)")
			if got := tr.RoCEv2 + tr.RoCEv1 + tr.InfiniBand; got != ib {
				t.Errorf("%+v: %d InfiniBand-family packets that are not CM, tshark says %d", tr, got, ib)
			}
			if v1 := count(p, "eth.type == 0x8915 && !(infiniband.mad.mgmtclass == 0x07)"); tr.RoCEv1 != v1 {
				t.Errorf("RoCEv1 %d, tshark %d", tr.RoCEv1, v1)
			}
			// The reassembler looks at segments with payload, SYN, FIN or RST.
			if seg := count(p, "tcp.len > 0 || tcp.flags.syn == 1 || tcp.flags.fin == 1 || tcp.flags.reset == 1"); tr.TCPSegments != seg {
				t.Errorf("TCP segments %d, tshark %d", tr.TCPSegments, seg)
			}
		})
	}
}

// TestConnectionNumbers: attempts are numbered from 1 in the order of their
// requests across the whole run, and each message carries the number of
// the attempt it belongs to (0 before its request).
func TestConnectionNumbers(t *testing.T) {
	var c collect
	if _, err := dissect.Run(context.Background(), []string{"../pcaps/rocev2-nfs.pcap", "../pcaps/iwarp-split-ipv6.pcapng",
		"../pcaps/rocev2-reject.pcap"}, nil, dissect.Config{}, &c); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.msgs {
		got = append(got, m.Name()+"="+strconv.Itoa(m.Conn))
	}
	if want := "REQ=1 REP=1 RTU=1 MPA_REQ=2 MPA_REP=2 REQ=3 REJ=3"; strings.Join(got, " ") != want {
		t.Errorf("messages %s, want %s", strings.Join(got, " "), want)
	}
	for i, x := range c.conns {
		if x.Number != i+1 {
			t.Errorf("connection %d has number %d", i+1, x.Number)
		}
	}
}

// TestCut: an attempt without a reply in an input that ends in damage is
// cut, not unanswered (and says why); so it is when -c stops the reading;
// one in an input read to its end is unanswered.
func TestCut(t *testing.T) {
	raw, err := os.ReadFile("../pcaps/rocev2-nfs.pcap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged.pcap")
	os.WriteFile(damaged, raw[:24+16+322+10], 0o644) // the REQ, then the REP's record cut short
	fs, err := (&craft.Exchange{Transport: craft.RoCEv2}).Frames()
	if err != nil {
		t.Fatal(err)
	}
	lonely := filepath.Join(dir, "lonely.pcap")
	if err := craft.WriteFile(lonely, fs[:1]); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files []string
		count int
		state record.State
		why   string
	}{
		{"damaged", []string{damaged}, 0, record.Cut, "no reply to the request of frame 1 before the input ended early (it could not be read after frame 1)"},
		{"count", []string{"../pcaps/rocev2-nfs.pcap"}, 1, record.Cut, "no reply to the request of frame 1 before the input ended early (the run stopped at the frame count limit, after frame 1)"},
		{"read to its end", []string{lonely}, 0, record.NoReply, "no reply to the request of frame 1 by the end of the capture"},
	} {
		var c collect
		sum, _ := dissect.Run(context.Background(), tc.files, nil, dissect.Config{Count: tc.count}, &c)
		if len(c.conns) != 1 || c.conns[0].State != tc.state || sum.Connections[tc.state] != 1 ||
			len(c.conns[0].Findings) != 1 || !strings.HasPrefix(c.conns[0].Findings[0].Message, tc.why) {
			t.Errorf("%s: %+v", tc.name, c.conns)
		}
	}
}

// TestInputStart: each message knows when its input began, for relative
// times.
func TestInputStart(t *testing.T) {
	var c collect
	if _, err := dissect.Run(context.Background(), []string{"../pcaps/rocev2-nfs.pcap"}, nil, dissect.Config{}, &c); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.msgs {
		if !m.InputStart.Equal(craft.DefaultStart) || m.Time.Sub(m.InputStart) != time.Duration(m.Frame-1)*time.Millisecond {
			t.Errorf("frame %d at %v, input start %v", m.Frame, m.Time, m.InputStart)
		}
	}
}
