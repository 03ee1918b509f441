package output

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fatih/color"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The text renderer's connection table and totals.

// MaxTableRows bounds the rows of the text connection table (memory stays
// bounded on a flood of requests); -T json has every connection.
const MaxTableRows = 1000

func (r *textRenderer) Connection(c *record.Connection) error {
	r.nConns++
	if len(r.conns) < MaxTableRows {
		if r.keptAt == nil {
			r.keptAt = map[int]int{}
		}
		r.keptAt[c.Number] = len(r.conns)
		r.conns = append(r.conns, c.Clone()) // the record is the run's again after the call
	}
	if !r.opts.Live {
		return nil
	}
	// Live: say at once what the connection agreed.
	r.wrote = true
	text := fmt.Sprintf("%s → %s %s: ini→res %s, res→ini %s, remote invalidation %s, ulp %s%s", c.Initiator, c.Responder,
		c.State, threshold(c, true), threshold(c, false), remoteInvCell(c), ulpCell(c), liveCodes(c.Findings))
	fmt.Fprintf(r.w, "%s %s\n", r.p.bold.Sprint("connection"), wrapSpans(r.width, len("connection "), 7, plain(text)))
	return r.w.Flush()
}

// Update brings the connection's row up to date when the table keeps it;
// otherwise (and live, where the row was written at once) it writes the
// findings the record did not have, each on a line under the connection's
// number.
func (r *textRenderer) Update(u *record.ConnectionUpdate) error {
	c := r.kept(u.Number)
	if c != nil {
		u.Apply(c)
	}
	if c != nil && !r.opts.Live || len(u.Findings) == 0 {
		return nil
	}
	r.wrote = true
	head := fmt.Sprintf("%s → %s, after its record:", u.Initiator, u.Responder)
	fmt.Fprintf(r.w, "%s %s\n", r.p.bold.Sprint("connection"), wrapSpans(r.width, len("connection "), 7, plain(head)))
	for _, f := range u.Findings {
		fmt.Fprintf(r.w, "%s%s\n", indent, r.finding(f, len(indent)))
	}
	return r.w.Flush()
}

// kept is the table's copy of connection n, or nil.
func (r *textRenderer) kept(n int) *record.Connection {
	if i, ok := r.keptAt[n]; ok {
		return r.conns[i]
	}
	return nil
}

func liveCodes(fs []finding.Finding) string {
	if len(fs) == 0 {
		return ""
	}
	return " [" + findingCodes(fs) + "]"
}

// Summary writes the table of connections, their findings, the totals, an
// explanation when little or nothing was found, and the findings about the
// run.
func (r *textRenderer) Summary(s *record.Summary) error {
	w, p := r.w, r.p
	r.flushGroups()
	// A blank line sets each part off from what came before, if anything.
	sep := func() {
		if r.wrote {
			fmt.Fprintln(w)
		}
		r.wrote = true
	}
	if len(r.conns) > 0 {
		sep()
		r.table()
		if r.nConns > len(r.conns) {
			fmt.Fprintf(w, "  %d more connections are not listed; -T json has all\n", r.nConns-len(r.conns))
		}
		r.connFindings()
	}
	// Nothing was read at all: the error lines say everything.
	if s.Frames > 0 || s.DecodeErrors == 0 {
		sep()
		// Dim when the run found nothing worse than info; else plain, the
		// findings in their worst severity's colour.
		style, fstyle := p.dim, p.dim
		if sev := worstSeverity(s); sev >= finding.Warning {
			style, fstyle = nil, r.severityStyle(sev)
		}
		before, found, after := totals(s)
		if after != "" {
			found += ","
		}
		spans := append(phrases(before+",", style), phrases(found, fstyle)...)
		if after != "" {
			spans = append(spans, phrases(strings.TrimPrefix(after, ", "), style)...)
		}
		fmt.Fprintf(w, "%s\n", wrapSpans(r.width, 0, 2, spans...))
		if sel := r.opts.Selection; sel != nil {
			fmt.Fprintf(w, "%s\n", wrapSpans(r.width, 0, 2, span{text: selectionNote(sel, r.opts.anon), style: p.dim}))
		}
		if why := explain(s); len(why) > 0 {
			sep()
			fmt.Fprintf(w, "%s\n", wrapSpans(r.width, 0, 0, plain(strings.Join(why, " "))))
		}
	}
	for _, f := range s.Notes {
		fmt.Fprintf(w, "%s\n", r.finding(f, 0))
	}
	if s.Frames > 0 || s.DecodeErrors == 0 {
		r.verdict(s)
	}
	return w.Flush()
}

