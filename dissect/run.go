package dissect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Sink receives what the dissector produces, in order (record.Sink).
type Sink = record.Sink

// NopSink ignores everything; embed it to take only some of the records.
type NopSink = record.NopSink

// Run dissects each named capture file in turn ("-" is standard input; see
// File) and hands every message, then every connection attempt, then the
// summary to sink. It is RunSources over the files.
func Run(ctx context.Context, names []string, stdin io.Reader, cfg Config, sink Sink) (*record.Summary, error) {
	sources := make([]Source, len(names))
	for i, name := range names {
		sources[i] = File(name, stdin, cfg.Hash)
	}
	return RunSources(ctx, sources, cfg, sink)
}

// RunSources is the run loop: it reads each source in turn to its end
// through a Decoder of its own, hands the messages to sink as they are
// decoded and to the connection Tracker, then the connection attempts of
// the source, and at the end the summary.
//
// A source that fails (a damaged file, a capture error) stops at the
// failure, after everything before it was handed on; the sources after it
// are still read. When ctx ends (Ctrl-C), the current source ends there and
// everything is flushed as at a normal end; so it is when cfg.Count frames
// were read, or when cfg.Writer fails (which ends the run). RunSources
// closes every source. It returns the summary and the errors met, one per
// failed source (ctx.Err() when ctx ended); the summary is also handed to
// sink.
func RunSources(ctx context.Context, sources []Source, cfg Config, sink Sink) (*record.Summary, error) {
	cfg.Budget = cfg.budget()
	cfg.DatapathLimits.Budget = cfg.Budget
	r := &run{cfg: cfg, sink: sink, tracker: conn.NewTracker(cfg.Live, cfg.MaxConnections), sum: record.NewSummary()}
	// The -w writer keeps frames by what the data path says of them
	// (Evidence) as it reads them: with it, the data path follows them at
	// once, as it does for a source that cannot keep its frames.
	r.pipeline = cfg.Datapath != datapath.ModeOff && pipelined() && releasers(sources) && cfg.Writer == nil && cfg.Evidence == nil
	if r.pipeline {
		cfg.Budget.Split() // before any charge (pipeline.go)
	}
	r.tracker.SetBudget(cfg.Budget)
	if cfg.ReuseRecords {
		r.tracker.Reuse()
	}
	defer func() {
		for _, src := range sources {
			src.Close()
		}
	}()
	var errs []error
	for _, src := range sources {
		if ctx.Err() != nil || r.halted {
			break
		}
		if b, ok := src.(budgeted); ok {
			b.SetBudget(r.cfg.Budget)
		}
		err := r.source(ctx, src)
		if r.err != nil {
			return r.sum, r.err
		}
		if err != nil {
			errs = append(errs, err)
			r.sum.DecodeErrors++
		}
	}
	if err := r.finish(); err != nil {
		return r.sum, err
	}
	if err := ctx.Err(); err != nil {
		return r.sum, err
	}
	return r.sum, errors.Join(errs...)
}

// shed has the largest holder of state make room when the budget is over:
// the tracker hands on attempts (finished ones first), TCP reassembly gives
// directions up. The run looks every 64 frames (keepBudget).
func (r *run) shed(p *pass, frame int) {
	b := r.cfg.Budget
	if !b.Over() {
		return
	}
	// The data path's share and the attempts' records are the loop's.
	r.syncDP()
	switch b.Largest(budget.Attempts, budget.TCP, budget.Datapath) { // those that can make room between two frames
	case budget.Attempts:
		r.connEvents(r.tracker.Shed())
	case budget.TCP:
		r.events(p.d.Shed())
	case budget.Datapath:
		if r.dp != nil {
			r.dp.Shed(frame)
		}
	}
}

// run is the state of one RunSources.
type run struct {
	cfg     Config
	sink    Sink
	tracker *conn.Tracker
	sum     *record.Summary
	err     error     // the sink's first error
	frames  int       // frames read from all sources
	halted  bool      // by cfg.Count or the writer: no source is read any more
	start   time.Time // capture time of the source's first frame with one

	dp *datapath.Follower // the current source's data path (datapath.go); nil when off
	// pipeline: the data path follows RC frames on a worker
	// (pipeline.go), w, of the current source, and the budget is split.
	pipeline bool
	w        *dpWorker
	// interrupted: an interrupt ended the reading of a file (not live),
	// after frame interruptedAt of its source.
	interrupted   bool
	interruptedAt int

	// The writer's buffer holds frames since lastFlush.
	dirty     bool
	lastFlush time.Time
}

