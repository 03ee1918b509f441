package craft

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
)

// The tshark oracle of the RPC messages craft writes: tshark (Wireshark
// 4.0, written by others) must decode every RPC message of the crafted
// traffic, on RoCEv2 and iWARP, as craft meant it: XID, Call or Reply,
// program, version, procedure, the NFSv4 and callback operations, the NFS
// statuses, and a Reply's accept, reject and auth states; and it must find
// nothing malformed, no "Continuation" and no expert error or warning in
// the frames that carry them.
//
// tshark 4.0.17's quirks, handled here:
//   - it puts the data a write chunk carries back into the READ Reply only
//     in its second pass (-2); in one pass it decodes such a Reply twice,
//     the second time without the data, and calls it malformed. So the
//     rows come from a two-pass run;
//   - in its second pass, an iWARP Send in several DDP segments ends in a
//     "Dissector bug" (a failed tvbuff assertion): those Sends, and only
//     they, are taken from a one-pass run, where they decode cleanly;
//   - a Call with a read chunk is shown at the frame of its last RDMA Read
//     Response, where tshark put it together: the messages are matched by
//     XID, type and turn, not by frame;
//   - the RDMA_NOMSG Send of a long Reply is shown as the Reply it gathered
//     from the RDMA Writes into the reply chunk;
//   - it warns on every NFSv4.1 CLOSE result ("State ID deprecated in
//     CLOSE responses"), whatever the stateid: no CLOSE is checked here.

// rpcWant is one RPC message as tshark should show it. Lists are as
// tshark prints repeated fields: comma-separated, in order.
type rpcWant struct {
	xid              uint32
	reply            bool
	prog, vers, proc uint32
	ops              string // nfs.opcode or nfs.cb.operation
	status           string // nfs.status
	accept           string // rpc.state_accept of a Reply
	reject, auth     string // rpc.state_reject, rpc.state_auth of a denied Reply
}

var tsharkRPCFields = []string{"frame.number", "rpc.xid", "rpc.msgtyp", "rpc.program", "rpc.programversion", "rpc.procedure",
	"nfs.opcode", "nfs.cb.operation", "nfs.status", "rpc.state_accept", "rpc.state_reject", "rpc.state_auth"}

func (w rpcWant) String() string {
	kind := "Call"
	if w.reply {
		kind = "Reply"
	}
	return fmt.Sprintf("%s 0x%08x %d/%d/%d", kind, w.xid, w.prog, w.vers, w.proc)
}

// wantPair is a Call and its Reply: ok for an NFSv3 result of NFS3_OK, or
// the statuses of a COMPOUND.
func v3Pair(xid, proc uint32) []rpcWant {
	status := "0"
	if proc == NFS3Null {
		status = ""
	}
	return []rpcWant{{xid: xid, prog: ProgNFS, vers: 3, proc: proc}, {xid: xid, reply: true, prog: ProgNFS, vers: 3, proc: proc, status: status, accept: "0"}}
}

// v4Pair is a COMPOUND of ops and its Reply, every operation NFS4_OK.
func v4Pair(xid uint32, ops ...uint32) []rpcWant {
	var list, status []string
	status = append(status, "0")
	for _, o := range ops {
		list = append(list, strconv.Itoa(int(o)))
		status = append(status, "0")
	}
	l := strings.Join(list, ",")
	return []rpcWant{{xid: xid, prog: ProgNFS, vers: 4, proc: 1, ops: l},
		{xid: xid, reply: true, prog: ProgNFS, vers: 4, proc: 1, ops: l, status: strings.Join(status, ","), accept: "0"}}
}