// verdict ends the text as the Markdown report opens: per connection
// (those alike grouped), its state, the inline threshold each way, remote
// invalidation and its worst finding, in the worst finding's colour.
func (r *textRenderer) verdict(s *record.Summary) {
	w, p := r.w, r.p
	fmt.Fprintln(w)
	if len(r.conns) == 0 {
		text, _ := noVerdict(r.opts.Selection)
		fmt.Fprintf(w, "%s\n", wrapSpans(r.width, 0, 0, span{text: "Verdict:", style: p.bold}, plain(text)))
		return
	}
	worst := func(c *record.Connection) string {
		f, ok := r.worst.of(c)
		if !ok {
			return "none"
		}
		return f.Severity.String() + " " + f.Code.String()
	}
	groups := verdictGroups(r.conns, worst)
	style := func(g *verdictGroup) *color.Color {
		return r.severityStyle(severityNamed(strings.Fields(g.key.worst)[0]))
	}
	if len(groups) == 1 && len(groups[0].numbers) == 1 {
		fmt.Fprintf(w, "%s\n", wrapSpans(r.width, 0, 2, span{text: "Verdict:", style: p.bold},
			span{text: groups[0].line(false) + ".", style: style(groups[0])}))
		r.rpcVerdict()
		return
	}
	fmt.Fprintf(w, "%s\n", p.bold.Sprintf("Verdict (%s):", count(r.nConns, "connection")))
	shown := 0
	for i, g := range groups {
		if i >= maxVerdicts {
			break
		}
		fmt.Fprintf(w, "- %s\n", wrapSpans(r.width, 2, 2, span{text: g.line(false), style: style(g)}))
		shown += len(g.numbers)
	}
	if n := r.nConns - shown; n > 0 {
		fmt.Fprintf(w, "- and %s more (-T json has all)\n", count(n, "connection"))
	}
	r.rpcVerdict()
}

// rpcVerdict ends the verdict with what the RPC layer left undone.
func (r *textRenderer) rpcVerdict() {
	if v := rpcVerdict(r.conns); v != "" {
		fmt.Fprintf(r.w, "%s\n", wrapSpans(r.width, 0, 2, plain(v)))
	}
}

