package output

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The data path's records in each format: "rpc" records (one RPC-over-RDMA
// message each) and a connection's "datapath" object.

func (r *jsonRenderer) RPC(rec *record.RPC) error {
	r.j.b = r.j.b[:0]
	appendRPC(&r.j, rec)
	return r.line()
}

// appendRPC writes an "rpc" record.
func appendRPC(j *jw, rec *record.RPC) {
	j.obj()
	j.kstr("record", "rpc")
	j.kstr("file", rec.File)
	j.kint("frame", int64(rec.Frame))
	j.key("frames")
	j.arr()
	for _, f := range rec.Frames {
		j.int(int64(f))
	}
	j.end()
	timeOrNull(j, "time", rec.Time)
	j.kstr("transport", string(rec.Transport))
	j.kstr("src", rec.Src)
	j.kstr("dst", rec.Dst)
	j.key("connection")
	if rec.Connection == 0 {
		j.null()
	} else {
		j.int(int64(rec.Connection))
	}
	j.key("direction")
	if rec.Direction == record.NoDirection {
		j.null()
	} else {
		j.str(string(rec.Direction))
	}
	j.kstr("opcode", rec.Opcode)
	if rec.Invalidate {
		j.kuint("invalidate_rkey", uint64(rec.InvalidateRKey))
	}
	j.key("length")
	if rec.LengthKnown {
		j.int(int64(rec.Length))
	} else {
		j.null()
	}
	j.key("rpcrdma_header")
	appendRPCRDMAHeader(j, rec.Header)
	j.key("warnings")
	appendFindings(j, rec.Findings)
	j.end()
}

func appendRPCRDMAHeader(j *jw, h *record.RPCRDMAHeader) {
	if h == nil {
		j.null()
		return
	}
	j.obj()
	j.kuint("xid", uint64(h.XID))
	j.kuint("vers", uint64(h.Vers))
	j.kuint("credits", uint64(h.Credits))
	j.key("proc")
	if name := layers.RPCRDMAProcName(h.Proc); name != "" {
		j.str(name)
	} else {
		j.uint(uint64(h.Proc))
	}
	j.key("read_list")
	j.arr()
	for _, s := range h.ReadList {
		j.obj()
		j.kuint("position", uint64(s.Position))
		segmentKeys(j, s.Segment)
		j.end()
	}
	j.end()
	j.key("write_list")
	j.arr()
	for _, c := range h.WriteList {
		segmentArray(j, c)
	}
	j.end()
	j.key("reply_chunk")
	if h.HasReplyChunk {
		segmentArray(j, h.ReplyChunk)
	} else {
		j.null()
	}
	if e := h.Error; e != nil {
		j.key("error")
		j.obj()
		j.key("code")
		if name := layers.RPCRDMAErrName(e.Code); name != "" {
			j.str(name)
		} else {
			j.uint(uint64(e.Code))
		}
		j.key("low")
		if e.HasRange {
			j.uint(uint64(e.Low))
		} else {
			j.null()
		}
		j.key("high")
		if e.HasRange {
			j.uint(uint64(e.High))
		} else {
			j.null()
		}
		j.end()
	}
	j.end()
}

func segmentArray(j *jw, c []record.Segment) {
	j.arr()
	for _, s := range c {
		j.obj()
		segmentKeys(j, s)
		j.end()
	}
	j.end()
}

func segmentKeys(j *jw, s record.Segment) {
	j.kuint("handle", uint64(s.Handle))
	j.kuint("length", uint64(s.Length))
	j.kstr("offset", fmt.Sprintf("0x%016x", s.Offset))
}

