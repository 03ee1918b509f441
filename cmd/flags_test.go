package cmd

import (
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// TestFlagValues: every flag value of flags.go is checked as it is parsed,
// and its error names the flag and the value (exit 2, nothing written).
func TestFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dissect", "-T", "xml", "x.pcap"}, `--format: unknown format "xml" (want text, json or markdown)`},
		{[]string{"dissect", "--format=yaml"}, `--format: unknown format "yaml" (want text, json or markdown)`},
		{[]string{"decode", "-T", "markdown", "00"}, `--format: unknown format "markdown" (want text or json)`},
		{[]string{"dissect", "--color", "pink", "x.pcap"}, `--color: unknown mode "pink" (want auto, always or never)`},
		{[]string{"decode", "--color", "", "00"}, `--color: unknown mode "" (want auto, always or never)`},
		{[]string{"dissect", "--fail-on", "loud", "x.pcap"}, `--fail-on: unknown value "loud" (want never, info, warning or error)`},
		{[]string{"decode", "--fail-on", "Never", "00"}, `--fail-on: unknown value "Never" (want never, info, warning or error)`},
		{[]string{"dissect", "--roce-port", "0", "x.pcap"}, "--roce-port: 0 is not a UDP port"},
		{[]string{"dissect", "--roce-port", "4792,65536", "x.pcap"}, "--roce-port: 65536 is not a UDP port"},
		{[]string{"dissect", "--roce-port", "udp", "x.pcap"}, `--roce-port: "udp" is not a UDP port`},
		{[]string{"dissect", "-i", "lo", "--port", "-1"}, `--port: "-1" is not a TCP port`},
		{[]string{"dissect", "--max-buffer-bytes", "16MiB", "x.pcap"}, `--max-buffer-bytes: "16MiB" is not a whole number`},
		{[]string{"dissect", "--max-tcp-flows", "1.5", "x.pcap"}, `--max-tcp-flows: "1.5" is not a whole number`},
		{[]string{"dissect", "-i", "lo", "--host", "::ffff:1.2.3"}, `--host: "::ffff:1.2.3" is not an IP address`},
		{[]string{"dissect", "--max-buffer-bytes", "19", "x.pcap"},
			"--max-buffer-bytes: 19 is less than --max-stream-bytes (65555): the buffer of all directions must hold one"},
		{[]string{"dissect", "--max-stream-bytes", "19", "--max-buffer-bytes", "19", "x.pcap"},
			"--max-stream-bytes: 19 is too small: an MPA frame's header alone is 20 octets"},
		// pflag's own types: the same kind of sentence, no Go package.
		{[]string{"dissect", "-c", "abc", "x.pcap"}, `--count: "abc" is not a whole number`},
		{[]string{"dissect", "-c", "-5", "x.pcap"}, "--count: -5 is negative"},
		{[]string{"dissect", "--duration", "5x", "-i", "lo"}, `--duration: "5x" is not a duration (like 30s, 5m or 1h30m)`},
		{[]string{"dissect", "--verbose=maybe", "x.pcap"}, `--verbose: "maybe" is not true or false`},
		{[]string{"decode", "--expect-offset", "z", "00"}, `--expect-offset: "z" is not a whole number`},
		{[]string{"decode", "--expect-offset", "-2", "00"}, "--expect-offset: -2 (want an offset of 0 or more, or -1 to guess)"},
		{[]string{"craft", "--seed", "-1"}, `--seed: "-1" is not a whole number of 0 or more`},
		{[]string{"craft", "--split", "a,b"}, `--split: "a,b" is not a list of whole numbers (like 7,30)`},
		{[]string{"craft", "--mpa-rev", "x"}, `--mpa-rev: "x" is not a whole number`},
		// Typos: one line, with the nearest name.
		{[]string{"dissec", "x.pcap"}, `unknown command "dissec" (did you mean dissect?); the commands are completion, craft, decode, dissect, version, wireshark-plugin`},
		{[]string{"dissect", "--fail-of", "info", "x.pcap"}, "unknown flag --fail-of (did you mean --fail-on?); see rdmacm-pd dissect --help"},
		{[]string{"dissect", "-j", "x.pcap"}, "unknown flag -j; see rdmacm-pd dissect --help"},
		{[]string{"dissect", "--format"}, "--format needs a value; see rdmacm-pd dissect --help"},
		{[]string{"dissect", "-T"}, "-T needs a value; see rdmacm-pd dissect --help"},
		// Flags that do not go together, each named.
		{[]string{"dissect", "--duration", "1s", "x.pcap"}, "--duration applies to live capture (-i IFACE)"},
		{[]string{"dissect", "--port", "1", "--host", "192.0.2.1", "x.pcap"}, "--port and --host apply to live capture (-i IFACE)"},
		{[]string{"dissect", "--details", "all", "x.pcap"}, "--details applies to -T markdown, not to -T text"},
		{[]string{"dissect", "-T", "json", "--budget", "1000", "x.pcap"}, "--budget applies to -T markdown, not to -T json"},
		{[]string{"dissect", "-T", "json", "-t", "u", "x.pcap"}, "--time-format applies to the text output and the Markdown details, not to -T json"},
		{[]string{"dissect", "-t", "zz", "x.pcap"}, `--time-format: unknown time format "zz" (want a, ad, r, d, dd, u, ud or e)`},
		{[]string{"dissect", "--details", "some", "-T", "markdown", "x.pcap"}, `--details: unknown value "some" (want none, findings or all)`},
		{[]string{"dissect", "--width", "-1", "x.pcap"}, "--width: -1 is negative (0 does not wrap)"},
		{[]string{"dissect", "-w", "-", "x.pcap"}, "--write: - is standard output, which carries the report; give -w a file name"},
		{[]string{"dissect", "-w", "x.pcap", "x.pcap"}, "--write: x.pcap is also an input: it would be overwritten"},
		{[]string{"dissect", "-Y", "adr == 192.0.2.1", "x.pcap"},
			`--display-filter: unknown field "adr" (did you mean addr?); the fields are addr, src, dst, msg, code, severity, conn, state, transport, frame, file, prog, proc, op, xid, rpc_status, nak, retransmission`},
		{[]string{"dissect", "-Y", "severity >= loud", "x.pcap"}, `--display-filter: severity: "loud" is not none, info, warning or error`},
		{[]string{"dissect", "-Y", "code == icrc-mismatsh", "x.pcap"},
			`--display-filter: code: "icrc-mismatsh" is not a finding code (did you mean icrc-mismatch?); docs/findings.md lists them`},
		{[]string{"dissect", "-Y", "msg > REQ", "x.pcap"}, "--display-filter: msg >: only conn, frame, severity and retransmission are ordered; use == or !="},
		{[]string{"dissect", "-Y", "(conn == 1", "x.pcap"}, "--display-filter: missing )"},
		{[]string{"dissect", "-Y", "conn == 1 conn == 2", "x.pcap"}, `--display-filter: unexpected "conn" after a complete expression (join tests with and, or)`},
		{[]string{"dissect", "-Y", "", "x.pcap"}, "--display-filter: empty expression (try: addr == 192.0.2.1, msg == REJ, severity >= warning, conn == 2)"},
		{[]string{"dissect", "-d", "udp.port==4792,infiniband", "x.pcap"},
			"unknown flag -d (tshark's decode-as: RoCEv2 on another UDP port is --roce-port 4792; CM and MPA are found on any port); see rdmacm-pd dissect --help"},
		// craft and decode.
		{[]string{"craft", "x.pcap"}, `craft takes no arguments (got "x.pcap"); see rdmacm-pd craft --help`},
		{[]string{"craft", "--transport", "iwarp", "--mpa-rev", "1", "--split", "7,30", "-w", "x.pcap"},
			"--split: split offsets must grow, each from 1 to 27: the MPA Request is 28 octets"},
		{[]string{"craft", "--send-size", "1000", "-w", "x.pcap"}, "--send-size: 1000 is not a multiple of 1024 from 1024 to 262144"},
		{[]string{"craft", "--reply-receive-size", "524288", "-w", "x.pcap"}, "--reply-receive-size: 524288 is not a multiple of 1024 from 1024 to 262144"},
		{[]string{"craft", "--flood", "storm", "-w", "x.pcap"}, `--flood: unknown kind "storm" (want tcp-streams, half-mpa, reqs, retries, descending, rc-conns, rc-directions, iwarp-conns, orphan-replies, req-reps, big-records, large-pd, rc-orphan-packets, rc-lying-lengths, rc-reads, records-first, iwarp-hole, iwarp-lost-responder, iwarp-sequential, tcp-then-rdma, rc-chunks or combined)`},
		{[]string{"craft", "--workload", "64MB", "-w", "x.pcap"}, `--workload: "64MB" is not a size (like 64MiB or 1GiB)`},
		{[]string{"craft", "--no-cm", "rd", "-w", "x.pcap"}, `--no-cm: unknown kind "rd" (want rc, uc, ud or dc)`},
		{[]string{"craft", "--no-cm", "rc", "--transport", "ib", "-w", "x.pcap"}, "--no-cm writes RoCEv2 traffic, not --transport ib"},
		{[]string{"craft", "--oob-port", "18515", "-w", "x.pcap"}, "--oob-port applies to --no-cm only"},
		{[]string{"craft", "--workload", "64MiB", "--tcp-flows", "-1", "-w", "x.pcap"}, "--tcp-flows: -1 is negative"},
		{[]string{"decode"}, "decode needs the hex octets as arguments, or - to read them from standard input"},
		{[]string{"decode", "zz"}, `decode: "zz" is not hex ("z" at 1)`},
		{[]string{"decode", "f6a"}, "decode: odd number of hex digits (3): each octet is two"},
		{[]string{"version", "now"}, `version takes no arguments (got "now"); see rdmacm-pd version --help`},
	} {
		code, out, errOut := run(t, nil, nil, false, tc.args...)
		if code != ExitFailure || out != "" || errOut != "rdmacm-pd: "+tc.want+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
		if goPackage.MatchString(errOut) {
			t.Errorf("%s: stderr names a Go package: %q", strings.Join(tc.args, " "), errOut)
		}
	}
}

