// Package output renders what the dissector found: a text tree for people
// (coloured on a terminal), NDJSON for programs, and a Markdown report for
// bug trackers. Renderers only read dissect's plain values.
package output

import (
	"bufio"
	"fmt"
	"io"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
)

// Format names an output format.
type Format string

// Output formats.
const (
	Text     Format = "text"
	JSON     Format = "json"
	Markdown Format = "markdown"
)

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case Text, JSON, Markdown:
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown format %q (want text, json or markdown)", s)
}

// Options choose how to render.
type Options struct {
	Format  Format
	Verbose bool // text: the full layer tree (-V)
	Hex     bool // text: a hex dump of the private data (-x)
	Color   bool // text: colour (decided by UseColor)
	// MultiFile: several inputs, so the text output names each file
	// before its first message.
	MultiFile bool
	// Live: messages and connections come from a live capture; text
	// output shows each connection as soon as its state is known.
	Live bool
	// Version and Command identify the run in a Markdown report.
	Version string
	Command string
}

// Renderer writes records as they come. Each message is written out (and
// flushed) as soon as it arrives.
type Renderer interface {
	dissect.Sink
	// Close flushes what is left.
	Close() error
}

// New returns a renderer writing to w.
func New(w io.Writer, opts Options) (Renderer, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	switch opts.Format {
	case Text, "":
		return &textRenderer{w: bw, opts: opts, p: newPalette(opts.Color)}, nil
	case JSON:
		return &jsonRenderer{w: bw}, nil
	case Markdown:
		return newMarkdown(bw, opts), nil
	}
	return nil, fmt.Errorf("unknown format %q", opts.Format)
}
