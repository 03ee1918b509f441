package output

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// A connection's data-path figures in each format: the JSON "datapath"
// object, the text and Markdown data-path tables (each figure beside the
// threshold or limit it is judged against), and the data path's counts on
// the line of totals.

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
