package output_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// dataOnly writes a small workload: RoCEv2 data, TCP bulk and small UDP,
// too short to reach its first connection setup.
func dataOnly(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data-only.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := (craft.Workload{Size: 32 << 10, Seed: 1}).Write(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// tcpOnly writes TCP traffic that is not MPA (an SSH session, say).
func tcpOnly(t *testing.T) string {
	t.Helper()
	a, b := craft.Endpoints(0, false)
	a.Port, b.Port = 51000, 22
	var frames []craft.Frame
	for i, seg := range []craft.TCP{{Src: a, Dst: b, Seq: 100, SYN: true}, {Src: b, Dst: a, Seq: 900, SYN: true, ACK: true},
		{Src: a, Dst: b, Seq: 101, ACK: true, Payload: []byte("SSH-2.0-OpenSSH_9.6\r\n")},
		{Src: b, Dst: a, Seq: 901, ACK: true, Payload: []byte("SSH-2.0-OpenSSH_9.2\r\n")}} {
		data, err := seg.Frame()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, craft.Frame{Data: data, LinkType: 1, Time: craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)})
	}
	return writeCapture(t, "ssh.pcap", frames)
}

// cutCapture is the NFS sample cut inside its REP: the REQ's attempt is
// cut.
func cutCapture(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../pcaps/rocev2-nfs.pcap")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(path, raw[:24+16+322+100], 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rejected writes a REQ rejected with reason 13 (Invalid Service ID, say)
// and two octets of ARI.
func rejected(t *testing.T) string {
	t.Helper()
	a, b := craft.Endpoints(0, false)
	req := &layers.CMReq{LocalCommID: 0x0a000001, ServiceID: craft.NFSServiceID, PartitionKey: 0xffff}
	req.PrivateData = append(craft.IPCMHeader(a, b, 40000), 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3)
	rej := &layers.CMRej{LocalCommID: 0x0b000001, RemoteCommID: 0x0a000001, RejectInfoLength: 6, Reason: 28,
		ARI: [72]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02}}
	var frames []craft.Frame
	for i, c := range []craft.CM{{Msg: req, Src: a, Dst: b}, {Msg: rej, Src: b, Dst: a}} {
		c.Transport, c.TID = craft.RoCEv2, 1
		data, link, err := c.Frame()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, craft.Frame{Data: data, LinkType: link, Time: craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)})
	}
	return writeCapture(t, "rejected.pcap", frames)
}

