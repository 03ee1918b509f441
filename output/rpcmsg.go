package output

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The RPC layer in text and Markdown: what an rpc record's RPC message is
// ("NFS3 READ call", "NFS4 COMPOUND(SEQUENCE,PUTFH,READ) reply NFS4_OK
// 0.42 ms"), and each connection's "RPC procedures" table.

// rpcProcText names a procedure: "NFS3 READ", "NFS4 COMPOUND",
// "CB_COMPOUND", or its numbers when it has no name.
func rpcProcText(prog, vers, proc uint32, progName, procName string) string {
	switch {
	case strings.HasPrefix(procName, "CB_"):
		return procName
	case progName != "" && procName != "":
		return fmt.Sprintf("%s%d %s", progName, vers, procName)
	case progName != "":
		return fmt.Sprintf("%s%d procedure %d", progName, vers, proc)
	}
	return fmt.Sprintf("program %d v%d procedure %d", prog, vers, proc)
}

// rpcMessageText is what an rpc record's RPC message is, in a few words;
// "" without one.
func rpcMessageText(m *record.RPCMessage) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	if m.HasProgram {
		b.WriteString(rpcProcText(m.Program, m.Version, m.Procedure, m.ProgramName, m.ProcedureName))
		if m.Operations != nil {
			b.WriteString("(" + strings.Join(m.Operations, ","))
			if m.OpsEnd != "" {
				b.WriteString(",…")
			}
			b.WriteString(")")
		}
		b.WriteString(" ")
	}
	b.WriteString(m.Type)
	if m.Type == "reply" {
		if !m.HasProgram {
			b.WriteString(" (its Call not seen)")
		}
		switch {
		case m.RejectStatus != "":
			b.WriteString(" " + m.ReplyStatus + " " + m.RejectStatus)
			if m.AuthStatus != "" {
				b.WriteString(" " + m.AuthStatus)
			}
		case m.AcceptStatus != "" && m.AcceptStatus != "SUCCESS":
			b.WriteString(" " + m.AcceptStatus)
		case m.NFSStatus != "":
			b.WriteString(" " + m.NFSStatus)
		}
		if m.HasResponseTime {
			b.WriteString(" " + millis(m.ResponseTime))
		}
	}
	if m.Encrypted {
		b.WriteString(" (encrypted)")
	}
	return b.String()
}

// millis writes a response time in milliseconds, to the microsecond.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

