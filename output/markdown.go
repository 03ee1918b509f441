package output

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// MaxMarkdownDetails bounds the messages whose full details a Markdown
// report keeps (and the rows of its findings and connection tables):
// memory stays bounded, and the budget cuts further; the details kept are
// also bounded by their size (no more once they exceed the budget). The
// JSON output has everything.
const MaxMarkdownDetails = 1000

// DefaultBudget is the size a Markdown report stays within by default, in
// characters: GitHub refuses a comment longer than that.
const DefaultBudget = 65536

// Details chooses the messages a Markdown report shows in full.
type Details string

// Detail levels.
const (
	DetailsNone     Details = "none"
	DetailsFindings Details = "findings" // those with a finding (or the first few, when none has one)
	DetailsAll      Details = "all"
)

// firstFew is how many messages a report details when none carries a
// finding, as an example of what the capture holds.
const firstFew = 3

// markdownRenderer collects what a report needs and writes it at the end:
// the verdict, the connections, the findings, the capture and its inputs,
// and the details of chosen messages in collapsible blocks, within a
// budget of characters. It renders on GitHub and GitLab (tables and
// <details>), and the same input gives the same bytes.
type markdownRenderer struct {
	w        *bufio.Writer
	opts     Options
	text     *textRenderer // renders message details, without colour
	buf      bytes.Buffer
	details  []detail // those chosen, up to MaxMarkdownDetails
	chosen   int      // messages chosen for details, kept or not
	few      []detail // the first few messages, in case none is chosen
	findings []findingRow
	grouped  map[groupKey]int     // rows of a connection's code, by the key
	conns    []*record.Connection // the first MaxMarkdownDetails
	keptAt   map[int]int          // their places in conns, by number
	nConns   int
	messages int
	rpcs     int                  // the data path's rpc records, detailed among the messages
	nFind    int                  // findings in all, listed or not
	codes    map[finding.Code]int // the same, by code
	worst    worstFindings        // of the connections' messages and rpc records
	ladders  map[int]*ladder      // the diagrams' steps, by connection (markdown_diagram.go)

	// detailChars is the size of the details kept, in characters. Past
	// the budget no more are kept: the report shows a prefix of them, so
	// none after could be shown. overBudget counts those left so.
	detailChars int
	overBudget  int
	// memoryCut: some were left out because the run's memory budget was
	// full; held is what the details kept charged to it.
	memoryCut bool
	held      int
}

// rpcConn names a connection as its rpc records do.
type rpcConn struct {
	file  string
	frame int
}

// detail is one message's collapsible block.
type detail struct{ block string }

// findingRow is one row of the findings table.
type findingRow struct {
	where string
	f     finding.Finding
	conn  int // the connection's Number; 0: none
	// The same code on the same connection is one row: group names the
	// connection ("" for a finding that groups with none), n counts the
	// findings of the row, and at says where the first few were.
	group string
	n     int
	at    []string
}

// groupKey is what the findings of one row share.
type groupKey struct {
	group string
	code  finding.Code
}

// groupFrames is how many places a grouped row names.
const groupFrames = 3

// whereCell is the row's where: the place of its one finding, or its
// connection, how many times and the first places ("connection 2, 30
// times: frame 19, frame 28, frame 45, ...").
func (r *findingRow) whereCell() string {
	if r.n <= 1 {
		return r.where
	}
	more := ""
	if r.n > len(r.at) {
		more = ", ..."
	}
	return fmt.Sprintf("%s, %d times: %s%s", r.group, r.n, strings.Join(r.at, ", "), more)
}

func newMarkdown(w *bufio.Writer, opts Options) *markdownRenderer {
	m := &markdownRenderer{w: w, opts: opts, worst: worstFindings{max: MaxMarkdownDetails}}
	if opts.Details == "" {
		m.opts.Details = DetailsFindings
	}
	if opts.Quiet {
		m.opts.Details = DetailsNone
	}
	tm := opts.Time
	if tm == "" {
		tm = TimeUTCDate
	}
	m.text = newText(bufio.NewWriter(&m.buf), Options{Verbose: true, Hex: true, Time: tm, Location: opts.Location,
		Width: opts.Width})
	return m
}

