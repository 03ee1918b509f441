package output_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// testTool stands for the build in the golden files.
const testTool = "rdmacm-pd v0.0.0-test (0123456789ab, 2026-01-01T00:00:00Z) go1.25.0 linux/amd64 AF_PACKET"

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./output -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got: %q\nwant: %q\n(run go test ./output -update if the change is intended)", name, i+1, g, w)
			}
		}
	}
}

// problems writes a capture whose frames trigger findings.
func problems(t *testing.T) string {
	t.Helper()
	a, b := craft.Endpoints(0, false)
	rpc := func(ver, r, s, v byte) []byte { return []byte{0xf6, 0xab, 0x0e, 0x18, ver, r, s, v} }
	rep := func(pd []byte) layers.CMMessage {
		m := &layers.CMRep{LocalCommID: 0x0b000001, RemoteCommID: 0x0a000001}
		m.PrivateData = pd
		return m
	}
	pdAt := func(off int, chunk []byte) []byte {
		p := make([]byte, 196)
		copy(p[off:], chunk)
		return p
	}
	req := &layers.CMReq{LocalCommID: 0x0a000001, ServiceID: craft.NFSServiceID, PartitionKey: 0xffff}
	req.PrivateData = append(craft.IPCMHeader(a, b, 40000), rpc(1, 0x81, 3, 3)...)
	cms := []craft.CM{
		{Msg: req, TID: 1},
		{Msg: rep(rpc(2, 0, 7, 7)), TID: 1, CorruptICRC: true},
		{Msg: rep(pdAt(20, rpc(1, 1, 7, 7))), TID: 1, DestQP: 5},
		{Msg: rep(append(rpc(1, 0, 1, 1), rpc(1, 0, 3, 3)...)), TID: 1, BaseVersion: 2},
	}
	var frames []craft.Frame
	for i, c := range cms {
		c.Transport = craft.RoCEv2
		c.Src, c.Dst = a, b
		if i > 0 {
			c.Src, c.Dst = b, a
		}
		data, link, err := c.Frame()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, craft.Frame{Data: data, LinkType: link, Time: craft.DefaultStart})
	}
	return writeCapture(t, "problems.pcap", frames)
}

// mpaProblems writes a capture of iWARP connections whose MPA frames raise
// the MPA findings: a revision 2 Request too short for RFC 8797 and a
// rejecting Reply with the enhanced flag at revision 1; a Request whose
// retransmission differs and whose stream ends (FIN) before the frame does; a
// Reply that the capture cuts inside its key.
func mpaProblems(t *testing.T) string {
	t.Helper()
	rpc := []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}
	var frames []craft.Frame
	at := craft.DefaultStart
	add := func(tc craft.TCP) {
		tc.ACK = !tc.SYN
		data, err := tc.Frame()
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Millisecond)
		frames = append(frames, craft.Frame{Data: data, LinkType: 1, Time: at})
	}
	conn := func(i int) (a, b craft.Endpoint) {
		a, b = craft.Endpoints(i, false)
		b.Port = 20049
		add(craft.TCP{Src: a, Dst: b, Seq: 1000, SYN: true})
		add(craft.TCP{Src: b, Dst: a, Seq: 5000, SYN: true})
		return a, b
	}
	a, b := conn(0)
	add(craft.TCP{Src: a, Dst: b, Seq: 1001, Payload: (&craft.MPA{Request: true, Rev: 2, IRD: 4, ORD: 4, Data: rpc[:4]}).Bytes()})
	add(craft.TCP{Src: b, Dst: a, Seq: 5001, Payload: (&craft.MPA{Rev: 1, Reject: true, Enhanced: true, Data: rpc}).Bytes()})
	a, b = conn(1)
	req := (&craft.MPA{Request: true, Rev: 1, CRC: true, Data: rpc}).Bytes()
	add(craft.TCP{Src: a, Dst: b, Seq: 1001, Payload: req[:20]})
	add(craft.TCP{Src: a, Dst: b, Seq: 1001, Payload: append(append([]byte(nil), req[:17]...), 2, 0, 8)})
	add(craft.TCP{Src: a, Dst: b, Seq: 1021, Payload: req[20:24], FIN: true})
	a, b = conn(2)
	add(craft.TCP{Src: a, Dst: b, Seq: 1001, Payload: (&craft.MPA{Request: true, Rev: 2, Data: rpc}).Bytes()})
	add(craft.TCP{Src: b, Dst: a, Seq: 5001, Payload: (&craft.MPA{Rev: 2, Data: rpc}).Bytes()[:12]})
	return writeCapture(t, "mpa-problems.pcap", frames)
}

