package dissect_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// step is what a sliceSource hands on next: a frame of an input, a pause
// (ErrIdle), or the error that ends it.
type step struct {
	frame craft.Frame
	input int
	idle  bool
	err   error
}

// sliceSource is a Source over steps.
type sliceSource struct {
	names  []string
	steps  []step
	f      dissect.Frame
	n      int
	closed int
}

func (s *sliceSource) Next(context.Context) (*dissect.Frame, error) {
	f := &s.f
	if len(s.steps) == 0 {
		return nil, io.EOF
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	switch {
	case st.idle:
		return nil, dissect.ErrIdle
	case st.err != nil:
		s.steps = nil
		return nil, st.err
	}
	s.n++
	f.Data, f.WireLen, f.Time, f.LinkType = st.frame.Data, len(st.frame.Data), st.frame.Time, st.frame.LinkType
	f.Index, f.Input = s.n, st.input
	return f, nil
}

func (s *sliceSource) Inputs() []record.Input {
	var in []record.Input
	for _, n := range s.names {
		in = append(in, record.Input{Name: n, Format: "test"})
	}
	return in
}

func (s *sliceSource) Close() error { s.closed++; return nil }

// exchangeSteps are the frames of a CM exchange, each on the input given
// for it in turn.
func exchangeSteps(t *testing.T, x craft.Exchange, inputs ...int) []step {
	t.Helper()
	fs, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	var out []step
	for i, f := range fs {
		out = append(out, step{frame: f, input: inputs[i%len(inputs)]})
	}
	return out
}

// writer counts what the run loop writes and flushes.
type writer struct{ frames, flushes int }

func (*writer) Source(string)                     {}
func (w *writer) WriteFrame(*dissect.Frame) error { w.frames++; return nil }
func (w *writer) Flush() error                    { w.flushes++; return nil }

// TestRunSources: the run loop reads each source to its end; a source that
// fails is counted and the next one still read; the inputs of one source
// pair, and each message names its input; nothing pairs across sources;
// every source is closed.
func TestRunSources(t *testing.T) {
	x := craft.Exchange{Transport: craft.RoCEv2}
	failing := &sliceSource{names: []string{"a"},
		steps: append(exchangeSteps(t, x, 0)[:2], step{err: errors.New("a: it broke")})}
	// The REQ on x, the REP and the RTU on y: one connection.
	both := &sliceSource{names: []string{"x", "y"}, steps: exchangeSteps(t, x, 0, 1, 1)}
	// The REP and RTU alone: the REQ was in another source.
	alone := &sliceSource{names: []string{"z"}, steps: exchangeSteps(t, x, 0)[1:]}
	var c collect
	sum, err := dissect.RunSources(context.Background(), []dissect.Source{failing, both, alone}, dissect.Config{}, &c)
	if err == nil || err.Error() != "a: it broke" || sum.DecodeErrors != 1 {
		t.Errorf("error %v, %d decode errors", err, sum.DecodeErrors)
	}
	var files []string
	for _, m := range c.msgs {
		files = append(files, m.File+" "+m.Name())
	}
	if want := []string{"a REQ", "a REP", "x REQ", "y REP", "y RTU", "z REP", "z RTU"}; !reflect.DeepEqual(files, want) {
		t.Errorf("messages %v, want %v", files, want)
	}
	var states []string
	for _, conn := range c.conns {
		states = append(states, conn.File+" "+string(conn.State))
	}
	// a's attempt is established by its REP, though its RTU never came.
	if want := []string{"a established", "x established"}; !reflect.DeepEqual(states, want) {
		t.Errorf("connections %v, want %v", states, want)
	}
	var inputs []string
	for _, in := range sum.Inputs {
		inputs = append(inputs, in.Name)
	}
	if !reflect.DeepEqual(inputs, []string{"a", "x", "y", "z"}) || sum.Inputs[1].Frames != 1 || sum.Inputs[2].Frames != 2 ||
		sum.Frames != 2+3+2 || !sum.Inputs[2].First.Equal(craft.DefaultStart.Add(time.Millisecond)) {
		t.Errorf("inputs %+v, %d frames", sum.Inputs, sum.Frames)
	}
	for i, s := range []*sliceSource{failing, both, alone} {
		if s.closed == 0 {
			t.Errorf("source %d not closed", i)
		}
	}
}

// TestRunCountAndWriter: the frame count limit is exact and ends the run;
// the writer receives every frame read, and is flushed when the source
// pauses.
func TestRunCountAndWriter(t *testing.T) {
	x := craft.Exchange{Transport: craft.RoCEv2}
	steps := exchangeSteps(t, x, 0)
	steps = append(steps[:1], append([]step{{idle: true}, {idle: true}}, steps[1:]...)...)
	src := &sliceSource{names: []string{"live"}, steps: steps}
	next := &sliceSource{names: []string{"never read"}, steps: exchangeSteps(t, x, 0)}
	var w writer
	var c collect
	sum, err := dissect.RunSources(context.Background(), []dissect.Source{src, next},
		dissect.Config{Count: 2, Writer: &w, Live: true}, &c)
	if err != nil || sum.Frames != 2 || len(c.msgs) != 2 || len(sum.Inputs) != 1 || next.n != 0 || next.closed == 0 {
		t.Errorf("%v: %d frames, %d messages, inputs %+v", err, sum.Frames, len(c.msgs), sum.Inputs)
	}
	// One flush at the first pause; nothing was written since at the
	// second.
	if w.frames != 2 || w.flushes != 1 {
		t.Errorf("%d written, %d flushes", w.frames, w.flushes)
	}
}
