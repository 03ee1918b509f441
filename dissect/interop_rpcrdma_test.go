package dissect_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The RPC-over-RDMA oracle: on every crafted data-path capture (the NFS
// exchange with and without each finding, over RoCEv2, RoCEv1 and native
// InfiniBand), tshark's rpcordma dissector and ours must find the same
// RPC-over-RDMA messages and agree on every rpcordma field.
//
// tshark 4.0.17 finds RPC-over-RDMA by its heuristic on each Send, and
// reassembles multi-packet Sends, showing the header at the Last packet
// like our records. Its quirks, handled here rather than copied:
//   - rpcordma.reassembled.length counts the last packet's pad octets (3004
//     for a 3001-octet Send): compared as our length plus the pad;
//   - on an RDMA_NOMSG Reply, rpcordma.reassembled.length is the long Reply
//     it gathered from the RDMA WRITEs into the reply chunk, not the Send:
//     not compared there;
//   - reads_count counts read segments, writes_count write chunks,
//     reply_count 0 or 1; segment_count lists the write and reply chunks'
//     counts; position, rdma_handle, rdma_length and rdma_offset list every
//     segment, the read list's first;
//   - a Call whose RPC XID differs from rdma_xid fails tshark's heuristic:
//     it shows no rpcordma at all there, where we report
//     rpcrdma-header-invalid (the connection's setup says it is
//     RPC-over-RDMA).

var rpcordmaFields = []string{"frame.number", "infiniband.bth.padcnt", "rpcordma.xid", "rpcordma.version",
	"rpcordma.flow_control", "rpcordma.msg_type", "rpcordma.reads_count", "rpcordma.writes_count", "rpcordma.reply_count",
	"rpcordma.segment_count", "rpcordma.position", "rpcordma.rdma_handle", "rpcordma.rdma_length", "rpcordma.rdma_offset",
	"rpcordma.errcode", "rpcordma.vers_low", "rpcordma.vers_high", "rpcordma.reassembled.length", "infiniband.ieth"}

func TestInteropRPCRDMA(t *testing.T) {
	tshark, traffic := oracleSetup(t)
	for _, tr := range dpTransports {
		for _, fs := range traffic {
			name := string(tr) + " " + strings.Join(fs, ",")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				frames := nfs(t, bothR(tr), craft.Traffic{Findings: fs})
				file := filepath.Join(t.TempDir(), "o.pcap")
				if err := craft.WriteFile(file, frames); err != nil {
					t.Fatal(err)
				}
				rpcOracle(t, tshark, file, frames, false)
			})
		}
	}
}

// The same oracle over iWARP (craft.IWARPExchange.NFSTraffic, with and
// without markers): tshark finds RPC-over-RDMA in RDMAP Send and Send with
// Invalidate messages, at the segment that completes a Send in several DDP
// segments, like our records. Its iWARP quirks: the invalidated STag is
// iwarp_rdma.inval_stag (decimal); a Send in several DDP segments gets no
// rpcordma.reassembled.length, so lengths are not compared; it does not
// try Sends with Solicited Event (opcodes 5 and 6), which craft does not
// write here.
var rpcordmaFieldsIWARP = []string{"frame.number", "rpcordma.xid", "rpcordma.version",
	"rpcordma.flow_control", "rpcordma.msg_type", "rpcordma.reads_count", "rpcordma.writes_count", "rpcordma.reply_count",
	"rpcordma.segment_count", "rpcordma.position", "rpcordma.rdma_handle", "rpcordma.rdma_length", "rpcordma.rdma_offset",
	"rpcordma.errcode", "rpcordma.vers_low", "rpcordma.vers_high", "iwarp_rdma.inval_stag"}

func TestInteropRPCRDMAIWARP(t *testing.T) {
	tshark, traffic := oracleSetup(t)
	for _, markers := range []bool{false, true} {
		for _, fs := range traffic {
			name := fmt.Sprintf("markers=%v %s", markers, strings.Join(fs, ","))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				x := bothRIWARP()
				x.InitiatorMarkers, x.ResponderMarkers = markers, markers
				frames := iwNFS(t, x, craft.Traffic{Findings: fs})
				file := filepath.Join(t.TempDir(), "o.pcap")
				if err := craft.WriteFile(file, frames); err != nil {
					t.Fatal(err)
				}
				rpcOracle(t, tshark, file, frames, true)
			})
		}
	}
}

// oracleSetup finds tshark (or skips) and lists the traffic each oracle
// test crafts: none of the findings, each alone, and all together.
func oracleSetup(t *testing.T) (string, [][]string) {
	t.Helper()
	tshark, err := lookTshark()
	if err != nil {
		t.Skip("tshark not found (apt-get install tshark): the oracle test needs it")
	}
	traffic := [][]string{nil}
	for _, f := range craft.DatapathFindings {
		traffic = append(traffic, []string{f})
	}
	return tshark, append(traffic, craft.DatapathFindings)
}