// story is what NFSTraffic writes, in the order of its Sends, for version,
// with the callback and the RPC findings when asked: the same steps,
// spelt out again.
func story(version string, callback, rpcFindings bool) []rpcWant {
	const base, cb = 0x5f000000, 0x6b000000
	v4 := func(mix bool) bool { return version == NFSv4 || version == NFSMix && mix }
	var out []rpcWant
	add := func(w ...rpcWant) { out = append(out, w...) }
	op := func(xid uint32, mix bool, proc3 uint32, ops4 ...uint32) {
		if v4(mix) {
			add(v4Pair(xid, append([]uint32{OpSequence, OpPutfh}, ops4...)...)...)
		} else {
			add(v3Pair(xid, proc3)...)
		}
	}
	null := v3Pair(base, NFS3Null)
	if version == NFSv4 {
		for i := range null {
			null[i].vers = 4
		}
	}
	add(null...)
	op(base+1, true, NFS3Read, OpRead)
	op(base+2, false, NFS3Write, OpWrite)
	op(base+3, true, NFS3Write, OpWrite)
	if v4(false) {
		add(v4Pair(base+4, OpSequence, OpPutfh, OpReaddir)...)
	} else {
		add(v3Pair(base+4, NFS3Readdirplus)...)
	}
	if callback {
		add(rpcWant{xid: cb, prog: ProgNFSCallback, vers: 1, proc: 1, ops: "11,4"},
			rpcWant{xid: cb, reply: true, prog: ProgNFSCallback, vers: 1, proc: 1, ops: "11,4", status: "0,0,0", accept: "0"})
	}
	if !rpcFindings {
		return out
	}
	// rpc-reply-error: PROC_UNAVAIL, then AUTH_ERROR to a GETATTR.
	add(rpcWant{xid: base + 5, prog: ProgNFS, vers: 3, proc: 22}, rpcWant{xid: base + 5, reply: true, prog: ProgNFS, vers: 3, proc: 22, accept: "3"})
	getattr := v3Pair(base+6, NFS3Getattr)[:1]
	if v4(false) {
		getattr = v4Pair(base+6, OpSequence, OpPutfh, OpGetattr)[:1]
	}
	add(getattr[0], rpcWant{xid: base + 6, reply: true, prog: ProgNFS, vers: getattr[0].vers, proc: getattr[0].proc, reject: "1", auth: "13"})
	// rpc-call-resent: a GETATTR twice and its Reply; a LOOKUP left
	// unanswered.
	resent := v3Pair(base+7, NFS3Getattr)
	if v4(false) {
		resent = v4Pair(base+7, OpSequence, OpPutfh, OpGetattr)
	}
	add(resent[0], resent[0], resent[1])
	lookup := v3Pair(base+8, NFS3Lookup)
	if v4(true) {
		lookup = v4Pair(base+8, OpSequence, OpPutfh, OpLookup, OpGetfh, OpGetattr)
	}
	add(lookup[0])
	// rpc-call-unanswered: a GETATTR.
	unanswered := v3Pair(base+9, NFS3Getattr)
	if v4(false) {
		unanswered = v4Pair(base+9, OpSequence, OpPutfh, OpGetattr)
	}
	add(unanswered[0])
	// rpc-call-resent again: the LOOKUP on the next connection, answered.
	return append(out, lookup...)
}

func TestTsharkDecodesCraftedRPC(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not found (apt-get install tshark): the oracle test needs it")
	}
	p := Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	rpcFindings := []string{"rpc-reply-error", "rpc-call-resent", "rpc-call-unanswered"}
	type capture struct {
		name   string
		frames func() ([]Frame, error)
		want   []rpcWant
	}
	var captures []capture
	for _, v := range NFSVersions {
		for _, extra := range []bool{false, true} {
			tr := Traffic{NFSVersion: v}
			if extra {
				tr.Callback, tr.Findings = true, rpcFindings
			}
			name := fmt.Sprintf("%q callback and RPC findings %v", v, extra)
			captures = append(captures,
				capture{"rocev2 " + name, func() ([]Frame, error) {
					return (&Exchange{Transport: RoCEv2, Initiator: p, Responder: p}).NFSTraffic(tr)
				}, story(v, extra, extra)},
				capture{"iwarp " + name, func() ([]Frame, error) {
					return (&IWARPExchange{Rev: 2, Initiator: p, Responder: p}).NFSTraffic(tr)
				}, story(v, extra, extra)})
		}
	}
	captures = append(captures, capture{"rocev2 errors", rpcErrors(t, p), rpcErrorsWant()})
	for _, c := range captures {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			frames, err := c.frames()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "rpc.pcap")
			if err := WriteFile(file, frames); err != nil {
				t.Fatal(err)
			}
			checkTshark(t, tshark, file, c.want)
		})
	}
}

