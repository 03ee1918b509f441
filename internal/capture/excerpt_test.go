package capture_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// collect keeps the messages and connections of a run.
type collect struct {
	msgs  []*record.Message
	conns []*record.Connection
	sum   *record.Summary
}

func (c *collect) Message(m *record.Message) error       { c.msgs = append(c.msgs, m); return nil }
func (c *collect) Connection(x *record.Connection) error { c.conns = append(c.conns, x); return nil }
func (c *collect) Summary(s *record.Summary) error       { c.sum = s; return nil }
func (*collect) RPC(*record.RPC) error                   { return nil }

// busy writes a capture of an iWARP connection whose MPA Request is split
// into three segments with other TCP traffic between them, a RoCEv2
// exchange and a rejected one, and noise after: 40 frames, of which 9
// carry the messages (the 3 segments of the MPA Request, the Reply, REQ,
// REP, RTU, REQ, REJ).
func busy(t *testing.T, name string) string {
	t.Helper()
	at := craft.DefaultStart
	var frames []craft.Frame
	add := func(fs ...craft.Frame) {
		for _, f := range fs {
			at = at.Add(time.Millisecond)
			f.Time = at
			frames = append(frames, f)
		}
	}
	noise := func(n int) {
		a, b := craft.Endpoints(50, false)
		a.Port, b.Port = 40000, 22
		for i := 0; i < n; i++ {
			data, err := (&craft.TCP{Src: a, Dst: b, Seq: uint32(1000 + 100*i), ACK: true, Payload: []byte(strings.Repeat("ssh!", 25))}).Frame()
			if err != nil {
				t.Fatal(err)
			}
			add(craft.Frame{Data: data, LinkType: 1})
		}
	}
	iw, err := (&craft.IWARPExchange{Rev: 2, Index: 1, SplitAt: []int{7, 20}}).Frames()
	if err != nil {
		t.Fatal(err)
	}
	// iw: SYN, SYN-ACK, ACK, three Request segments, the Reply.
	add(iw[:4]...)
	noise(5)
	add(iw[4])
	noise(5)
	add(iw[5:]...)
	ok, err := (&craft.Exchange{Transport: craft.RoCEv2, Index: 2}).Frames()
	if err != nil {
		t.Fatal(err)
	}
	add(ok...)
	rej, err := (&craft.Exchange{Transport: craft.RoCEv2, Index: 3, Reject: true}).Frames()
	if err != nil {
		t.Fatal(err)
	}
	add(rej...)
	noise(40 - len(frames))
	path := filepath.Join(t.TempDir(), name)
	if err := craft.WriteFile(path, frames); err != nil {
		t.Fatal(err)
	}
	return path
}

// excerpt dissects in, showing the messages keep chooses (nil: all) and
// every connection to a capture.Plan, writes the frames planned to out
// through a capture.Excerpt in a second pass, and returns what the first
// run saw and what the writer says.
func excerpt(t *testing.T, in, out string, opts capture.ExcerptOptions, keep func(*record.Message) bool) (*collect, capture.ExcerptStats, error) {
	return excerptOf(t, []string{in}, out, opts, keep)
}

