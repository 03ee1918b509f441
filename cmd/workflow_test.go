package cmd

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// The bug-report workflow: what a support engineer types, reads and pastes.

// TestHelpExamples runs every example of every command's help as written,
// in a folder holding the capture files the examples name, with the built
// binary first on PATH: each must exit 0. Live examples run as root only;
// one that runs "until Ctrl-C" gets a SIGINT after a second.
func TestHelpExamples(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash")
	}
	bin := rdmacmBinary(t)
	dir := t.TempDir()
	nfsRaw, err := os.ReadFile(nfs)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "capture.pcap"), nfsRaw, 0o644)
	ng, _ := os.ReadFile("../pcaps/rocev2-ipv6.pcapng")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(ng)
	zw.Close()
	os.WriteFile(filepath.Join(dir, "capture.pcapng.gz"), gz.Bytes(), 0o644)

	root := newRootCmd(&IOStreams{})
	cmds := []*cobra.Command{root}
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			cmds = append(cmds, c)
		}
	}
	ran := 0
	for _, c := range cmds {
		if c.Example == "" && c.Name() != "completion" {
			t.Errorf("%s --help has no example", c.CommandPath())
		}
		for _, line := range strings.Split(c.Example, "\n") {
			ex := strings.TrimSpace(line)
			if ex == "" {
				continue
			}
			t.Run(ex, func(t *testing.T) {
				liveEx := regexp.MustCompile(` -i (\S+)`).FindStringSubmatch(ex)
				if liveEx != nil {
					if os.Geteuid() != 0 {
						t.Skip("a live capture: needs root")
					}
					if _, err := os.Stat("/sys/class/net/" + liveEx[1]); err != nil {
						t.Skipf("no interface %s here", liveEx[1])
					}
				}
				for _, tool := range []string{"jq", "tcpdump", "xxd"} {
					if strings.Contains(ex, "| "+tool) || strings.HasPrefix(ex, tool+" ") {
						if _, err := exec.LookPath(tool); err != nil {
							t.Skipf("needs %s", tool)
						}
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, bash, "-o", "pipefail", "-c", ex)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(ex, "until Ctrl-C") {
					time.Sleep(time.Second)
					syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // as Ctrl-C does: the whole process group
				}
				if err := cmd.Wait(); err != nil {
					t.Errorf("%s: %v\n%s", ex, err, out.String())
				}
				ran++
			})
		}
	}
	if ran < 15 {
		t.Errorf("only %d examples ran", ran)
	}
}

// TestVersion: "version" and "--version" print the same line, naming the
// Go release, the platform and the capture backend.
func TestVersion(t *testing.T) {
	_, out, _ := run(t, nil, nil, false, "version")
	_, out2, _ := run(t, nil, nil, false, "--version")
	want := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + " " + capture.Backend + "\n"
	if out != out2 || !strings.HasPrefix(out, "rdmacm-pd ") || !strings.HasSuffix(out, want) || out != ToolVersion()+"\n" {
		t.Errorf("version %q, --version %q, want ...%q", out, out2, want)
	}
	for _, tc := range []struct {
		b    BuildInfo
		want string
	}{
		{BuildInfo{Version: "v1.2.0", Go: "go1.25.4", Platform: "linux/amd64", Backend: "AF_PACKET"}, "rdmacm-pd v1.2.0 go1.25.4 linux/amd64 AF_PACKET"},
		{BuildInfo{Revision: "3f2a9c1d0b4e5f6a7b8c9d0e1f2a3b4c5d6e7f80", Time: "2026-01-02T03:04:05Z", Modified: true, Go: "go1.25.4",
			Platform: "linux/arm64", Backend: "libpcap"}, "rdmacm-pd devel (3f2a9c1d0b4e+dirty, 2026-01-02T03:04:05Z) go1.25.4 linux/arm64 libpcap"},
	} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.b, got, tc.want)
		}
	}
	for v, pseudo := range map[string]bool{"v0.0.0-20260101000000-abcdef123456": true, "v1.2.1-0.20260101000000-abcdef123456+dirty": true,
		"v1.2.0": false, "v1.2.0+dirty": false} {
		if pseudoVersion.MatchString(v) != pseudo {
			t.Errorf("%s: pseudo-version %v", v, !pseudo)
		}
	}
}

