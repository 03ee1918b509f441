// Package cmd wires rdmacm-pd's command line with cobra. Each command turns
// its flags into an options struct and calls a plain run function; the work
// itself is in dissect and output.
package cmd

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version is the tool's version, set at build time with
// -ldflags "-X github.com/rdmacm-pd/rdmacm-pd/cmd.Version=v1.2.3".
var Version = ""

// ToolVersion is Version, or the module version from the build information.
func ToolVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

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
			printError(s, err)
		}
	}
	return exitCode(err)
}

// printError writes each line of an error as "rdmacm-pd: ...".
func printError(s *IOStreams, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		if line != "" {
			fmt.Fprintf(s.ErrOut, "rdmacm-pd: %s\n", line)
		}
	}
}

func newRootCmd(s *IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "rdmacm-pd",
		Short: "Dissect RDMA connection setup and its RPC-over-RDMA (RFC 8797) private data",
		Long: `rdmacm-pd finds every RDMA connection message (InfiniBand CM over RoCEv2,
RoCEv1 and native InfiniBand; iWARP MPA), locates and checks the RPC-over-RDMA
version 1 private data of RFC 8797, and shows what the peers agreed.`,
		Version:       ToolVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return flagError(c.CommandPath(), err) })
	root.AddCommand(newDissectCmd(s), newDecodeCmd(s), newCraftCmd(s))
	return root
}