func (m *markdownRenderer) Message(msg *record.Message) error {
	m.messages++
	m.ladderMessage(msg)
	at := m.frame(msg.File, msg.Frame)
	where, group := at, ""
	if msg.Conn != 0 {
		group = fmt.Sprintf("connection %d", msg.Conn)
		where += " (" + group + ")"
	}
	for _, f := range msg.Findings {
		m.findingIn(f, msg.Conn, where, group, at)
		m.worst.message(msg.Conn, f)
	}
	want := m.opts.Details == DetailsAll || m.opts.Details == DetailsFindings && len(msg.Findings) > 0
	if want {
		m.chosen++
	}
	keepFew := m.opts.Details == DetailsFindings && m.chosen == 0 && len(m.few) < firstFew
	if want && len(m.details) < MaxMarkdownDetails && m.budget() >= 0 && m.detailChars > m.budget() {
		// The details kept already fill the budget: this one could never
		// be shown. Memory and time stay bounded by the budget, whatever
		// the size of each message's private data.
		m.overBudget++
		return nil
	}
	if !(want && len(m.details) < MaxMarkdownDetails) && !keepFew {
		return nil
	}
	d, err := m.detail(msg)
	if err != nil {
		return err
	}
	if want {
		if mem := m.opts.Memory; mem != nil && !mem.Charge(len(d.block)) {
			// The run's memory budget is full: the details that do not
			// fit are left out like those over the report's budget.
			m.overBudget++
			m.memoryCut = true
			return nil
		}
		m.held += len(d.block)
		m.details = append(m.details, d)
		m.detailChars += utf8.RuneCountInString(d.block)
	} else {
		m.few = append(m.few, d)
	}
	return nil
}

// detail renders one message as -V -x would, in a collapsible block.
func (m *markdownRenderer) detail(msg *record.Message) (detail, error) {
	m.buf.Reset()
	m.text.lastFile = msg.File // no "== file" line inside a block
	if err := m.text.Message(msg); err != nil {
		return detail{}, err
	}
	label := fmt.Sprintf("frame %d", msg.Frame)
	if m.opts.MultiFile {
		label = record.EscapeControl(msg.File) + " " + label
	}
	if msg.Conn != 0 {
		label += fmt.Sprintf(" (connection %d)", msg.Conn)
	}
	title := fmt.Sprintf("%s: %s %s → %s, %s", label, msg.Name(), msg.Src, msg.Dst, m.text.summary(msg))
	if n := len(msg.Findings); n > 0 {
		title += fmt.Sprintf("; %s, worst %s", count(n, "finding"), worstOf(msg.Findings))
	}
	return detail{fmt.Sprintf("<details>\n<summary>%s</summary>\n\n```text\n%s```\n\n</details>\n",
		htmlEscape(title), strings.ReplaceAll(m.buf.String(), "```", "'''"))}, nil
}

// worstOf names the most severe of findings (the first of them).
func worstOf(fs []finding.Finding) string {
	var w finding.Finding
	for _, f := range fs {
		if f.Severity > w.Severity {
			w = f
		}
	}
	return w.Severity.String() + " " + w.Code.String()
}

// findingIn adds a finding of a connection (group) to the findings table:
// to the row of the same code on the same connection, if there is one, else
// a row of its own, up to MaxMarkdownDetails rows; at is where it was.
func (m *markdownRenderer) findingIn(f finding.Finding, conn int, where, group, at string) {
	m.nFind++
	if m.codes == nil {
		m.codes = map[finding.Code]int{}
	}
	m.codes[f.Code]++ // a few dozen codes at most
	if group != "" {
		if i, ok := m.grouped[groupKey{group, f.Code}]; ok {
			r := &m.findings[i]
			r.n++
			if len(r.at) < groupFrames {
				r.at = append(r.at, at)
			}
			return
		}
	}
	if len(m.findings) < MaxMarkdownDetails {
		if group != "" {
			if m.grouped == nil {
				m.grouped = map[groupKey]int{}
			}
			m.grouped[groupKey{group, f.Code}] = len(m.findings)
		}
		m.findings = append(m.findings, findingRow{where: where, f: f, conn: conn, group: group, n: 1, at: []string{at}})
	}
}