// connections writes a capture of several interleaved connection attempts
// between different hosts: every state and every connection finding.
func connections(t *testing.T) string {
	t.Helper()
	p := func(send, recv int, r bool) craft.Peer {
		return craft.Peer{SendSize: send, ReceiveSize: recv, RemoteInvalidate: r}
	}
	base := craft.DefaultStart
	var frames []craft.Frame
	add := func(fs []craft.Frame, err error) {
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, fs...)
	}
	add((&craft.Exchange{Transport: craft.RoCEv2, Index: 0, Initiator: p(4096, 4096, true), Responder: p(4096, 4096, false)}).Frames())
	add((&craft.Exchange{Transport: craft.RoCEv2, Index: 1, Start: base.Add(300 * time.Microsecond), Initiator: p(8192, 8192, true),
		Responder: craft.Peer{Absent: true}, Reject: true}).Frames())
	add((&craft.IWARPExchange{Rev: 2, Index: 2, Start: base.Add(100 * time.Microsecond), Initiator: p(4096, 4096, true),
		Responder: p(16384, 16384, true)}).Frames())
	add((&craft.Exchange{Transport: craft.RoCEv2, Index: 0, Attempt: 1, Start: base.Add(time.Second), Initiator: p(4096, 4096, true),
		Responder: p(8192, 8192, true)}).Frames())
	fs, err := (&craft.Exchange{Transport: craft.RoCEv2, Index: 3, Start: base.Add(2 * time.Second)}).Frames()
	add(fs[:1], err) // a REQ nobody answers
	sort.SliceStable(frames, func(i, j int) bool { return frames[i].Time.Before(frames[j].Time) })
	return writeCapture(t, "connections.pcapng", frames)
}

// allMessages writes a capture with one frame of each of the eleven CM
// messages, every field set.
func allMessages(t *testing.T) string {
	t.Helper()
	a, b := craft.Endpoints(0, false)
	gid := func(n byte) [16]byte { return [16]byte{0xfe, 0x80, 14: 0x10, 15: n} }
	rpc := []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 7}
	msgs := []layers.CMMessage{
		&layers.CMReq{LocalCommID: 0x11, ServiceID: 0x1000000000000048, LocalCAGUID: 0x0002c90300000001, LocalQKey: 0x1234,
			LocalQPN: 0x4567, ResponderResources: 4, InitiatorDepth: 4, StartingPSN: 0x777, PartitionKey: 0xffff,
			PathPacketPayloadMTU: 4, RNRRetryCount: 7, MaxCMRetries: 15, SRQ: true, RetryCount: 7,
			Primary: layers.CMPath{LocalPortLID: 1, RemotePortLID: 2, LocalPortGID: gid(1), RemotePortGID: gid(2), FlowLabel: 0x12345,
				PacketRate: 3, TrafficClass: 0x20, HopLimit: 1, SL: 3, SubnetLocal: true, LocalACKTimeout: 18}},
		&layers.CMMra{LocalCommID: 0x22, RemoteCommID: 0x11, MessageMRAed: 0, ServiceTimeout: 20},
		&layers.CMRej{LocalCommID: 0x22, RemoteCommID: 0x11, MessageRejected: 0, RejectInfoLength: 4, Reason: 8,
			ARI: [72]byte{1, 2, 3, 4}},
		&layers.CMRep{LocalCommID: 0x22, RemoteCommID: 0x11, LocalQPN: 0x89, StartingPSN: 0x999, TargetACKDelay: 15,
			FailoverAccepted: 1, RNRRetryCount: 7, SRQ: true, LocalCAGUID: 0x0002c90300000002},
		&layers.CMRtu{LocalCommID: 0x11, RemoteCommID: 0x22},
		&layers.CMDreq{LocalCommID: 0x11, RemoteCommID: 0x22, RemoteQPNEECN: 0x89},
		&layers.CMDrep{LocalCommID: 0x22, RemoteCommID: 0x11},
		&layers.CMSidrReq{RequestID: 0x33, PartitionKey: 0xffff, ServiceID: 0x0000000001114e51},
		&layers.CMSidrRep{RequestID: 0x33, Status: 0, QPN: 0x345, ServiceID: 0x0000000001114e51, QKey: 0x80010000},
		&layers.CMLap{LocalCommID: 0x11, RemoteCommID: 0x22, RemoteQPNEECN: 0x89, RemoteCMResponseTimeout: 20,
			AltLocalPortLID: 3, AltRemotePortLID: 4, AltLocalPortGID: gid(3), AltRemotePortGID: gid(4), AltFlowLabel: 0xabcde,
			AltTrafficClass: 0x40, AltHopLimit: 2, AltPacketRate: 6, AltSL: 5, AltSubnetLocal: true, AltLocalACKTimeout: 17},
		&layers.CMApr{LocalCommID: 0x22, RemoteCommID: 0x11, AddInfoLength: 2, APStatus: 0, AdditionalInfo: [72]byte{9, 9}},
	}
	var frames []craft.Frame
	for i, m := range msgs {
		switch v := m.(type) {
		case *layers.CMReq:
			v.PrivateData = rpc
		case *layers.CMSidrReq:
			v.PrivateData = append(craft.IPCMHeader(a, b, 4000), rpc...)
		case *layers.CMRep:
			v.PrivateData = rpc
		}
		c := craft.CM{Transport: craft.InfiniBand, Src: a, Dst: b, Msg: m, TID: uint64(i)}
		data, link, err := c.Frame()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, craft.Frame{Data: data, LinkType: link, Time: craft.DefaultStart})
	}
	return writeCapture(t, "all-messages.pcap", frames)
}

