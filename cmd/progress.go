package cmd

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The progress line of a long run (--progress): on standard error, when it
// is a terminal, one line redrawn at most ten times a second with the
// octets read (and the share of the input, when its size is known), the
// rate, the frames, and the connections and findings so far; on live
// capture, the running count of frames, messages and findings. The line is
// cleared before anything else goes to standard error, and at the end.

// progressMode is --progress.
type progressMode string

const (
	progressAuto   progressMode = "auto"
	progressAlways progressMode = "always"
	progressNever  progressMode = "never"
)

// progressLine draws the line. It is the run loop's Progress, the sink
// chain's counter of records, and the writer standard error goes through.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer // the terminal
	start time.Time
	after time.Duration // auto: nothing before a run has lasted this long
	last  time.Time
	shown bool // the line is on the terminal
	drawn bool // it was drawn at least once
	at    dissect.Progress
	// Counted by the sink: records so far.
	messages, conns, findings int
	next                      record.Sink
}

// newProgress is the progress line for the streams and options, or nil
// when none is drawn: standard error is no terminal, --progress never, or
// auto with -q or CI set.
func newProgress(s *IOStreams, mode progressMode, quiet bool) *progressLine {
	switch {
	case !s.ErrTerminal || mode == progressNever:
		return nil
	case mode == progressAuto && (quiet || s.Getenv("CI") != ""):
		return nil
	}
	p := &progressLine{w: s.ErrOut, start: time.Now()}
	if mode == progressAuto {
		p.after = time.Second
	}
	return p
}

// Update takes how far the run is, and redraws at most ten times a second.
func (p *progressLine) Update(at dissect.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = at
	now := time.Now()
	if now.Sub(p.start) < p.after || p.drawn && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.draw(now)
}

// draw writes the line in place of the last.
func (p *progressLine) draw(now time.Time) {
	p.last, p.drawn, p.shown = now, true, true
	line := p.text(now)
	if len(line) > 79 {
		line = line[:79]
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
}

// text is what the line says.
func (p *progressLine) text(now time.Time) string {
	a := p.at
	secs := max(now.Sub(p.start).Seconds(), 0.001)
	if a.Live {
		return fmt.Sprintf("%d frames, %d messages, %d findings (%.0f frames/s)", a.Frames, p.messages, p.findings,
			float64(a.Frames)/secs)
	}
	read := humanOctets(a.Offset)
	if a.Size > 0 {
		read += fmt.Sprintf(" of %s (%d%%)", humanOctets(a.Size), min(100, a.Offset*100/a.Size))
	}
	return fmt.Sprintf("%s, %s/s, %d frames, %d connections, %d findings", read, humanOctets(int64(float64(a.Offset)/secs)),
		a.Frames, p.conns, p.findings)
}

// humanOctets writes octets with a binary unit.
func humanOctets(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Clear takes the line off the terminal (the end of the run, or before
// something else is written to standard error); with always, a run too
// short to have drawn it draws it once first.
func (p *progressLine) Clear(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if final && !p.drawn && p.after == 0 {
		p.draw(time.Now())
	}
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// Write writes to standard error, the line cleared first (it is drawn
// again at the next update).
func (p *progressLine) Write(b []byte) (int, error) {
	p.Clear(false)
	return p.w.Write(b)
}

// sink counts the records going by (to next) for the line.
func (p *progressLine) sink(next record.Sink) record.Sink {
	p.next = next
	return progressSink{p}
}

type progressSink struct{ p *progressLine }

func (s progressSink) count(n, findings int, conn bool) {
	s.p.mu.Lock()
	s.p.messages += n
	s.p.findings += findings
	if conn {
		s.p.conns++
	}
	s.p.mu.Unlock()
}

func (s progressSink) Message(m *record.Message) error {
	s.count(1, len(m.Findings), false)
	return s.p.next.Message(m)
}

func (s progressSink) Connection(c *record.Connection) error {
	s.count(0, len(c.Findings), true)
	return s.p.next.Connection(c)
}

func (s progressSink) Update(u *record.ConnectionUpdate) error {
	s.count(0, len(u.Findings), false)
	return s.p.next.Update(u)
}

func (s progressSink) RPC(r *record.RPC) error {
	s.count(0, len(r.Findings), false)
	return s.p.next.RPC(r)
}

func (s progressSink) Summary(sum *record.Summary) error {
	s.p.Clear(true)
	return s.p.next.Summary(sum)
}