// table writes the connection table: the verdict columns first (state,
// the inline threshold each way, remote invalidation), then the service
// and the endpoints. The transport column is left out when every
// connection has the same one (the title names it); when the endpoints do
// not fit beside the rest, each row puts them on a line of its own.
func (r *textRenderer) table() {
	w, p := r.w, r.p
	conns := slices.Clone(r.conns)
	slices.SortStableFunc(conns, func(a, b *record.Connection) int { return number(a) - number(b) })
	transports := map[record.Transport]bool{}
	for _, c := range conns {
		transports[c.Transport] = true
	}
	title := "Connections"
	if len(transports) == 1 {
		title += " (" + string(conns[0].Transport) + ")"
	}
	fmt.Fprintf(w, "%s\n", p.bold.Sprint(title))
	head := []string{"#", "state", "ini→res", "res→ini", "inv", "worst"}
	if len(transports) > 1 {
		head = append(head, "transport")
	}
	head = append(head, "ulp", "service")
	rows := [][]string{head}
	var ends []string
	var files []string
	for _, c := range conns {
		worst := "none"
		if f, ok := r.worst.of(c); ok {
			worst = f.Severity.String()
		}
		row := []string{fmt.Sprint(number(c)), string(c.Shown()), threshold(c, true), threshold(c, false), remoteInvCell(c), worst}
		if len(transports) > 1 {
			row = append(row, string(c.Transport))
		}
		rows = append(rows, append(row, ulpCell(c), serviceText(c)))
		ends = append(ends, c.Initiator.String()+" → "+c.Responder.String())
		files = append(files, c.File)
	}
	width, numeric := colWidths(rows), numericCols(rows)
	rowWidth := 2
	for _, n := range width {
		rowWidth += n + 2
	}
	endWidth := runes("initiator → responder")
	for _, e := range ends {
		endWidth = max(endWidth, runes(e))
	}
	beside := rowWidth+endWidth <= r.width
	if beside {
		rows[0] = append(rows[0], "initiator → responder")
		for i := range ends {
			rows[i+1] = append(rows[i+1], ends[i])
		}
		width, numeric = colWidths(rows), numericCols(rows)
	}
	stateCol, worstCol := 1, 5
	under := strings.Repeat(" ", 2+width[0]+2) // beneath the state column
	lastFile := ""
	if r.width > 0 && tableWidth(width) > r.width {
		// Too narrow for the columns: each connection's number and state,
		// then the other cells by name, wrapped beneath.
		for ri, row := range rows[1:] {
			if r.opts.MultiFile && files[ri] != lastFile {
				lastFile = files[ri]
				fmt.Fprintf(w, "  %s\n", p.bold.Sprintf("== %s", record.EscapeControl(lastFile)))
			}
			fmt.Fprintf(w, "  %s  %s\n", row[0], r.state(record.State(row[stateCol])))
			r.narrowCells(rows[0][2:], row[2:])
			fmt.Fprintf(w, "%s%s\n", indent, ends[ri])
		}
		r.datapathTable(conns)
		r.healthTable(conns)
		r.rpcTable(conns)
		return
	}
	for ri, row := range rows {
		if ri > 0 && r.opts.MultiFile && files[ri-1] != lastFile {
			lastFile = files[ri-1]
			fmt.Fprintf(w, "  %s\n", p.bold.Sprintf("== %s", record.EscapeControl(lastFile)))
		}
		writeRow(w, row, width, numeric, func(col int, cell string) string {
			switch {
			case ri == 0:
				return p.bold.Sprint(cell)
			case col == stateCol:
				return r.state(record.State(cell))
			case col == worstCol:
				if st := r.severityStyle(severityNamed(cell)); st != nil {
					return st.Sprint(cell)
				}
			}
			return cell
		})
		if ri == 0 && !beside {
			fmt.Fprintf(w, "%s%s\n", under, p.bold.Sprint("initiator → responder"))
		}
		if ri > 0 && !beside {
			fmt.Fprintf(w, "%s%s\n", under, ends[ri-1])
		}
	}
	r.datapathTable(conns)
	r.healthTable(conns)
	r.rpcTable(conns)
}

// severityNamed is the severity a worst cell names (0 for "none").
func severityNamed(s string) finding.Severity {
	for _, sev := range []finding.Severity{finding.Info, finding.Warning, finding.Error} {
		if sev.String() == s {
			return sev
		}
	}
	return 0
}

// tableWidth is the width of a table's rows: indented by two, two spaces
// between columns.
func tableWidth(cols []int) int {
	n := 2
	for i, w := range cols {
		if i > 0 {
			n += 2
		}
		n += w
	}
	return n
}

// narrowCells writes the cells of a table row by their heads, wrapped at
// the width beneath the row's first cells: for a table too wide.
func (r *textRenderer) narrowCells(head, cells []string) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = head[i] + " " + c
	}
	fmt.Fprintf(r.w, "%s%s\n", indent, wrapSpans(r.width, len(indent), len(indent), plain(strings.Join(parts, ", "))))
}