// rpcProcRows are a connection's RPC procedures as table rows: the
// procedure, calls, replies, RPC errors, the response time (min / mean /
// max, ms) and the NFS errors by status.
func rpcProcRows(d *record.Datapath) [][]string {
	var rows [][]string
	for _, p := range d.RPCProcedures {
		rt := "-"
		if p.Timed > 0 {
			rt = fmt.Sprintf("%.3f/%.3f/%.3f", ms(p.MinResponse), ms(p.MeanResponse), ms(p.MaxResponse))
		}
		var errs []string
		for _, e := range p.NFSErrors {
			errs = append(errs, fmt.Sprintf("%s×%d", e.Status, e.Count))
		}
		nfs := "-"
		if len(errs) > 0 {
			nfs = strings.Join(errs, " ")
		}
		rows = append(rows, []string{rpcProcText(p.Program, p.Version, p.Procedure, p.ProgramName, p.ProcedureName),
			fmt.Sprint(p.Calls), fmt.Sprint(p.Replies), fmt.Sprint(p.Errors), rt, nfs})
	}
	return rows
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rpcErrorSeverity colours a count of RPC errors: rpc-reply-error's.
var rpcErrorSeverity = finding.RPCReplyError.Check().Severity

var rpcProcHead = []string{"#", "procedure", "calls", "replies", "errors", "ms min/mean/max", "NFS errors"}

// withRPC are the connections whose traffic carried RPC Calls or Replies.
func withRPC(conns []*record.Connection) []*record.Connection {
	var out []*record.Connection
	for _, c := range conns {
		if d := c.Datapath; d != nil && (len(d.RPCProcedures) > 0 || d.UnansweredCalls > 0) {
			out = append(out, c)
		}
	}
	return out
}

// rpcNotes says per connection what the table does not: NFSv4 operations,
// Calls unanswered, reverse Calls.
func rpcNotes(c *record.Connection) string {
	d := c.Datapath
	var parts []string
	if len(d.NFSOperations) > 0 {
		var ops []string
		for _, o := range d.NFSOperations {
			op := fmt.Sprintf("%s %d", o.Operation, o.Count)
			if o.Errors > 0 {
				op += fmt.Sprintf(" (%d failed)", o.Errors)
			}
			ops = append(ops, op)
		}
		parts = append(parts, "operations: "+strings.Join(ops, ", "))
	}
	if d.UnansweredCalls > 0 {
		parts = append(parts, count(d.UnansweredCalls, "Call")+" unanswered")
	}
	if d.ReverseCalls > 0 {
		parts = append(parts, count(d.ReverseCalls, "Call")+" from the responder (backchannel)")
	}
	return strings.Join(parts, "; ")
}

// rpcTable writes the text "RPC procedures" table.
func (r *textRenderer) rpcTable(conns []*record.Connection) {
	rc := withRPC(conns)
	if len(rc) == 0 {
		return
	}
	w, p := r.w, r.p
	fmt.Fprintf(w, "\n%s\n", p.bold.Sprint("RPC procedures"))
	rows := [][]string{rpcProcHead}
	for _, c := range rc {
		for i, row := range rpcProcRows(c.Datapath) {
			n := ""
			if i == 0 {
				n = fmt.Sprint(number(c))
			}
			rows = append(rows, append([]string{n}, row...))
		}
	}
	width, numeric := colWidths(rows), numericCols(rows)
	if r.width > 0 && tableWidth(width) > r.width {
		for _, row := range rows[1:] {
			if row[0] != "" {
				fmt.Fprintf(w, "  %s\n", row[0])
			}
			r.narrowCells(rpcProcHead[1:], row[1:])
		}
		rows = nil
	}
	for ri, row := range rows {
		writeRow(w, row, width, numeric, func(col int, cell string) string {
			if ri == 0 {
				return p.bold.Sprint(cell)
			}
			if col == 4 && cell != "0" { // RPC errors
				return r.severityStyle(rpcErrorSeverity).Sprint(cell)
			}
			return cell
		})
	}
	for _, c := range rc {
		if n := rpcNotes(c); n != "" {
			fmt.Fprintf(w, "  %s\n", wrapSpans(r.width, 2, 4, plain(fmt.Sprintf("%d: %s", number(c), n))))
		}
	}
}

// rpcTable writes the Markdown "RPC procedures" table.
func (m *markdownRenderer) rpcTable(w reportWriter, conns []*record.Connection) {
	rc := withRPC(conns)
	if len(rc) == 0 {
		return
	}
	fmt.Fprintf(w, "### RPC procedures\n\n")
	var rows [][]string
	for _, c := range rc {
		for _, row := range rpcProcRows(c.Datapath) {
			for i := range row {
				row[i] = cell(row[i])
			}
			rows = append(rows, append([]string{fmt.Sprint(c.Number)}, row...))
		}
	}
	mdTable(w, rpcProcHead, "--:|---|--:|--:|--:|--:|---", rows)
	for _, c := range rc {
		if n := rpcNotes(c); n != "" {
			fmt.Fprintf(w, "- connection %d: %s\n", c.Number, cell(n))
		}
	}
	fmt.Fprintf(w, "\n")
}

// rpcVerdict says what the verdict adds of the RPC layer: the Calls never
// answered and the RPC errors, with the connections they were on; "" when
// there were none.
func rpcVerdict(conns []*record.Connection) string {
	var unanswered, errors int
	var uc, ec []int
	for _, c := range conns {
		d := c.Datapath
		if d == nil {
			continue
		}
		if d.UnansweredCalls > 0 {
			unanswered += d.UnansweredCalls
			uc = append(uc, c.Number)
		}
		n := 0
		for _, p := range d.RPCProcedures {
			n += p.Errors
		}
		if n > 0 {
			errors += n
			ec = append(ec, c.Number)
		}
	}
	var parts []string
	on := func(ns []int) string {
		if len(ns) == 1 {
			return fmt.Sprintf("connection %d", ns[0])
		}
		return "connections " + ranges(ns)
	}
	if unanswered > 0 {
		parts = append(parts, fmt.Sprintf("%s never answered (%s)", count(unanswered, "RPC Call"), on(uc)))
	}
	if errors > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s)", count(errors, "RPC error"), on(ec)))
	}
	var out []string
	if len(parts) > 0 {
		out = append(out, "RPC: "+strings.Join(parts, "; ")+".")
	}
	// The advice RFC 8797 exists for: the threshold that would have
	// carried the long messages inline (the first connection's, and how
	// many more have some).
	advised := 0
	for _, c := range conns {
		for _, f := range c.Findings {
			if f.Code != finding.InlineThresholdTooSmall {
				continue
			}
			if advised == 0 {
				out = append(out, fmt.Sprintf("Advice (connection %d): %s.", c.Number, f.Message))
			}
			advised++
		}
	}
	if advised > 1 {
		out = append(out, fmt.Sprintf("The same advice holds for %s more (inline-threshold-too-small).", count(advised-1, "direction")))
	}
	return strings.Join(out, " ")
}
