package cmd

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"
)

// TestCraftFlagErrors: sizes of 0, --hex with -w or --no-rpcrdma, and
// --mpa-rev with a transport other than iwarp are usage errors (exit 2)
// that write nothing.
func TestCraftFlagErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "h.pcap")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hex", "--send-size", "0"}, "--send-size: 0 is not a multiple of 1024 from 1024 to 262144"},
		{[]string{"--hex", "--receive-size", "0"}, "--receive-size: 0 is not a multiple of 1024 from 1024 to 262144"},
		{[]string{"--reply-send-size", "0", "-w", out}, "--reply-send-size: 0 is not a multiple of 1024 from 1024 to 262144"},
		{[]string{"--reply-receive-size", "0", "-w", out}, "--reply-receive-size: 0 is not a multiple of 1024 from 1024 to 262144"},
		{[]string{"--hex", "-w", out}, "--hex prints the initiator's 8 octets and writes no capture: give --hex or -w, not both"},
		{[]string{"--hex", "--no-rpcrdma"}, "--hex with --no-rpcrdma: the initiator sends no RFC 8797 message, so there is nothing to print"},
		{[]string{"--transport", "rocev2", "--mpa-rev", "1", "-w", out}, "--mpa-rev applies to --transport iwarp only"},
		{[]string{"--transport", "ib", "--mpa-rev", "2", "-w", out}, "--mpa-rev applies to --transport iwarp only"},
		{[]string{"--rpc", "nfs5", "-w", out}, `--rpc: unknown NFS version "nfs5" (want mix, nfs3 or nfs4)`},
		{[]string{"--workload", "1MiB", "--rpc", "nfs3", "-w", out}, "--rpc applies to --traffic, and to the workloads --nfs and --iwarp-conns"},
		{[]string{"--flood", "reqs", "--rpc", "nfs4", "-w", out}, "--rpc applies to --traffic, and to the workloads --nfs and --iwarp-conns"},
		{[]string{"--workload", "1MiB", "--nfs", "--callback", "-w", out}, "--callback applies to --traffic only"},
		{[]string{"--workload", "1MiB", "--nfs", "--long", "-w", out}, "--long applies to --traffic only"},
		{[]string{"--flood", "reqs", "--chunk-violation", "write-past-end", "-w", out}, "--chunk-violation applies to --traffic only"},
		{[]string{"--transport", "iwarp", "--long", "-w", out}, "--long is built on the InfiniBand family only, not --transport iwarp"},
		{[]string{"--transport", "iwarp", "--chunk-violation", "read-outside", "-w", out}, "--chunk-violation is built on the InfiniBand family only, not --transport iwarp"},
		{[]string{"--chunk-violation", "write-twice", "-w", out}, `craft: no chunk violation "write-twice" (want one of write-past-end, write-unknown-handle, read-outside, reply-claims-more, reply-unknown-handle)`},
		{[]string{"--ulp", "nvme-rdma", "--callback", "-w", out}, "--traffic, --finding, --rpc and --callback make RPC-over-RDMA traffic, not --ulp nvme-rdma"},
		{[]string{"--rpc", "nfs3", "--reject", "-w", out}, "--traffic and --finding need an accepted connection, not --reject"},
	} {
		code, stdout, errOut := run(t, nil, nil, false, append([]string{"craft"}, tc.args...)...)
		if code != 2 || stdout != "" || errOut != "rdmacm-pd: "+tc.want+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, %q", tc.args, code, stdout, errOut, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v wrote %s", tc.args, out)
		}
	}
	if code, _, errOut := run(t, nil, nil, false, "craft", "--transport", "iwarp", "--mpa-rev", "1", "-w", out); code != 0 {
		t.Errorf("iwarp --mpa-rev 1: exit %d %q", code, errOut)
	}
}

// TestReadOrder: -r files and FILE arguments are read in command-line order.
func TestReadOrder(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(nfs)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := filepath.Join(dir, "a.pcap"), filepath.Join(dir, "b.pcap"), filepath.Join(dir, "c.pcap")
	for _, n := range []string{a, b, c} {
		if err := os.WriteFile(n, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{b, "-r", a}, []string{b, a}},
		{[]string{"-r", a, b}, []string{a, b}},
		{[]string{c, "-r", b, a, "--read", c}, []string{c, b, a, c}},
	} {
		code, out, errOut := run(t, nil, nil, false, append([]string{"dissect"}, tc.args...)...)
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if f, ok := strings.CutPrefix(l, "== "); ok {
				got = append(got, f)
			}
		}
		if code != 0 || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v: exit %d (%s), files in order %v, want %v", tc.args, code, errOut, got, tc.want)
		}
	}
}