// appendDatapath writes a connection's "datapath" object, or null.
func appendDatapath(j *jw, d *record.Datapath) {
	if d == nil {
		j.null()
		return
	}
	pair := func(key string, v [2]int, has [2]bool) {
		j.key(key)
		j.obj()
		for i, k := range []string{"initiator_to_responder", "responder_to_initiator"} {
			j.key(k)
			if has[i] {
				j.int(int64(v[i]))
			} else {
				j.null()
			}
		}
		j.end()
	}
	both := [2]bool{true, true}
	j.obj()
	pair("rpc_messages", d.RPCMessages, both)
	pair("largest_inline", d.LargestInline, both)
	j.kint("send_with_invalidate", int64(d.SendWithInvalidate))
	j.kint("max_outstanding_calls", int64(d.MaxOutstandingCalls))
	j.key("credits_granted")
	if d.HasCredits {
		j.int(int64(d.CreditsGranted))
	} else {
		j.null()
	}
	pair("rdma_read_limit", d.RDMAReadLimit, d.HasReadLimit)
	pair("max_outstanding_rdma_reads", d.MaxOutstandingRDMAReads, both)
	j.kint("frames", int64(d.Frames))
	j.end()
}

func (r *textRenderer) RPC(rec *record.RPC) error {
	w, p := r.w, r.p
	if r.opts.MultiFile && rec.File != r.lastFile {
		fmt.Fprintf(w, "%s\n", p.bold.Sprintf("== %s", rec.File))
	}
	r.lastFile = rec.File
	r.wrote = true
	fmt.Fprintf(w, "%5d  %s  %s → %s  %s  %s  %s%s\n", rec.Frame, textTime(rec.Time), rec.Src, rec.Dst, rec.Transport,
		p.name.Sprint("RPC"), rpcSummary(rec), r.rpcAside(rec))
	r.findings(rec.Findings)
	if r.opts.Verbose {
		r.rpcHeaderTree(rec)
	}
	return w.Flush()
}

// rpcSummary is the short form of an RPC-over-RDMA message: its procedure,
// XID, credits and length.
func rpcSummary(rec *record.RPC) string {
	length := "?"
	if rec.LengthKnown {
		length = fmt.Sprint(rec.Length)
	}
	h := rec.Header
	if h == nil {
		return fmt.Sprintf("(no header) len=%s", length)
	}
	return fmt.Sprintf("%s xid=0x%08x credits=%d len=%s", procName(h.Proc), h.XID, h.Credits, length)
}

func procName(p uint32) string {
	if name := layers.RPCRDMAProcName(p); name != "" {
		return name
	}
	return fmt.Sprintf("proc %d", p)
}

// rpcAside names what the line does not: a Send With Invalidate's R_Key,
// the frames of a multi-packet Send.
func (r *textRenderer) rpcAside(rec *record.RPC) string {
	var parts []string
	if rec.Invalidate {
		parts = append(parts, fmt.Sprintf("invalidate 0x%08x", rec.InvalidateRKey))
	}
	if len(rec.Frames) > 1 {
		parts = append(parts, "frames "+framesList(rec.Frames))
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + r.p.dim.Sprintf("(%s)", strings.Join(parts, "; "))
}

func framesList(fs []int) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = fmt.Sprint(f)
	}
	return strings.Join(s, ", ")
}