// writeCapture writes frames to name in a temporary directory.
func writeCapture(t *testing.T, name string, frames []craft.Frame) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := craft.WriteFile(path, frames); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostileNames copies a sample with findings to two names that break
// Markdown unless escaped: a pipe, backticks, HTML.
func hostileNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../pcaps/rocev2-one-sided.pcap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var names []string
	for _, n := range []string{"a|b`c.pcap", "x```y <b>z.pcap", "nl\n\nname|*y*.pcap"} {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	return names
}

// render dissects files and renders them with opts. File names in the output
// are made relative so the golden files do not depend on temp directories.
func render(t *testing.T, opts output.Options, files ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	r, err := output.New(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dissect.Run(context.Background(), files, nil, dissect.Config{Hash: true}, renamer{r}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// renamer keeps only the base name of each file.
type renamer struct{ next dissect.Sink }

func (r renamer) Message(m *record.Message) error {
	m.File = filepath.Base(m.File)
	return r.next.Message(m)
}

func (r renamer) Connection(c *record.Connection) error {
	c.File = filepath.Base(c.File)
	return r.next.Connection(c)
}

func (r renamer) Update(u *record.ConnectionUpdate) error {
	u.File = filepath.Base(u.File)
	return r.next.Update(u)
}

func (r renamer) RPC(rec *record.RPC) error {
	rec.File = filepath.Base(rec.File)
	return r.next.RPC(rec)
}

func (r renamer) Summary(s *record.Summary) error {
	for i := range s.Inputs {
		s.Inputs[i].Name = filepath.Base(s.Inputs[i].Name)
	}
	return r.next.Summary(s)
}

func TestGolden(t *testing.T) {
	prob := problems(t)
	mpaProb := mpaProblems(t)
	conns := connections(t)
	mdOpts := output.Options{Format: output.Markdown, Version: testTool, Command: "rdmacm-pd dissect -T markdown connections.pcapng"}
	nfs := "../pcaps/rocev2-nfs.pcap"
	ib := "../pcaps/infiniband.pcap"
	all, _ := filepath.Glob("../pcaps/*.pcap*")
	cases := []struct {
		name  string
		opts  output.Options
		files []string
	}{
		{"nfs.txt", output.Options{Format: output.Text}, []string{nfs}},
		{"nfs-V.txt", output.Options{Format: output.Text, Verbose: true}, []string{nfs}},
		{"nfs-x.txt", output.Options{Format: output.Text, Hex: true}, []string{nfs}},
		{"nfs-color.txt", output.Options{Format: output.Text, Verbose: true, Hex: true, Color: true}, []string{nfs}},
		{"ib-V.txt", output.Options{Format: output.Text, Verbose: true}, []string{ib}},
		{"problems.txt", output.Options{Format: output.Text, Hex: true}, []string{prob}},
		{"problems-color.txt", output.Options{Format: output.Text, Color: true}, []string{prob}},
		{"samples.txt", output.Options{Format: output.Text, MultiFile: true}, all},
		{"samples.json", output.Options{Format: output.JSON}, all},
		{"problems.json", output.Options{Format: output.JSON}, []string{prob}},
		{"mpa-problems-V.txt", output.Options{Format: output.Text, Verbose: true, Hex: true}, []string{mpaProb}},
		{"mpa-problems.json", output.Options{Format: output.JSON}, []string{mpaProb}},
		{"iwarp-V.txt", output.Options{Format: output.Text, Verbose: true, Hex: true, MultiFile: true},
			[]string{"../pcaps/iwarp-rev1.pcap", "../pcaps/iwarp-split-ipv6.pcapng"}},
		{"iwarp.json", output.Options{Format: output.JSON}, []string{"../pcaps/iwarp-rev2.pcap", "../pcaps/iwarp-split-ipv6.pcapng"}},
		{"all-messages-V.txt", output.Options{Format: output.Text, Verbose: true}, []string{allMessages(t)}},
		{"all-messages.json", output.Options{Format: output.JSON}, []string{allMessages(t)}},
		{"connections.txt", output.Options{Format: output.Text}, []string{conns}},
		{"connections-color.txt", output.Options{Format: output.Text, Color: true}, []string{conns}},
		{"connections.json", output.Options{Format: output.JSON}, []string{conns}},
		{"connections.md", mdOpts, []string{conns}},
		{"samples.md", output.Options{Format: output.Markdown, MultiFile: true, Version: testTool,
			Command: "rdmacm-pd dissect -T markdown pcaps/*"}, all},
		{"hostile-names.md", output.Options{Format: output.Markdown, MultiFile: true, Version: testTool,
			Command: "rdmacm-pd dissect -T markdown 'a|b`c.pcap' 'x```y <b>z.pcap' $'nl\\n\\nname|*y*.pcap'"}, hostileNames(t)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Version == "" {
				tc.opts.Version = testTool
			}
			got := render(t, tc.opts, tc.files...)
			if !tc.opts.Color && bytes.Contains(got, []byte("\x1b[")) {
				t.Errorf("escape sequences without colour")
			}
			if tc.opts.Color && !bytes.Contains(got, []byte("\x1b[")) {
				t.Errorf("no escape sequences with colour")
			}
			golden(t, tc.name, got)
		})
	}
}

// TestJSONShape checks that every line is one JSON object with the keys the
// public contract names, with the types it names.
func TestJSONShape(t *testing.T) {
	got := render(t, output.Options{Format: output.JSON}, "../pcaps/rocev2-nfs.pcap", "../pcaps/infiniband.pcap", problems(t))
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 10+3+1 { // 10 messages, 3 connections, the summary
		t.Fatalf("%d lines", len(lines))
	}
	// Each input's connection records follow its messages; the summary
	// comes last.
	var order []string
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		order = append(order, fmt.Sprint(rec["record"]))
		if rec["record"] != "message" {
			continue
		}
		for _, k := range []string{"record", "file", "frame", "time", "transport", "src", "dst", "message", "ib", "mad", "cm", "private_data", "rpcrdma", "warnings"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("line %d: no key %q", i+1, k)
			}
		}
		if rec["record"] != "message" {
			t.Errorf("line %d: record %v", i+1, rec["record"])
		}
		ib := rec["ib"].(map[string]any)
		bth := ib["bth"].(map[string]any)
		for _, k := range []string{"opcode", "p_key", "dest_qp", "psn"} {
			if _, ok := bth[k].(float64); !ok {
				t.Errorf("line %d: bth.%s is %T", i+1, k, bth[k])
			}
		}
		if _, ok := ib["icrc"].(map[string]any)["valid"].(bool); !ok {
			t.Errorf("line %d: icrc.valid", i+1)
		}
		mad := rec["mad"].(map[string]any)
		if tid, ok := mad["transaction_id"].(string); !ok || len(tid) != 18 || !strings.HasPrefix(tid, "0x") {
			t.Errorf("line %d: transaction_id %v", i+1, mad["transaction_id"])
		}
		cm := rec["cm"].(map[string]any)
		if _, ok := cm["local_comm_id"].(float64); !ok {
			t.Errorf("line %d: cm.local_comm_id %v", i+1, cm["local_comm_id"])
		}
		if rec["message"] == "REQ" {
			if _, ok := cm["service_id"].(string); !ok {
				t.Errorf("line %d: service_id", i+1)
			}
			ipcm, ok := rec["ip_cm"].(map[string]any)
			if !ok {
				t.Errorf("line %d: no ip_cm", i+1)
			} else {
				for _, k := range []string{"version", "ip_version", "src_port", "src", "dst"} {
					if _, ok := ipcm[k]; !ok {
						t.Errorf("line %d: ip_cm.%s missing", i+1, k)
					}
				}
			}
		} else if _, ok := cm["remote_comm_id"].(float64); !ok {
			t.Errorf("line %d: cm.remote_comm_id", i+1)
		}
		if rp, ok := rec["rpcrdma"].(map[string]any); ok {
			for _, k := range []string{"offset", "format_identifier", "version", "reserved", "remote_invalidate", "send_size", "receive_size", "send_size_encoded", "receive_size_encoded"} {
				if _, ok := rp[k]; !ok {
					t.Errorf("line %d: rpcrdma.%s missing", i+1, k)
				}
			}
		} else if rec["rpcrdma"] != nil {
			t.Errorf("line %d: rpcrdma %v", i+1, rec["rpcrdma"])
		}
		for _, w := range rec["warnings"].([]any) {
			wm := w.(map[string]any)
			for _, k := range []string{"code", "severity", "message", "reference"} {
				if _, ok := wm[k].(string); !ok {
					t.Errorf("line %d: warning.%s", i+1, k)
				}
			}
		}
	}
	m, c := "message", "connection"
	want := []string{m, m, m, c, m, m, m, c, m, m, m, m, c, "summary"} // rocev2-nfs, infiniband, problems
	if !reflect.DeepEqual(order, want) {
		t.Errorf("records %v\nwant %v", order, want)
	}
}

