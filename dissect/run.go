package dissect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/pcapfile"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Sink receives what the dissector produces, in order: messages as they are
// decoded, connection attempts (at the end, or as soon as their state is
// known in live mode), and last the summary.
type Sink interface {
	Message(*record.Message) error
	Connection(*record.Connection) error
	Summary(*record.Summary) error
}

// NopSink ignores everything; embed it to take only some of the records.
type NopSink struct{}

func (NopSink) Message(*record.Message) error       { return nil }
func (NopSink) Connection(*record.Connection) error { return nil }
func (NopSink) Summary(*record.Summary) error       { return nil }

// InputError is a problem reading one input; it names the input.
type InputError struct {
	Name string
	Err  error
}

func (e *InputError) Error() string {
	name := e.Name
	if name == "-" {
		name = "standard input"
	}
	return name + ": " + e.Err.Error()
}

func (e *InputError) Unwrap() error { return e.Err }

// run is the state of one Run.
type run struct {
	ctx     context.Context
	cfg     Config
	sink    Sink
	tracker *conn.Tracker
	sum     *record.Summary
	err     error // the sink's first error
}

func (r *run) message(m *record.Message) {
	if r.err != nil {
		return
	}
	r.sum.Messages++
	r.sum.Count(m.Findings)
	if r.err = r.sink.Message(m); r.err != nil {
		return
	}
	for _, c := range r.tracker.Message(m) {
		r.connection(c)
	}
}

func (r *run) connection(c *record.Connection) {
	if r.err != nil {
		return
	}
	r.sum.Connections[c.State]++
	r.sum.Count(c.Findings)
	r.err = r.sink.Connection(c)
}

