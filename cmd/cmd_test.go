package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run runs the program in memory.
func run(t *testing.T, stdin []byte, env map[string]string, tty bool, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	s := &IOStreams{In: bytes.NewReader(stdin), Out: &out, ErrOut: &errOut, OutTerminal: tty,
		Getenv: func(k string) string { return env[k] }}
	code := Run(args, s)
	return code, out.String(), errOut.String()
}

const nfs = "../pcaps/rocev2-nfs.pcap"

func TestDissectExitCodes(t *testing.T) {
	dir := t.TempDir()
	notCapture := filepath.Join(dir, "notes.txt")
	os.WriteFile(notCapture, []byte("hello, this is not a capture\n"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)

	cases := []struct {
		name     string
		args     []string
		code     int
		out      string // stdout must contain
		errLine  string // stderr must be exactly this line
		noOutput bool
	}{
		{"clean", []string{"dissect", nfs}, 0, "REQ  RPC-over-RDMA v1 R=1 send=4096 recv=4096 @36", "", false},
		{"read flag", []string{"dissect", "-r", nfs}, 0, "RTU", "", false},
		{"fail-on info", []string{"dissect", "--fail-on", "info", "../pcaps/rocev2-one-sided.pcap"}, 1, "rpcrdma-absent", "", false},
		{"fail-on warning, only info", []string{"dissect", "--fail-on", "warning", "../pcaps/rocev2-one-sided.pcap"}, 0, "rpcrdma-absent", "", false},
		{"fail-on never", []string{"dissect", "../pcaps/rocev2-one-sided.pcap"}, 0, "", "", false},
		{"missing file", []string{"dissect", filepath.Join(dir, "nope.pcap")}, 2, "",
			"rdmacm-pd: " + filepath.Join(dir, "nope.pcap") + ": no such file or directory", true},
		{"not a capture", []string{"dissect", notCapture}, 2, "",
			"rdmacm-pd: " + notCapture + ": offset 0: not a capture file (pcap, pcapng or gzip): starts with 68 65 6c 6c", true},
		{"empty file", []string{"dissect", empty}, 2, "", "rdmacm-pd: " + empty + ": offset 0: empty file", true},
		{"no input", []string{"dissect"}, 2, "", "rdmacm-pd: no input: name capture files, or - for standard input", true},
		{"bad format", []string{"dissect", "-T", "xml", nfs}, 2, "",
			`rdmacm-pd: --format: unknown format "xml" (want text, json or markdown)`, true},
		{"markdown not yet", []string{"dissect", "-T", "markdown", nfs}, 2, "", "rdmacm-pd: the markdown format is not available yet", true},
		{"bad fail-on", []string{"dissect", "--fail-on", "loud", nfs}, 2, "",
			`rdmacm-pd: --fail-on: unknown severity "loud" (want info, warning or error) (or never)`, true},
		{"bad color", []string{"dissect", "--color", "pink", nfs}, 2, "", `rdmacm-pd: --color: unknown mode "pink" (want auto, always or never)`, true},
		{"bad port", []string{"dissect", "--roce-port", "70000", nfs}, 2, "", "rdmacm-pd: --roce-port: 70000 is not a UDP port", true},
		{"unknown flag", []string{"dissect", "--bogus", nfs}, 2, "", "rdmacm-pd: unknown flag: --bogus (see rdmacm-pd dissect --help)", true},
		{"unknown command", []string{"frobnicate"}, 2, "", `rdmacm-pd: unknown command "frobnicate" for "rdmacm-pd"`, true},
		{"stdin twice", []string{"dissect", "-", "-"}, 2, "", "rdmacm-pd: standard input (-) can be read only once", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, nil, nil, false, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, out)
			}
			if tc.errLine != "" && errOut != tc.errLine+"\n" {
				t.Errorf("stderr\n got %q\nwant %q", errOut, tc.errLine+"\n")
			}
			if tc.errLine == "" && errOut != "" {
				t.Errorf("unexpected stderr %q", errOut)
			}
			if tc.noOutput && out != "" {
				t.Errorf("unexpected stdout %q", out)
			}
		})
	}
}