// TestVersionStamped builds the binary in a git clone with VCS stamping, as
// `go build` in a clone does, and checks what "version" says: the
// revision, its commit time, no dirty mark; then after a change to a
// tracked file, the dirty mark. The clone is of this tree's commit with
// the tree's uncommitted files committed on top, so that it builds the code
// under test.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("clones and builds")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	out, err := exec.Command(git, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git tree: %v", err)
	}
	head := strings.TrimSpace(string(out))
	top, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "clone")
	runIn := func(wd string, name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir = wd
		c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=true", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
		return string(b)
	}
	runIn(".", git, "clone", "-q", "--no-checkout", strings.TrimSpace(string(top)), dir)
	runIn(dir, git, "-c", "advice.detachedHead=false", "checkout", "-q", head)
	files := strings.Split(strings.TrimSpace(runIn(strings.TrimSpace(string(top)), git, "ls-files", "-co", "--exclude-standard")), "\n")
	for _, f := range files {
		src := filepath.Join(strings.TrimSpace(string(top)), f)
		b, err := os.ReadFile(src)
		if err != nil {
			continue // deleted in the tree
		}
		dst := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runIn(dir, git, "add", "-A")
	if st := runIn(dir, git, "status", "--porcelain"); st != "" {
		runIn(dir, git, "commit", "-q", "-m", "the tree under test")
	}
	head = strings.TrimSpace(runIn(dir, git, "rev-parse", "HEAD"))
	when := strings.TrimSpace(runIn(dir, git, "show", "-s", "--format=%cI", head))
	commit, err := time.Parse(time.RFC3339, when)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "rdmacm-pd")
	build := func() string {
		runIn(dir, "go", "build", "-o", bin, ".")
		return strings.TrimSpace(runIn(dir, bin, "version"))
	}
	want := "rdmacm-pd devel (" + head[:12] + ", " + commit.UTC().Format(time.RFC3339) + ") " + runtime.Version() + " " +
		runtime.GOOS + "/" + runtime.GOARCH + " " + capture.Backend
	if got := build(); got != want {
		t.Errorf("clean clone: %q\nwant %q", got, want)
	}
	f, err := os.OpenFile(filepath.Join(dir, "README.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nlocal change\n")
	f.Close()
	if got := build(); got != strings.Replace(want, head[:12], head[:12]+"+dirty", 1) {
		t.Errorf("modified clone: %q", got)
	}
	// The Markdown report and the JSON summary carry the same line.
	md := runIn(dir, bin, "dissect", "-T", "markdown", "pcaps/rocev2-nfs.pcap")
	js := runIn(dir, bin, "dissect", "-T", "json", "pcaps/rocev2-nfs.pcap")
	v := strings.Replace(want, head[:12], head[:12]+"+dirty", 1)
	if !strings.Contains(md, "Generated by `"+v+"` with:") || !strings.Contains(js, `"tool":"`+v+`"}`) {
		t.Errorf("the report and the summary do not carry %q", v)
	}
}