// goPackage matches what Go's own errors put in front of theirs
// ("strconv.ParseInt:", "encoding/hex:", "time:").
var goPackage = regexp.MustCompile(`\b(strconv\.|encoding/|time: |strconv:|pflag|cobra)`)

// TestFlagValuesTaken: the defaults the help shows, and the typed values
// the flags of flags.go take.
func TestFlagValuesTaken(t *testing.T) {
	c := newDissectCmd(&IOStreams{})
	for name, def := range map[string]string{"format": "text", "color": "auto", "fail-on": "never", "roce-port": "[]",
		"port": "[]", "host": "", "max-stream-bytes": "65555", "max-buffer-bytes": "16777216", "max-tcp-flows": "32768",
		"max-connections": "65536"} {
		if f := c.Flags().Lookup(name); f == nil || f.DefValue != def {
			t.Errorf("--%s: %+v, want the default %q", name, f, def)
		}
	}

	var format output.Format
	var failOn finding.Severity
	var hosts []netip.Addr
	var ports []uint16
	var flows int
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.Var(formatFlag(&format, output.Text, output.JSON), "format", "")
	f.Var(failOnFlag(&failOn), "fail-on", "")
	f.Var(hostsFlag{&hosts}, "host", "")
	f.Var(&portsFlag{&ports, "TCP"}, "port", "")
	sizeVar(f, &flows, "max-tcp-flows", 1, "")
	if format != output.Text || failOn != 0 || flows != 1 {
		t.Errorf("defaults: %q %v %d", format, failOn, flows)
	}
	err := f.Parse([]string{"--format", "json", "--fail-on", "WARNING", "--host", "::ffff:192.0.2.1", "--host", "fe80::1",
		"--port", "20049,20049", "--max-tcp-flows", "0x10"})
	if err != nil || format != output.JSON || failOn != finding.Warning || flows != 16 ||
		!reflect.DeepEqual(hosts, []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("fe80::1")}) ||
		!reflect.DeepEqual(ports, []uint16{20049}) {
		t.Errorf("%v: %q %v %v %v %d", err, format, failOn, hosts, ports, flows)
	}
}
