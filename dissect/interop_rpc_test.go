package dissect_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// The RPC oracle: on every crafted capture with RPC traffic (RoCEv2,
// RoCEv1, native InfiniBand and iWARP; the NFS exchange with and without
// each finding), tshark's rpc and nfs dissectors and our rpc records must
// name the same Calls and Replies, field by field.
//
// tshark 4.0.17 runs two passes (-2) so that a Call knows its Reply. Its
// quirks, handled here rather than copied:
//   - on a Call, the frame of its Reply is in rpc.reqframe, and on a Reply
//     the frame of its Call in rpc.repframe (the names are the other way
//     round from what they show);
//   - rpc.programversion is listed twice (the RPC header's and the
//     program's own): the first is compared;
//   - a Call whose arguments it gathers from a read chunk (a WRITE's data
//     moved by RDMA Read) it shows on the frame of the last RDMA Read
//     Response, not on the Send: the pairing frames and the time are then
//     not compared, the names and XID are;
//   - a Reply with write chunks it may show twice in one frame (the
//     second time with the chunk's data): the first row of an XID and
//     type is the one compared;
//   - it cannot name a Reply whose Call is not in the capture;
//   - a Call whose RPC XID differs from rdma_xid fails its rpcordma
//     heuristic (see TestInteropRPCRDMA): no rpc there, where we name the
//     message and raise rpcrdma-header-invalid;
//   - over iWARP it does not put together a Send of several DDP segments
//     for the RPC layer: no rpc there;
//   - a Long Call (RDMA_NOMSG, its message in a position-zero read chunk)
//     it names on the frame of the chunk's last Read Response, a Long
//     Reply on the RDMA_NOMSG: compared by XID; where our decode kept only
//     the first octets of a long operation list (operations_end set), ours
//     must be the start of tshark's;
//   - rpc.auth.flavor is listed twice on a Call (the credential's and the
//     verifier's): the first is compared.
var rpcOracleFields = []string{"frame.number", "rpc.xid", "rpc.msgtyp", "rpc.program", "rpc.programversion", "rpc.procedure",
	"rpc.reqframe", "rpc.repframe", "rpc.time", "nfs.opcode", "nfs.status3", "nfs.nfsstat4", "rpc.auth.flavor"}

func TestInteropRPC(t *testing.T) {
	tshark, traffic := oracleSetup(t)
	type capture struct {
		name   string
		frames func(t *testing.T) []craft.Frame
	}
	var caps []capture
	for _, fs := range traffic {
		for _, tr := range dpTransports {
			caps = append(caps, capture{string(tr) + " " + strings.Join(fs, ","), func(t *testing.T) []craft.Frame {
				return nfs(t, bothR(tr), craft.Traffic{Findings: fs})
			}})
		}
		caps = append(caps, capture{"iwarp " + strings.Join(fs, ","), func(t *testing.T) []craft.Frame {
			return iwNFS(t, bothRIWARP(), craft.Traffic{Findings: fs})
		}})
	}
	// Long Calls and Long Replies, and the chunk violations, on the
	// InfiniBand family.
	for _, tr := range dpTransports {
		for _, lc := range []struct {
			name string
			t    craft.Traffic
		}{
			{"long", craft.Traffic{Long: true}},
			{"long nfs3", craft.Traffic{Long: true, NFSVersion: craft.NFSv3}},
			{"long nfs4", craft.Traffic{Long: true, NFSVersion: craft.NFSv4}},
			{"inline-threshold-too-small", craft.Traffic{Findings: []string{"inline-threshold-too-small"}}},
			{"chunk-violation", craft.Traffic{Findings: []string{"chunk-violation"}}},
		} {
			caps = append(caps, capture{string(tr) + " " + lc.name, func(t *testing.T) []craft.Frame {
				return nfs(t, bothR(tr), lc.t)
			}})
		}
	}
	for _, c := range caps {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			frames := c.frames(t)
			file := filepath.Join(t.TempDir(), "o.pcap")
			if err := craft.WriteFile(file, frames); err != nil {
				t.Fatal(err)
			}
			rpcMessageOracle(t, tshark, file, frames)
		})
	}
}

