// Package cmd wires rdmacm-pd's command line with cobra. Each command turns
// its flags into an options struct and calls a plain run function; the work
// itself is in dissect and output.
package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Main runs the program with the process's arguments and streams and
// returns its exit code.
func Main() int { return Run(os.Args[1:], SystemStreams()) }

// Run runs the program with args (without the program name) and returns the
// exit code. Errors are printed as one line on ErrOut.
func Run(args []string, s *IOStreams) int {
	if s.Args == nil {
		s.Args = args
	}
	if s.Getenv == nil {
		s.Getenv = func(string) string { return "" }
	}
	root := newRootCmd(s)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		var e *exitError
		if !errors.As(err, &e) || e.err != nil {
			printError(s, commandError(root, err))
		}
	}
	return exitCode(err)
}

// printError writes an error as "rdmacm-pd: ..." lines: one for each of
// the errors it joins (one per failed input), each kept to one line.
func printError(s *IOStreams, err error) {
	for _, line := range errorLines(err) {
		if line != "" {
			// Nothing in an error (a name from an input, or from the
			// command line) breaks the line or reaches the terminal as a
			// control character.
			fmt.Fprintf(s.ErrOut, "rdmacm-pd: %s\n", record.EscapeControl(line))
		}
	}
}

// errorLines are the messages of the errors err joins (errors.Join), or
// its own.
func errorLines(err error) []string {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		var out []string
		for _, x := range e.Unwrap() {
			out = append(out, errorLines(x)...)
		}
		return out
	case *exitError:
		if e.err != nil {
			return errorLines(e.err)
		}
	}
	return []string{err.Error()}
}

const rootLong = `rdmacm-pd finds every RDMA connection message (InfiniBand CM over RoCEv2,
RoCEv1 and native InfiniBand; iWARP MPA), locates and checks the RPC-over-RDMA
version 1 private data of RFC 8797, pairs requests with replies, and shows what
the peers agreed: the inline threshold each way and whether Send With
Invalidate may be used. It prints a terminal view, NDJSON (-T json) or a
Markdown report to paste into a bug (-T markdown).

Exit codes:
  0  success (also after Ctrl-C ends a live capture)
  1  a finding reached --fail-on (one line on standard error names it)
  2  usage error, unreadable or damaged input, or capture failure
  130 an interrupt (Ctrl-C) cut the reading of a file short: partial results

Environment:
  NO_COLOR        set and not empty: no colour (--color auto)
  CLICOLOR=0      no colour (--color auto)
  CLICOLOR_FORCE  set and not 0: colour even when piped (--color auto)
  TERM=dumb       no colour (--color auto)
  GOMEMLIMIT      the Go runtime's soft memory limit (default: what the state
                  limits need, under 100 MB with the default limits)
  RDMACM_DATAPATH_WORKER=1
                  follow RC traffic on a goroutine of its own, behind the
                  reading (experimental)`

func newRootCmd(s *IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "rdmacm-pd",
		Short: "Dissect RDMA connection setup and its RPC-over-RDMA (RFC 8797) private data",
		Long:  rootLong,
		Example: `  rdmacm-pd craft -w nfs.pcap                    # a sample capture to try it on
  rdmacm-pd dissect nfs.pcap                      # what each connection agreed
  rdmacm-pd dissect -T markdown nfs.pcap > report.md   # a report for a bug
  rdmacm-pd decode f6ab0e18 01 01 03 03           # a private-data blob from a log
  rdmacm-pd dissect --annotate -w annotated.pcapng nfs.pcap   # the findings as comments, for Wireshark
  rdmacm-pd wireshark-plugin > rpcrdma_cm.lua     # Wireshark learns RFC 8797
  rdmacm-pd version`,
		Version:       ToolVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Typos get a one-line suggestion of our own (commandError).
		DisableSuggestions: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return flagError(c, err, s.Args) })
	root.AddCommand(newDissectCmd(s), newDecodeCmd(s), newCraftCmd(s), newVersionCmd(s), newWiresharkPluginCmd(s))
	return root
}

// commandError makes cobra's errors one line: an unknown command with the
// nearest command name.
func commandError(root *cobra.Command, err error) error {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "unknown command ")
	if !ok {
		return err
	}
	word, rest, err2 := cutQuoted(rest)
	if err2 != nil {
		return err
	}
	c := root
	if path, _, err := cutQuoted(strings.TrimPrefix(rest, " for ")); err == nil && strings.Contains(path, " ") {
		if found, _, ferr := root.Find(strings.Fields(path)[1:]); ferr == nil {
			c = found
		}
	}
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	hint := ""
	if s := suggest(word, names); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	return usageError("unknown command %q%s; the commands are %s", word, hint, strings.Join(names, ", "))
}

// cutQuoted reads the Go-quoted string s starts with and returns it and
// the rest.
func cutQuoted(s string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", s, err
	}
	v, err := strconv.Unquote(q)
	return v, s[len(q):], err
}

// noArgs refuses arguments of a command that takes none, saying what it
// got.
func noArgs(name string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError("%s takes no arguments (got %q); see rdmacm-pd %s --help", name, args[0], name)
		}
		return nil
	}
}