// TestCountFiles: -c stops after N frames of the files, counted over all of
// them; an attempt whose reply was not read is cut.
func TestCountFiles(t *testing.T) {
	code, out, errOut := run(t, nil, nil, false, "dissect", "-c", "1", nfs)
	if code != 0 || errOut != "" || strings.Count(out, "rocev2 ") != 1 || !strings.Contains(out, "1 frame, 1 message, 1 connection (1 cut), 1 finding") ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), "an input ended early (the frame count of -c was reached)") {
		t.Errorf("-c 1: exit %d %q\n%s", code, errOut, out)
	}
	code, out, _ = run(t, nil, nil, false, "dissect", "-c", "4", nfs, "../pcaps/rocev2-reject.pcap")
	if code != 0 || !strings.Contains(out, "4 frames, 4 messages, 2 connections (1 established, 1 cut)") ||
		!strings.Contains(out, "== ../pcaps/rocev2-reject.pcap\n") {
		t.Errorf("-c 4 over two files: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, nil, nil, false, "dissect", "-T", "json", "--count", "2", nfs)
	if code != 0 || strings.Count(out, `"record":"message"`) != 2 || !strings.Contains(out, `"frames":2,`) {
		t.Errorf("json -c 2: exit %d\n%s", code, out)
	}
}

// TestQuiet: -q drops the message lines, keeps their findings (under their
// frame), the connections, their findings and the totals; JSON keeps the
// connection and summary records.
func TestQuiet(t *testing.T) {
	code, out, _ := run(t, nil, nil, false, "dissect", "-q", "../pcaps/rocev2-one-sided.pcap")
	want := "    2  info    rpcrdma-absent: no usable RPC-over-RDMA private data in REP: this\n"
	if code != 0 || !strings.HasPrefix(out, want) || strings.Contains(out, "rocev2 REQ") || !strings.Contains(out, "\nConnections (rocev2)\n") ||
		!strings.Contains(out, "  1  info    rpcrdma-one-sided:") || !strings.Contains(out, "3 frames, 3 messages, 1 connection (1 established), 3 findings (3 info)\n") ||
		!strings.HasSuffix(out, "worst finding:\n  info rpcrdma-one-sided.\n") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = run(t, nil, nil, false, "dissect", "-q", "-T", "json", nfs)
	if code != 0 || strings.Contains(out, `"record":"message"`) || strings.Count(out, "\n") != 2 {
		t.Errorf("json: exit %d:\n%s", code, out)
	}
	code, out, _ = run(t, nil, nil, false, "dissect", "-q", "-T", "markdown", nfs)
	if code != 0 || strings.Contains(out, "<details>") || !strings.Contains(out, "Details of 0 of 3 messages: none") {
		t.Errorf("markdown: exit %d:\n%s", code, out)
	}
	// Two inputs whose messages have no finding: no "== file" line without
	// a line under it.
	code, out, _ = run(t, nil, nil, false, "dissect", "-q", nfs, "../pcaps/rocev2-one-sided.pcap")
	if code != 0 || strings.Contains(out, "\n== "+nfs+"\n") || !strings.HasPrefix(out, "== ../pcaps/rocev2-one-sided.pcap\n    2  info    rpcrdma-absent") {
		t.Errorf("two inputs: exit %d:\n%s", code, out)
	}
}

// TestWriteFromFiles: -w with capture files writes the frames that carried
// the messages shown (all, or those -Y selects), says so on standard
// error, and the file dissects to the same messages.
func TestWriteFromFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.pcap")
	code, _, errOut := run(t, nil, nil, false, "craft", "--workload", "4MiB", "-w", big)
	if code != 0 {
		t.Fatalf("craft: %s", errOut)
	}
	setup := filepath.Join(dir, "setup.pcapng")
	code, out, errOut := run(t, nil, nil, false, "dissect", "-q", "-w", setup, big)
	if code != 0 || !regexp.MustCompile(`^rdmacm-pd: wrote \d+ frames \(of \d+ messages and \d+ connections\) to `+regexp.QuoteMeta(setup)+"\n$").MatchString(errOut) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, again, _ := run(t, nil, nil, false, "dissect", "-q", setup)
	// From the table to the totals (which count the frames read).
	tail := func(s string) string {
		return s[strings.Index(s, "Connections"):strings.LastIndex(s[:strings.LastIndex(s, " frames, ")], "\n\n")]
	}
	if tail(again) != tail(out) {
		t.Errorf("the excerpt's connections differ:\n%s\nwant\n%s", again, out)
	}
	// -Y: only the REJ's frame (none here) or the REQs'.
	reqs := filepath.Join(dir, "reqs.pcap")
	code, _, errOut = run(t, nil, nil, false, "dissect", "-Y", "msg == REQ", "-w", reqs, big)
	if code != 0 || !strings.HasPrefix(errOut, "rdmacm-pd: wrote ") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	_, sel, _ := run(t, nil, nil, false, "dissect", "-T", "json", reqs)
	if strings.Count(sel, `"message":"REQ"`) == 0 || strings.Contains(sel, `"message":"REP"`) {
		t.Errorf("-Y 'msg == REQ' -w wrote other messages:\n%s", sel)
	}
}

// TestDisplayFilter: -Y on the command line: what it shows, the note
// under the totals, and --fail-on judging only what is shown (the run's
// own findings aside).
func TestDisplayFilter(t *testing.T) {
	code, out, errOut := run(t, nil, nil, false, "dissect", "-Y", "conn == 1 and msg == REP", "../pcaps/rocev2-one-sided.pcap")
	if code != 0 || errOut != "" || strings.Count(out, "rocev2 ") != 1 || !strings.Contains(out, "rocev2 REP") ||
		strings.Contains(out, "Connections") || !strings.Contains(out, "-Y conn == 1 and msg == REP: 1 of 3 messages and 0 of 1 connection shown\n") {
		t.Errorf("exit %d %q:\n%s", code, errOut, out)
	}
	code, _, errOut = run(t, nil, nil, false, "dissect", "--fail-on", "info", "-Y", "not code", "../pcaps/rocev2-one-sided.pcap")
	if code != 0 || errOut != "" {
		t.Errorf("--fail-on with nothing selected that has a finding: exit %d %q", code, errOut)
	}
	code, _, errOut = run(t, nil, nil, false, "dissect", "--fail-on", "info", "-Y", "state", "../pcaps/rocev2-one-sided.pcap")
	if code != 1 || errOut != "rdmacm-pd: --fail-on info: 2 findings at or above it: rpcrdma-one-sided (info: connection 1); remote-invalidation-one-sided (info: connection 1)\n" {
		t.Errorf("--fail-on on the connections selected: exit %d %q", code, errOut)
	}
}