// rpcMessageOracle compares our rpc records' RPC messages with tshark's
// rpc rows of the same XID and type.
func rpcMessageOracle(t *testing.T, tshark, file string, frames []craft.Frame) {
	t.Helper()
	c := runDatapathFrames(t, datapath.ModeAll, frames)
	type key struct {
		xid  string
		call bool
	}
	theirs := map[key]map[string]string{}
	for _, row := range tsharkRows2(t, tshark, file, "rpc", rpcOracleFields) {
		for i, xid := range strings.Split(row["rpc.xid"], ",") {
			k := key{xid, strings.Split(row["rpc.msgtyp"], ",")[i] == "0"}
			if _, ok := theirs[k]; !ok {
				theirs[k] = row
			}
		}
	}
	ourFrame := map[key]int{}
	for _, r := range c.rpcs {
		if m := r.Message; m != nil {
			ourFrame[key{fmt.Sprintf("0x%08x", m.XID), m.Type == "call"}] = r.Frame
		}
	}
	compared, long := 0, 0
	for _, r := range c.rpcs {
		m := r.Message
		if m == nil {
			continue
		}
		k := key{fmt.Sprintf("0x%08x", m.XID), m.Type == "call"}
		row := theirs[k]
		if row == nil {
			switch {
			case m.Type == "reply" && !m.HasProgram:
				continue // tshark cannot name a Reply whose Call it did not see either
			case firstCode(r.Findings) == "rpcrdma-header-invalid":
				continue // its heuristic refuses the message
			case r.Transport == record.IWARP && len(r.Frames) > 1:
				continue // a Send of several DDP segments
			}
			t.Errorf("frame %d: tshark has no %s of XID %s", r.Frame, m.Type, k.xid)
			continue
		}
		compared++
		first := func(f string) string { return strings.Split(row[f], ",")[0] }
		if m.HasProgram {
			if got := fmt.Sprintf("%d/%d/%d", m.Program, m.Version, m.Procedure); got != first("rpc.program")+"/"+first("rpc.programversion")+"/"+first("rpc.procedure") {
				t.Errorf("frame %d: program/version/procedure %s, tshark %s/%s/%s", r.Frame, got, row["rpc.program"],
					row["rpc.programversion"], row["rpc.procedure"])
			}
		}
		var ops []string
		for _, op := range m.Operations {
			ops = append(ops, opNumber(op))
		}
		got := strings.Join(ops, ",")
		if m.OpsEnd != "" && strings.HasPrefix(row["nfs.opcode"]+",", got+",") {
			got = row["nfs.opcode"] // the start of tshark's list: as far as ours went
		}
		if got != row["nfs.opcode"] && m.Operations != nil {
			t.Errorf("frame %d: operations %v (%s), tshark %s", r.Frame, m.Operations, got, row["nfs.opcode"])
		}
		if n, err := strconv.Atoi(first("rpc.auth.flavor")); m.Type == "call" && (err != nil || oncrpc.AuthFlavorName(uint32(n)) != m.AuthFlavor) {
			t.Errorf("frame %d: auth flavor %s, tshark %s", r.Frame, m.AuthFlavor, row["rpc.auth.flavor"])
		}
		if m.CarriedIn != "send" {
			long++
		}
		if m.NFSStatus != "" {
			st := first("nfs.status3")
			name := ""
			if n, err := strconv.Atoi(st); err == nil {
				name = oncrpc.NFS3StatusName(uint32(n))
			}
			if n, err := strconv.Atoi(first("nfs.nfsstat4")); err == nil {
				name = oncrpc.NFS4StatusName(uint32(n))
			}
			if name != m.NFSStatus {
				t.Errorf("frame %d: NFS status %s, tshark %s/%s", r.Frame, m.NFSStatus, row["nfs.status3"], row["nfs.nfsstat4"])
			}
		}
		// The pairing, where tshark shows the Call on the same frame as we
		// do.
		callFrame := ourFrame[key{k.xid, true}]
		if first("frame.number") != strconv.Itoa(r.Frame) && m.Type == "call" {
			continue // a Call gathered from a read chunk: shown where the chunk ended
		}
		if m.Type == "call" {
			if m.ReplyFrame != 0 && strconv.Itoa(m.ReplyFrame) != row["rpc.reqframe"] {
				t.Errorf("frame %d: reply frame %d, tshark %s", r.Frame, m.ReplyFrame, row["rpc.reqframe"])
			}
			continue
		}
		if callFrame == 0 || theirs[key{k.xid, true}] == nil || theirs[key{k.xid, true}]["frame.number"] != strconv.Itoa(callFrame) {
			continue
		}
		if strconv.Itoa(m.CallFrame) != row["rpc.repframe"] {
			t.Errorf("frame %d: call frame %d, tshark %s", r.Frame, m.CallFrame, row["rpc.repframe"])
		}
		if want := fmt.Sprintf("%.9f", m.ResponseTime.Seconds()); m.HasResponseTime && want != first("rpc.time") {
			t.Errorf("frame %d: response time %s, tshark %s", r.Frame, want, row["rpc.time"])
		}
	}
	if compared == 0 {
		t.Error("no RPC message compared")
	}
	// Every long message craft wrote was compared.
	want := 0
	for _, r := range c.rpcs {
		if m := r.Message; m != nil && m.CarriedIn != "send" {
			want++
		}
	}
	if long != want {
		t.Errorf("%d of %d long messages compared", long, want)
	}
}

// opNumber is the opcode an operation name stands for.
func opNumber(name string) string {
	for op := uint32(0); op < 80; op++ {
		if oncrpc.OpName(op) == name || oncrpc.CBOpName(op) == name {
			return strconv.Itoa(int(op))
		}
	}
	if oncrpc.OpName(10044) == name || oncrpc.CBOpName(10044) == name {
		return "10044"
	}
	return name
}

// tsharkRows2 is tsharkRows with tshark's two passes.
func tsharkRows2(t *testing.T, tshark, file, filter string, fields []string) []map[string]string {
	t.Helper()
	input, opts := interopTsharkInput(t, file)
	args := append([]string{"-2", "-n", "-r", input}, opts...)
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
		cols := strings.Split(line, "|")
		if line == "" || len(cols) != len(fields) {
			continue
		}
		row := map[string]string{}
		for i, f := range fields {
			row[f] = cols[i]
		}
		rows = append(rows, row)
	}
	return rows
}
