package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// flagRule is one constraint on a command's flags: when broken holds, the
// command stops with msg as a usage error. flag is the flag at fault as the
// user types it ("--count", "-i"), or the argument ("-", FILE); msg names it
// too, so that the user knows what to change.
type flagRule struct {
	flag   string
	broken bool
	msg    string
}

// fileArgs is how a rule names the inputs when no flag is at fault: the
// FILE arguments (and -r).
const fileArgs = "FILE"

// firstBroken is the usage error of the first broken rule, or nil. The
// order of the rules decides which message a command line with several
// mistakes meets, and tests and scripts know those messages: keep it.
func firstBroken(rules []flagRule) error {
	for _, r := range rules {
		if r.broken {
			return usageError("%s", r.msg)
		}
	}
	return nil
}

// checkDissect is the one place that refuses dissect's flag combinations
// and values: the first broken rule of dissectRules is the error.
func checkDissect(opts *dissectOptions, live bool) error {
	return firstBroken(dissectRules(opts, live))
}

// dissectRules lists dissect's rules in the order they are checked: the
// inputs, negative values, the flags that do not apply to what is read or
// to the format, then the state limits, and last the -Y expression.
func dissectRules(opts *dissectOptions, live bool) []flagRule {
	in, show := &opts.Input, &opts.Show
	rules := []flagRule{
		{fileArgs, len(in.Files) == 0 && !live, "no input: name capture files, - for standard input, or -i IFACE to capture live"},
		{"-i", len(in.Files) > 0 && live, "give capture files or -i interfaces, not both"},
		{"--count", in.Count < 0, fmt.Sprintf("--count: %d is negative", in.Count)},
		{"--duration", opts.Live.Duration < 0, fmt.Sprintf("--duration: %s is negative", opts.Live.Duration)},
		{"--width", show.Width < 0, fmt.Sprintf("--width: %d is negative (0 does not wrap)", show.Width)},
		{"--budget", show.Budget < 0, fmt.Sprintf("--budget: %d is negative (0 sets no limit)", show.Budget)},
		{"--write", in.Write == "-", "--write: - is standard output, which carries the report; give -w a file name"},
		liveOnlyRule(opts.Changed, live),
		{"--annotate", in.Annotate && in.Write == "", "--annotate: give -w FILE.pcapng, the capture file to write the annotated frames to"},
		{"--annotate", in.Annotate && strings.HasSuffix(strings.ToLower(in.Write), ".pcap"),
			fmt.Sprintf("--annotate: %s is a pcap file, which has no packet comments: name it .pcapng", in.Write)},
		{"--annotate", in.Annotate && live, "--annotate applies to capture files (and standard input), not to live capture"},
		{"--write", !live && in.Write != "" && slices.Contains(in.Files, in.Write),
			fmt.Sprintf("--write: %s is also an input: it would be overwritten", in.Write)},
	}
	rules = append(rules, formatRules(show.Format, opts.Changed)...)
	rules = append(rules, ipFragRules(opts.Limits.IPFrag)...)
	rules = append(rules, datapathLimitRules(opts.Limits.Datapath)...)
	// Standard input comes between the limits: that is where it always
	// was, and the order decides which of several mistakes is reported.
	rules = append(rules, flagRule{"-", count(in.Files, "-") > 1, "standard input (-) can be read only once"})
	rules = append(rules, tcpLimitRules(opts.Limits.TCP, opts.Limits.MaxConnections)...)
	var selErr error
	if opts.Changed("display-filter") {
		_, selErr = output.ParseSelection(show.Select)
	}
	rules = append(rules, flagRule{"--display-filter", selErr != nil, fmt.Sprintf("--display-filter: %v", selErr)})
	switch progressMode(show.Progress) {
	case progressAuto, progressAlways, progressNever, "":
	default:
		rules = append(rules, flagRule{"--progress", true, fmt.Sprintf("--progress: %q is not auto, always or never", show.Progress)})
	}
	for _, z := range show.Stats {
		_, err := output.ParseRPCStat(z)
		rules = append(rules, flagRule{"--statistics", err != nil, fmt.Sprint(err)})
	}
	return rules
}