// Run dissects each named capture file in turn ("-" is standard input) and
// hands every message, then every connection attempt, then the summary to
// sink. A damaged input stops at the damage, after everything before it was
// handed on; the others are still read. When ctx is cancelled (Ctrl-C), the
// current input ends there and everything is flushed as at a normal end.
// Run returns the summary and the errors met, one per damaged input; the
// summary is also handed to sink.
func Run(ctx context.Context, names []string, stdin io.Reader, cfg Config, sink Sink) (*record.Summary, error) {
	r := &run{ctx: ctx, cfg: cfg, sink: sink, tracker: conn.NewTracker(cfg.Live, cfg.MaxConnections),
		sum: record.NewSummary()}
	var errs []error
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		r.tracker.NextInput()
		in, err := r.input(name, stdin)
		r.connections() // nothing pairs across inputs
		r.sum.Inputs = append(r.sum.Inputs, in)
		r.sum.Frames += in.Frames
		if err != nil {
			errs = append(errs, err)
			r.sum.DecodeErrors++
		}
		if r.err != nil {
			return r.sum, r.err
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

// maxLinkType bounds the LINKTYPE values: the registry has fewer than 300,
// and the USER values are 147 to 162.
const maxLinkType = 512

// finish hands on the connection attempts still open and the summary; it
// returns the sink's error.
func (r *run) finish() error {
	r.connections()
	r.sum.StateDrops += r.tracker.Dropped() + r.tracker.Forgotten()
	for _, f := range r.tracker.Notes() {
		r.sum.Note(f)
	}
	if r.err == nil {
		r.err = r.sink.Summary(r.sum)
	}
	return r.err
}

// connections hands on the attempts the tracker still holds.
func (r *run) connections() {
	for _, c := range r.tracker.Finish() {
		r.connection(c)
	}
}

// input reads one capture file through a Decoder.
func (r *run) input(name string, stdin io.Reader) (in record.Input, err error) {
	in = record.Input{Name: name}
	src, size, hashed, closeSrc, err := openInput(r.ctx, name, stdin, r.cfg.Hash)
	if err != nil {
		in.Err = err
		return in, &InputError{Name: name, Err: err}
	}
	defer closeSrc()
	in.Size = size
	// A stream's size is what was read of it, whatever the way out.
	defer func() {
		if cr, ok := src.(*countingReader); ok {
			in.Size = cr.n
		}
	}()
	rd, err := pcapfile.NewReader(src, pcapfile.Options{Readahead: true})
	if err != nil {
		in.Err = err
		in.SHA256 = hashed()
		return in, &InputError{Name: name, Err: err}
	}
	defer rd.Close() // stops the read-ahead goroutine
	in.Format = rd.Format()
	in.Compressed = rd.Compressed()

	d := decode.New(name, r.cfg.decoder(), r.message)
	var fr decode.Frame
	var readErr error
	for {
		if in.Frames&1023 == 0 && r.ctx.Err() != nil {
			break
		}
		pf, err := rd.Next()
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		in.Frames++
		// A frame without a timestamp (pcapng Simple Packet Block) has the
		// zero time: First and Last are over the frames that have one.
		if !pf.Time.IsZero() {
			if in.First.IsZero() || pf.Time.Before(in.First) {
				in.First = pf.Time
			}
			if pf.Time.After(in.Last) {
				in.Last = pf.Time
			}
		}
		if !decode.SupportedLink(pf.LinkType) {
			if pf.LinkType >= maxLinkType {
				// Not a LINKTYPE value at all: a damaged header, not a
				// capture of something else.
				readErr = &pcapfile.Error{Offset: pf.Offset, Frame: pf.Index, Msg: fmt.Sprintf(
					"link type %d is not a LINKTYPE value: the file (or interface) header is damaged", pf.LinkType)}
				in.Frames--
				break
			}
			in.Skipped++
			continue
		}
		fr = decode.Frame{Data: pf.Data, WireLen: pf.WireLen, Time: pf.Time, LinkType: pf.LinkType, Index: pf.Index}
		d.Decode(&fr)
		if r.err != nil {
			return in, r.err
		}
	}
	// What was decoded before the end, the damage or the interruption is
	// not lost.
	d.Flush()
	r.sum.StateDrops += d.Dropped()
	r.sum.KeylessEvictions += d.KeylessEvictions()
	for _, f := range d.Notes() {
		r.sum.Note(f)
	}
	in.LinkTypes = rd.LinkTypes()
	in.SHA256 = hashed()
	if readErr != nil {
		in.Err = readErr
		return in, &InputError{Name: name, Err: readErr}
	}
	return in, nil
}

// openInput opens a capture file (or standard input) and starts its SHA-256
// when asked: for a regular file in a goroutine of its own that reads the
// file a second time (from the page cache), so that it runs on another core;
// for a stream through the reader itself. hashed waits for the result.
func openInput(ctx context.Context, name string, stdin io.Reader, hash bool) (src io.Reader, size int64, hashed func() string, closeSrc func(), err error) {
	none := func() string { return "" }
	if name == "-" {
		if !hash {
			return &countingReader{r: stdin}, -1, none, func() {}, nil
		}
		h := sha256.New()
		return &countingReader{r: io.TeeReader(stdin, h)}, -1, func() string { return hex.EncodeToString(h.Sum(nil)) }, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name is said once, by InputError
		}
		return nil, 0, nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, 0, nil, nil, errors.New("is a directory")
	}
	size = st.Size()
	if !st.Mode().IsRegular() {
		if !hash {
			return &countingReader{r: f}, -1, none, func() { f.Close() }, nil
		}
		h := sha256.New()
		return &countingReader{r: io.TeeReader(f, h)}, -1, func() string { return hex.EncodeToString(h.Sum(nil)) },
			func() { f.Close() }, nil
	}
	if !hash {
		return f, size, none, func() { f.Close() }, nil
	}
	result := make(chan string, 1)
	hctx, cancel := context.WithCancel(ctx)
	go func() { result <- hashFile(hctx, name) }()
	var sum string
	got := false
	return f, size, func() string {
			if !got {
				sum, got = <-result, true
			}
			return sum
		}, func() {
			cancel()
			f.Close()
		}, nil
}

// hashFile returns the SHA-256 of a file, or "" when it cannot be read or
// ctx ends first.
func hashFile(ctx context.Context, name string) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if ctx.Err() != nil {
			return ""
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil))
		}
		if err != nil {
			return ""
		}
	}
}

// countingReader counts the octets of a stream whose size is not known
// beforehand.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