func excerptOf(t *testing.T, inputs []string, out string, opts capture.ExcerptOptions, keep func(*record.Message) bool) (*collect, capture.ExcerptStats, error) {
	t.Helper()
	c := &collect{}
	opts.Probe, opts.Plan = new(decode.Probe), capture.NewPlan(c)
	if _, err := dissect.Run(context.Background(), inputs, nil, dissect.Config{}, keeper{opts.Plan, keep}); err != nil {
		t.Fatal(err)
	}
	w, err := capture.CreateExcerpt(out, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, runErr := dissect.Run(context.Background(), inputs, nil, dissect.Config{Writer: w, Evidence: w.Evidence}, w)
	st, err := w.Close()
	if err == nil {
		err = runErr
	}
	return c, st, err
}

// keeper shows the messages keep chooses (nil: all), and nothing else.
type keeper struct {
	next record.Sink
	keep func(*record.Message) bool
}

func (k keeper) Message(m *record.Message) error {
	if k.keep == nil || k.keep(m) {
		return k.next.Message(m)
	}
	return nil
}
func (k keeper) Connection(c *record.Connection) error {
	if k.keep == nil {
		return k.next.Connection(c)
	}
	return nil
}
func (keeper) Update(*record.ConnectionUpdate) error { return nil }
func (keeper) RPC(*record.RPC) error                 { return nil }
func (k keeper) Summary(s *record.Summary) error     { return k.next.Summary(s) }

// dissectFile runs a capture without a writer.
func dissectFile(t *testing.T, path string) *collect {
	t.Helper()
	c := &collect{}
	if _, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// shape is what a run found, without frame numbers (which the excerpt
// renumbers).
func shape(c *collect) []string {
	var out []string
	for _, m := range c.msgs {
		rp := "-"
		if m.RPCRDMA != nil {
			rp = strings.Join([]string{string(rune('0' + m.RPCRDMA.SendSize/1024)), string(rune('0' + m.RPCRDMA.ReceiveSize/1024))}, "/")
		}
		out = append(out, m.Name()+" "+m.Src.String()+">"+m.Dst.String()+" "+rp+" "+findingCodes(m))
	}
	for _, x := range c.conns {
		out = append(out, "conn "+x.Initiator.String()+">"+x.Responder.String()+" "+string(x.State))
	}
	return out
}

func findingCodes(m *record.Message) string {
	var cs []string
	for _, f := range m.Findings {
		cs = append(cs, f.Code.String())
	}
	return strings.Join(cs, ",")
}

// TestExcerpt: the file holds exactly the frames that carried messages, in
// capture order (the MPA Request's segments, with the noise between them
// left out), and dissects to the same messages and connections.
func TestExcerpt(t *testing.T) {
	in := busy(t, "busy.pcap")
	for _, name := range []string{"setup.pcapng", "setup.pcap"} {
		out := filepath.Join(t.TempDir(), name)
		full, st, err := excerpt(t, in, out, capture.ExcerptOptions{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want []int
		for _, m := range full.msgs {
			if len(m.Frames) > 0 {
				want = append(want, m.Frames...)
			} else {
				want = append(want, m.Frame)
			}
		}
		slices.Sort(want)
		if st.Frames != len(want) || st.Lost != 0 || len(want) != 9 {
			t.Errorf("%s: %+v; want %d frames (%v)", name, st, len(want), want)
		}
		got := dissectFile(t, out)
		if !slices.Equal(shape(got), shape(full)) {
			t.Errorf("%s dissects to\n%q\nwant\n%q", name, shape(got), shape(full))
		}
		if got.sum.Frames != len(want) {
			t.Errorf("%s: %d frames", name, got.sum.Frames)
		}
		// Capture order: the times only grow.
		for i := 1; i < len(got.msgs); i++ {
			if got.msgs[i].Time.Before(got.msgs[i-1].Time) && len(got.msgs[i].Frames) == 0 {
				t.Errorf("%s: frame %d is older than the one before", name, got.msgs[i].Frame)
			}
		}
		raw, _ := os.ReadFile(out)
		if isNg := len(raw) > 4 && string(raw[:4]) == "\x0a\x0d\x0d\x0a"; isNg != strings.HasSuffix(name, ".pcapng") {
			t.Errorf("%s: pcapng %v", name, isNg)
		}
	}
}

// TestExcerptKeep: only the chosen messages' frames are written, with
// their connection's setup: a REJ, and its REQ.
func TestExcerptKeep(t *testing.T) {
	in := busy(t, "busy.pcap")
	out := filepath.Join(t.TempDir(), "rej.pcapng")
	_, st, err := excerpt(t, in, out, capture.ExcerptOptions{}, func(m *record.Message) bool { return m.Kind == record.KindREJ })
	if err != nil || st.Frames != 2 {
		t.Fatalf("%+v, %v", st, err)
	}
	got := dissectFile(t, out)
	if len(got.msgs) != 2 || got.msgs[0].Kind != record.KindREQ || got.msgs[1].Kind != record.KindREJ {
		t.Errorf("%q", shape(got))
	}
}

// TestExcerptWindow: segments that left the window before their MPA frame
// completed are counted as lost, and the rest is still written in order.
func TestExcerptWindow(t *testing.T) {
	in := busy(t, "busy.pcap")
	out := filepath.Join(t.TempDir(), "small.pcapng")
	_, st, err := excerpt(t, in, out, capture.ExcerptOptions{Window: 400}, nil)
	if err != nil || st.Lost == 0 || st.Frames == 0 {
		t.Fatalf("%+v, %v; want segments lost", st, err)
	}
	got := dissectFile(t, out)
	if len(got.msgs) == 0 || got.sum.Frames != st.Frames {
		t.Errorf("%d messages, %d frames", len(got.msgs), got.sum.Frames)
	}
}

// TestExcerptLinkTypes: several inputs of different link types go into a
// pcapng file (an interface each), not into a pcap file.
func TestExcerptLinkTypes(t *testing.T) {
	inputs := []string{"../../pcaps/rocev2-nfs.pcap", "../../pcaps/infiniband.pcap"}
	run := func(out string) (capture.ExcerptStats, error) {
		_, st, err := excerptOf(t, inputs, out, capture.ExcerptOptions{}, nil)
		return st, err
	}
	dir := t.TempDir()
	if st, err := run(filepath.Join(dir, "both.pcapng")); err != nil || st.Frames != 6 {
		t.Errorf("pcapng: %+v, %v", st, err)
	} else if got := dissectFile(t, filepath.Join(dir, "both.pcapng")); len(got.msgs) != 6 || len(got.conns) != 2 {
		t.Errorf("pcapng dissects to %q", shape(got))
	}
	_, err := run(filepath.Join(dir, "both.pcap"))
	if err == nil || !strings.Contains(err.Error(), "a pcap file holds one link type, and frame 1 of ../../pcaps/infiniband.pcap has link type 247, not 1: name the file .pcapng") {
		t.Errorf("pcap: %v", err)
	}
}

// TestExcerptEmpty: no message, a valid capture without frames.
func TestExcerptEmpty(t *testing.T) {
	out := filepath.Join(t.TempDir(), "none.pcap")
	_, st, err := excerpt(t, "../../pcaps/rocev2-nfs.pcap", out, capture.ExcerptOptions{}, func(*record.Message) bool { return false })
	if err != nil || st.Frames != 0 {
		t.Fatalf("%+v, %v", st, err)
	}
	if got := dissectFile(t, out); got.sum.Frames != 0 || got.sum.DecodeErrors != 0 {
		t.Errorf("%+v", got.sum)
	}
}

func (*collect) Update(*record.ConnectionUpdate) error { return nil }