// TestTextNoMessages: with no message the text output is the totals line,
// without a blank line before it, and what the capture held instead.
func TestTextNoMessages(t *testing.T) {
	raw, err := os.ReadFile(nfs)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(raw[20:], 105) // a link type that carries no RDMA
	path := filepath.Join(t.TempDir(), "other.pcap")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, nil, nil, false, "dissect", path)
	if want := "3 frames, 0 messages, 0 connections, 0 findings\n\n" +
		"No connection message in 3 frames. The capture holds 3 frames of link types it\n" +
		"cannot carry RDMA on (802.11, 105), passed over. No RDMA traffic was captured:\n" +
		"capture on the interface that carries it (hardware RoCE NICs bypass the kernel:\n" +
		"see docs/capture.md); RoCEv2 on another UDP port than 4791 needs --roce-port.\n\n" +
		"Verdict: no connection attempt was found.\n"; code != 0 || out != want {
		t.Errorf("exit %d, out %q, want %q", code, out, want)
	}
}

// TestCraftNoCM: craft --no-cm writes traffic set up without CM, and
// dissect says what it was: perftest's RC traffic connected over TCP on
// port 18515, DC traffic that never uses CM.
func TestCraftNoCM(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-cm", "rc", "--oob-port", "18515"}, "14 frames, 0 messages, 0 connections, 0 findings,\n" +
			"  6 RC frames without their connection setup\n\n" +
			"No connection message in 14 frames. The capture holds 6 RoCEv2 RDMA data frames\n" +
			"(packets other than CM MADs) and 8 TCP segments, none of them starting an MPA\n" +
			"Request or Reply. The RC traffic (6 frames) was connected out of band over TCP\n" +
			"(port 18515): no CM, so no private data.\n\n" +
			"Verdict: no connection attempt was found.\n"},
		{[]string{"--no-cm", "dc"}, "6 frames, 0 messages, 0 connections, 0 findings\n\n" +
			"No connection message in 6 frames. The capture holds 6 RoCEv2 RDMA data frames\n" +
			"(packets other than CM MADs). The DC traffic (6 frames) never uses CM: no\n" +
			"private data to check.\n\n" +
			"Verdict: no connection attempt was found.\n"},
	} {
		path := filepath.Join(dir, tc.args[1]+".pcap")
		if code, _, errOut := run(t, nil, nil, false, append([]string{"craft", "-w", path}, tc.args...)...); code != 0 {
			t.Fatalf("craft %v: %s", tc.args, errOut)
		}
		if code, out, _ := run(t, nil, nil, false, "dissect", "-q", path); code != 0 || out != tc.want {
			t.Errorf("%v: exit %d, out %q, want %q", tc.args, code, out, tc.want)
		}
	}
}

// TestDecodeWording: one octet is "1 octet", and the absent message speaks
// of the private data once.
func TestDecodeWording(t *testing.T) {
	code, out, _ := run(t, nil, nil, false, "decode", "--color", "never", "00")
	want := "1 octet: no RPC-over-RDMA data\n" +
		"       info    rpcrdma-absent: no usable RPC-over-RDMA message in the private\n" +
		"               data: this peer counts as Send Size 1024, Receive Size 1024, R=0\n" +
		"               [RFC 8797, section 5.1; RFC 8166, section 3.3.3]\n"
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("exit %d, out %q, want it to start with %q", code, out, want)
	}
}

