//go:build linux

package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memoryBound is the stated bound on peak memory (max RSS) for any input,
// with the default limits.
const memoryBound = 100 << 20

// TestAdversarialMemory runs the binary over hostile captures written by
// `craft --flood` and checks, from the child's resource usage, that its peak
// memory stays under memoryBound; that every limit that was hit is counted
// and reported; and that the run ends.
func TestAdversarialMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and dissects captures of a million streams")
	}
	bin := rdmacmBinary(t)
	dir := t.TempDir()
	cases := []struct {
		kind  string
		count int
		check func(t *testing.T, sum map[string]any)
	}{
		{"tcp-streams", 1000000, func(t *testing.T, sum map[string]any) {
			// Half the streams have no handshake and a short first segment:
			// they are followed until the flow limit gives them up. None ever
			// shows an MPA key, so nothing of an MPA frame is lost: no count,
			// no warning (a busy capture raises no false alarm).
			if drops := sum["state_limit_drops"].(float64); drops != 0 {
				t.Errorf("state_limit_drops %v", drops)
			}
			if w := sum["warnings"].([]any); len(w) != 0 {
				t.Errorf("summary warnings %v", w)
			}
			if sum["messages"].(float64) != 0 {
				t.Errorf("messages %v", sum["messages"])
			}
		}},
		{"half-mpa", 300000, func(t *testing.T, sum map[string]any) {
			f := sum["findings"].(map[string]any)
			if sum["messages"].(float64) != 300000 || f["state-limit-reached"] == nil || f["mpa-truncated"] == nil {
				t.Errorf("messages %v, findings %v", sum["messages"], f)
			}
		}},
		{"reqs", 200000, func(t *testing.T, sum map[string]any) {
			c := sum["connections"].(map[string]any)
			f := sum["findings"].(map[string]any)
			// 65536 tracked to the end, the rest reported early.
			if c["no-reply"].(float64) != 200000 || f["reply-missing"].(float64) != 65536 || f["state-limit-reached"].(float64) != 200000-65536 {
				t.Errorf("connections %v, findings %v", c, f)
			}
		}},
		{"rc-conns", 20000, func(t *testing.T, sum map[string]any) {
			// Beyond the 8192 connections followed at once, the least
			// recently active is given up: each with state-limit-reached;
			// no more than 1024 multi-packet Sends keep their first octets.
			c := sum["connections"].(map[string]any)
			f := sum["findings"].(map[string]any)
			if c["established"].(float64) != 20000 || sum["rpc_messages"].(float64) != 40000 ||
				f["state-limit-reached"].(float64) < 20000-8192 || sum["state_limit_drops"].(float64) < 2*20000-8192-1024 {
				t.Errorf("connections %v, rpc_messages %v, findings %v, drops %v", c, sum["rpc_messages"], f, sum["state_limit_drops"])
			}
		}},
		{"rc-directions", 300000, func(t *testing.T, sum map[string]any) {
			// 4096 directions without a setup followed at once: the others
			// are given up (their Sends delivered as far as they came), and
			// the summary says so.
			w := sum["warnings"].([]any)
			if sum["datapath_frames_without_connection"].(float64) != 300000 || sum["state_limit_drops"].(float64) < 300000-4096 ||
				len(w) != 1 || !strings.Contains(w[0].(map[string]any)["message"].(string), "295904 directions of RC traffic without their connection setup were given up") {
				t.Errorf("frames without connection %v, drops %v, warnings %v", sum["datapath_frames_without_connection"], sum["state_limit_drops"], w)
			}
		}},
		{"iwarp-conns", 20000, func(t *testing.T, sum map[string]any) {
			// The traffic of 4096 iWARP connections followed at once (each
			// with a Send in progress); the directions of the others are
			// not followed, counted and reported once.
			c := sum["connections"].(map[string]any)
			w := sum["warnings"].([]any)
			if c["established"].(float64) != 20000 || sum["rpc_messages"].(float64) != 4096 || sum["state_limit_drops"].(float64) != 2*(20000-4096) ||
				len(w) != 1 || !strings.Contains(w[0].(map[string]any)["message"].(string), "the FPDUs of 31808 TCP directions after their MPA frames were not followed") {
				t.Errorf("connections %v, rpc_messages %v, drops %v, warnings %v", c, sum["rpc_messages"], sum["state_limit_drops"], w)
			}
		}},
		{"orphan-replies", 1100, func(t *testing.T, sum map[string]any) {
			// Each Reply, with 65000 octets of private data, waits for a
			// Request that never comes (the latest 1024 of them): what is
			// kept of each is small.
			c := sum["connections"].(map[string]any)
			if sum["messages"].(float64) != 1100 || c["established"].(float64) != 0 || sum["state_limit_drops"].(float64) != 0 {
				t.Errorf("messages %v, connections %v, drops %v", sum["messages"], c, sum["state_limit_drops"])
			}
		}},
		{"retries", 300000, func(t *testing.T, sum map[string]any) {
			c := sum["connections"].(map[string]any)
			if c["no-reply"].(float64) != 1 || sum["state_limit_drops"].(float64) != 0 {
				t.Errorf("connections %v, drops %v", c, sum["state_limit_drops"])
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			file := filepath.Join(dir, tc.kind+".pcap")
			if code, _, errOut := run(t, nil, nil, false, "craft", "--flood", tc.kind, "--count", fmt.Sprint(tc.count), "-w", file); code != 0 {
				t.Fatalf("craft --flood: %s", errOut)
			}
			outFile := filepath.Join(dir, tc.kind+".json")
			out, err := os.Create(outFile)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd := exec.Command(bin, "dissect", "-T", "json", file)
			cmd.Stdout = out
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The child's high-water mark of resident memory (VmHWM), read
			// while it runs: its rusage would also count this process, whose
			// memory the child shares until its exec.
			peak := make(chan int64, 1)
			stop := make(chan struct{})
			go func() {
				var hwm int64
				for {
					if v := vmHWM(cmd.Process.Pid); v > hwm {
						hwm = v
					}
					select {
					case <-stop:
						peak <- hwm
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}()
			err = cmd.Wait()
			close(stop)
			hwm := <-peak
			if err != nil {
				t.Fatalf("dissect: %v", err)
			}
			t.Logf("%s: %d units, %.1f s, peak memory %.1f MB", tc.kind, tc.count, time.Since(start).Seconds(), float64(hwm)/(1<<20))
			if hwm == 0 {
				t.Fatal("could not read the child's memory")
			}
			if hwm > memoryBound {
				t.Errorf("peak memory %d MB, over the bound of %d MB", hwm>>20, memoryBound>>20)
			}
			sum := lastRecord(t, outFile)
			tc.check(t, sum)
		})
	}
}

// vmHWM reads a process's peak resident memory from /proc, in octets (0 when
// it is gone).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// lastRecord reads the last JSON line of a file: the summary.
func lastRecord(t *testing.T, name string) map[string]any {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	tail := int64(64 << 10)
	if st.Size() < tail {
		tail = st.Size()
	}
	f.Seek(-tail, io.SeekEnd)
	var last []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		last = bytes.Clone(sc.Bytes())
	}
	var sum map[string]any
	if err := json.Unmarshal(last, &sum); err != nil || sum["record"] != "summary" {
		t.Fatalf("last line is not the summary: %v", err)
	}
	return sum
}
