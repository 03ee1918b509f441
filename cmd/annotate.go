package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// annotate is the second pass of --annotate: every frame of the inputs
// again, up to the frames the first pass read, written with the comments
// the first pass collected. Nothing is decoded: the frames only stream
// through, so memory stays what the comments take.
func (ev *evidence) annotate(ctx context.Context, in *inputOptions, frames int) {
	ev.ann.SetComment(ev.sectionComment())
	if ev.err != nil || frames == 0 {
		return
	}
	srcs, err := ev.rereads(in.Files)
	if err != nil {
		ev.fail(err)
		return
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer func() {
		for _, src := range srcs {
			src.Close()
		}
	}()
	n := 0
	for _, src := range srcs {
		var names []string
		for _, in := range src.Inputs() {
			names = append(names, in.Name)
		}
		ev.ann.Source(strings.Join(names, ","))
		for n < frames {
			f, err := src.Next(ctx)
			if err != nil {
				// The inputs' failures were said by the first pass; the
				// second stops where the first did.
				if ctx.Err() != nil && !errors.Is(err, io.EOF) {
					ev.cut = true
					return
				}
				break
			}
			n++
			if err := ev.ann.WriteFrame(f); err != nil {
				ev.fail(err)
				return
			}
		}
	}
}

// sectionComment is the section header's comment of an annotated file:
// the tool's version, the command line and the totals.
func (ev *evidence) sectionComment() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n", ToolVersion(), ev.command)
	if s := ev.notes.Last; s != nil {
		b.WriteString(output.Totals(s))
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%d %s as packet comments", ev.notes.Kept, plural(ev.notes.Kept, "finding"))
	if ev.notes.Dropped > 0 {
		fmt.Fprintf(&b, "; %d more not written (the comments kept were over %d MiB)", ev.notes.Dropped, capture.MaxNoteOctets>>20)
	}
	return b.String()
}

// closeAnnotated finishes the --annotate file and says what it holds.
func (ev *evidence) closeAnnotated(s *IOStreams, name string) error {
	err := ev.ann.Close()
	if err == nil {
		err = ev.err
	}
	if err != nil {
		return fmt.Errorf("--write: %w", err)
	}
	note := fmt.Sprintf("wrote %d %s to %s, %d with a finding as a comment (%d %s)", ev.ann.Frames, plural(ev.ann.Frames, "frame"),
		name, ev.ann.Annotated, ev.ann.Comments, plural(ev.ann.Comments, "comment"))
	if ev.notes.Dropped > 0 {
		note += fmt.Sprintf("; %d more %s not written: the comments kept were over %d MiB",
			ev.notes.Dropped, plural(ev.notes.Dropped, "finding"), capture.MaxNoteOctets>>20)
	}
	if ev.cut {
		note += "; interrupted while writing: the file ends early"
	}
	fmt.Fprintf(s.ErrOut, "rdmacm-pd: %s\n", note)
	return nil
}
