package cmd

import (
	"net/netip"
	"reflect"
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
			"--max-stream-bytes must be at least 20, --max-buffer-bytes at least that, --max-tcp-flows and --max-connections at least 1"},
	} {
		code, out, errOut := run(t, nil, nil, false, tc.args...)
		if code != ExitFailure || out != "" || errOut != "rdmacm-pd: "+tc.want+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}

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