// renderSel dissects files through a selection and renders them.
func renderSel(t *testing.T, opts output.Options, expr string, files ...string) []byte {
	t.Helper()
	sel, err := output.ParseSelection(expr)
	if err != nil {
		t.Fatal(err)
	}
	opts.Selection = sel
	if opts.Version == "" {
		opts.Version = testTool
	}
	var out bytes.Buffer
	r, err := output.New(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dissect.Run(context.Background(), files, nil, dissect.Config{Hash: true}, renamer{sel.Filter(r)}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	return out.Bytes()
}

// renderAny is render for inputs that may fail (the error is the run's).
func renderAny(t *testing.T, opts output.Options, files ...string) []byte {
	t.Helper()
	if opts.Version == "" {
		opts.Version = testTool
	}
	var out bytes.Buffer
	r, err := output.New(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	dissect.Run(context.Background(), files, nil, dissect.Config{Hash: true}, renamer{r})
	r.Close()
	return out.Bytes()
}

// TestGoldenForms covers the forms this package gained for bug reports:
// -q, -t, -Y, the explanations of empty and cut results, a REJ's reason
// and ARI, no wrapping, and the Markdown report's detail levels and budget.
func TestGoldenForms(t *testing.T) {
	conns := connections(t)
	md := func(o output.Options) output.Options {
		o.Format, o.Command = output.Markdown, "rdmacm-pd dissect -T markdown connections.pcapng"
		return o
	}
	cases := []struct {
		name  string
		got   func() []byte
		width bool // lines within 80 columns
	}{
		{"quiet.txt", func() []byte { return renderAny(t, output.Options{Quiet: true, MultiFile: true}, conns, problems(t)) }, true},
		{"quiet.json", func() []byte { return renderAny(t, output.Options{Format: output.JSON, Quiet: true}, conns) }, false},
		{"select.txt", func() []byte { return renderSel(t, output.Options{}, "conn == 2 or msg == RTU", conns) }, true},
		{"select.json", func() []byte {
			return renderSel(t, output.Options{Format: output.JSON}, "addr == 192.0.2.6 and severity < info", conns)
		}, false},
		{"select.md", func() []byte {
			return renderSel(t, md(output.Options{}), "state == rejected or code == rpcrdma-absent", conns)
		}, false},
		{"data-only.txt", func() []byte { return renderAny(t, output.Options{}, dataOnly(t)) }, true},
		{"data-only.md", func() []byte { return renderAny(t, md(output.Options{}), dataOnly(t)) }, false},
		{"tcp-only.txt", func() []byte { return renderAny(t, output.Options{}, tcpOnly(t)) }, true},
		{"cut.txt", func() []byte { return renderAny(t, output.Options{}, cutCapture(t)) }, true},
		{"cut.md", func() []byte { return renderAny(t, md(output.Options{}), cutCapture(t)) }, false},
		{"rejected.txt", func() []byte { return renderAny(t, output.Options{Hex: true}, rejected(t)) }, true},
		{"nowrap.txt", func() []byte { return renderAny(t, output.Options{Width: -1}, problems(t)) }, false},
		{"details-all.md", func() []byte { return renderAny(t, md(output.Options{Details: output.DetailsAll}), conns) }, false},
		{"details-none.md", func() []byte { return renderAny(t, md(output.Options{Details: output.DetailsNone}), conns) }, false},
		{"budget.md", func() []byte {
			return renderAny(t, md(output.Options{Details: output.DetailsAll, Budget: 7000}), conns)
		}, false},
		{"times.txt", func() []byte { return times(t) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.got()
			golden(t, tc.name, got)
			if !tc.width {
				return
			}
			for i, l := range strings.Split(string(got), "\n") {
				if n := utf8.RuneCountInString(l); n > output.DefaultWidth {
					t.Errorf("line %d is %d columns: %q", i+1, n, l)
				}
			}
		})
	}
}

// times renders the NFS sample with each -t format (the local ones in a
// fixed zone).
func times(t *testing.T) []byte {
	var b bytes.Buffer
	zone := time.FixedZone("UTC+2", 2*3600)
	for _, tm := range output.TimeModes {
		fmt.Fprintf(&b, "-t %s\n", tm)
		b.Write(renderAny(t, output.Options{Time: tm, Location: zone, Quiet: false}, "../pcaps/rocev2-nfs.pcap"))
	}
	return b.Bytes()
}

// TestMarkdownBudget: the budget holds on the largest crafted inputs: the
// mixed workload, TCP flows, and every flood; the report says when it cut,
// and never cuts what fits.
func TestMarkdownBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and dissects tens of MB")
	}
	dir := t.TempDir()
	write := func(name string, fn func(f *os.File) error) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return path
	}
	workload := func(wl craft.Workload) func(*os.File) error {
		return func(f *os.File) error { _, err := wl.Write(f); return err }
	}
	flood := func(kind string, n int) func(*os.File) error {
		return func(f *os.File) error { _, err := craft.Flood(f, kind, n); return err }
	}
	inputs := map[string]string{
		"workload 64MiB":          write("wl.pcap", workload(craft.Workload{Size: 64 << 20, Seed: 1})),
		"tcp flows 16MiB":         write("flows.pcap", workload(craft.Workload{Size: 16 << 20, Seed: 1, TCPFlows: 2000, TCPSegment: 1448})),
		"flood reqs 300":          write("reqs300.pcap", flood("reqs", 300)),
		"flood reqs 20000":        write("reqs.pcap", flood("reqs", 20000)),
		"flood retries 20000":     write("retries.pcap", flood("retries", 20000)),
		"flood half-mpa 20000":    write("half.pcap", flood("half-mpa", 20000)),
		"flood tcp-streams 20000": write("streams.pcap", flood("tcp-streams", 20000)),
	}
	for name, path := range inputs {
		for _, details := range []output.Details{output.DetailsFindings, output.DetailsAll} {
			t.Run(fmt.Sprintf("%s/%s", name, details), func(t *testing.T) {
				var out bytes.Buffer
				r, err := output.New(&out, output.Options{Format: output.Markdown, Details: details, Version: testTool,
					Command: "rdmacm-pd dissect -T markdown " + filepath.Base(path)})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{Hash: true}, r); err != nil {
					t.Fatal(err)
				}
				r.Close()
				n := utf8.RuneCount(out.Bytes())
				cut := strings.Contains(out.String(), "> This report was cut to stay within 65536 characters")
				if n > output.DefaultBudget {
					t.Errorf("%d characters", n)
				}
				var whole bytes.Buffer
				r, _ = output.New(&whole, output.Options{Format: output.Markdown, Details: details, Version: testTool, Budget: -1,
					Command: "rdmacm-pd dissect -T markdown " + filepath.Base(path)})
				dissect.Run(context.Background(), []string{path}, nil, dissect.Config{Hash: true}, r)
				r.Close()
				if fits := utf8.RuneCount(whole.Bytes()) <= output.DefaultBudget; fits == cut || fits && whole.String() != out.String() {
					t.Errorf("uncut %d characters, cut %d; says it cut: %v", utf8.RuneCount(whole.Bytes()), n, cut)
				}
				t.Logf("%d characters (uncut %d)", n, utf8.RuneCount(whole.Bytes()))
			})
		}
	}
}