// TestDamagedAfterMessages: what was decoded before the damage is printed,
// then the error, then exit 2.
func TestDamagedAfterMessages(t *testing.T) {
	raw, err := os.ReadFile(nfs)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	os.WriteFile(cut, raw[:len(raw)-50], 0o644)
	code, out, errOut := run(t, nil, nil, false, "dissect", cut)
	if code != 2 || !strings.Contains(out, "REP") || strings.Contains(out, "RTU") {
		t.Errorf("exit %d, out:\n%s", code, out)
	}
	want := "rdmacm-pd: " + cut + ": frame 3 at offset 700: record cut short: 272 of 322 octets\n"
	if errOut != want {
		t.Errorf("stderr\n got %q\nwant %q", errOut, want)
	}
}

func TestStdinAndColor(t *testing.T) {
	raw, err := os.ReadFile(nfs)
	if err != nil {
		t.Fatal(err)
	}
	esc := "\x1b["
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		tty   bool
		color bool
	}{
		{"auto on a terminal", []string{"dissect", "-"}, nil, true, true},
		{"auto piped", []string{"dissect", "-"}, nil, false, false},
		{"NO_COLOR", []string{"dissect", "-"}, map[string]string{"NO_COLOR": "1"}, true, false},
		{"always beats NO_COLOR", []string{"dissect", "--color", "always", "-"}, map[string]string{"NO_COLOR": "1"}, false, true},
		{"CLICOLOR_FORCE piped", []string{"dissect", "-"}, map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{"TERM=dumb", []string{"dissect", "-"}, map[string]string{"TERM": "dumb"}, true, false},
		{"never", []string{"dissect", "--color", "never", "-"}, nil, true, false},
		{"json never coloured", []string{"dissect", "--color", "always", "-T", "json", "-"}, nil, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, raw, tc.env, tc.tty, tc.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := strings.Contains(out, esc); got != tc.color {
				t.Errorf("coloured = %v, want %v:\n%q", got, tc.color, out)
			}
			if !strings.Contains(out, "REQ") {
				t.Errorf("no REQ in output")
			}
		})
	}
}

func TestDecode(t *testing.T) {
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"decode", "f6ab0e18", "01", "01", "03", "07"}, 0, "8 octets: RPC-over-RDMA v1 R=1 send=4096 recv=8192 @0"},
		{[]string{"decode", "0xf6:0xab:0x0e:0x18:0x01:0x00:0x00:0xff"}, 0, "send=1024 recv=262144 @0"},
		{[]string{"decode", "f6-ab-0e-18-02-00-03-03"}, 0, "rpcrdma-version-unknown"},
		{[]string{"decode", "--fail-on", "warning", "f6ab0e18 02000303"}, 1, "rpcrdma-version-unknown"},
		{[]string{"decode", "-T", "json", "f6ab0e1801010303"}, 0, `"rpcrdma":{"offset":0,"format_identifier":4138405400,"version":1,"reserved":0,"remote_invalidate":true,"send_size":4096,"receive_size":4096,"send_size_encoded":3,"receive_size_encoded":3},"warnings":[]`},
		{[]string{"decode", "00400000" + strings.Repeat("00", 32) + "f6ab0e1801010303"}, 0, "@36"},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, nil, nil, false, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%v: exit %d, out %q, err %q", tc.args, code, out, errOut)
		}
	}
	code, _, errOut := run(t, nil, nil, false, "decode", "f6a")
	if code != 2 || errOut != "rdmacm-pd: odd number of hex digits (3)\n" {
		t.Errorf("odd digits: %d %q", code, errOut)
	}
	code, _, errOut = run(t, nil, nil, false, "decode", "zz")
	if code != 2 || !strings.HasPrefix(errOut, "rdmacm-pd: not hex:") {
		t.Errorf("not hex: %d %q", code, errOut)
	}
}