func TestUseColor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		mode output.ColorMode
		tty  bool
		env  func(string) string
		want bool
	}{
		{output.ColorAuto, true, env(), true},
		{output.ColorAuto, false, env(), false},
		{output.ColorAuto, true, env("NO_COLOR", "1"), false},
		{output.ColorAuto, true, env("NO_COLOR", ""), true},
		{output.ColorAuto, true, env("CLICOLOR", "0"), false},
		{output.ColorAuto, true, env("CLICOLOR", "1"), true},
		{output.ColorAuto, false, env("CLICOLOR_FORCE", "1"), true},
		{output.ColorAuto, false, env("CLICOLOR_FORCE", "0"), false},
		{output.ColorAuto, true, env("TERM", "dumb"), false},
		{output.ColorAuto, false, env("TERM", "dumb", "CLICOLOR_FORCE", "1"), true},
		{output.ColorAuto, false, env("NO_COLOR", "1", "CLICOLOR_FORCE", "1"), false},
		{output.ColorAlways, false, env("NO_COLOR", "1"), true},
		{output.ColorAlways, false, env("TERM", "dumb"), true},
		{output.ColorNever, true, env("CLICOLOR_FORCE", "1"), false},
	}
	for i, c := range cases {
		if got := output.UseColor(c.mode, c.tty, c.env); got != c.want {
			t.Errorf("case %d (%s, tty %v): got %v", i, c.mode, c.tty, got)
		}
	}
}

