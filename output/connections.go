package output

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

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
		r.conns = append(r.conns, c)
	}
	if !r.opts.Live {
		return nil
	}
	// Live: say at once what the connection agreed.
	r.wrote = true
	fmt.Fprintf(r.w, "%s %s → %s %s: ini→res %s, res→ini %s, remote invalidation %s%s\n", r.p.bold.Sprint("connection"),
		c.Initiator, c.Responder, r.state(c.State), threshold(c, true), threshold(c, false), yesNo(c.RemoteInvalidation),
		liveCodes(c.Findings))
	return r.w.Flush()
}

func liveCodes(fs []finding.Finding) string {
	if len(fs) == 0 {
		return ""
	}
	return " [" + findingCodes(fs) + "]"
}

// Summary writes the table of connections and the totals.
func (r *textRenderer) Summary(s *record.Summary) error {
	w, p := r.w, r.p
	// A blank line sets the summary off from what came before, if anything.
	sep := func() {
		if r.wrote {
			fmt.Fprintln(w)
		}
		r.wrote = true
	}
	if len(r.conns) > 0 {
		sep()
		fmt.Fprintf(w, "%s\n", p.bold.Sprint("Connections"))
		dp := hasDatapath(r.conns)
		rows := [][]string{textConnectionHead(dp)}
		if r.opts.MultiFile {
			rows[0] = append([]string{"file"}, rows[0]...)
		}
		for i, c := range r.conns {
			row := textConnectionRow(i+1, c, dp)
			if r.opts.MultiFile {
				row = append([]string{c.File}, row...)
			}
			rows = append(rows, row)
		}
		stateCol := 4
		if r.opts.MultiFile {
			stateCol = 5
		}
		writeTable(w, rows, func(row, col int, cell string) string {
			switch {
			case row == 0:
				return p.bold.Sprint(cell)
			case col == stateCol:
				return r.state(record.State(cell))
			}
			return cell
		})
		if r.nConns > len(r.conns) {
			fmt.Fprintf(w, "  %d more connections are not listed; -T json has all\n", r.nConns-len(r.conns))
		}
		r.datapathConnectionFindings()
	}
	// Nothing was read at all: the error lines say everything.
	if s.Frames > 0 || s.DecodeErrors == 0 {
		sep()
		fmt.Fprintf(w, "%s\n", p.dim.Sprint(totals(s)))
	}
	r.findings(s.Notes)
	return w.Flush()
}

func (r *textRenderer) state(s record.State) string {
	switch s {
	case record.Established:
		return r.p.good.Sprint(string(s))
	case record.Rejected:
		return r.p.bad.Sprint(string(s))
	}
	return r.p.warning.Sprint(string(s))
}

func threshold(c *record.Connection, toResponder bool) string {
	if c.Inline == nil {
		return "-"
	}
	if toResponder {
		return fmt.Sprint(c.Inline.InitiatorToResponder)
	}
	return fmt.Sprint(c.Inline.ResponderToInitiator)
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

// totals is the one-line summary of a run.
func totals(s *record.Summary) string {
	n := 0
	for _, v := range s.Findings {
		n += v
	}
	conns := s.Connections[record.Established] + s.Connections[record.Rejected] + s.Connections[record.NoReply]
	line := fmt.Sprintf("%s, %s, %s (%d established, %d rejected, %d no reply), %s",
		count(s.Frames, "frame"), count(s.Messages, "message"), count(conns, "connection"),
		s.Connections[record.Established], s.Connections[record.Rejected], s.Connections[record.NoReply],
		count(n, "finding"))
	if s.DecodeErrors > 0 {
		line += ", " + count(s.DecodeErrors, "unreadable input")
	}
	if s.StateDrops > 0 {
		line += fmt.Sprintf(", %d given up at a state limit", s.StateDrops)
	}
	line += datapathTotals(s)
	return line
}

// count is "1 frame", "2 frames", "0 frames".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// writeTable aligns columns by the width of their plain text, then lets
// style colour each cell (escape sequences would upset a tabwriter).
func writeTable(w io.Writer, rows [][]string, style func(row, col int, cell string) string) {
	var width []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	for ri, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for ci, cell := range row {
			b.WriteString(style(ri, ci, cell))
			if ci < len(row)-1 {
				b.WriteString(strings.Repeat(" ", width[ci]-utf8.RuneCountInString(cell)+2))
			}
		}
		fmt.Fprintln(w, b.String())
	}
}