// rpcHeaderTree writes the Send and its transport header field by field.
func (r *textRenderer) rpcHeaderTree(rec *record.RPC) {
	length := "unknown (a packet is missing from the capture)"
	if rec.LengthKnown {
		length = fmt.Sprintf("%d octets", rec.Length)
	}
	fmt.Fprintf(r.w, "%s%s\n", indent, r.p.bold.Sprint("RDMA Send"))
	r.field("Opcode", rec.Opcode)
	r.field("Length", length)
	r.field("Frames", framesList(rec.Frames))
	if rec.Invalidate {
		r.field("Invalidate R_Key", fmt.Sprintf("0x%08x", rec.InvalidateRKey))
	}
	dir := "unknown (the connection setup was not seen)"
	if rec.Direction != record.NoDirection {
		dir = strings.ReplaceAll(string(rec.Direction), "_", " ")
		dir += fmt.Sprintf(", connection of frame %d", rec.Connection)
	}
	r.field("Direction", dir)
	h := rec.Header
	if h == nil {
		return
	}
	fmt.Fprintf(r.w, "%s%s\n", indent, r.p.bold.Sprint("RPC-over-RDMA Version 1 Transport Header"))
	r.field("XID", fmt.Sprintf("0x%08x", h.XID))
	r.field("Version", fmt.Sprint(h.Vers))
	r.field("Credits", fmt.Sprint(h.Credits))
	r.field("Procedure", fmt.Sprintf("%d (%s)", h.Proc, procName(h.Proc)))
	if h.Proc == layers.RPCRDMAMsgP {
		r.field("Align", fmt.Sprint(h.Align))
		r.field("Threshold", fmt.Sprint(h.Thresh))
	}
	if e := h.Error; e != nil {
		code := layers.RPCRDMAErrName(e.Code)
		if code == "" {
			code = "unknown"
		}
		r.field("Error", fmt.Sprintf("%d (%s)", e.Code, code))
		if e.HasRange {
			r.field("Versions", fmt.Sprintf("%d to %d", e.Low, e.High))
		}
		return
	}
	seg := func(s record.Segment) string {
		return fmt.Sprintf("handle 0x%08x, length %d, offset 0x%016x", s.Handle, s.Length, s.Offset)
	}
	r.field("Read list", count(len(h.ReadList), "segment"))
	for _, s := range h.ReadList {
		fmt.Fprintf(r.w, "%s    position %d: %s\n", indent, s.Position, seg(s.Segment))
	}
	r.field("Write list", count(len(h.WriteList), "chunk"))
	for i, c := range h.WriteList {
		for _, s := range c {
			fmt.Fprintf(r.w, "%s    chunk %d: %s\n", indent, i+1, seg(s))
		}
	}
	if !h.HasReplyChunk {
		r.field("Reply chunk", "none")
		return
	}
	r.field("Reply chunk", count(len(h.ReplyChunk), "segment"))
	for _, s := range h.ReplyChunk {
		fmt.Fprintf(r.w, "%s    %s\n", indent, seg(s))
	}
}

// datapathCells are a connection's data-path figures for the connection
// tables, each beside the threshold or limit it is judged against:
// largest Send each way, Sends With Invalidate, credits granted and Calls
// outstanding at most, Reads outstanding at most of each side over its
// limit.
func datapathCells(c *record.Connection) []string {
	d := c.Datapath
	if d == nil {
		return []string{"-", "-", "-", "-", "-", "-", "-", "-"}
	}
	largest := func(i int) string {
		if d.RPCMessages[i] == 0 {
			return "-"
		}
		return fmt.Sprint(d.LargestInline[i])
	}
	reads := func(i int) string {
		if !d.HasReadLimit[i] {
			return fmt.Sprint(d.MaxOutstandingRDMAReads[i])
		}
		return fmt.Sprintf("%d/%d", d.MaxOutstandingRDMAReads[i], d.RDMAReadLimit[i])
	}
	credits := "-"
	if d.HasCredits {
		credits = fmt.Sprint(d.CreditsGranted)
	}
	return []string{largest(0), largest(1), fmt.Sprint(d.SendWithInvalidate), credits, fmt.Sprint(d.MaxOutstandingCalls),
		reads(0), reads(1), fmt.Sprintf("%d/%d", d.RPCMessages[0]+d.RPCMessages[1], d.Frames)}
}

// hasDatapath reports whether any of the connections has data-path
// figures: the tables show their columns only then.
func hasDatapath(cs []*record.Connection) bool {
	for _, c := range cs {
		if c.Datapath != nil {
			return true
		}
	}
	return false
}

// textConnectionHead and textConnectionRow make the text connection
// table; with data-path figures (dp), each figure follows the threshold or
// setting it is judged against.
func textConnectionHead(dp bool) []string {
	if !dp {
		return []string{"#", "initiator → responder", "transport", "service", "state", "ini→res", "res→ini", "remote inv", "findings"}
	}
	return []string{"#", "initiator → responder", "transport", "service", "state", "ini→res", "largest", "res→ini", "largest",
		"remote inv", "SwI", "credits", "max calls", "reads ini", "reads res", "rpc/frames", "findings"}
}

