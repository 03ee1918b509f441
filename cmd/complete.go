package cmd

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// Completion of flag values (bash, zsh, fish and powershell, through
// cobra's "completion" command): each flag that takes one of a few words
// offers them, file flags offer capture files, -i the interfaces.

// captureExts are the file name extensions a capture file completes with.
var captureExts = []string{"pcap", "pcapng", "cap", "gz"}

// words completes a flag with fixed words, each with a description.
func words(pairs ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, cobra.CompletionWithDesc(pairs[i], pairs[i+1]))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func captureFiles(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return captureExts, cobra.ShellCompDirectiveFilterFileExt
}

func register(c *cobra.Command, flag string, f cobra.CompletionFunc) {
	if err := c.RegisterFlagCompletionFunc(flag, f); err != nil {
		panic(err) // a flag name misspelt here: a programming error
	}
}

var (
	colorWords  = words("auto", "colour on a terminal", "always", "always colour", "never", "never colour")
	failOnWords = words("never", "exit 0 whatever is found", "info", "exit 1 on any finding",
		"warning", "exit 1 on a warning or an error", "error", "exit 1 on an error")
)

// interfaces completes -i with the interfaces live capture can use.
func interfaces(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ifs, err := capture.Interfaces()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, it := range ifs {
		state := "down"
		if it.Up {
			state = "up"
		}
		out = append(out, cobra.CompletionWithDesc(it.Name, state))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// selectFields completes -Y with the field names, and code values with the
// finding codes.
func selectFields(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if strings.HasPrefix(prefix, "code") {
		for _, c := range finding.Catalogue() {
			out = append(out, "code == "+c.Name)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	for _, f := range output.SelectFields {
		out = append(out, cobra.CompletionWithDesc(f.Name, f.Meaning))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

func completeDissect(c *cobra.Command) {
	c.ValidArgsFunction = captureFiles
	register(c, "read", captureFiles)
	register(c, "write", captureFiles)
	register(c, "format", words("text", "one line per message, for people", "json", "NDJSON, for programs",
		"markdown", "a report for a bug tracker"))
	register(c, "color", colorWords)
	register(c, "fail-on", failOnWords)
	register(c, "time-format", words("r", "seconds since the first frame", "d", "seconds since the line before",
		"a", "local time of day", "ad", "local date and time", "u", "UTC time of day", "ud", "UTC date and time",
		"e", "seconds since 1970"))
	register(c, "details", words("none", "no message details", "findings", "the messages with a finding",
		"all", "every message"))
	register(c, "display-filter", selectFields)
	register(c, "interface", interfaces)
	register(c, "roce-port", words("4791", "the RoCEv2 port (always decoded)"))
}

func completeDecode(c *cobra.Command) {
	c.ValidArgsFunction = cobra.NoFileCompletions
	register(c, "format", words("text", "for people", "json", "for programs"))
	register(c, "color", colorWords)
	register(c, "fail-on", failOnWords)
	register(c, "expect-offset", words("-1", "guess", "0", "CM private data", "36", "after an IP CM header",
		"4", "after MPA revision 2 IRD/ORD"))
}

func completeCraft(c *cobra.Command) {
	register(c, "transport", words(string(craft.RoCEv2), "RoCE version 2 (UDP)", string(craft.RoCEv1), "RoCE version 1 (EtherType 0x8915)",
		string(craft.InfiniBand), "native InfiniBand (link type 247)", string(craft.IWARP), "iWARP (TCP, MPA)"))
	register(c, "mpa-rev", words("1", "RFC 5044", "2", "RFC 6581 (IRD/ORD)"))
	register(c, "write", captureFiles)
	var kinds []string
	for _, k := range craft.FloodKinds {
		kinds = append(kinds, k, "a hostile capture")
	}
	register(c, "flood", words(kinds...))
	register(c, "no-cm", words(craft.NoCMRC, "RC after an out-of-band exchange", craft.NoCMUC, "UC", craft.NoCMUD, "UD",
		craft.NoCMDC, "Mellanox's Dynamically Connected"))
	register(c, "workload", words("64MiB", "a small workload", "1GiB", "the performance workload"))
	register(c, "rpc", words(rpcMix, "NFSv3 and NFSv4.1", craft.NFSv3, "NFSv3 only", craft.NFSv4, "NFSv4.1 only"))
	var findings []string
	for _, f := range slices.Concat(craft.DatapathFindings, craft.RPCFindings, craft.IWARPFindings) {
		findings = append(findings, f, "traffic that raises it")
	}
	register(c, "finding", words(findings...))
}