func rpcOracle(t *testing.T, tshark, file string, frames []craft.Frame, iwarp bool) {
	c := runDatapathFrames(t, datapath.ModeAll, frames)
	ours := map[int]*record.RPC{}
	for _, r := range c.rpcs {
		ours[r.Frame] = r
	}
	theirs := map[int]map[string]string{}
	fields := rpcordmaFields
	if iwarp {
		fields = rpcordmaFieldsIWARP
	}
	for _, row := range tsharkRows(t, tshark, file, "rpcordma", fields) {
		n, _ := strconv.Atoi(row["frame.number"])
		theirs[n] = row
	}
	compared := 0
	var frameNos []int
	for n := range ours {
		frameNos = append(frameNos, n)
	}
	sort.Ints(frameNos)
	for _, n := range frameNos {
		r := ours[n]
		row := theirs[n]
		if row == nil {
			if firstCode(r.Findings) == "rpcrdma-header-invalid" && r.Header != nil && r.Header.Proc == layers.RPCRDMAMsg {
				continue // tshark's heuristic refuses what the setup tells us is RPC-over-RDMA
			}
			t.Errorf("frame %d: tshark decodes no rpcordma, we have %s", n, rpcSummaryOf(r))
			continue
		}
		delete(theirs, n)
		compared++
		h := r.Header
		want := map[string]string{
			"rpcordma.xid": fmt.Sprintf("0x%08x", h.XID), "rpcordma.version": fmt.Sprint(h.Vers),
			"rpcordma.flow_control": fmt.Sprint(h.Credits), "rpcordma.msg_type": fmt.Sprint(h.Proc),
		}
		if h.Proc != layers.RPCRDMAError {
			var seg, pos, handle, length, offset []string
			for _, s := range h.ReadList {
				pos = append(pos, fmt.Sprint(s.Position))
				handle, length, offset = appendSeg(handle, length, offset, s.Segment)
			}
			for _, ch := range h.WriteList {
				seg = append(seg, fmt.Sprint(len(ch)))
				for _, s := range ch {
					handle, length, offset = appendSeg(handle, length, offset, s)
				}
			}
			reply := "0"
			if h.HasReplyChunk {
				reply = "1"
				seg = append(seg, fmt.Sprint(len(h.ReplyChunk)))
				for _, s := range h.ReplyChunk {
					handle, length, offset = appendSeg(handle, length, offset, s)
				}
			}
			want["rpcordma.reads_count"] = fmt.Sprint(len(h.ReadList))
			want["rpcordma.writes_count"] = fmt.Sprint(len(h.WriteList))
			want["rpcordma.reply_count"] = reply
			want["rpcordma.segment_count"] = strings.Join(seg, ",")
			want["rpcordma.position"] = strings.Join(pos, ",")
			want["rpcordma.rdma_handle"] = strings.Join(handle, ",")
			want["rpcordma.rdma_length"] = strings.Join(length, ",")
			want["rpcordma.rdma_offset"] = strings.Join(offset, ",")
		} else {
			want["rpcordma.errcode"] = fmt.Sprint(h.Error.Code)
			if h.Error.HasRange {
				want["rpcordma.vers_low"], want["rpcordma.vers_high"] = fmt.Sprint(h.Error.Low), fmt.Sprint(h.Error.High)
			}
		}
		if len(r.Frames) > 1 && h.Proc != layers.RPCRDMANoMsg && !iwarp {
			pad, _ := strconv.Atoi(row["infiniband.bth.padcnt"])
			want["rpcordma.reassembled.length"] = fmt.Sprint(r.Length + pad)
		}
		switch {
		case r.Invalidate && iwarp:
			want["iwarp_rdma.inval_stag"] = fmt.Sprint(r.InvalidateRKey)
		case r.Invalidate:
			want["infiniband.ieth"] = fmt.Sprintf("%08x", r.InvalidateRKey)
		}
		for k, v := range want {
			got := row[k]
			if k == "infiniband.ieth" {
				got, _, _ = strings.Cut(got, ",") // tshark prints it twice
			}
			if got != v {
				t.Errorf("frame %d: %s: tshark %q, ours %q", n, k, got, v)
			}
		}
	}
	for n := range theirs {
		t.Errorf("frame %d: tshark decodes rpcordma (xid %s), we have no record", n, theirs[n]["rpcordma.xid"])
	}
	if compared < 10 {
		t.Errorf("only %d messages compared", compared)
	}
	t.Logf("%d RPC-over-RDMA messages compared field by field with tshark", compared)
}

func appendSeg(handle, length, offset []string, s record.Segment) ([]string, []string, []string) {
	return append(handle, fmt.Sprintf("0x%08x", s.Handle)), append(length, fmt.Sprint(s.Length)),
		append(offset, fmt.Sprintf("0x%016x", s.Offset))
}

func firstCode(fs []finding.Finding) string {
	if len(fs) == 0 {
		return ""
	}
	return fs[0].Code.String()
}

func rpcSummaryOf(r *record.RPC) string {
	if r.Header == nil {
		return "a Send without a header"
	}
	return fmt.Sprintf("%s xid 0x%08x", layers.RPCRDMAProcName(r.Header.Proc), r.Header.XID)
}

// tsharkRows runs tshark with a display filter and reads the fields of
// every frame it keeps.
func tsharkRows(t *testing.T, tshark, file, filter string, fields []string) []map[string]string {
	t.Helper()
	input, opts := interopTsharkInput(t, file)
	args := append([]string{"-n", "-r", input}, opts...)
	args = append(args, "-Y", filter, "-T", "fields", "-E", "separator=|", "-E", "header=n")
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tshark, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) != len(fields) {
			t.Fatalf("tshark printed %d columns, want %d: %q", len(cols), len(fields), line)
		}
		row := map[string]string{}
		for i, f := range fields {
			row[f] = cols[i]
		}
		rows = append(rows, row)
	}
	return rows
}