// source reads one source to its end. It returns what stopped it early:
// the source's error, or the writer's; the sink's is in r.err.
func (r *run) source(ctx context.Context, src Source) error {
	inputs := src.Inputs()
	p := &pass{names: make([]string, len(inputs)), tallies: make([]tally, len(inputs))}
	for i, in := range inputs {
		p.names[i] = in.Name
	}
	name := strings.Join(p.names, ",")
	r.tracker.NextInput() // nothing pairs across sources
	r.start = time.Time{}
	p.d = decode.New(name, r.cfg.decoder())
	if rel, ok := src.(capture.Releaser); ok && r.cfg.Datapath != datapath.ModeOff {
		// The source keeps its frames' octets until the CRC checks and
		// the data path's worker that read them on other cores are done.
		rel.SetRelease(func() {
			p.d.Settle()
			r.drainDP()
		})
		p.d.CheckCRCAside(runtime.GOMAXPROCS(0) > 2) // on 2 cores the second one reads ahead (mpa/crc.go)
	}
	if sm, ok := src.(capture.Summed); ok && r.cfg.Datapath != datapath.ModeOff && runtime.GOMAXPROCS(0) > 1 {
		// The read-ahead computes the FPDU CRCs where it holds the octets,
		// on another core (on one, the framer's own are as cheap), once a
		// connection whose FPDUs carry them is followed.
		sm.SetSummer(decode.FPDUSums, p.d.SumsWanted)
	}
	r.startDataPath(name)
	if len(inputs) > 1 {
		p.d.SetFile(p.names[0]) // each message names the input of its frame
	}
	if r.cfg.Writer != nil {
		r.cfg.Writer.Source(name)
	}
	stopErr := r.readSource(ctx, src, p)
	src.Close()
	if r.err != nil {
		return nil
	}

	// What was decoded before the end, the failure or the interruption is
	// not lost.
	p.d.SetFile(name)
	r.events(p.d.Flush())
	r.sum.Traffic.Add(p.d.Traffic())
	r.flushDataPath(name)
	p.d.Drops(r.sum.Drop)
	r.sum.KeylessEvictions += p.d.KeylessEvictions()
	for _, n := range p.d.Notes() {
		r.sum.Note(n)
	}
	described := src.Inputs()
	for i, t := range p.tallies {
		in := &described[i]
		in.Frames, in.Skipped, in.First, in.Last = t.frames, t.skipped, t.first, t.last
		r.sum.Frames += t.frames
	}
	r.sum.Inputs = append(r.sum.Inputs, described...)
	frames := 0
	for _, t := range p.tallies {
		frames += t.frames
	}
	switch {
	case stopErr != nil:
		r.connections(fmt.Sprintf("it could not be read after frame %d", frames))
	case r.halted && !r.cfg.Live: // live, the count ends the capture as Ctrl-C does
		r.connections(fmt.Sprintf("the run stopped at the frame count limit, after frame %d", frames))
	case ctx.Err() != nil && !r.cfg.Live: // live, an interrupt is the normal end
		r.interrupted, r.interruptedAt = true, frames
		r.connections(fmt.Sprintf("the run was interrupted after frame %d", frames))
	default:
		r.connections("")
	}
	r.endDataPath()
	return stopErr
}

// pass is what the run loop keeps while it reads one source.
type pass struct {
	names   []string // of the source's inputs
	tallies []tally  // by input
	d       *decode.Decoder
}