// TestBasename: --basename keeps paths out of what is pasted: the records,
// the Markdown command line, and the error lines.
func TestBasename(t *testing.T) {
	abs, _ := filepath.Abs(nfs)
	code, out, _ := run(t, nil, nil, false, "dissect", "-T", "markdown", "--basename", abs)
	if code != 0 || strings.Contains(out, filepath.Dir(abs)) || !strings.Contains(out, "rdmacm-pd dissect -T markdown --basename rocev2-nfs.pcap\n") ||
		!strings.Contains(out, "| `rocev2-nfs.pcap` |") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// A Markdown report names the inputs by their base names by default;
	// --full-paths keeps the paths.
	code, out, _ = run(t, nil, nil, false, "dissect", "-T", "markdown", abs)
	if code != 0 || strings.Contains(out, filepath.Dir(abs)) || !strings.Contains(out, "| `rocev2-nfs.pcap` |") {
		t.Errorf("markdown by default: exit %d:\n%s", code, out)
	}
	code, out, _ = run(t, nil, nil, false, "dissect", "-T", "markdown", "--full-paths", abs)
	if code != 0 || !strings.Contains(out, abs) {
		t.Errorf("--full-paths: exit %d:\n%s", code, out)
	}
	cut := cutSample(t, 50)
	code, out, errOut := run(t, nil, nil, false, "dissect", "--basename", "-T", "json", cut)
	if code != 2 || errOut != "rdmacm-pd: cut.pcap: frame 3 at offset 700: record cut short: 272 of 322 octets\n" ||
		strings.Contains(out, filepath.Dir(cut)) || !strings.Contains(out, `"file":"cut.pcap"`) {
		t.Errorf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
}

// TestAnonymizeFlag: --anonymize names the addresses in every format, in
// the -Y expression of the Markdown command line and of the note on what
// it showed too; the -w file keeps them, as without the flag.
func TestAnonymizeFlag(t *testing.T) {
	dir := t.TempDir()
	raw := func(name string, anonymize bool) []byte {
		t.Helper()
		args := []string{"dissect", "-T", "markdown", "-Y", "addr == 192.0.2.2", "-w", filepath.Join(dir, name), nfs}
		if anonymize {
			args = append([]string{"dissect", "--anonymize"}, args[1:]...)
		}
		code, out, _ := run(t, nil, nil, false, args...)
		if code != 0 || anonymize != !strings.Contains(out, "192.0.2.") {
			t.Errorf("--anonymize %v: exit %d:\n%s", anonymize, code, out)
		}
		if anonymize && (!strings.Contains(out, "rdmacm-pd dissect --anonymize -T markdown -Y 'addr == host2' -w") ||
			!strings.Contains(out, "-Y addr == host2: 3 of 3 messages") || !strings.Contains(out, "| 1 | host1 → host2 |")) {
			t.Errorf("--anonymize: the addresses are not named alike:\n%s", out)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plain, anon := raw("plain.pcapng", false), raw("anon.pcapng", true)
	if !bytes.Equal(plain, anon) || !bytes.Contains(anon, []byte{192, 0, 2, 2}) {
		t.Errorf("the -w file differs with --anonymize, or lacks the addresses")
	}
	for _, args := range [][]string{{"-V", "-x"}, {"-T", "json"}} {
		code, out, _ := run(t, nil, nil, false, append(append([]string{"dissect", "--anonymize"}, args...), nfs)...)
		if code != 0 || strings.Contains(out, "192.0.2.") || strings.Contains(out, "c0000201") || strings.Contains(out, "c0 00 02 01") ||
			!strings.Contains(out, "host1") {
			t.Errorf("%v: exit %d:\n%s", args, code, out)
		}
	}
}

// TestFailOnLine: the line that says what tripped --fail-on names each
// code once, with how often and where (the file too when there are
// several).
func TestFailOnLine(t *testing.T) {
	code, _, errOut := run(t, nil, nil, false, "dissect", "--fail-on", "info", nfs, "../pcaps/rocev2-one-sided.pcap")
	want := "rdmacm-pd: --fail-on info: 4 findings at or above it: remote-invalidation-one-sided (info, 2 times: connection 1, connection 2); " +
		"rpcrdma-absent (info: frame 2 of ../pcaps/rocev2-one-sided.pcap); rpcrdma-one-sided (info: connection 2)\n"
	if code != 1 || errOut != want {
		t.Errorf("exit %d\n got %q\nwant %q", code, errOut, want)
	}
}

// TestDecodeInput: decode reads standard input with -, and dumps as the
// tools print them.
func TestDecodeInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"plain on stdin", "f6ab0e18 01 01 03 07\n", []string{"decode", "-"}},
		{"xxd on stdin", "00000000: f6ab 0e18 0101 0307                      ........\n", []string{"decode", "-"}},
		{"hexdump -C as an argument", "", []string{"decode", "00000000  f6 ab 0e 18 01 01 03 07  |........|\n00000008\n"}},
		{"tcpdump -X as an argument", "", []string{"decode", "\t0x0000:  f6ab 0e18 0101 0307  ........"}},
		{"raw octets on stdin", "\xf6\xab\x0e\x18\x01\x01\x03\x07", []string{"decode", "-"}},
	} {
		code, out, errOut := run(t, []byte(tc.stdin), nil, false, tc.args...)
		if code != 0 || !strings.HasPrefix(out, "8 octets: RPC-over-RDMA v1 R=1 send=4096 recv=8192 @0\n") {
			t.Errorf("%s: exit %d %q\n%s", tc.name, code, errOut, out)
		}
	}
	code, _, errOut := run(t, []byte("00000000: f6ab 0e18\n00000010: 0101 0307\n"), nil, false, "decode", "-")
	if code != 2 || errOut != "rdmacm-pd: standard input: line 2: offset 0x10, but the lines before hold 0x4 octets\n" {
		t.Errorf("bad dump: exit %d %q", code, errOut)
	}
	code, _, errOut = run(t, nil, nil, false, "decode", "--fail-on", "warning", "f6ab0e18 02000303")
	if code != 1 || errOut != "rdmacm-pd: --fail-on warning: rpcrdma-version-unknown (warning)\n" {
		t.Errorf("fail-on: exit %d %q", code, errOut)
	}
}