func TestCraft(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.pcap", "b.pcapng"} {
		path := filepath.Join(dir, name)
		code, _, errOut := run(t, nil, nil, false, "craft", "--transport", "rocev1", "--send-size", "16384",
			"--reply-receive-size", "2048", "--reply-remote-invalidate", "-w", path)
		if code != 0 {
			t.Fatalf("craft: %d %s", code, errOut)
		}
		raw, _ := os.ReadFile(path)
		if name == "b.pcapng" && !bytes.HasPrefix(raw, []byte{0x0a, 0x0d, 0x0d, 0x0a}) {
			t.Errorf("%s is not pcapng", name)
		}
		code, out, _ := run(t, nil, nil, false, "dissect", path)
		if code != 0 || !strings.Contains(out, "rocev1  REQ  RPC-over-RDMA v1 R=0 send=16384 recv=4096 @36") ||
			!strings.Contains(out, "REP  RPC-over-RDMA v1 R=1 send=4096 recv=2048 @0") {
			t.Errorf("%s:\n%s", name, out)
		}
	}
	code, out, _ := run(t, nil, nil, false, "craft", "--send-size", "8192", "--remote-invalidate", "--hex")
	if code != 0 || out != "f6ab0e1801010703\n" {
		t.Errorf("--hex: %d %q", code, out)
	}
	code, _, errOut := run(t, nil, nil, false, "craft", "--send-size", "1000", "-w", filepath.Join(dir, "x.pcap"))
	if code != 2 || errOut != "rdmacm-pd: initiator send size: inline size 1000 is not a multiple of 1024 between 1024 and 262144\n" {
		t.Errorf("bad size: %d %q", code, errOut)
	}
	code, _, errOut = run(t, nil, nil, false, "craft")
	if code != 2 || errOut != "rdmacm-pd: craft needs -w FILE (or --hex)\n" {
		t.Errorf("no -w: %d %q", code, errOut)
	}
	code, _, errOut = run(t, nil, nil, false, "craft", "--transport", "udp", "-w", filepath.Join(dir, "y.pcap"))
	if code != 2 || errOut != `rdmacm-pd: --transport: unknown transport "udp" (want rocev2, rocev1, ib or iwarp)`+"\n" {
		t.Errorf("unknown transport: %d %q", code, errOut)
	}
	iw := filepath.Join(dir, "iw.pcap")
	code, _, errOut = run(t, nil, nil, false, "craft", "--transport", "iwarp", "--mpa-rev", "2", "--split", "3,17",
		"--reject", "--reply-send-size", "2048", "-w", iw)
	if code != 0 {
		t.Fatalf("craft iwarp: %d %s", code, errOut)
	}
	code, out, _ = run(t, nil, nil, false, "dissect", iw)
	if code != 0 || !strings.Contains(out, "MPA_REQ  RPC-over-RDMA v1 R=0 send=4096 recv=4096 @4  (MPA rev 2; frames 4, 5, 6)") ||
		!strings.Contains(out, "MPA_REP  RPC-over-RDMA v1 R=0 send=2048 recv=4096 @4  (MPA rev 2)") || !strings.Contains(out, "mpa-reject") {
		t.Errorf("iwarp:\n%s", out)
	}
	for _, bad := range [][]string{{"--mpa-rev", "3"}, {"--split", "5,2"}, {"--transport", "rocev2", "--split", "4"}} {
		args := append([]string{"craft", "--transport", "iwarp"}, bad...)
		if code, _, _ := run(t, nil, nil, false, append(args, "-w", filepath.Join(dir, "z.pcap"))...); code != 2 {
			t.Errorf("%v: exit %d", bad, code)
		}
	}
}