func TestDecodeOutput(t *testing.T) {
	pd := append(make([]byte, 36), 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 7)
	rp, fs := decode.CheckPrivateData(pd, 36)
	var txt, js bytes.Buffer
	if err := output.WriteDecode(&txt, output.Options{Format: output.Text}, pd, rp, fs); err != nil {
		t.Fatal(err)
	}
	if err := output.WriteDecode(&js, output.Options{Format: output.JSON}, pd, rp, fs); err != nil {
		t.Fatal(err)
	}
	golden(t, "decode.txt", txt.Bytes())
	golden(t, "decode.json", js.Bytes())
}

// TestJSONDocumented: docs/json.md names every key a layer object can have.
func TestJSONDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	lists := [][]layers.Field{(&layers.LRH{}).Fields(), (&layers.GRH{}).Fields(), (&layers.BTH{}).Fields(),
		(&layers.DETH{}).Fields(), (&layers.MAD{}).Fields(), (&layers.IPCMHeader{}).Fields()}
	for a := uint16(layers.AttrREQ); a <= layers.AttrAPR; a++ {
		lists = append(lists, layers.NewCMMessage(a).Fields())
	}
	for _, fs := range lists {
		for _, f := range fs {
			if !strings.Contains(doc, "| `"+f.Key+"` | "+f.Name+" |") {
				t.Errorf("docs/json.md does not list key %q (%s)", f.Key, f.Name)
			}
		}
	}
}
