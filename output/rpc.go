package output

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The data path's "rpc" records (one RPC-over-RDMA message each) in each
// format: the JSON record, the text line (with its header tree under -V),
// and in the Markdown report their findings, diagram steps and details. A
// connection's "datapath" object and data-path tables are in datapath.go.

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