// read is the run loop over the frames of one source: each is counted,
// written, and decoded. It returns what stopped it early: the source's
// error, or the writer's; the sink's is in r.err.
func (r *run) read(ctx context.Context, src Source, p *pass) error {
	// The tally of the input of the last frame is kept apart, on the
	// stack.
	at, cur := 0, tally{}
	// Whether the link type of the last frame can carry RDMA: a capture
	// rarely changes it.
	link, linkOK := -1, false
	// A capture file shows the frames to come, for the flow table's hints
	// (decode.Decoder.Ahead).
	ahead, _ := src.(capture.Looker)
	defer func() { p.tallies[at] = cur }()
	for {
		f, err := src.Next(ctx)
		if err != nil {
			if err == ErrIdle {
				if err := r.flushWriter(); err != nil {
					return err
				}
				continue
			}
			if err == io.EOF || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil
			}
			return err
		}
		r.frames++
		r.keepBudget(p, f)
		if r.cfg.Progress != nil && (r.frames&progressEvery == 0 || r.frames == 1) {
			r.progress(src, f)
		}
		if f.Input != at {
			p.tallies[at], at = cur, f.Input
			cur = p.tallies[at]
			p.d.SetFile(p.names[at])
			if r.dp != nil {
				r.syncDP()
				r.dp.SetFile(p.names[at])
			}
		}
		cur.see(f.Time)
		if r.start.IsZero() {
			r.start = f.Time // the source's first frame with a timestamp
		}
		if r.cfg.Writer != nil {
			if err := r.write(f); err != nil {
				return err
			}
		}
		if int(f.LinkType) != link {
			link, linkOK = int(f.LinkType), layers.SupportedLink(f.LinkType)
		}
		if linkOK {
			r.events(p.d.Decode(f))
			if ahead != nil && p.d.LooksAhead() {
				p.d.Ahead(f.LinkType, ahead.Ahead(2))
			}
		} else {
			cur.skipped++ // a link type that cannot carry RDMA
		}
		if r.sinkFailed() {
			return nil
		}
		if r.cfg.Count > 0 && r.frames >= r.cfg.Count {
			r.halted = true
			return nil
		}
		if r.dirty && time.Since(r.lastFlush) >= FlushInterval {
			if err := r.flushWriter(); err != nil {
				return err
			}
		}
	}
}

// Progress is how far a run is: the frames read in all, and of the input
// of the last frame its name, the offset of that frame in it (decompressed),
// and its size when that offset can be measured against it (0: a stream,
// or a compressed file whose decompressed size is not known).
type Progress struct {
	Frames int
	Input  string
	Offset int64
	Size   int64
	Live   bool
}

// progressEvery: the run loop says how far it is every this many frames
// (plus one).
const progressEvery = 1<<12 - 1

func (r *run) progress(src Source, f *Frame) {
	pr := Progress{Frames: r.frames, Offset: f.Offset, Live: r.cfg.Live}
	if ins := src.Inputs(); f.Input < len(ins) {
		in := &ins[f.Input]
		pr.Input = in.Name
		if !in.Compressed && in.Size > 0 {
			pr.Size = in.Size
		}
	}
	r.cfg.Progress(pr)
}

// keepBudget has the largest holders make room when the budget is over:
// looked at every 64 frames, or after a large frame (forced charges, a
// large record or -w's frames, may have taken it over). The frames counted
// are those read, whatever the source: the decisions are the same from a
// file, a pipe or a compressed input.
func (r *run) keepBudget(p *pass, f *Frame) {
	if (r.frames%64 == 0 || len(f.Data) > 1<<20) && r.cfg.Budget.Over() {
		r.shed(p, f.Index)
	}
}

// tally counts the frames of one input.
type tally struct {
	frames, skipped int
	first, last     time.Time
}

// see counts a frame captured at t. A frame without a timestamp (a pcapng
// Simple Packet Block) has the zero time: first and last are over the
// frames that have one.
func (c *tally) see(t time.Time) {
	c.frames++
	if t.IsZero() {
		return
	}
	if c.first.IsZero() || t.Before(c.first) {
		c.first = t
	}
	if t.After(c.last) {
		c.last = t
	}
}

// write hands f to the writer. A writer that fails ends the run.
func (r *run) write(f *Frame) error {
	if err := r.cfg.Writer.WriteFrame(f); err != nil {
		r.halted = true
		return fmt.Errorf("writing the capture file: %w", err)
	}
	if !r.dirty {
		r.dirty, r.lastFlush = true, time.Now()
	}
	return nil
}