// TestCompletion: flag values complete, through cobra's __complete (what
// the bash, zsh and fish scripts call).
func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"dissect", "--format", ""}, []string{"text\t", "json\t", "markdown\t"}},
		{[]string{"dissect", "-t", ""}, []string{"r\t", "ud\t", "e\t"}},
		{[]string{"dissect", "--fail-on", "w"}, []string{"warning\t"}},
		{[]string{"dissect", "--details", ""}, []string{"none\t", "findings\t", "all\t"}},
		{[]string{"dissect", "--color", ""}, []string{"auto\t", "always\t", "never\t"}},
		{[]string{"dissect", "-Y", ""}, []string{"addr\t", "severity\t", "conn\t"}},
		{[]string{"dissect", "-Y", "code"}, []string{"code == icrc-mismatch"}},
		{[]string{"dissect", "-i", ""}, []string{"lo\t"}},
		{[]string{"dissect", ""}, []string{"pcap", "pcapng", ":8"}},
		{[]string{"decode", "--expect-offset", ""}, []string{"36\t"}},
		{[]string{"craft", "--transport", ""}, []string{"rocev2\t", "iwarp\t"}},
		{[]string{"craft", "--flood", ""}, []string{"reqs\t", "half-mpa\t"}},
		{[]string{"craft", "--mpa-rev", ""}, []string{"1\t", "2\t"}},
	} {
		_, out, _ := run(t, nil, nil, false, append([]string{"__complete"}, tc.args...)...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: no %q in\n%s", tc.args, w, out)
			}
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if code, out, _ := run(t, nil, nil, false, "completion", shell); code != 0 || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d", shell, code)
		}
	}
}

// TestRootHelp: the root help has examples, the exit codes and the
// environment.
func TestRootHelp(t *testing.T) {
	_, out, _ := run(t, nil, nil, false, "--help")
	for _, want := range []string{"Examples:\n  rdmacm-pd craft -w nfs.pcap", "Exit codes:\n  0  success", "  1  a finding reached --fail-on",
		"Environment:\n  NO_COLOR", "CLICOLOR_FORCE", "GOMEMLIMIT", "  version          Print the version", "  wireshark-plugin Print a Wireshark Lua dissector"} {
		if !strings.Contains(out, want) {
			t.Errorf("root help lacks %q:\n%s", want, out)
		}
	}
}