// connFindings writes the findings of the connections in the table, each
// under its number.
func (r *textRenderer) connFindings() {
	n := 0
	for _, c := range r.conns {
		n = max(n, number(c))
	}
	nw := len(fmt.Sprint(n))
	first := true
	for _, c := range r.conns {
		for _, f := range c.Findings {
			if first {
				fmt.Fprintln(r.w)
				first = false
			}
			fmt.Fprintf(r.w, "  %*d  %s\n", nw, number(c), r.finding(f, 2+nw+2))
		}
	}
}

// number is a connection's number (records made before numbers count from
// their order).
func number(c *record.Connection) int { return c.Number }

func (r *textRenderer) state(s record.State) string {
	switch s {
	case record.Established, record.Disconnected:
		return r.p.good.Sprint(string(s))
	case record.Rejected, record.Terminated:
		return r.p.bad.Sprint(string(s))
	}
	return r.p.warning.Sprint(string(s))
}

// threshold is the inline threshold one way, "-" when the connection
// agreed none (no reply, rejected, another upper layer) or its traffic
// showed it is not RPC-over-RDMA.
func threshold(c *record.Connection, toResponder bool) string {
	if c.Inline == nil || c.State == record.Rejected || c.TrafficNotRPCRDMA() {
		return "-"
	}
	if toResponder {
		return fmt.Sprint(c.Inline.InitiatorToResponder)
	}
	return fmt.Sprint(c.Inline.ResponderToInitiator)
}

// serviceText names a connection's service briefly: "port 20049" for an
// iWARP port or an rdma_cm Service ID of the TCP port space (the one
// NFS/RDMA uses), "udp port 7471" and the like for the other port spaces,
// else the Service ID in hex.
func serviceText(c *record.Connection) string {
	switch {
	case c.HasPort:
		return fmt.Sprintf("port %d", c.Port)
	case c.HasServiceID && c.ServiceID>>32 == 0:
		port := c.ServiceID & 0xffff
		switch c.ServiceID >> 16 {
		case 0x0106: // RDMA_PS_TCP
			return fmt.Sprintf("port %d", port)
		case 0x0111:
			return fmt.Sprintf("udp port %d", port)
		case 0x013f:
			return fmt.Sprintf("ib port %d", port)
		case 0x0002:
			return fmt.Sprintf("ipoib port %d", port)
		}
	}
	return c.ServiceString()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func findingCodes(fs []finding.Finding) string {
	if len(fs) == 0 {
		return "-"
	}
	var cs []string
	for _, f := range fs {
		cs = append(cs, f.Code.String())
	}
	return strings.Join(cs, ", ")
}

// totals is the one-line summary of a run, in three parts: the frames,
// messages and connections by state (the states none reached left out);
// the findings by severity; and what else there is to say, "" or starting
// with ", " (unreadable inputs, state limits, the data path).
func totals(s *record.Summary) (before, findings, after string) {
	n := 0
	for _, v := range s.Findings {
		n += v
	}
	conns := 0
	var states []string
	for _, st := range record.States {
		if k := s.Connections[st]; k > 0 {
			conns += k
			states = append(states, fmt.Sprintf("%d %s", k, strings.ReplaceAll(string(st), "-", " ")))
		}
	}
	before = fmt.Sprintf("%s, %s, %s", count(s.Frames, "frame"), count(s.Messages, "message"), count(conns, "connection"))
	if len(states) > 0 {
		before += " (" + strings.Join(states, ", ") + ")"
	}
	findings = count(n, "finding")
	if by := bySeverity(s); by != "" {
		findings += " (" + by + ")"
	}
	if s.DecodeErrors > 0 {
		after += ", " + count(s.DecodeErrors, "unreadable input")
	}
	if s.StateDrops > 0 {
		after += fmt.Sprintf(", %d given up at a state limit", s.StateDrops)
	}
	after += datapathTotals(s)
	return before, findings, after
}

// bySeverity counts the run's findings by severity, the worst first: "1
// error, 2 warnings, 3 info" ("" when there is none).
func bySeverity(s *record.Summary) string {
	var n [finding.Error + 1]int
	for code, k := range s.Findings {
		n[code.Check().Severity] += k
	}
	var parts []string
	for _, sev := range []finding.Severity{finding.Error, finding.Warning, finding.Info} {
		if n[sev] == 0 {
			continue
		}
		name := sev.String()
		if n[sev] > 1 && sev != finding.Info {
			name += "s"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n[sev], name))
	}
	return strings.Join(parts, ", ")
}