// flushWriter writes out what the writer buffered, if anything.
func (r *run) flushWriter() error {
	if !r.dirty {
		return nil
	}
	r.dirty, r.lastFlush = false, time.Now()
	if err := r.cfg.Writer.Flush(); err != nil {
		r.halted = true
		return fmt.Errorf("writing the capture file: %w", err)
	}
	return nil
}

// events hands on what the decoder gave, in order: a message to the
// tracker and the sink, an RC frame and the iWARP traffic to the data path.
func (r *run) events(evs []decode.Event) {
	for i := range evs {
		if r.sinkFailed() {
			return
		}
		switch e := &evs[i]; {
		case e.RC != nil:
			r.rc(e.RC)
		case e.Message != nil:
			r.syncDP()
			r.message(e.Message)
		case e.Traffic != nil:
			r.syncDP()
			r.dp.IWARP(e.Traffic)
			r.rpcs()
		}
	}
}

// message hands a message to the tracker, then to the sink, then the
// attempts it made ready. The tracker sees it first: the connection rules
// judge it (rpcrdma-absent, a reply read as its request's upper layer) and
// give it its connection number before the sink shows it. The data path
// learns the connections it established or ended before the sink gets
// it: a reconnection on the same QPNs ends the Sends in progress of the
// connection before, whose records come first.
func (r *run) message(m *record.Message) {
	m.InputStart = r.start
	evs := r.tracker.Message(m)
	for i := range evs {
		if evs[i].Kind != conn.HandedOn && r.dp != nil {
			r.dp.Connection(&evs[i])
			r.rpcs()
		}
	}
	r.sum.Messages++
	r.sum.Count(m.Findings)
	switch {
	case r.err != nil:
	case r.waits():
		r.dp.Defer(m.Clone(), m.Frame, 1024+len(m.PrivateData)+len(m.Octets.IB)+len(m.Octets.MPA))
	default:
		r.err = r.sink.Message(m)
	}
	r.connEvents(evs)
}

// connEvents hands on the records of the attempts the tracker handed on.
func (r *run) connEvents(evs []conn.Event) {
	for i := range evs {
		if evs[i].Kind == conn.HandedOn {
			r.connection(evs[i].Conn)
		}
	}
}

func (r *run) connection(c *record.Connection) {
	if r.err != nil {
		return
	}
	if r.dp != nil {
		r.dp.Annotate(c)
	}
	r.sum.Connections[c.State]++
	r.sum.Count(c.Findings)
	if r.waits() {
		r.dp.Defer(c.Clone(), c.RequestFrame, 1024)
		return
	}
	r.err = r.sink.Connection(c)
}

// connections hands on the attempts the tracker still holds; cut says why
// the source ended early, if it did.
func (r *run) connections(cut string) {
	if cut != "" {
		r.connEvents(r.tracker.FinishCut(cut))
	} else {
		r.connEvents(r.tracker.Finish())
	}
}

// budgetNote says, when the memory budget made holders give up state
// that shows in the output, which and how much (each loss is also
// reported where it happened), or nil.
func budgetNote(s budget.Stats) *finding.Finding {
	ls := s.Losses()
	if len(ls) == 0 {
		return nil
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s %d", l.Holder, l.Count)
	}
	f := finding.New(finding.StateLimitReached,
		"the memory budget of %d MiB for all state held at once was full, and what was given up for it is reported where it was (%s)",
		s.Limit>>20, strings.Join(parts, ", "))
	return &f
}

// finish hands on the summary; it returns the sink's error.
func (r *run) finish() error {
	r.sum.Drop(record.DropAttempts, r.tracker.Dropped())
	r.sum.Drop(record.DropReconnections, r.tracker.Forgotten())
	for _, n := range r.tracker.Notes() {
		r.sum.Note(n)
	}
	if n := budgetNote(r.cfg.Budget.Stats()); n != nil {
		r.sum.Note(*n)
	}
	if r.interrupted {
		r.sum.Note(finding.New(finding.RunInterrupted, "interrupted at frame %d: the results are partial", r.interruptedAt))
	}
	if r.err == nil {
		r.err = r.sink.Summary(r.sum)
	}
	return r.err
}