// checkTshark compares tshark's RPC messages in file with want.
func checkTshark(t *testing.T, tshark, file string, want []rpcWant) {
	t.Helper()
	two := runTshark(t, tshark, file, true, "rpc", tsharkRPCFields)
	one := runTshark(t, tshark, file, false, "rpc", tsharkRPCFields)
	issues2 := tsharkIssues(t, tshark, file, true)
	issues1 := tsharkIssues(t, tshark, file, false)
	// The rows to compare: the second pass's, and the first pass's for
	// the frames the second ends in a dissector bug.
	var rows []map[string]string
	for _, r := range two {
		if !strings.Contains(issues2[r["frame.number"]], "Dissector bug") {
			rows = append(rows, r)
		}
	}
	bugged := 0
	for _, r := range one {
		if strings.Contains(issues2[r["frame.number"]], "Dissector bug") {
			rows = append(rows, r)
			if msg := issues1[r["frame.number"]]; msg != "" {
				t.Errorf("frame %s, one pass: %s", r["frame.number"], msg)
			}
			bugged++
		}
	}
	for n, msg := range issues2 {
		if !strings.Contains(msg, "Dissector bug") {
			t.Errorf("frame %s: %s", n, msg)
		}
	}
	if bugged > 0 {
		t.Logf("%d rows from the one-pass run (a dissector bug in the second)", bugged)
	}
	// Match each message wanted with tshark's rows of the same XID and
	// type, in turn.
	byKey := map[string][]map[string]string{}
	for _, r := range rows {
		k := first(r["rpc.xid"]) + "/" + first(r["rpc.msgtyp"])
		byKey[k] = append(byKey[k], r)
	}
	sortByFrame(byKey)
	for _, w := range want {
		typ := "0"
		if w.reply {
			typ = "1"
		}
		k := fmt.Sprintf("0x%08x/%s", w.xid, typ)
		if len(byKey[k]) == 0 {
			t.Errorf("%v: tshark shows no such message", w)
			continue
		}
		r := byKey[k][0]
		byKey[k] = byKey[k][1:]
		ops := r["nfs.opcode"]
		if w.prog == ProgNFSCallback {
			ops = r["nfs.cb.operation"]
		}
		got := rpcWant{xid: w.xid, reply: w.reply, prog: num(first(r["rpc.program"])), vers: num(first(r["rpc.programversion"])),
			proc: num(first(r["rpc.procedure"])), ops: ops, status: r["nfs.status"], accept: r["rpc.state_accept"],
			reject: r["rpc.state_reject"], auth: r["rpc.state_auth"]}
		if got != w {
			t.Errorf("frame %s: tshark\n%+v\nwant\n%+v", r["frame.number"], got, w)
		}
	}
	for k, left := range byKey {
		for _, r := range left {
			t.Errorf("frame %s: tshark shows an RPC message not wanted: %s", r["frame.number"], k)
		}
	}
	t.Logf("%d RPC messages compared with tshark", len(want))
}

// tsharkIssues runs tshark on file and returns, by frame, what is wrong in
// the frames of the data path: malformed, a Continuation, an expert
// warning or error.
func tsharkIssues(t *testing.T, tshark, file string, twoPass bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	rows := runTshark(t, tshark, file, twoPass, "rpcordma || rpc || _ws.malformed || _ws.expert.severity >= 6291456",
		[]string{"frame.number", "frame.protocols", "_ws.col.Info", "_ws.expert.severity", "_ws.expert.message"})
	for _, r := range rows {
		var msg []string
		if strings.Contains(r["_ws.col.Info"], "Dissector bug") {
			msg = append(msg, "Dissector bug")
		}
		if strings.Contains(r["frame.protocols"], "_ws.malformed") {
			msg = append(msg, "malformed")
		}
		if strings.Contains(r["_ws.col.Info"], "Continuation") {
			msg = append(msg, "Continuation: "+r["_ws.col.Info"])
		}
		sevs := strings.Split(r["_ws.expert.severity"], ",")
		msgs := strings.Split(r["_ws.expert.message"], ",")
		for i, s := range sevs {
			if n, _ := strconv.Atoi(s); n >= 6291456 && i < len(msgs) { // PI_WARN and above
				msg = append(msg, msgs[i])
			}
		}
		if len(msg) > 0 {
			out[r["frame.number"]] = strings.Join(msg, "; ")
		}
	}
	return out
}