func textConnectionRow(n int, c *record.Connection, dp bool) []string {
	if !dp {
		return []string{fmt.Sprint(n), c.Initiator + " → " + c.Responder, string(c.Transport), c.ServiceString(), string(c.State),
			threshold(c, true), threshold(c, false), yesNo(c.RemoteInvalidation), findingCodes(c.Findings)}
	}
	d := datapathCells(c)
	return []string{fmt.Sprint(n), c.Initiator + " → " + c.Responder, string(c.Transport), c.ServiceString(), string(c.State),
		threshold(c, true), d[0], threshold(c, false), d[1], yesNo(c.RemoteInvalidation), d[2], d[3], d[4], d[5], d[6], d[7],
		findingCodes(c.Findings)}
}

// datapathTotals adds the data path's counts to the line of totals, when
// there is anything to count.
func datapathTotals(s *record.Summary) string {
	var out string
	if s.RPCMessages > 0 {
		out += ", " + count(s.RPCMessages, "RPC-over-RDMA message")
	}
	if s.DatapathOrphanFrames > 0 {
		out += ", " + count(s.DatapathOrphanFrames, "RC frame") + " without their connection setup"
	}
	return out
}

// mdConnectionHead and mdConnectionRow make the Markdown connection table,
// as the text one.
func mdConnectionHead(dp bool) ([]string, string) {
	if !dp {
		return []string{"#", "initiator", "responder", "transport", "service", "state", "initiator → responder",
			"responder → initiator", "remote invalidation", "findings"}, "--:|---|---|---|---|---|--:|--:|---|---"
	}
	return []string{"#", "initiator", "responder", "transport", "service", "state", "initiator → responder", "largest Send",
			"responder → initiator", "largest Send", "remote invalidation", "Sends With Invalidate", "credits granted",
			"most Calls outstanding", "most Reads outstanding / limit, initiator", "most Reads outstanding / limit, responder",
			"RPC messages / frames", "findings"},
		"--:|---|---|---|---|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|---"
}

func mdConnectionRow(n int, c *record.Connection, dp bool) []string {
	row := []string{fmt.Sprint(n), cell(c.Initiator), cell(c.Responder), string(c.Transport), cell(c.ServiceString()),
		"**" + string(c.State) + "**", threshold(c, true)}
	if !dp {
		return append(row, threshold(c, false), yesNo(c.RemoteInvalidation), codes(c.Findings))
	}
	d := datapathCells(c)
	return append(row, d[0], threshold(c, false), d[1], yesNo(c.RemoteInvalidation), d[2], d[3], d[4], d[5], d[6], d[7],
		codes(c.Findings))
}

func (m *markdownRenderer) RPC(rec *record.RPC) error {
	m.rpcs++
	m.files[rec.File] = true
	for _, f := range rec.Findings {
		m.finding(f, m.frame(rec.File, rec.Frame))
	}
	if len(m.details) >= MaxMarkdownDetails {
		return nil
	}
	m.buf.Reset()
	m.text.lastFile = rec.File
	if err := m.text.RPC(rec); err != nil {
		return err
	}
	label := fmt.Sprintf("frame %d", rec.Frame)
	if m.opts.MultiFile {
		label = strings.NewReplacer("\n", " ", "\r", " ").Replace(rec.File) + " " + label
	}
	m.details = append(m.details, fmt.Sprintf("<details>\n<summary>%s: RPC %s → %s, %s</summary>\n\n```text\n%s```\n\n</details>\n",
		htmlEscape(label), htmlEscape(rec.Src), htmlEscape(rec.Dst), htmlEscape(rpcSummary(rec)),
		strings.ReplaceAll(m.buf.String(), "```", "'''")))
	return nil
}

// datapathConnectionFindings writes, beneath the connection table, the
// data path's connection findings in full (the table names only their
// codes): what frame went over a Read limit.
func (r *textRenderer) datapathConnectionFindings() {
	for i, c := range r.conns {
		for _, f := range c.Findings {
			if f.Code != finding.RDMAReadLimitExceeded {
				continue
			}
			fmt.Fprintf(r.w, "  %s %s %s: %s %s\n", r.p.bold.Sprintf("connection %d:", i+1), r.severity(f.Severity),
				r.p.bold.Sprint(f.Code), f.Message, r.p.dim.Sprintf("[%s]", f.Reference))
		}
	}
}