// frame names a frame for a table cell; with several inputs, with its file.
func (m *markdownRenderer) frame(file string, n int) string {
	if m.opts.MultiFile {
		return fmt.Sprintf("%s: frame %d", code(file), n)
	}
	return fmt.Sprintf("frame %d", n)
}

func (m *markdownRenderer) Connection(c *record.Connection) error {
	m.nConns++
	for _, f := range c.Findings {
		m.findingIn(f, c.Number, fmt.Sprintf("connection %d (%s)", c.Number, m.frame(c.File, c.RequestFrame)), fmt.Sprintf("connection %d", c.Number), "the connection")
	}
	if len(m.conns) < MaxMarkdownDetails {
		if m.keptAt == nil {
			m.keptAt = map[int]int{}
		}
		m.keptAt[c.Number] = len(m.conns)
		m.conns = append(m.conns, c.Clone()) // the record is the run's again after the call
	}
	return nil
}

// Update lists the findings the connection's record did not have, and
// brings the report's copy of it up to date.
func (m *markdownRenderer) Update(u *record.ConnectionUpdate) error {
	for _, f := range u.Findings {
		m.findingIn(f, u.Number, fmt.Sprintf("connection %d (%s)", u.Number, m.frame(u.File, u.RequestFrame)), fmt.Sprintf("connection %d", u.Number), "the connection")
	}
	if i, ok := m.keptAt[u.Number]; ok {
		u.Apply(m.conns[i])
	}
	return nil
}

// Summary writes the whole report, within the budget.
func (m *markdownRenderer) Summary(s *record.Summary) error {
	for _, f := range s.Notes {
		m.nFind++
		m.findings = append(m.findings, findingRow{where: "the run", f: f, n: 1})
	}
	if len(m.details) == 0 && m.chosen == 0 {
		m.details = m.few // nothing chosen: the first few, as examples
	}
	var err error
	if m.budget() < 0 {
		m.layoutTo(m.w, s, m.full(s), false) // no budget: straight to the output
	} else {
		_, err = m.w.WriteString(m.report(s))
	}
	if mem := m.opts.Memory; mem != nil {
		mem.Release(m.held)
	}
	m.held = 0
	if err != nil {
		return err
	}
	return m.w.Flush()
}

func (m *markdownRenderer) Close() error { return m.w.Flush() }

// budget is the report's size limit in characters; negative: none.
func (m *markdownRenderer) budget() int {
	if m.opts.Budget == 0 {
		return DefaultBudget
	}
	return m.opts.Budget
}

// codeFence returns a fence longer than any run of backticks in s, so that
// a file name with backticks cannot end the block early.
func codeFence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// mdTable writes a GitHub/GitLab table. align is the separator row without
// its outer pipes.
func mdTable(w io.Writer, head []string, align string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(head, " | "), align)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

// The replacers are made once: making one costs more than most of the
// cells it is used on, and the report makes thousands of cells, again at
// each step of fitting it to its budget.
var (
	cellReplacer = strings.NewReplacer("|", `\|`, "`", "\\`")
	codeReplacer = strings.NewReplacer("`", "'", "|", `\|`)
	htmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
)

// cell makes text safe inside a table cell: no pipes, no line breaks, no
// HTML, no code spans.
func cell(s string) string {
	s = record.EscapeControl(s) // also newlines: a cell is one line
	return cellReplacer.Replace(htmlEscape(s))
}

// code shows s as inline code, safe inside a table cell.
func code(s string) string {
	if s == "-" {
		return s
	}
	return "`" + codeReplacer.Replace(record.EscapeControl(s)) + "`"
}

func htmlEscape(s string) string { return htmlReplacer.Replace(s) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func timeCell(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return formatTime(t)
}
