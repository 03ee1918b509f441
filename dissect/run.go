package dissect

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/pcapfile"
)

// Sink receives what the dissector produces, in order.
type Sink interface {
	Message(*Message) error
}

// Input describes one capture file after it was read.
type Input struct {
	Name        string   // as given
	Format      string   // "pcap" or "pcapng", "" when unreadable
	Compressed  bool     // gzip
	LinkTypes   []uint16 // link types of its interfaces
	Frames      int      // frames read
	Skipped     int      // frames of link types that cannot carry RDMA
	First, Last time.Time
	Err         error // what stopped reading early, or nil
}

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

// Run dissects each named capture file in turn ("-" is standard input) and
// hands every message to sink. A damaged input stops at the damage, after
// everything before it was handed on; the others are still read. Run returns
// what it learnt of each input and the errors met, one per damaged input.
func Run(ctx context.Context, names []string, stdin io.Reader, cfg Config, sink Sink) ([]Input, error) {
	var inputs []Input
	var errs []error
	for _, name := range names {
		in, err := runOne(ctx, name, stdin, cfg, sink)
		inputs = append(inputs, in)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				return inputs, err // the sink failed, or the run was cancelled
			}
			errs = append(errs, err)
		}
	}
	return inputs, errors.Join(errs...)
}

func runOne(ctx context.Context, name string, stdin io.Reader, cfg Config, sink Sink) (Input, error) {
	in := Input{Name: name}
	var r *pcapfile.Reader
	var err error
	if name == "-" {
		r, err = pcapfile.NewReader(stdin, pcapfile.Options{})
	} else {
		r, err = pcapfile.Open(name, pcapfile.Options{})
	}
	if err != nil {
		in.Err = err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name is said once, by InputError
		}
		return in, &InputError{Name: name, Err: err}
	}
	defer r.Close()
	in.Format = r.Format()
	in.Compressed = r.Compressed()

	d := NewDecoder(name, cfg)
	var sinkErr error
	emit := func(m *Message) {
		if sinkErr == nil {
			sinkErr = sink.Message(m)
		}
	}
	var fr Frame
	for {
		if in.Frames&1023 == 0 && ctx.Err() != nil {
			return in, ctx.Err()
		}
		pf, err := r.Next()
		if err != nil {
			in.LinkTypes = r.LinkTypes()
			d.Flush(emit) // what was decoded before the end or the damage is not lost
			if err == io.EOF {
				return in, sinkErr
			}
			in.Err = err
			if sinkErr != nil {
				return in, sinkErr
			}
			return in, &InputError{Name: name, Err: err}
		}
		in.Frames++
		if in.First.IsZero() || pf.Time.Before(in.First) {
			in.First = pf.Time
		}
		if pf.Time.After(in.Last) {
			in.Last = pf.Time
		}
		if !supportedLink(pf.LinkType) {
			in.Skipped++
			continue
		}
		fr = Frame{Data: pf.Data, WireLen: pf.WireLen, Time: pf.Time, LinkType: pf.LinkType, Index: pf.Index}
		d.Decode(&fr, emit)
		if sinkErr != nil {
			return in, sinkErr
		}
	}
}

// Describe is a short label for an input's content, such as "pcapng.gz".
func (in *Input) Describe() string {
	s := in.Format
	if in.Compressed {
		s += ".gz"
	}
	if s == "" {
		return "unreadable"
	}
	return s
}
