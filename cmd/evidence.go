package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// evidence is the -w file of file inputs: the frames behind every record
// shown. The run's Plan sees the records shown; a second pass over the
// same inputs writes the frames it chose (capture.Plan says why two).
// The inputs that cannot be read twice are copied to temporary files as
// they are read, for the second pass.
type evidence struct {
	plan *capture.Plan
	file *capture.Excerpt
	// With --annotate, notes and ann take the place of plan and file:
	// every frame is written, with its findings as comments.
	notes   *capture.Notes
	ann     *capture.Annotated
	command string // the command line, for the section header's comment
	// spools are the copies of the inputs read once, by their place
	// among the inputs.
	spools map[int]*os.File
	err    error // the first of the copies' or the second pass's
	cut    bool  // an interrupt ended the second pass
}

// newEvidence creates the -w file at path (so that a name that cannot be
// written fails before the run) and the Plan in front of next.
func newEvidence(path string, basename bool, next record.Sink) (*evidence, error) {
	plan := capture.NewPlan(next)
	opts := capture.ExcerptOptions{Probe: new(decode.Probe), Plan: plan}
	if basename {
		opts.Name = baseName
	}
	file, err := capture.CreateExcerpt(path, opts)
	if err != nil {
		return nil, failure(fmt.Errorf("--write: %w", err))
	}
	return &evidence{plan: plan, file: file}, nil
}

// newAnnotation creates the --annotate -w file at path, and the Notes in
// front of next.
func newAnnotation(path string, basename bool, next record.Sink) (*evidence, error) {
	notes := capture.NewNotes(next)
	var rename func(string) string
	if basename {
		rename = baseName
	}
	ann, err := capture.CreateAnnotated(path, notes, rename)
	if err != nil {
		return nil, failure(fmt.Errorf("--write: %w", err))
	}
	return &evidence{notes: notes, ann: ann}, nil
}

// head is the sink the records shown go to first.
func (ev *evidence) head() record.Sink {
	if ev.notes != nil {
		return ev.notes
	}
	return ev.plan
}

// sources are the run's inputs. An input a -w run cannot read twice
// (standard input, a pipe, a FIFO, a device) is copied to a temporary
// file as it is read, for the second pass.
func (ev *evidence) sources(files []string, stdin io.Reader, hash bool) []dissect.Source {
	srcs := make([]dissect.Source, len(files))
	for i, name := range files {
		srcs[i] = dissect.File(name, stdin, hash)
		if ev == nil || !onceOnly(name) {
			continue
		}
		f, err := os.CreateTemp("", "rdmacm-pd-input-*")
		if err != nil {
			ev.fail(fmt.Errorf("keeping %s for the second pass: %w", name, err))
			continue
		}
		os.Remove(f.Name()) // the open file stays readable, and nothing is left behind
		if ev.spools == nil {
			ev.spools = map[int]*os.File{}
		}
		ev.spools[i] = f
		srcs[i] = capture.FileTee(name, stdin, hash, spoolWriter{ev, f, name})
	}
	return srcs
}

// onceOnly reports whether an input can be read only once: standard
// input, or a name that is no regular file (one that cannot be looked at
// fails in the run, which says so).
func onceOnly(name string) bool {
	if name == "-" {
		return true
	}
	fi, err := os.Stat(name)
	return err == nil && !fi.Mode().IsRegular()
}

// fail keeps the first failure of the -w file's making.
func (ev *evidence) fail(err error) {
	if ev.err == nil {
		ev.err = err
	}
}

// spoolWriter copies an input to its spool; a failure to is said once the
// run is over, and never stops the run.
type spoolWriter struct {
	ev   *evidence
	f    *os.File
	name string
}

func (w spoolWriter) Write(b []byte) (int, error) {
	if w.ev.err == nil {
		if _, err := w.f.Write(b); err != nil {
			w.ev.fail(fmt.Errorf("keeping %s for the second pass: %w", w.name, err))
		}
	}
	return len(b), nil
}

// rereads are the second pass's inputs: the copies of those read once.
func (ev *evidence) rereads(files []string) ([]dissect.Source, error) {
	srcs := make([]dissect.Source, len(files))
	for i, name := range files {
		f := ev.spools[i]
		if f == nil {
			srcs[i] = dissect.File(name, nil, false)
			continue
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("reading %s again: %w", name, err)
		}
		srcs[i] = capture.Reread(name, f)
	}
	return srcs, nil
}

// write is the second pass: the inputs again, up to the frames the first
// read (it may have been cut), with the Excerpt told the frames of each
// connection's traffic. Its budget is its own, and the Excerpt charges
// none: the data path must keep what it kept in the first pass.
func (ev *evidence) write(ctx context.Context, in *inputOptions, cfg dissect.Config, frames int) {
	if ev.ann != nil {
		ev.annotate(ctx, in, frames)
		return
	}
	if ev.err != nil || frames == 0 || ev.plan.Empty() {
		return
	}
	srcs, err := ev.rereads(in.Files)
	if err != nil {
		ev.fail(err)
		return
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg.Writer, cfg.Evidence, cfg.Hash = ev.file, ev.file.Evidence, false
	cfg.Budget = budget.New(cfg.MemoryLimit())
	if cfg.Count == 0 || frames < cfg.Count {
		cfg.Count = frames
	}
	// The inputs' failures were said by the first pass; the second stops
	// where the first did.
	dissect.RunSources(ctx, srcs, cfg, ev.file)
	ev.cut = ctx.Err() != nil
}

// close finishes the -w file and says on standard error what it holds.
func (ev *evidence) close(s *IOStreams, name string) error {
	for _, f := range ev.spools {
		f.Close()
	}
	if ev.ann != nil {
		return ev.closeAnnotated(s, name)
	}
	st, err := ev.file.Close()
	if err == nil {
		err = ev.err
	}
	if err != nil {
		return fmt.Errorf("--write: %w", err)
	}
	fmt.Fprintf(s.ErrOut, "rdmacm-pd: %s\n", ev.note(st, name))
	return nil
}

// note says what the file holds: the frames, and the records shown whose
// evidence they are.
func (ev *evidence) note(st capture.ExcerptStats, name string) string {
	n := ev.plan.Shown
	var of []string
	if n.Messages > 0 || n.Connections == 0 && n.RPCs == 0 {
		of = append(of, fmt.Sprintf("%d %s", n.Messages, plural(n.Messages, "message")))
	}
	if n.Connections > 0 {
		of = append(of, fmt.Sprintf("%d %s", n.Connections, plural(n.Connections, "connection")))
	}
	if n.RPCs > 0 {
		of = append(of, fmt.Sprintf("%d RPC-over-RDMA %s", n.RPCs, plural(n.RPCs, "message")))
	}
	list := of[0]
	if len(of) > 1 {
		list = strings.Join(of[:len(of)-1], ", ") + " and " + of[len(of)-1]
	}
	note := fmt.Sprintf("wrote %d %s (of %s) to %s", st.Frames, plural(st.Frames, "frame"), list, name)
	if st.Lost > 0 {
		note += fmt.Sprintf("; %d earlier TCP %s of MPA frames or FPDUs had left the %d MiB window and are not in it",
			st.Lost, plural(st.Lost, "segment"), capture.DefaultExcerptWindow>>20)
	}
	if ev.plan.Unplanned > 0 {
		note += fmt.Sprintf("; the frames of %d %s shown are not in it (the plan of what to write was full)",
			ev.plan.Unplanned, plural(ev.plan.Unplanned, "record"))
	}
	if ev.cut {
		note += "; interrupted while writing: the file ends early"
	}
	return note
}