// TestNoTimestamp: a pcapng Simple Packet Block has no timestamp: its
// message shows "-" (text) and null (JSON), and the input's first and last
// times are over the frames that have one.
func TestNoTimestamp(t *testing.T) {
	ng, err := os.ReadFile("../pcaps/rocev2-ipv6.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	// The sample is SHB (at 0), IDB, then three EPBs; the second EPB (at
	// 472, 376 octets: 28 of header, 342 of packet, 2 of padding, 4 of
	// trailer) becomes an SPB carrying the same packet.
	const at, epbLen, caplen = 472, 376, 342
	epb := ng[at : at+epbLen]
	spb := make([]byte, 0, 16+caplen+2)
	le := binary.LittleEndian
	spbLen := uint32(12 + caplen + 2 + 4)
	spb = le.AppendUint32(spb, 3)
	spb = le.AppendUint32(spb, spbLen)
	spb = le.AppendUint32(spb, caplen)
	spb = append(spb, epb[28:28+caplen+2]...)
	spb = le.AppendUint32(spb, spbLen)
	file := append(append(append([]byte(nil), ng[:at]...), spb...), ng[at+epbLen:]...)
	path := filepath.Join(t.TempDir(), "spb.pcapng")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, nil, nil, false, "dissect", path)
	if code != 0 || !strings.Contains(out, "\n    2          -  rocev2 REP      2001:db8::2 → 2001:db8::1\n") {
		t.Errorf("text: exit %d (%s)\n%s", code, errOut, out)
	}
	code, out, errOut = run(t, nil, nil, false, "dissect", "-T", "json", path)
	if code != 0 || !strings.Contains(out, `"frame":2,"time":null,`) ||
		!strings.Contains(out, `"first":"2026-01-01T00:00:00.000000000Z","last":"2026-01-01T00:00:00.002000000Z"`) {
		t.Errorf("json: exit %d (%s)\n%s", code, errOut, out)
	}
}

// TestInterruptedFailOn: Ctrl-C on an offline run writes what was read,
// says the results are partial, and exits 130 whatever --fail-on says (its
// line still names what tripped it).
func TestInterruptedFailOn(t *testing.T) {
	capture, err := os.ReadFile("../pcaps/rocev2-one-sided.pcap") // an info finding
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		failOn string
		code   int
	}{{"info", ExitInterrupted}, {"warning", ExitInterrupted}} {
		cmd := exec.Command(rdmacmBinary(t), "dissect", "--fail-on", tc.failOn, "-")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stdin.Write(capture) // the pipe stays open: the run waits for more
		sc := bufio.NewScanner(stdout)
		for sc.Scan() && !strings.Contains(sc.Text(), "rpcrdma-absent") {
		}
		cmd.Process.Signal(syscall.SIGINT)
		io.Copy(io.Discard, stdout) // the interrupt alone ends the run: standard input stays open
		cmd.Wait()
		stdin.Close()
		if got := cmd.ProcessState.ExitCode(); got != tc.code {
			t.Errorf("--fail-on %s: exit %d, want %d", tc.failOn, got, tc.code)
		}
	}
}

// TestRoCEPortsOnce: a port given twice counts once (towards the filter's
// limit of 32 too).
func TestRoCEPortsOnce(t *testing.T) {
	var got []uint16
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.Var(&portsFlag{&got, "UDP"}, "roce-port", "")
	err := f.Parse([]string{"--roce-port", "4792", "--roce-port", "4792,4793", "--roce-port=4792"})
	if err != nil || len(got) != 2 || got[0] != 4792 || got[1] != 4793 {
		t.Errorf("--roce-port: %v, %v", got, err)
	}
}