// liveOnlyFlags are the flags that apply to live capture only, in the order
// liveOnlyRule names them.
var liveOnlyFlags = []string{"duration", "filter", "port", "host", "no-promisc"}

// liveOnlyRule refuses the live capture flags given with capture files: one
// rule for all of them, so that one message names every one given.
func liveOnlyRule(changed func(string) bool, live bool) flagRule {
	var given []string
	for _, name := range liveOnlyFlags {
		if changed(name) {
			given = append(given, "--"+name)
		}
	}
	switch n := len(given); {
	case n == 0:
		return flagRule{} // none given: nothing to refuse
	case n == 1:
		return flagRule{given[0], !live, fmt.Sprintf("%s applies to live capture (-i IFACE)", given[0])}
	default:
		return flagRule{given[0], !live, fmt.Sprintf("%s and %s apply to live capture (-i IFACE)",
			strings.Join(given[:n-1], ", "), given[n-1])}
	}
}

// formatRules refuse the flags that shape an output format other than the
// one chosen.
func formatRules(format output.Format, changed func(string) bool) []flagRule {
	var rules []flagRule
	for _, fl := range []struct {
		name string
		ok   bool
		what string
	}{
		{"details", format == output.Markdown, "-T markdown"},
		{"budget", format == output.Markdown, "-T markdown"},
		{"time-format", format != output.JSON, "the text output and the Markdown details"},
		{"width", format != output.JSON, "the text output and the Markdown details"},
	} {
		rules = append(rules, flagRule{"--" + fl.name, changed(fl.name) && !fl.ok,
			fmt.Sprintf("--%s applies to %s, not to -T %s", fl.name, fl.what, format)})
	}
	return rules
}

// ipFragRules are the bounds of IP fragment reassembly.
func ipFragRules(o ipfrag.Options) []flagRule {
	return []flagRule{
		{"--max-ip-fragments", o.Fragments < 1, fmt.Sprintf("--max-ip-fragments: %d (want at least 1)", o.Fragments)},
		{"--max-ip-fragment-bytes", o.Bytes < 1, fmt.Sprintf("--max-ip-fragment-bytes: %d (want at least 1)", o.Bytes)},
		{"--ip-fragment-timeout", o.Timeout <= 0, fmt.Sprintf("--ip-fragment-timeout: %s (want more than 0)", o.Timeout)},
	}
}

// tcpLimitRules are the bounds of the TCP reassembly and of the connection
// attempts tracked, the buffer of all directions checked against the
// buffer of one.
func tcpLimitRules(tcp reassembly.Options, connections int) []flagRule {
	return []flagRule{
		{"--max-stream-bytes", tcp.StreamBytes < minStreamBytes,
			fmt.Sprintf("--max-stream-bytes: %d is too small: an MPA frame's header alone is %d octets", tcp.StreamBytes, minStreamBytes)},
		{"--max-buffer-bytes", tcp.TotalBytes < tcp.StreamBytes,
			fmt.Sprintf("--max-buffer-bytes: %d is less than --max-stream-bytes (%d): the buffer of all directions must hold one",
				tcp.TotalBytes, tcp.StreamBytes)},
		{"--max-tcp-flows", tcp.Flows < 1, fmt.Sprintf("--max-tcp-flows: %d (want at least 1)", tcp.Flows)},
		{"--max-connections", connections < 1, fmt.Sprintf("--max-connections: %d (want at least 1)", connections)},
	}
}

// count is how many of list are v.
func count[T comparable](list []T, v T) int {
	n := 0
	for _, x := range list {
		if x == v {
			n++
		}
	}
	return n
}
