package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// recordCodes counts the finding codes of the records (messages,
// connections, their updates, rpc records) of an NDJSON output: the
// summary's run notes are not records.
func recordCodes(t *testing.T, ndjson string) map[string]int {
	t.Helper()
	codes := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(ndjson), "\n") {
		if strings.HasPrefix(line, `{"record":"summary"`) {
			continue
		}
		var rec struct {
			Warnings []struct {
				Code string `json:"code"`
			} `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		for _, f := range rec.Warnings {
			codes[f.Code]++
		}
	}
	return codes
}

// TestWriteReproduces: for every finding code craft can make (on a record),
// -Y 'code == X' -w writes a file that, dissected again, shows X as often
// as the input did: the frames behind each record shown are in it, the
// data path's traffic and the connection setup with them.
func TestWriteReproduces(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{"--reject"},
		{"--no-rpcrdma"},
		{"--remote-invalidate"},
		{"--ulp", "nvme-rdma", "--reject"},
		{"--flood", "rc-lying-lengths", "--count", "5"},
		{"--flood", "half-mpa", "--count", "5"},
		{"--flood", "large-pd", "--count", "3"},
		{"--flood", "orphan-replies", "--count", "5"},
		{"--transport", "rocev1", "--finding", "inline-threshold-exceeded"},
		{"--transport", "ib", "--finding", "credits-exceeded"},
	}
	for _, code := range []string{"inline-threshold-exceeded", "send-with-invalidate-not-allowed", "invalidate-stag-unknown",
		"credits-exceeded", "rpcrdma-header-invalid", "rpcrdma-error-reply", "rdma-read-limit-exceeded"} {
		cases = append(cases, []string{"--finding", code}, []string{"--transport", "iwarp", "--finding", code})
	}
	for _, code := range []string{"mpa-crc-mismatch", "mpa-crc-missing", "rdmap-terminate", "fpdu-framing-lost"} {
		cases = append(cases, []string{"--transport", "iwarp", "--finding", code})
	}
	made := map[string]bool{}
	for i, args := range cases {
		in := filepath.Join(dir, fmt.Sprintf("in%d.pcap", i))
		if code, _, errOut := run(t, nil, nil, false, append([]string{"craft", "-w", in}, args...)...); code != 0 {
			t.Fatalf("craft %v: %s", args, errOut)
		}
		_, all, _ := run(t, nil, nil, false, "dissect", "-T", "json", in)
		codes := recordCodes(t, all)
		for code, n := range codes {
			made[code] = true
			out := filepath.Join(dir, fmt.Sprintf("out%d-%s.pcapng", i, code))
			exit, _, errOut := run(t, nil, nil, false, "dissect", "-q", "-Y", "code == "+code, "-w", out, in)
			if exit != 0 || !strings.HasPrefix(errOut, "rdmacm-pd: wrote ") {
				t.Fatalf("%v, code == %s: exit %d, %s", args, code, exit, errOut)
			}
			_, again, _ := run(t, nil, nil, false, "dissect", "-T", "json", out)
			if got := recordCodes(t, again)[code]; got != n {
				t.Errorf("craft %v: %s %d times in the input, %d times in the file -Y 'code == %s' -w wrote (%s)",
					args, code, n, got, code, strings.TrimSpace(errOut))
			}
		}
	}
	// The codes the cases must have made: every data-path code craft
	// offers, and the setup's.
	for _, code := range []string{"inline-threshold-exceeded", "send-with-invalidate-not-allowed", "invalidate-stag-unknown",
		"credits-exceeded", "rpcrdma-header-invalid", "rpcrdma-error-reply", "rdma-read-limit-exceeded", "mpa-crc-mismatch",
		"mpa-crc-missing", "rdmap-terminate", "fpdu-framing-lost", "connection-rejected", "rpcrdma-absent", "rpcrdma-one-sided",
		"remote-invalidation-one-sided", "nvme-rdma-rejected", "length-mismatch", "rc-packet-length-invalid", "mpa-truncated",
		"reply-missing", "mpa-pd-too-long"} {
		if !made[code] {
			t.Errorf("no crafted capture raised %s", code)
		}
	}
}

// TestWriteNotes: what -w says it wrote names every kind of record shown;
// -Y's closing note counts the rpc records; msg == RPC without --datapath
// all gets a word on standard error.
func TestWriteNotes(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "swi.pcap")
	if code, _, errOut := run(t, nil, nil, false, "craft", "--finding", "send-with-invalidate-not-allowed", "-w", in); code != 0 {
		t.Fatal(errOut)
	}
	out := filepath.Join(dir, "o.pcap")
	code, stdout, errOut := run(t, nil, nil, false, "dissect", "-q", "-Y", "severity >= warning", "-w", out, in)
	if code != 0 || errOut != "rdmacm-pd: wrote 45 frames (of 3 RPC-over-RDMA messages) to "+out+"\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(stdout, "-Y severity >= warning: 0 of 5 messages, 0 of 1 connection and 3 of 3\n  RPC-over-RDMA messages shown\n") ||
		!strings.HasSuffix(stdout, "Verdict: -Y shows none of the 1 connection.\n") {
		t.Errorf("stdout:\n%s", stdout)
	}
	_, again, _ := run(t, nil, nil, false, "dissect", "-q", out)
	if !strings.Contains(again, "4 findings (3 warnings,") {
		t.Errorf("the file dissects to:\n%s", again)
	}
	// Everything shown: the connection whole, with its DREQ and DREP.
	code, _, errOut = run(t, nil, nil, false, "dissect", "-q", "-w", out, in)
	if code != 0 || errOut != "rdmacm-pd: wrote 48 frames (of 5 messages, 1 connection and 3 RPC-over-RDMA messages) to "+out+"\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	// Nothing shown: an empty file, said so.
	code, _, errOut = run(t, nil, nil, false, "dissect", "-q", "-Y", "msg == REJ", "-w", out, in)
	if code != 0 || errOut != "rdmacm-pd: wrote 0 frames (of 0 messages) to "+out+"\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		hint bool
	}{
		{[]string{"-Y", "msg == RPC"}, true},
		{[]string{"-Y", "not (msg == rpc)", "--datapath", "off"}, true},
		{[]string{"-Y", "msg == RPC", "--datapath", "all"}, false},
		{[]string{"-Y", "msg == REQ"}, false},
	} {
		_, _, errOut := run(t, nil, nil, false, append(append([]string{"dissect", "-q"}, tc.args...), in)...)
		if got := strings.Contains(errOut, "add --datapath all"); got != tc.hint {
			t.Errorf("%v: stderr %q", tc.args, errOut)
		}
	}
}

// TestWriteStdin: standard input is read again for -w's second pass (kept
// in a temporary file as it is read), and gives the same file as the path.
func TestWriteStdin(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "swi.pcap")
	if code, _, errOut := run(t, nil, nil, false, "craft", "--finding", "credits-exceeded", "-w", in); code != 0 {
		t.Fatal(errOut)
	}
	fromFile, fromStdin := filepath.Join(dir, "a.pcap"), filepath.Join(dir, "b.pcap")
	_, _, e1 := run(t, nil, nil, false, "dissect", "-q", "-Y", "code", "-w", fromFile, in)
	_, _, e2 := run(t, readFile(t, in), nil, false, "dissect", "-q", "-Y", "code", "-w", fromStdin, "-")
	re := regexp.MustCompile(`wrote (\d+) frames`)
	if m1, m2 := re.FindStringSubmatch(e1), re.FindStringSubmatch(e2); m1 == nil || m2 == nil || m1[1] != m2[1] || m1[1] == "0" {
		t.Fatalf("file: %q, stdin: %q", e1, e2)
	}
	if a, b := readFile(t, fromFile), readFile(t, fromStdin); !slices.Equal(a, b) {
		t.Errorf("the files differ: %d and %d octets", len(a), len(b))
	}
	// A FIFO is read once too.
	fifo := filepath.Join(dir, "capture.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.Write(readFile(t, in))
		f.Close()
	}()
	fromFIFO := filepath.Join(dir, "c.pcap")
	if _, _, e3 := run(t, nil, nil, false, "dissect", "-q", "-Y", "code", "-w", fromFIFO, fifo); re.FindString(e3) != re.FindString(e1) {
		t.Errorf("FIFO: %q", e3)
	}
	if a, b := readFile(t, fromFile), readFile(t, fromFIFO); !slices.Equal(a, b) {
		t.Errorf("the files from the path and the FIFO differ: %d and %d octets", len(a), len(b))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