// TestTimestampOutOfRange: a pcapng timestamp beyond the year 9999 is a
// timestamp-out-of-range warning on its frame's message and on the run; the
// frame has no time (null in JSON, not a wrapped value) and the input's
// first and last times are over the other frames.
func TestTimestampOutOfRange(t *testing.T) {
	ng, err := os.ReadFile("../pcaps/rocev2-ipv6.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	// The sample's interface counts nanoseconds (if_tsresol 9), which
	// cannot go past 2554. A second interface (an IDB of 20 octets after the
	// first, at 96) counts microseconds, the default; the second EPB (at
	// 472, as in TestNoTimestamp, now 492) moves to it with the largest
	// timestamp: 2^64-1 microseconds, in the year 586524.
	const idbEnd, at = 96, 472 + 20
	le := binary.LittleEndian
	idb := le.AppendUint32(nil, 1)
	idb = le.AppendUint32(idb, 20)
	idb = le.AppendUint16(idb, 1) // Ethernet
	idb = le.AppendUint16(idb, 0)
	idb = le.AppendUint32(idb, 0) // no snap length
	idb = le.AppendUint32(idb, 20)
	file := append(append(append([]byte(nil), ng[:idbEnd]...), idb...), ng[idbEnd:]...)
	le.PutUint32(file[at+8:], 1)
	le.PutUint32(file[at+12:], 0xffffffff)
	le.PutUint32(file[at+16:], 0xffffffff)
	path := filepath.Join(t.TempDir(), "far.pcapng")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, nil, nil, false, "dissect", "-T", "json", path)
	var rep, sum string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, `"frame":2,`) && strings.Contains(l, `"record":"message"`):
			rep = l
		case strings.Contains(l, `"record":"summary"`):
			sum = l
		}
	}
	if code != 0 || !strings.Contains(rep, `"frame":2,"time":null,`) ||
		!strings.Contains(rep, `{"code":"timestamp-out-of-range","severity":"warning"`) ||
		!strings.Contains(sum, `"first":"2026-01-01T00:00:00.000000000Z","last":"2026-01-01T00:00:00.002000000Z"`) ||
		!strings.Contains(sum, "1 capture record has a timestamp outside the years 1970 to 9999 (first at frame 2)") {
		t.Errorf("json: exit %d (%s)\nframe 2: %s\nsummary: %s", code, errOut, rep, sum)
	}
	code, out, _ = run(t, nil, nil, false, "dissect", "--color", "never", "--fail-on", "warning", path)
	if code != 1 || !strings.Contains(out, "\n    2          -  rocev2 REP ") || !strings.Contains(out, "timestamp-out-of-range") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

// TestControlCharactersInNames: a file name with a newline and escape
// sequences is written escaped in an error (which stays one line), in the
// text output and in the Markdown report: no control character of it
// reaches the terminal.
func TestControlCharactersInNames(t *testing.T) {
	sample, err := os.ReadFile(nfs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hostile := filepath.Join(dir, "two\nlines \x1b[2J\x1b]0;title\x07\u009b31m.pcap")
	if err := os.WriteFile(hostile, sample, 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "bad\n\x1b[31mred.pcap")
	if err := os.WriteFile(damaged, []byte("not a capture file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\x07\u009b") }
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"text", []string{"dissect", "--color", "never", hostile, damaged}},
		{"quiet", []string{"dissect", "-q", "--color", "never", hostile, damaged}},
		{"markdown", []string{"dissect", "-T", "markdown", hostile, damaged}},
		{"basename", []string{"dissect", "--basename", "--color", "never", hostile, damaged}},
	} {
		code, out, errOut := run(t, nil, nil, false, tc.args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errOut, `bad\n\x1b[31mred.pcap: `) || raw(errOut) {
			t.Errorf("%s: exit %d, error %q", tc.name, code, errOut)
		}
		if raw(out) || !strings.Contains(out, `two\nlines \x1b[2J\x1b]0;title\x07\u009b31m.pcap`) {
			t.Errorf("%s: output %q", tc.name, out)
		}
	}
}

// TestErrorLines: each failed input is one line of the error, whatever its
// name holds; a name given for --write with a newline stays on one line
// too.
func TestErrorLines(t *testing.T) {
	dir := t.TempDir()
	var bad []string
	for _, name := range []string{"one\n.pcap", "two\r\n\x1b[K.pcap"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("no capture here"), 0o644); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, p)
	}
	code, _, errOut := run(t, nil, nil, false, append([]string{"dissect", "--basename"}, bad...)...)
	want := "rdmacm-pd: one\\n.pcap: offset 0: not a capture file (pcap, pcapng, gzip, zstd or lz4): starts with 6e 6f 20 63\n" +
		"rdmacm-pd: two\\r\\n\\x1b[K.pcap: offset 0: not a capture file (pcap, pcapng, gzip, zstd or lz4): starts with 6e 6f 20 63\n"
	if code != 2 || errOut != want {
		t.Errorf("exit %d, errors %q, want %q", code, errOut, want)
	}
	code, _, errOut = run(t, nil, nil, false, "dissect", "-w", filepath.Join(dir, "no\nsuch", "x.pcapng"), nfs)
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `no\nsuch`) {
		t.Errorf("--write: exit %d, error %q", code, errOut)
	}
}