// TestSelection checks the display filter on records, field by field.
func TestSelection(t *testing.T) {
	var msgs []*record.Message
	var conns []*record.Connection
	sink := collectSink{msgs: &msgs, conns: &conns}
	if _, err := dissect.Run(context.Background(), []string{connections(t)}, nil, dissect.Config{}, sink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		expr         string
		frames, nums string // the messages' frames and the connections' numbers shown
	}{
		{"msg == REJ", "6", ""},
		{"msg in {REQ, rtu}", "1 3 7 11 13 14", ""},
		{"conn == 2", "3 6", "2"},
		{"conn >= 4", "11 12 13 14", "4 5"},
		{"state == rejected", "", "2"},
		{"state != established", "1 3 4 6 7 9 10 11 12 13 14", "2 5"},
		{"addr == 192.0.2.6", "9 10", "3"},
		{"src == 192.0.2.5 && transport == iwarp", "9", "3"},
		{"dst == 192.0.2.6:20049", "9", "3"},
		{"code == rpcrdma-absent", "6", ""},
		{"code", "6", "1 2 4 5"},
		{"not code", "1 3 4 7 9 10 11 12 13 14", "3"},
		{"severity >= info and conn != 5", "6", "1 2 4"},
		{"frame == 14", "14", "5"},
		{"msg", "1 3 4 6 7 9 10 11 12 13 14", ""},
		{"state", "", "1 2 3 4 5"},
		{"ip.addr == 192.0.2.8 || (msg == REP && !(conn == 4))", "4 14", "5"},
		{"file == connections.pcapng and conn == 3", "9 10", "3"},
	} {
		sel, err := output.ParseSelection(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		var fs, ns []string
		for _, m := range msgs {
			if sel.Message(m) {
				fs = append(fs, fmt.Sprint(m.Frame))
			}
		}
		for _, x := range conns {
			if sel.Connection(x) {
				ns = append(ns, fmt.Sprint(x.Number))
			}
		}
		if strings.Join(fs, " ") != tc.frames || strings.Join(ns, " ") != tc.nums {
			t.Errorf("%s: messages %v, connections %v; want %q and %q", tc.expr, fs, ns, tc.frames, tc.nums)
		}
	}
}

type collectSink struct {
	msgs  *[]*record.Message
	conns *[]*record.Connection
}

func (collectSink) Update(*record.ConnectionUpdate) error { return nil }

func (c collectSink) Message(m *record.Message) error {
	m.File = filepath.Base(m.File)
	*c.msgs = append(*c.msgs, m)
	return nil
}

func (c collectSink) Connection(x *record.Connection) error {
	*c.conns = append(*c.conns, x)
	return nil
}

func (c collectSink) Summary(*record.Summary) error { return nil }
func (collectSink) RPC(*record.RPC) error           { return nil }

// TestGoldenWidth: every text golden file but the unwrapped one stays within
// 80 columns (colour escapes aside): the message lines, the tables, the
// findings, the hex dumps.
func TestGoldenWidth(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.txt"))
	esc := regexp.MustCompile("\x1b\\[[0-9;]*m")
	for _, f := range files {
		if filepath.Base(f) == "nowrap.txt" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(esc.ReplaceAllString(string(b), ""), "\n") {
			if n := utf8.RuneCountInString(l); n > output.DefaultWidth {
				t.Errorf("%s:%d is %d columns: %q", f, i+1, n, l)
			}
		}
	}
}

// FuzzParseSelection: any expression parses or fails without a panic, and
// one that parses evaluates on a message and a connection.
func FuzzParseSelection(f *testing.F) {
	for _, s := range []string{"msg == REJ or severity >= warning", "conn in {1, 2} && !(addr == 192.0.2.1)", "code", "((", "frame >"} {
		f.Add(s)
	}
	m := &record.Message{Frame: 2, Frames: []int{1, 2}, Src: record.TCPEndpoint([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, true, 49153),
		Dst: record.IPEndpoint([]byte{192, 0, 2, 2}), Kind: record.KindREJ, Conn: 1}
	c := &record.Connection{Number: 1, Initiator: record.IPEndpoint([]byte{192, 0, 2, 1}), Responder: record.LIDEndpoint(2),
		State: record.Cut, RequestFrame: 1}
	f.Fuzz(func(t *testing.T, expr string) {
		sel, err := output.ParseSelection(expr)
		if err != nil {
			return
		}
		sel.Message(m)
		sel.Connection(c)
	})
}
