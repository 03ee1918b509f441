package cmd

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// IOStreams is where a command reads and writes, and what it knows of the
// terminal and environment. Tests build one over buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTerminal says whether Out is a terminal (for --color auto);
	// Columns is its width (0: unknown), which the text follows unless
	// --width is given.
	OutTerminal bool
	Columns     int
	// ErrTerminal says whether ErrOut is a terminal (for --progress).
	ErrTerminal bool
	// Getenv reads the environment (NO_COLOR and friends).
	Getenv func(string) string
	// Args is the command line after the program name, as given (for
	// reports); Run fills it in.
	Args []string
	// Process says the run has the process to itself (the program, not a
	// test calling Run).
	Process bool
}

// SystemStreams are the process's standard streams.
func SystemStreams() *IOStreams {
	fd := os.Stdout.Fd()
	return &IOStreams{
		In:          os.Stdin,
		Out:         os.Stdout,
		ErrOut:      os.Stderr,
		OutTerminal: isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd),
		ErrTerminal: isatty.IsTerminal(os.Stderr.Fd()) || isatty.IsCygwinTerminal(os.Stderr.Fd()),
		Columns:     terminalColumns(fd),
		Getenv:      os.Getenv,
		Process:     true,
	}
}

// ColorOut says whether what a command writes to Out is coloured with
// --color mode: the streams know the terminal and the environment that
// --color auto goes by (output.UseColor).
func (s *IOStreams) ColorOut(mode output.ColorMode) bool {
	return output.UseColor(mode, s.OutTerminal, s.Getenv)
}
