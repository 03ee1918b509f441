package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDatapathFlags: --datapath and the data path's limit flags, end to
// end: an "rpc" record's finding counts for --fail-on; --datapath off
// follows no RC traffic; a limit flag lowered shows its state-limit-reached;
// bad values are usage errors.
func TestDatapathFlags(t *testing.T) {
	dir := t.TempDir()
	credits := filepath.Join(dir, "credits.pcap")
	if code, _, errOut := run(t, nil, nil, false, "craft", "--finding", "credits-exceeded", "-w", credits); code != 0 {
		t.Fatalf("craft: %s", errOut)
	}
	clean := "../pcaps/rocev2-nfs-traffic.pcap"
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		out     string // stdout must contain
		not     string // stdout must not contain
		errLine string
	}{
		{"an rpc finding reaches --fail-on", []string{"dissect", "--fail-on", "warning", credits}, 1, "credits-exceeded", "", ""},
		{"below --fail-on", []string{"dissect", "--fail-on", "error", credits}, 0, "credits-exceeded", "", ""},
		{"off", []string{"dissect", "--fail-on", "warning", "--datapath", "off", "-T", "json", credits}, 0, `"rpc_messages":0`, `"record":"rpc"`, ""},
		{"all", []string{"dissect", "--datapath", "all", "-T", "json", clean}, 0, `"record":"rpc"`, "", ""},
		{"findings only", []string{"dissect", "-T", "json", clean}, 0, `"datapath":{`, `"record":"rpc"`, ""},
		{"one Call tracked", []string{"dissect", "--width", "0", "--max-rpc-calls", "1", credits}, 0,
			"more than 1 Calls outstanding on this connection, or 65536 on all: this one is not followed", "", ""},
		{"bad mode", []string{"dissect", "--datapath", "some", clean}, 2, "", "",
			`rdmacm-pd: --datapath: unknown value "some" (want all, findings or off)`},
		{"no Calls tracked", []string{"dissect", "--max-rpc-calls", "0", clean}, 2, "", "", "rdmacm-pd: --max-rpc-calls: 0 (want at least 1)"},
		{"no connections followed", []string{"dissect", "--max-rc-connections", "0", clean}, 2, "", "", "rdmacm-pd: --max-rc-connections: 0 (want at least 1)"},
		{"not a number", []string{"dissect", "--max-send-buffers", "many", clean}, 2, "", "",
			`rdmacm-pd: --max-send-buffers: "many" is not a whole number`},
	} {
		code, out, errOut := run(t, nil, nil, false, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || tc.not != "" && strings.Contains(out, tc.not) ||
			tc.errLine != "" && errOut != tc.errLine+"\n" {
			t.Errorf("%s: exit %d, stdout %.300q, stderr %q", tc.name, code, out, errOut)
		}
	}
}

// TestStatistics: -z rpc,programs and -z rpc,srt,PROG,VERS[,FILTER] write
// their tables after the output, in text and JSON, over every connection
// whatever -Y shows; a -z tshark users type wrong is a usage error.
func TestStatistics(t *testing.T) {
	in := filepath.Join(t.TempDir(), "c.pcap")
	if code, _, errOut := run(t, nil, nil, false, "craft", "--finding", "credits-exceeded", "-w", in); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := run(t, nil, nil, false, "dissect", "-q", "-Y", "msg == REJ", "-z", "rpc,programs", "-z", "rpc,srt,nfs,3", in)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "\nRPC programs (-z rpc,programs)\n  program  version  calls  replies  errors  ms min/mean/max\n" +
		"  NFS            3      4        4       0  0.040/0.060/0.090\n" +
		"  NFS            4      2        2       0  0.020/0.065/0.110\n"
	// The READDIRPLUS Reply is a Long Reply (RDMA_NOMSG), put together
	// from the Writes into its reply chunk.
	if !strings.Contains(out, want) || !strings.HasSuffix(out, "  procedure    calls  replies  errors  ms min/mean/max\n"+
		"  NULL             2        2       0  0.040/0.040/0.040\n"+
		"  WRITE            1        1       0  0.070/0.070/0.070\n"+
		"  READDIRPLUS      1        1       0  0.090/0.090/0.090\n") {
		t.Errorf("text:\n%s", out)
	}
	_, out, _ = run(t, nil, nil, false, "dissect", "-q", "-T", "json", "-z", "rpc,srt,100003,3,addr == 192.0.2.99", in)
	last := out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:]
	if last != `{"record":"rpc_srt","program":100003,"program_name":"NFS","version":3,"filter":"addr == 192.0.2.99","procedures":[]}`+"\n" {
		t.Errorf("json: %s", last)
	}
	for _, bad := range []string{"rpc,srt,100003", "rpc,srt,NOPE,3", "rpc,srt,100003,x", "rpc,foo", "io,stat,1", "rpc,srt,100003,3,addr =="} {
		if code, _, errOut := run(t, nil, nil, false, "dissect", "-z", bad, in); code != ExitFailure || !strings.Contains(errOut, "-z "+bad) {
			t.Errorf("-z %s: exit %d, %q", bad, code, errOut)
		}
	}
}
