// Package output renders what the dissector found: a text tree for people
// (coloured on a terminal), NDJSON for programs, and a Markdown report for
// bug trackers. Renderers only read dissect's plain values.
package output

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Format names an output format.
type Format string

// Output formats.
const (
	Text     Format = "text"
	JSON     Format = "json"
	Markdown Format = "markdown"
)

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
	// Version is the tool and its build, as "rdmacm-pd version" prints
	// it; with Command, the command line, it identifies the run in a
	// Markdown report, and it is the JSON summary's "tool".
	Version string
	Command string

	// Quiet: only the connections, the findings and the totals (text);
	// no message records (JSON); no message details (Markdown).
	Quiet bool
	// Time is the text output's time format (default TimeRelative; the
	// Markdown details TimeUTCDate); Location is the time zone of the
	// local formats (default time.Local).
	Time     TimeMode
	Location *time.Location
	// Width is the text layout width: 0 for DefaultWidth, negative for
	// no wrapping.
	Width int
	// Details chooses the messages a Markdown report details (default
	// DetailsFindings); Budget bounds the report's size in characters (0:
	// DefaultBudget; negative: no bound).
	Details Details
	Budget  int
	// Memory is the run's memory budget (or nil): the details a Markdown
	// report keeps are charged to it, and those that do not fit are left
	// out, as those over Budget are.
	Memory Memory
	// Selection, when set, is the display filter the records passed
	// through: the renderers say how much it left out.
	Selection *Selection
	// Anonymize puts names in place of the addresses in every record
	// (host1, gid1, guid1; see anonymize.go), and of the IP addresses in
	// Command and the Selection's expression.
	Anonymize bool

	anon *anonymizer // New's, with Anonymize
}

// Memory is what a renderer charges the details it keeps to: the run's
// memory budget as one holder sees it (dissect/budget's Budget.For).
type Memory interface {
	Charge(n int) bool
	Release(n int)
}

// Renderer writes records as they come. Each message is written out (and
// flushed) as soon as it arrives.
type Renderer interface {
	record.Sink
	// Close flushes what is left.
	Close() error
}

// New returns a renderer writing to w.
func New(w io.Writer, opts Options) (Renderer, error) {
	if opts.Anonymize {
		opts.anon = newAnonymizer()
		r, err := newRenderer(w, opts)
		if err != nil {
			return nil, err
		}
		return anonRenderer{a: opts.anon, next: r, quiet: opts.Quiet}, nil
	}
	return newRenderer(w, opts)
}

func newRenderer(w io.Writer, opts Options) (Renderer, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	switch opts.Format {
	case Text, "":
		return newText(bw, opts), nil
	case JSON:
		return &jsonRenderer{w: bw, opts: opts}, nil
	case Markdown:
		return newMarkdown(bw, opts), nil
	}
	return nil, fmt.Errorf("unknown format %q", opts.Format)
}