// worstSeverity is the severity of the run's worst finding (0: none).
func worstSeverity(s *record.Summary) finding.Severity {
	var w finding.Severity
	for code, k := range s.Findings {
		if sev := code.Check().Severity; k > 0 && sev > w {
			w = sev
		}
	}
	return w
}

// phrases cuts a line at its commas into spans kept whole, so that it
// wraps between its parts.
func phrases(line string, style *color.Color) []span {
	var out []span
	parts := strings.Split(line, ", ")
	for i, p := range parts {
		if i < len(parts)-1 {
			p += ","
		}
		out = append(out, span{text: p, style: style, keep: true})
	}
	return out
}

// noVerdict is the verdict without a connection shown: none was found,
// or the selection left out every one (hid: no word on the capture then).
func noVerdict(sel *Selection) (text string, hid bool) {
	if sel != nil {
		if n := sel.Counts().Connections; n > 0 {
			return fmt.Sprintf("-Y shows none of the %s.", count(n, "connection")), true
		}
	}
	return "no connection attempt was found.", false
}

// selectionNote says what a display filter left out.
func selectionNote(sel *Selection, anon *anonymizer) string {
	n, expr := sel.Counts(), anon.text(sel.String())
	if n.RPCs == 0 {
		return fmt.Sprintf("-Y %s: %d of %s and %d of %s shown", expr, n.ShownMessages, count(n.Messages, "message"),
			n.ShownConns, count(n.Connections, "connection"))
	}
	return fmt.Sprintf("-Y %s: %d of %s, %d of %s and %d of %s shown", expr, n.ShownMessages, count(n.Messages, "message"),
		n.ShownConns, count(n.Connections, "connection"), n.ShownRPCs, count(n.RPCs, "RPC-over-RDMA message"))
}

// count is "1 frame", "2 frames", "0 frames".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// colWidths is the width of each column's widest cell.
func colWidths(rows [][]string) []int {
	var width []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], runes(cell))
		}
	}
	return width
}

// numericCols marks the columns whose cells below the header are all
// numbers (or "-"): they are right-aligned, header included.
func numericCols(rows [][]string) []bool {
	num := make([]bool, len(rows[0]))
	for ci := range num {
		num[ci] = len(rows) > 1
		for _, row := range rows[1:] {
			if ci < len(row) && !isNumber(row[ci]) {
				num[ci] = false
			}
		}
	}
	return num
}

// writeRow writes one row aligned by the width of the plain text, the
// numeric columns right-aligned, letting style colour each cell (escape
// sequences would upset a tabwriter).
func writeRow(w io.Writer, row []string, width []int, numeric []bool, style func(col int, cell string) string) {
	var b strings.Builder
	b.WriteString("  ")
	for ci, cell := range row {
		gap := strings.Repeat(" ", width[ci]-runes(cell))
		if numeric[ci] {
			b.WriteString(gap + style(ci, cell))
		} else {
			b.WriteString(style(ci, cell))
			if ci < len(row)-1 {
				b.WriteString(gap)
			}
		}
		if ci < len(row)-1 {
			b.WriteString("  ")
		}
	}
	fmt.Fprintln(w, b.String())
}

func isNumber(s string) bool {
	if s == "-" {
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
