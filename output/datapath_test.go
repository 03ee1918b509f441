package output_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// The data path's records in every format: the rpc lines and their tree,
// the JSON "rpc" records and "datapath" objects, the connection tables with
// the figures beside their thresholds, the Markdown report.

// datapathCapture writes an NFS-like exchange with every data-path finding
// over RoCEv2, and a second connection whose traffic raises none.
func datapathCapture(t *testing.T) string {
	t.Helper()
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: p, Responder: p}
	frames, err := x.NFSTraffic(craft.Traffic{Findings: craft.DatapathFindings})
	if err != nil {
		t.Fatal(err)
	}
	y := craft.Exchange{Transport: craft.RoCEv2, Index: 1, Initiator: p, Responder: craft.Peer{SendSize: 8192, ReceiveSize: 8192}}
	clean, err := y.NFSTraffic(craft.Traffic{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := frames[len(frames)-1].Time
	for i := range clean {
		clean[i].Time = t0.Add(clean[i].Time.Sub(craft.DefaultStart))
	}
	path := filepath.Join(t.TempDir(), "datapath.pcap")
	if err := craft.WriteFile(path, append(frames, clean...)); err != nil {
		t.Fatal(err)
	}
	return path
}

// renderDP renders with the data path in mode.
func renderDP(t *testing.T, opts output.Options, mode datapath.Mode, files ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	r, err := output.New(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dissect.Run(context.Background(), files, nil, dissect.Config{Hash: true, Datapath: mode}, renamer{r}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestGoldenDatapath(t *testing.T) {
	dp := datapathCapture(t)
	md := output.Options{Format: output.Markdown, Version: "v0.0.0-test", Command: "rdmacm-pd dissect -T markdown datapath.pcap"}
	cases := []struct {
		name string
		opts output.Options
		mode datapath.Mode
	}{
		{"datapath.txt", output.Options{Format: output.Text}, datapath.ModeFindings},
		{"datapath-all-V.txt", output.Options{Format: output.Text, Verbose: true}, datapath.ModeAll},
		{"datapath-color.txt", output.Options{Format: output.Text, Color: true}, datapath.ModeFindings},
		{"datapath-q.txt", output.Options{Format: output.Text, Quiet: true}, datapath.ModeFindings},
		{"datapath.json", output.Options{Format: output.JSON}, datapath.ModeAll},
		{"datapath.md", md, datapath.ModeFindings},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderDP(t, tc.opts, tc.mode, dp)
			if tc.opts.Color != bytes.Contains(got, []byte("\x1b[")) {
				t.Errorf("escape sequences %v with colour %v", !tc.opts.Color, tc.opts.Color)
			}
			golden(t, tc.name, got)
		})
	}
}

// iwarpDatapathCapture writes an iWARP NFS-like exchange with every
// data-path finding and every iWARP one (MPA revision 2, markers towards
// the responder, CRC).
func iwarpDatapathCapture(t *testing.T) string {
	t.Helper()
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p}
	frames, err := x.NFSTraffic(craft.Traffic{Findings: append(slices.Clone(craft.DatapathFindings), craft.IWARPFindings...)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "iwarp-datapath.pcap")
	if err := craft.WriteFile(path, frames); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGoldenDatapathIWARP(t *testing.T) {
	iw := iwarpDatapathCapture(t)
	md := output.Options{Format: output.Markdown, Version: "v0.0.0-test", Command: "rdmacm-pd dissect -T markdown iwarp-datapath.pcap"}
	for _, tc := range []struct {
		name string
		opts output.Options
		mode datapath.Mode
	}{
		{"iwarp-datapath.txt", output.Options{Format: output.Text}, datapath.ModeFindings},
		{"iwarp-datapath-q.txt", output.Options{Format: output.Text, Quiet: true}, datapath.ModeFindings},
		{"iwarp-datapath-all-V.txt", output.Options{Format: output.Text, Verbose: true}, datapath.ModeAll},
		{"iwarp-datapath.json", output.Options{Format: output.JSON}, datapath.ModeAll},
		{"iwarp-datapath.md", md, datapath.ModeFindings},
	} {
		t.Run(tc.name, func(t *testing.T) { golden(t, tc.name, renderDP(t, tc.opts, tc.mode, iw)) })
	}
}

// TestJSONShapeDatapath checks the public contract of the data path's JSON:
// exactly these keys, with these types.
func TestJSONShapeDatapath(t *testing.T) {
	got := renderDP(t, output.Options{Format: output.JSON}, datapath.ModeAll, datapathCapture(t))
	rpcKeys := []string{"record", "file", "frame", "frames", "time", "transport", "src", "dst", "connection", "direction",
		"opcode", "length", "rpcrdma_header", "warnings"}
	headerKeys := []string{"xid", "vers", "credits", "proc", "read_list", "write_list", "reply_chunk"}
	dpKeys := []string{"rpc_messages", "largest_inline", "send_with_invalidate", "max_outstanding_calls", "credits_granted",
		"rdma_read_limit", "max_outstanding_rdma_reads", "frames", "rpc_procedures", "nfs_operations", "unanswered_calls",
		"reverse_calls", "long_messages", "inline_threshold_needed", "explicit_rdma_octets", "chunk_violations", "acks", "naks",
		"rnr_naks", "retransmitted_packets", "missing_packets", "cnps", "ecn_ce", "octets", "retransmit_delay", "dscp", "fecn", "becn"}
	// An rpc_message's keys: those always there, and those that may be.
	msgAlways := []string{"type", "xid", "carried_in"}
	msgMay := []string{"program", "program_name", "version", "procedure", "procedure_name", "operations", "operations_end",
		"minor_version", "auth_flavor", "auth_service", "encrypted", "reply_status", "accept_status", "reject_status",
		"auth_status", "nfs_status", "reply_frame", "call_frame", "response_time"}
	var rpcs, conns, withInv, withErr, withSegs, calls, replies int
	defer func() {
		if calls == 0 || replies == 0 {
			t.Errorf("%d calls, %d replies named", calls, replies)
		}
	}()
	for i, line := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		switch rec["record"] {
		case "rpc":
			rpcs++
			want := rpcKeys
			if _, ok := rec["invalidate_rkey"]; ok {
				want = append(want, "invalidate_rkey")
				withInv++
				if _, ok := rec["invalidate_rkey"].(float64); !ok || !strings.Contains(rec["opcode"].(string), "INVALIDATE") {
					t.Errorf("line %d: invalidate_rkey %v on %v", i+1, rec["invalidate_rkey"], rec["opcode"])
				}
			}
			if m, ok := rec["rpc_message"].(map[string]any); ok {
				want = append(want, "rpc_message")
				for _, k := range msgAlways {
					if _, ok := m[k]; !ok {
						t.Errorf("line %d: rpc_message without %s", i+1, k)
					}
				}
				for k := range m {
					if !slices.Contains(msgAlways, k) && !slices.Contains(msgMay, k) {
						t.Errorf("line %d: rpc_message key %s", i+1, k)
					}
				}
				switch m["type"] {
				case "call":
					calls++
					if m["program_name"] != "NFS" || m["auth_flavor"] == nil || m["reply_status"] != nil {
						t.Errorf("line %d: call %v", i+1, m)
					}
				case "reply":
					replies++
					if _, ok := m["call_frame"].(float64); !ok || m["reply_status"] != "MSG_ACCEPTED" || m["auth_flavor"] != nil {
						t.Errorf("line %d: reply %v", i+1, m)
					}
				}
			}
			exactKeys(t, i+1, rec, want)
			if _, ok := rec["connection"].(float64); !ok || rec["direction"] == nil {
				t.Errorf("line %d: connection %v, direction %v", i+1, rec["connection"], rec["direction"])
			}
			h := rec["rpcrdma_header"].(map[string]any)
			want = headerKeys
			if _, ok := h["error"]; ok {
				want = append(want, "error")
				withErr++
				e := h["error"].(map[string]any)
				exactKeys(t, i+1, e, []string{"code", "low", "high"})
			}
			exactKeys(t, i+1, h, want)
			for _, s := range h["read_list"].([]any) {
				withSegs++
				exactKeys(t, i+1, s.(map[string]any), []string{"position", "handle", "length", "offset"})
			}
			for _, c := range h["write_list"].([]any) {
				for _, s := range c.([]any) {
					withSegs++
					seg := s.(map[string]any)
					exactKeys(t, i+1, seg, []string{"handle", "length", "offset"})
					if off, _ := seg["offset"].(string); len(off) != 18 || !strings.HasPrefix(off, "0x") {
						t.Errorf("line %d: offset %v", i+1, seg["offset"])
					}
				}
			}
		case "connection":
			conns++
			d, ok := rec["datapath"].(map[string]any)
			if !ok {
				t.Fatalf("line %d: datapath %v", i+1, rec["datapath"])
			}
			exactKeys(t, i+1, d, dpKeys)
			for _, k := range []string{"rpc_messages", "largest_inline", "rdma_read_limit", "max_outstanding_rdma_reads", "acks", "naks",
				"rnr_naks", "retransmitted_packets", "missing_packets", "cnps", "ecn_ce", "octets", "retransmit_delay", "fecn", "becn"} {
				exactKeys(t, i+1, d[k].(map[string]any), []string{"initiator_to_responder", "responder_to_initiator"})
			}
			for _, p := range d["rpc_procedures"].([]any) {
				exactKeys(t, i+1, p.(map[string]any), []string{"program", "program_name", "version", "procedure", "procedure_name",
					"calls", "replies", "errors", "nfs_errors", "response_time"})
				if rt, ok := p.(map[string]any)["response_time"].(map[string]any); ok {
					exactKeys(t, i+1, rt, []string{"min", "mean", "max"})
				}
			}
		case "summary":
			if rec["rpc_messages"].(float64) == 0 {
				t.Errorf("summary %v", rec)
			}
			if _, ok := rec["datapath_frames_without_connection"].(float64); !ok {
				t.Error("no datapath_frames_without_connection in the summary")
			}
		}
	}
	if rpcs < 20 || conns != 2 || withInv == 0 || withErr != 1 || withSegs == 0 {
		t.Errorf("%d rpc records (%d invalidating, %d errors, %d segments), %d connections", rpcs, withInv, withErr, withSegs, conns)
	}
}

func exactKeys(t *testing.T, line int, m map[string]any, want []string) {
	t.Helper()
	if len(m) != len(want) {
		t.Errorf("line %d: keys %v, want %v", line, keysOf(m), want)
		return
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("line %d: no key %q (has %v)", line, k, keysOf(m))
		}
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The Markdown verdict and table name the worst finding of a connection's
// rpc records too: here its only finding is a warning on one of them.
func TestMarkdownWorstOfRPC(t *testing.T) {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: p, Responder: p}
	frames, err := x.NFSTraffic(craft.Traffic{Findings: []string{"credits-exceeded"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "credits.pcap")
	if err := craft.WriteFile(path, frames); err != nil {
		t.Fatal(err)
	}
	got := string(renderDP(t, output.Options{Format: output.Markdown, Version: "v0.0.0-test", Command: "x"}, datapath.ModeFindings, path))
	verdict, _, _ := strings.Cut(got, "\n\nGenerated by")
	if !strings.Contains(verdict, "worst finding: warning `credits-exceeded`") {
		t.Errorf("verdict:\n%s", verdict)
	}
}

// The data-path table says what decided that a connection carries
// RPC-over-RDMA: here no RFC 8797 data and another port, so its first
// Sends (the heuristic), beneath the table.
func TestDatapathRuleShown(t *testing.T) {
	x := craft.Exchange{Transport: craft.RoCEv2, ServiceID: 0x0000000001060000 | 7471,
		Initiator: craft.Peer{Absent: true}, Responder: craft.Peer{Absent: true}}
	frames, err := x.NFSTraffic(craft.Traffic{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "heuristic.pcap")
	if err := craft.WriteFile(path, frames); err != nil {
		t.Fatal(err)
	}
	text := string(renderDP(t, output.Options{Format: output.Text}, datapath.ModeFindings, path))
	if !strings.Contains(text, "\n  RPC-over-RDMA by heuristic: first Sends parse as RPC-over-RDMA: 1\n") {
		t.Errorf("text:\n%s", text)
	}
	md := string(renderDP(t, output.Options{Format: output.Markdown, Version: "v", Command: "x"}, datapath.ModeFindings, path))
	if !strings.Contains(md, "\nRPC-over-RDMA by heuristic: first Sends parse as RPC-over-RDMA: 1.\n") {
		t.Errorf("markdown:\n%s", md)
	}
}

// recordsFirst writes `craft --flood records-first` of n connections and
// returns its path.
func recordsFirst(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "records-first.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := craft.Flood(f, craft.FloodRecordsFirst, n); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGoldenUpdates: connection records handed on before their traffic
// (at --max-connections 1, and live) are followed by updates that carry
// every finding, in every format.
func TestGoldenUpdates(t *testing.T) {
	path := recordsFirst(t, 3)
	md := output.Options{Format: output.Markdown, Version: "v0.0.0-test", Command: "rdmacm-pd dissect -T markdown --max-connections 1 records-first.pcap"}
	cases := []struct {
		name string
		opts output.Options
		cfg  dissect.Config
	}{
		{"updates.txt", output.Options{Format: output.Text}, dissect.Config{MaxConnections: 1}},
		{"updates-q.txt", output.Options{Format: output.Text, Quiet: true}, dissect.Config{MaxConnections: 1}},
		{"updates-live.txt", output.Options{Format: output.Text, Live: true}, dissect.Config{Live: true}},
		{"updates.json", output.Options{Format: output.JSON, Quiet: true}, dissect.Config{MaxConnections: 1}},
		{"updates.md", md, dissect.Config{MaxConnections: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			r, err := output.New(&out, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			tc.cfg.Hash = true
			if _, err := dissect.Run(context.Background(), []string{path}, nil, tc.cfg, renamer{r}); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(out.String(), "rdma-read-limit-exceeded"); n < 3 {
				t.Errorf("rdma-read-limit-exceeded shown %d times, want every one of the 3", n)
			}
			golden(t, tc.name, out.Bytes())
		})
	}
}

// TestSelectUpdates: -Y passes on the update of a connection it showed, and
// one whose late findings it selects although its record was not shown.
func TestSelectUpdates(t *testing.T) {
	path := recordsFirst(t, 3)
	for _, tc := range []struct {
		expr    string
		updates int
	}{
		{"severity >= error", 2}, // the records (no finding yet) are not shown; the updates are
		{"conn == 1", 1},         // the record of connection 1 is shown, so is its update
		{"conn == 3", 0},         // connection 3's record is handed on last, with its finding: no update
		{"state == rejected", 0},
	} {
		sel, err := output.ParseSelection(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		r, err := output.New(&out, output.Options{Format: output.JSON, Quiet: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{MaxConnections: 1}, sel.Filter(r)); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if n := strings.Count(out.String(), `"record":"connection_update"`); n != tc.updates {
			t.Errorf("-Y %q: %d updates, want %d:\n%s", tc.expr, n, tc.updates, out.String())
		}
	}
}

// TestSelectRPC: an rpc record has the conn of its connection (none
// without the setup), the selection counts rpc records, and NamesRPC
// finds msg == RPC anywhere in the expression.
func TestSelectRPC(t *testing.T) {
	recs := []*record.RPC{{Frame: 5, Conn: 2}, {Frame: 6, Conn: 3}, {Frame: 7}}
	for _, tc := range []struct {
		expr  string
		shown []int
		names bool
	}{
		{"conn == 2", []int{5}, false},
		{"conn", []int{5, 6}, false},
		{"not conn", []int{7}, false},
		{"msg == RPC and conn >= 3", []int{6}, true},
		{"frame == 1 or not (msg == rpc)", nil, true},
		{"msg == REQ", nil, false},
	} {
		sel, err := output.ParseSelection(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		var shown []int
		sink := sel.Filter(rpcFrames{&shown})
		for _, r := range recs {
			sink.RPC(r)
		}
		n := sel.Counts()
		if !slices.Equal(shown, tc.shown) || n.RPCs != 3 || n.ShownRPCs != len(tc.shown) || sel.NamesRPC() != tc.names {
			t.Errorf("%s: shown %v, counts %+v, names RPC %v", tc.expr, shown, n, sel.NamesRPC())
		}
	}
}

// rpcFrames notes the frames of the rpc records it gets.
type rpcFrames struct{ frames *[]int }

func (rpcFrames) Message(*record.Message) error         { return nil }
func (rpcFrames) Connection(*record.Connection) error   { return nil }
func (rpcFrames) Update(*record.ConnectionUpdate) error { return nil }
func (rpcFrames) Summary(*record.Summary) error         { return nil }
func (r rpcFrames) RPC(rec *record.RPC) error           { *r.frames = append(*r.frames, rec.Frame); return nil }

// TestSelectRPCFields: prog, proc, op, xid and rpc_status select rpc
// records by their RPC message; other records have none of them.
func TestSelectRPCFields(t *testing.T) {
	call := &record.RPC{Frame: 5, Message: &record.RPCMessage{Type: "call", XID: 0x5f000001, HasProgram: true, Program: 100003,
		ProgramName: "NFS", Version: 4, Procedure: 1, ProcedureName: "COMPOUND", Operations: []string{"SEQUENCE", "PUTFH", "READ"}}}
	reply := &record.RPC{Frame: 6, Message: &record.RPCMessage{Type: "reply", XID: 0x5f000001, HasProgram: true, Program: 100003,
		ProgramName: "NFS", Version: 4, Procedure: 1, ProcedureName: "COMPOUND", Operations: []string{"SEQUENCE", "PUTFH"},
		ReplyStatus: "MSG_ACCEPTED", AcceptStatus: "SUCCESS", NFSStatus: "NFS4ERR_STALE"}}
	nomsg := &record.RPC{Frame: 7, Header: &record.RPCRDMAHeader{XID: 0x5f000002}}
	for _, tc := range []struct {
		expr  string
		shown []int
	}{
		{"prog == nfs", []int{5, 6}},
		{"prog == 100003 and proc == 1", []int{5, 6}},
		{"op == READ", []int{5}},
		{"op == putfh", []int{5, 6}},
		{"rpc_status == NFS4ERR_STALE", []int{6}},
		{"xid == 0x5f000001", []int{5, 6}},
		{"xid == 1593835522", []int{7}}, // the transport header's, without an RPC message
		{"prog", []int{5, 6}},
		{"not rpc_status", []int{5, 7}},
	} {
		sel, err := output.ParseSelection(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		var shown []int
		sink := sel.Filter(rpcFrames{&shown})
		for _, r := range []*record.RPC{call, reply, nomsg} {
			sink.RPC(r)
		}
		sink.Message(&record.Message{Frame: 1, Kind: record.KindREQ})
		if !slices.Equal(shown, tc.shown) {
			t.Errorf("%s: shown %v, want %v", tc.expr, shown, tc.shown)
		}
	}
	if _, err := output.ParseSelection("xid == 0x1ffffffff"); err == nil {
		t.Error("an XID past 32 bits was taken")
	}
}
