package output

import (
	"fmt"
	"strconv"
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
	j.kaddr("src", rec.Src)
	j.kaddr("dst", rec.Dst)
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
	if rec.Message != nil {
		j.key("rpc_message")
		appendRPCMessage(j, rec.Message)
	}
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

// appendRPCMessage writes an rpc record's "rpc_message": what is not known
// is left out.
func appendRPCMessage(j *jw, m *record.RPCMessage) {
	j.obj()
	j.kstr("type", m.Type)
	j.kuint("xid", uint64(m.XID))
	if m.HasProgram {
		j.kuint("program", uint64(m.Program))
		optStr(j, "program_name", m.ProgramName)
		j.kuint("version", uint64(m.Version))
		j.kuint("procedure", uint64(m.Procedure))
		optStr(j, "procedure_name", m.ProcedureName)
	}
	if m.Operations != nil {
		j.key("operations")
		j.arr()
		for _, op := range m.Operations {
			j.str(op)
		}
		j.end()
		optStr(j, "operations_end", m.OpsEnd)
	}
	if m.HasMinorVersion {
		j.kuint("minor_version", uint64(m.MinorVersion))
	}
	optStr(j, "auth_flavor", m.AuthFlavor)
	optStr(j, "auth_service", m.AuthService)
	if m.Encrypted {
		j.kbool("encrypted", true)
	}
	optStr(j, "reply_status", m.ReplyStatus)
	optStr(j, "accept_status", m.AcceptStatus)
	optStr(j, "reject_status", m.RejectStatus)
	optStr(j, "auth_status", m.AuthStatus)
	optStr(j, "nfs_status", m.NFSStatus)
	if m.ReplyFrame != 0 {
		j.kint("reply_frame", int64(m.ReplyFrame))
	}
	if m.CallFrame != 0 {
		j.kint("call_frame", int64(m.CallFrame))
	}
	if m.HasResponseTime {
		j.key("response_time")
		j.seconds(m.ResponseTime)
	}
	j.kstr("carried_in", m.CarriedIn)
	j.end()
}

// optStr writes a key whose value is known, and leaves out one that is not.
func optStr(j *jw, k, v string) {
	if v != "" {
		j.kstr(k, v)
	}
}

// appendRPCFigures writes the RPC layer's figures of a "datapath" object.
func appendRPCFigures(j *jw, d *record.Datapath) {
	j.key("rpc_procedures")
	j.arr()
	for _, p := range d.RPCProcedures {
		j.obj()
		j.kuint("program", uint64(p.Program))
		optStr(j, "program_name", p.ProgramName)
		j.kuint("version", uint64(p.Version))
		j.kuint("procedure", uint64(p.Procedure))
		optStr(j, "procedure_name", p.ProcedureName)
		j.kint("calls", int64(p.Calls))
		j.kint("replies", int64(p.Replies))
		j.kint("errors", int64(p.Errors))
		j.key("nfs_errors")
		j.obj()
		for _, e := range p.NFSErrors {
			j.kint(e.Status, int64(e.Count))
		}
		j.end()
		j.key("response_time")
		if p.Timed == 0 {
			j.null()
		} else {
			j.obj()
			j.key("min")
			j.seconds(p.MinResponse)
			j.key("mean")
			j.seconds(p.MeanResponse)
			j.key("max")
			j.seconds(p.MaxResponse)
			j.end()
		}
		j.end()
	}
	j.end()
	j.key("nfs_operations")
	j.arr()
	for _, o := range d.NFSOperations {
		j.obj()
		j.kstr("operation", o.Operation)
		j.kint("count", int64(o.Count))
		j.kint("errors", int64(o.Errors))
		j.end()
	}
	j.end()
	j.kint("unanswered_calls", int64(d.UnansweredCalls))
	j.kint("reverse_calls", int64(d.ReverseCalls))
}

// appendChunkFigures writes the chunks' figures of a "datapath" object.
func appendChunkFigures(j *jw, d *record.Datapath) {
	dirs := []string{"initiator_to_responder", "responder_to_initiator"}
	j.key("long_messages")
	j.obj()
	for i, k := range dirs {
		j.kint(k, int64(d.LongMessages[i]))
	}
	j.end()
	j.key("inline_threshold_needed")
	j.obj()
	for i, k := range dirs {
		if d.InlineNeeded[i] > 0 {
			j.kint(k, int64(d.InlineNeeded[i]))
		}
	}
	j.end()
	j.key("explicit_rdma_octets")
	j.obj()
	for i, k := range dirs {
		j.kint(k, d.ExplicitRDMAOctets[i])
	}
	j.end()
	j.kint("chunk_violations", int64(d.ChunkViolations))
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
	appendRPCFigures(j, d)
	appendChunkFigures(j, d)
	appendHealth(j, d.Health)
	j.end()
}

func (r *textRenderer) RPC(rec *record.RPC) error {
	w, p := r.w, r.p
	r.input(rec.File)
	for _, f := range rec.Findings {
		r.worst.rpc(rpcConn{rec.File, rec.Connection}, f)
	}
	if r.opts.Quiet {
		for _, f := range rec.Findings {
			r.quietFinding(rec.File, rec.Conn, rec.Frame, f)
		}
		return w.Flush()
	}
	r.header()
	ts := r.clock.show(rec.Time, rec.InputStart)
	head := fmt.Sprintf("%5d  %s  %-6s %s%s  %s → %s", rec.Frame, ts, rec.Transport, p.name.Sprint("RPC"),
		strings.Repeat(" ", 7-len("RPC")), rec.Src, rec.Dst)
	headWidth := runes(fmt.Sprintf("%5d  %s  %-6s %-7s  %s → %s", rec.Frame, ts, rec.Transport, "RPC", rec.Src, rec.Dst))
	parts := []span{plain(rpcSummary(rec))}
	if t := rpcMessageText(rec.Message); t != "" {
		parts = append([]span{{text: t, style: p.bold}}, parts...)
	}
	if aside := rpcAside(rec); aside != "" {
		parts = append(parts, span{text: aside, style: p.dim})
	}
	if r.width > 0 && headWidth > r.width {
		// The endpoints do not fit beside the rest: they go beneath.
		head = fmt.Sprintf("%5d  %s  %-6s %s\n%s%s → %s", rec.Frame, ts, rec.Transport, p.name.Sprint("RPC"), indent, rec.Src, rec.Dst)
		headWidth = r.width + 1
	}
	w.WriteString(head)
	if headWidth+partsWidth(parts) <= r.width {
		w.WriteString(joinParts(parts))
	} else if len(indent)+partsWidth(parts)-2 <= r.width {
		w.WriteString("\n" + indent + strings.TrimPrefix(joinParts(parts), "  "))
	} else {
		for _, sp := range parts {
			w.WriteString("\n" + indent + wrapSpans(r.width, len(indent), len(indent), sp))
		}
	}
	w.WriteByte('\n')
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
func rpcAside(rec *record.RPC) string {
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
	return "(" + strings.Join(parts, "; ") + ")"
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
	// A segment on a line of its own, wrapped (at its parts) beneath
	// itself when a long offset would pass the width.
	seg := func(label string, s record.Segment) {
		lead := indent + "    " + label
		fmt.Fprintf(r.w, "%s%s\n", lead, wrapSpans(r.width, runes(lead), runes(lead),
			span{text: fmt.Sprintf("handle 0x%08x,", s.Handle), keep: true},
			span{text: fmt.Sprintf("length %d,", s.Length), keep: true},
			span{text: fmt.Sprintf("offset 0x%016x", s.Offset), keep: true}))
	}
	r.field("Read list", count(len(h.ReadList), "segment"))
	for _, s := range h.ReadList {
		seg(fmt.Sprintf("position %d: ", s.Position), s.Segment)
	}
	r.field("Write list", count(len(h.WriteList), "chunk"))
	for i, c := range h.WriteList {
		for _, s := range c {
			seg(fmt.Sprintf("chunk %d: ", i+1), s)
		}
	}
	if !h.HasReplyChunk {
		r.field("Reply chunk", "none")
		return
	}
	r.field("Reply chunk", count(len(h.ReplyChunk), "segment"))
	for _, s := range h.ReplyChunk {
		seg("", s)
	}
}

// datapathCells are a connection's data-path figures for the data-path
// tables, each beside the threshold or limit it is judged against: the
// largest Send each way over the inline threshold, Sends With Invalidate,
// the credits granted and the most Calls outstanding, the most Reads
// outstanding of each side over its limit, the RPC-over-RDMA messages and
// the RC frames.
func datapathCells(c *record.Connection) []string {
	d := c.Datapath
	largest := func(i int) string {
		l := "-"
		if d.RPCMessages[i] > 0 {
			l = fmt.Sprint(d.LargestInline[i])
		}
		return l + "/" + threshold(c, i == 0)
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
	needed := func(i int) string {
		switch n := d.InlineNeeded[i]; {
		case n == 0:
			return "-"
		case n > 262144:
			return ">262144"
		default:
			return fmt.Sprint(n)
		}
	}
	return []string{largest(0), largest(1), fmt.Sprint(d.SendWithInvalidate), credits, fmt.Sprint(d.MaxOutstandingCalls),
		reads(0), reads(1), fmt.Sprint(d.RPCMessages[0] + d.RPCMessages[1]), fmt.Sprint(d.Frames),
		fmt.Sprintf("%d/%d", d.LongMessages[0], d.LongMessages[1]), needed(0) + "/" + needed(1)}
}

// limitCodes are the findings of the data-path columns that show a figure
// against its limit ("4100/4096"), by column.
var limitCodes = map[int]finding.Code{1: finding.InlineThresholdExceeded, 2: finding.InlineThresholdExceeded,
	6: finding.RDMAReadLimitExceeded, 7: finding.RDMAReadLimitExceeded}

// overLimit reports whether a cell "n/limit" shows a figure over its limit.
func overLimit(cell string) bool {
	a, b, ok := strings.Cut(cell, "/")
	if !ok {
		return false
	}
	n, err1 := strconv.Atoi(a)
	lim, err2 := strconv.Atoi(b)
	return err1 == nil && err2 == nil && n > lim
}

// datapathHead heads the data-path tables; datapathLegend explains it.
var datapathHead = []string{"#", "ini→res", "res→ini", "SwI", "credits", "calls", "reads ini", "reads res", "rpc", "frames",
	"long", "needed"}

const datapathLegend = "ini→res, res→ini: the largest RPC-over-RDMA Send / the inline threshold; SwI: Sends With Invalidate;" +
	" credits: the latest grant; calls: the most Calls outstanding; reads: the most RDMA Reads outstanding from that side" +
	" / its limit; rpc: RPC-over-RDMA messages; frames: data frames (TCP segments on iWARP);" +
	" long: Long Calls and Long Replies, ini→res/res→ini; needed: the inline threshold each way that would have carried them inline." +
	" Only an RPC-over-RDMA connection's Sends are checked."

// withDatapath is the connections that have data-path figures.
func withDatapath(cs []*record.Connection) []*record.Connection {
	var out []*record.Connection
	for _, c := range cs {
		if c.Datapath != nil {
			out = append(out, c)
		}
	}
	return out
}

// datapathTable writes the text table of the data path's figures, one row
// per connection whose traffic was seen, under the connection's number.
func (r *textRenderer) datapathTable(conns []*record.Connection) {
	dp := withDatapath(conns)
	if len(dp) == 0 {
		return
	}
	w, p := r.w, r.p
	fmt.Fprintf(w, "\n%s\n", p.bold.Sprint("Data path"))
	rows := [][]string{datapathHead}
	for _, c := range dp {
		rows = append(rows, append([]string{fmt.Sprint(number(c))}, datapathCells(c)...))
	}
	// One table when it fits; else two under the same numbers (the Sends,
	// then the Reads, counts and long messages); else each row by name.
	const split = 6
	tables := [][][]string{rows}
	if r.width > 0 && tableWidth(colWidths(rows)) > r.width {
		first, second := make([][]string, len(rows)), make([][]string, len(rows))
		for i, row := range rows {
			first[i] = row[:split]
			second[i] = append([]string{row[0]}, row[split:]...)
		}
		tables = [][][]string{first, second}
		if tableWidth(colWidths(first)) > r.width || tableWidth(colWidths(second)) > r.width {
			for _, row := range rows[1:] {
				fmt.Fprintf(w, "  %s\n", row[0])
				r.narrowCells(datapathHead[1:], row[1:])
			}
			tables = nil
		}
	}
	for ti, t := range tables {
		width, numeric := colWidths(t), numericCols(t)
		offset := 0 // the column of the whole row a cell of this table is
		if ti == 1 {
			offset = split - 1
		}
		for ri, row := range t {
			writeRow(w, row, width, numeric, func(col int, cell string) string {
				switch {
				case ri == 0:
					return p.bold.Sprint(cell)
				case overLimit(cell):
					// A figure over its limit, in the colour of the finding
					// it raised.
					at := col
					if col > 0 {
						at += offset
					}
					if code, ok := limitCodes[at]; ok {
						return r.severityStyle(code.Check().Severity).Sprint(cell)
					}
				}
				return cell
			})
		}
	}
	fmt.Fprintf(w, "  %s\n", wrapSpans(r.width, 2, 2, phrases(datapathRules(dp), nil)...))
	if !r.opts.Quiet { // -q: the table without its legend
		fmt.Fprintf(w, "  %s\n", wrapSpans(r.width, 2, 2, span{text: datapathLegend, style: p.dim}))
	}
}

// ruleOf is what decided whether a connection carries RPC-over-RDMA, as
// the data-path tables say it.
func ruleOf(c *record.Connection) string {
	if c.Datapath.Rule == "" {
		return "not RPC-over-RDMA"
	}
	return "RPC-over-RDMA by " + c.Datapath.Rule
}

// datapathRules says, for the connections of the data-path table, what
// decided whether each carries RPC-over-RDMA (and so whether its Sends are
// checked), grouped: "RPC-over-RDMA by RFC 8797 private data: 1, 3; not
// RPC-over-RDMA: 2".
func datapathRules(conns []*record.Connection) string {
	var order []string
	by := map[string][]int{}
	for _, c := range conns {
		r := ruleOf(c)
		if _, ok := by[r]; !ok {
			order = append(order, r)
		}
		by[r] = append(by[r], number(c))
	}
	var parts []string
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%s: %s", r, ranges(by[r])))
	}
	return strings.Join(parts, "; ")
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

// datapathTable writes the Markdown table of the data path's figures.
func (m *markdownRenderer) datapathTable(w reportWriter, conns []*record.Connection) {
	dp := withDatapath(conns)
	if len(dp) == 0 {
		return
	}
	fmt.Fprintf(w, "### Data path\n\n")
	// Two tables under the connections' numbers, each narrow enough for a
	// GitHub comment: the Sends, then the RDMA Reads and the counts.
	const split = 6 // the columns of the first, with the number
	var sends, reads [][]string
	for _, c := range dp {
		row := append([]string{fmt.Sprint(c.Number)}, datapathCells(c)...)
		sends = append(sends, row[:split])
		reads = append(reads, append([]string{row[0]}, row[split:]...))
	}
	mdTable(w, datapathHead[:split], "--:|--:|--:|--:|--:|--:", sends)
	mdTable(w, append([]string{"#"}, datapathHead[split:]...), "--:|--:|--:|--:|--:|--:|--:", reads)
	fmt.Fprintf(w, "%s.\n\n%s\n\n", cell(datapathRules(dp)), cell(datapathLegend))
}

func (m *markdownRenderer) RPC(rec *record.RPC) error {
	m.rpcs++
	m.ladderRPC(rec)
	at := m.frame(rec.File, rec.Frame) + " (rpc)"
	group := ""
	if rec.Conn != 0 {
		group = fmt.Sprintf("connection %d", rec.Conn)
	}
	for _, f := range rec.Findings {
		m.findingIn(f, rec.Conn, at, group, at)
		m.worst.rpc(rpcConn{rec.File, rec.Connection}, f)
	}
	want := m.opts.Details == DetailsAll || m.opts.Details == DetailsFindings && len(rec.Findings) > 0
	if !want {
		return nil
	}
	m.chosen++
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
	title := fmt.Sprintf("%s: RPC %s → %s, %s", label, rec.Src, rec.Dst, rpcSummary(rec))
	if n := len(rec.Findings); n > 0 {
		title += fmt.Sprintf("; %s, worst %s", count(n, "finding"), worstOf(rec.Findings))
	}
	m.details = append(m.details, detail{fmt.Sprintf("<details>\n<summary>%s</summary>\n\n```text\n%s```\n\n</details>\n",
		htmlEscape(title), strings.ReplaceAll(m.buf.String(), "```", "'''"))})
	return nil
}
