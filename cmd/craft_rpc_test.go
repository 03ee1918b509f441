package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// TestCraftRPC: --rpc, --callback and the RPC findings make traffic on
// their own (--traffic implied) and write what craft's NFSTraffic writes
// for them; --rpc chooses the version of the NFS workloads too.
func TestCraftRPC(t *testing.T) {
	dir := t.TempDir()
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096}
	for _, tc := range []struct {
		args    []string
		traffic craft.Traffic
		iwarp   bool
	}{
		{[]string{"--rpc", "nfs4"}, craft.Traffic{NFSVersion: craft.NFSv4}, false},
		{[]string{"--rpc", "mix", "--callback"}, craft.Traffic{Callback: true}, false},
		{[]string{"--rpc", "nfs3", "--finding", "rpc-call-resent", "--transport", "iwarp"},
			craft.Traffic{NFSVersion: craft.NFSv3, Findings: []string{"rpc-call-resent"}}, true},
		{[]string{"--finding", "rpc-reply-error,rpc-call-unanswered"},
			craft.Traffic{Findings: []string{"rpc-reply-error", "rpc-call-unanswered"}}, false},
		{[]string{"--long", "--chunk-violation", "write-past-end,reply-unknown-handle"},
			craft.Traffic{Long: true, Violations: []string{"write-past-end", "reply-unknown-handle"}}, false},
		{[]string{"--finding", "chunk-violation,inline-threshold-too-small"},
			craft.Traffic{Findings: []string{"chunk-violation", "inline-threshold-too-small"}}, false},
	} {
		name := filepath.Join(dir, strings.Join(tc.args, "")+".pcap")
		if code, _, errOut := run(t, nil, nil, false, append([]string{"craft", "-w", name}, tc.args...)...); code != 0 {
			t.Fatalf("craft %v: exit %d, %s", tc.args, code, errOut)
		}
		var frames []craft.Frame
		var err error
		if tc.iwarp {
			frames, err = (&craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p}).NFSTraffic(tc.traffic)
		} else {
			frames, err = (&craft.Exchange{Transport: craft.RoCEv2, Initiator: p, Responder: p}).NFSTraffic(tc.traffic)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(dir, "want.pcap")
		if err := craft.WriteFile(want, frames); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(name)
		b, _ := os.ReadFile(want)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("craft %v: %d octets, NFSTraffic(%+v) %d", tc.args, len(a), tc.traffic, len(b))
		}
	}
	// The NFS workloads in one version: not the mix's octets.
	for _, wl := range [][]string{{"--nfs"}, {"--iwarp-conns", "4"}} {
		var files [2][]byte
		for i, v := range []string{"mix", "nfs4"} {
			name := filepath.Join(dir, v+".pcap")
			args := append([]string{"craft", "--workload", "256KiB", "--rpc", v, "-w", name}, wl...)
			if code, _, errOut := run(t, nil, nil, false, args...); code != 0 {
				t.Fatalf("%v: exit %d, %s", args, code, errOut)
			}
			files[i], _ = os.ReadFile(name)
		}
		if len(files[0]) == 0 || bytes.Equal(files[0], files[1]) {
			t.Errorf("%v: --rpc nfs4 wrote the mix", wl)
		}
	}
}