// runTshark runs tshark, in two passes when twoPass, with a display filter,
// and returns the fields of every frame it keeps.
func runTshark(t *testing.T, tshark, file string, twoPass bool, filter string, fields []string) []map[string]string {
	t.Helper()
	args := []string{"-n", "-r", file}
	if twoPass {
		args = append(args, "-2")
	}
	args = append(args, "-Y", filter, "-T", "fields", "-E", "separator=/t", "-E", "header=n", "-E", "aggregator=,")
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
		cols := strings.Split(line, "\t")
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

func first(list string) string {
	v, _, _ := strings.Cut(list, ",")
	return v
}

func num(s string) uint32 {
	n, _ := strconv.ParseUint(s, 0, 32)
	return uint32(n)
}

func sortByFrame(m map[string][]map[string]string) {
	for _, rows := range m {
		for i := 1; i < len(rows); i++ {
			for j := i; j > 0 && num(rows[j]["frame.number"]) < num(rows[j-1]["frame.number"]); j-- {
				rows[j], rows[j-1] = rows[j-1], rows[j]
			}
		}
	}
}

// rpcErrors is a RoCEv2 connection whose Replies report every RPC error
// and a few NFS ones, with RPCSEC_GSS credentials of each service, and the
// NFS operations the usual traffic does not use.
func rpcErrors(t *testing.T, p Peer) func() ([]Frame, error) {
	return func() ([]Frame, error) {
		c, err := (&Exchange{Transport: RoCEv2, Initiator: p, Responder: p}).Connect()
		if err != nil {
			return nil, err
		}
		n := NFS{C: c, XID: 0x7a000000, Credits: 32}
		pair := func(call *Call, reply *Reply) {
			reply.Cred = call.Cred
			n.Reply(n.Call(RPCMessage{RPC: call}), RPCMessage{RPC: reply}, SendOpts{})
		}
		for _, e := range rpcErrorCases() {
			pair(e.call, e.reply)
		}
		c.Disconnect()
		return c.Frames()
	}
}

type rpcErrorCase struct {
	call  *Call
	reply *Reply
	want  []rpcWant // without XIDs
}

func rpcErrorCases() []rpcErrorCase {
	nlm := &Call{Prog: 100021, Vers: 4, Proc: 0, Cred: SysCred()}
	v2 := &Call{Prog: ProgNFS, Vers: 2, Proc: 0, Cred: SysCred()}
	getattr := NFS3Call(NFS3{Proc: NFS3Getattr}, SysCred())
	stale := Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh, Status: NFSErrStale}, {Op: OpRead, Count: 100}}}
	open := Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutfh}, {Op: OpOpen, Name: "a.txt"}, {Op: OpGetfh},
		{Op: OpAccess, Access: 0x1f}, {Op: OpRead, Count: 5, EOF: true}, {Op: OpWrite, Count: 7, Stable: FileSync}, {Op: OpCommit}}}
	root := Compound{Minor: 1, Ops: []NFS4Op{{Op: OpSequence}, {Op: OpPutrootfh}, {Op: OpLookup, Name: "export"}, {Op: OpGetfh}, {Op: OpGetattr}}}
	gssCall := func(c *Call, service uint32) *Call {
		c.Cred = GSSCred(service, 11)
		return c
	}
	call := func(prog, vers, proc uint32) rpcWant { return rpcWant{prog: prog, vers: vers, proc: proc} }
	reply := func(w rpcWant) rpcWant { w.reply = true; return w }
	with := func(w rpcWant, f func(*rpcWant)) rpcWant { f(&w); return w }
	v3ok := func(proc uint32, o NFS3) rpcErrorCase {
		o.Proc = proc
		p := v3Pair(0, proc)
		return rpcErrorCase{NFS3Call(o, SysCred()), NFS3Reply(o), p}
	}
	return []rpcErrorCase{
		{nlm, &Reply{AcceptStat: ProgUnavail}, []rpcWant{call(100021, 4, 0), with(reply(call(100021, 4, 0)), func(w *rpcWant) { w.accept = "1" })}},
		{v2, &Reply{AcceptStat: ProgMismatch, Low: 3, High: 4}, []rpcWant{call(ProgNFS, 2, 0), with(reply(call(ProgNFS, 2, 0)), func(w *rpcWant) { w.accept = "2" })}},
		{NFS3Call(NFS3{Proc: 22}, SysCred()), &Reply{AcceptStat: ProcUnavail}, []rpcWant{call(ProgNFS, 3, 22), with(reply(call(ProgNFS, 3, 22)), func(w *rpcWant) { w.accept = "3" })}},
		{getattr, &Reply{AcceptStat: GarbageArgs}, []rpcWant{call(ProgNFS, 3, 1), with(reply(call(ProgNFS, 3, 1)), func(w *rpcWant) { w.accept = "4" })}},
		{CompoundCall(root, SysCred()), &Reply{AcceptStat: SystemErr}, []rpcWant{with(call(ProgNFS, 4, 1), func(w *rpcWant) { w.ops = "53,24,15,10,9" }),
			with(reply(call(ProgNFS, 4, 1)), func(w *rpcWant) { w.accept = "5" })}},
		{&Call{Prog: ProgNFS, Vers: 3}, &Reply{Denied: true, RejectStat: RPCMismatch, Low: 2, High: 2},
			[]rpcWant{call(ProgNFS, 3, 0), with(reply(call(ProgNFS, 3, 0)), func(w *rpcWant) { w.reject = "0" })}},
		{gssCall(NFS3Call(NFS3{Proc: NFS3Getattr}, Cred{}), GSSNone), &Reply{Denied: true, RejectStat: AuthError, AuthStat: GSSCredProblem},
			[]rpcWant{call(ProgNFS, 3, 1), with(reply(call(ProgNFS, 3, 1)), func(w *rpcWant) { w.reject, w.auth = "1", "13" })}},
		{NFS3Call(NFS3{Proc: NFS3Getattr}, SysCred()), NFS3Reply(NFS3{Proc: NFS3Getattr, Status: NFSErrStale}),
			[]rpcWant{call(ProgNFS, 3, 1), with(reply(call(ProgNFS, 3, 1)), func(w *rpcWant) { w.accept, w.status = "0", "70" })}},
		{NFS3Call(NFS3{Proc: NFS3Read, Count: 10}, SysCred()), NFS3Reply(NFS3{Proc: NFS3Read, Status: NFSErrJukebox}),
			[]rpcWant{call(ProgNFS, 3, 6), with(reply(call(ProgNFS, 3, 6)), func(w *rpcWant) { w.accept, w.status = "0", "10008" })}},
		{CompoundCall(stale, SysCred()), CompoundReply(stale), []rpcWant{with(call(ProgNFS, 4, 1), func(w *rpcWant) { w.ops = "53,22,25" }),
			with(reply(call(ProgNFS, 4, 1)), func(w *rpcWant) { w.accept, w.ops, w.status = "0", "53,22", "70,0,70" })}},
		{CompoundCall(open, SysCred()), CompoundReply(open), v4Pair(0, OpSequence, OpPutfh, OpOpen, OpGetfh, OpAccess, OpRead, OpWrite, OpCommit)},
		{gssCall(CompoundCall(root, Cred{}), GSSIntegrity), CompoundReply(root), v4Pair(0, OpSequence, OpPutrootfh, OpLookup, OpGetfh, OpGetattr)},
		// Privacy hides the procedure's arguments and results.
		{gssCall(NFS3Call(NFS3{Proc: NFS3Getattr}, Cred{}), GSSPrivacy), NFS3Reply(NFS3{Proc: NFS3Getattr}),
			[]rpcWant{call(ProgNFS, 3, 1), with(reply(call(ProgNFS, 3, 1)), func(w *rpcWant) { w.accept = "0" })}},
		v3ok(NFS3Lookup, NFS3{Name: "a.txt"}),
		v3ok(NFS3Access, NFS3{Access: 0x1f}),
		v3ok(NFS3Commit, NFS3{Count: 4096}),
		v3ok(NFS3Readdir, NFS3{Count: 4096, Entries: 4, EOF: true}),
		v3ok(NFS3Fsinfo, NFS3{}),
		v3ok(NFS3Read, NFS3{Count: 100, EOF: true}),
		v3ok(NFS3Write, NFS3{Count: 100, Stable: FileSync}),
	}
}

// rpcErrorsWant is what rpcErrors writes, XID by XID.
func rpcErrorsWant() []rpcWant {
	var out []rpcWant
	for i, e := range rpcErrorCases() {
		for _, w := range e.want {
			w.xid = 0x7a000000 + uint32(i)
			out = append(out, w)
		}
	}
	return out
}
