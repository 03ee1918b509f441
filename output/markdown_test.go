package output_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/output"
	"golang.org/x/net/html"
)

// TestMarkdownRenders renders the Markdown golden reports with two
// renderers from npm, marked (GitHub-flavoured) and markdown-it (CommonMark
// with tables and HTML, as GitLab), and checks the HTML: every table came
// out as a table with all its rows, every message is a <details> block with
// a summary and a code block, and no table leaked into a paragraph. Set
// RDMACM_NODE_MODULES to a node_modules folder holding marked and
// markdown-it (.ci/run does); the test skips without it.
func TestMarkdownRenders(t *testing.T) {
	mods := os.Getenv("RDMACM_NODE_MODULES")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		t.Skip("needs node and RDMACM_NODE_MODULES (npm install marked markdown-it; see .ci/run)")
	}
	for _, name := range []string{"connections.md", "samples.md", "hostile-names.md", "select.md", "data-only.md", "cut.md",
		"details-all.md", "details-none.md", "budget.md", "datapath.md", "updates.md", "anonymized.md"} {
		src, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		want := expectMarkdown(string(src))
		for _, renderer := range []string{"marked", "markdown-it"} {
			t.Run(name+"/"+renderer, func(t *testing.T) {
				cmd := exec.Command(node, filepath.Join("testdata", "render-md.cjs"), renderer)
				cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
				cmd.Stdin = bytes.NewReader(src)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%v: %s", err, stderr.String())
				}
				doc, err := html.Parse(bytes.NewReader(out))
				if err != nil {
					t.Fatal(err)
				}
				got := inspect(doc)
				if got.h1 != 1 || got.h2 != want.h2 {
					t.Errorf("headings: %d h1, %d h2; want 1 and %d", got.h1, got.h2, want.h2)
				}
				if len(got.tables) != len(want.tables) {
					t.Fatalf("%d tables, want %d", len(got.tables), len(want.tables))
				}
				for i, tb := range got.tables {
					if tb != want.tables[i] {
						t.Errorf("table %d: %d columns and %d rows, want %d and %d", i+1, tb.cols, tb.rows, want.tables[i].cols, want.tables[i].rows)
					}
				}
				if got.details != want.details || got.summaries != want.details || got.codeInDetails != want.details {
					t.Errorf("%d <details>, %d summaries, %d code blocks in them; want %d each", got.details, got.summaries, got.codeInDetails, want.details)
				}
				for _, p := range got.leaks {
					t.Errorf("table syntax leaked into text: %q", p)
				}
			})
		}
	}
}

type tableShape struct{ cols, rows int }

type shape struct {
	h1, h2        int
	tables        []tableShape
	details       int
	summaries     int
	codeInDetails int
	leaks         []string
}

var separator = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+$`)

// expectMarkdown reads the shape a renderer should produce from the source.
func expectMarkdown(src string) shape {
	var s shape
	lines := strings.Split(src, "\n")
	inFence := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		switch {
		case strings.HasPrefix(l, "## "):
			s.h2++
		case l == "<details>":
			s.details++
		case separator.MatchString(l):
			rows := 0
			for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
				rows++
			}
			s.tables = append(s.tables, tableShape{strings.Count(l, "|") - 1, rows})
		}
	}
	return s
}

func inspect(n *html.Node) shape {
	var s shape
	var walk func(n *html.Node, inDetails bool)
	walk = func(n *html.Node, inDetails bool) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "h1":
				s.h1++
			case "h2":
				s.h2++
			case "table":
				s.tables = append(s.tables, tableOf(n))
			case "details":
				s.details++
				inDetails = true
			case "summary":
				s.summaries++
			case "pre":
				if inDetails && n.FirstChild != nil && n.FirstChild.Data == "code" {
					s.codeInDetails++
				}
			case "p":
				if t := text(n); strings.Contains(t, "|") || strings.Contains(t, "```") {
					s.leaks = append(s.leaks, t)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inDetails)
		}
	}
	walk(n, false)
	return s
}

func tableOf(n *html.Node) tableShape {
	var t tableShape
	var walk func(n *html.Node, body bool)
	walk = func(n *html.Node, body bool) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "tbody":
				body = true
			case "th":
				t.cols++
			case "tr":
				if body {
					t.rows++
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, body)
		}
	}
	walk(n, false)
	return t
}

func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
	}
	return b.String()
}

// TestBudgetFindingsFirst: when the report does not fit, the findings
// table takes a row per code, with the connections it touches, before
// any connection row is left out; then connection rows go, and the
// findings stay.
func TestBudgetFindingsFirst(t *testing.T) {
	var frames []craft.Frame
	for i := 0; i < 300; i++ { // REQs never answered: a reply-missing each, naming its frame
		x := craft.Exchange{Transport: craft.RoCEv2, Index: i, Start: craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)}
		fs, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, fs[0])
	}
	path := writeCapture(t, "reqs.pcap", frames)
	full := string(render(t, output.Options{Format: output.Markdown, Budget: -1}, path))
	if n := strings.Count(full, " | info | `reply-missing` |"); n != 300 {
		t.Fatalf("without a budget: %d rows", n)
	}
	got := string(render(t, output.Options{Format: output.Markdown, Budget: 20000}, path))
	if !strings.Contains(got, "the findings grouped by code") || !strings.Contains(got, "rows of the connection table") ||
		!strings.Contains(got, "\n| connections 1–300 (300), once each | info | `reply-missing` | the first: no reply to the request of frame 1 ") ||
		strings.Contains(got, "findings are listed") || utf8.RuneCountInString(got) > 20000 {
		t.Errorf("cut to 20000:\n%s", got)
	}
}

// TestTablesCapped: past MaxMarkdownDetails rows the findings table says
// how many it left out, even when there are fewer messages than that; past
// it (MaxTableRows in text) the connection tables do too.
func TestTablesCapped(t *testing.T) {
	reqs := func(n int) string {
		var frames []craft.Frame
		for i := 0; i < n; i++ { // REQs without RFC 8797 data, never answered: 2 findings each
			x := craft.Exchange{Transport: craft.RoCEv2, Index: i, Initiator: craft.Peer{Absent: true},
				Start: craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)}
			fs, err := x.Frames()
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, fs[0])
		}
		return writeCapture(t, "reqs.pcap", frames)
	}
	few, many := reqs(600), reqs(1100)
	got := string(render(t, output.Options{Format: output.Markdown, Budget: -1}, few))
	// The first MaxMarkdownDetails findings are kept: the 600 REQs' own,
	// alike on every connection (one row naming them), then 400 of the
	// reply-missing ones, which name their frames (a row each).
	if rows := strings.Count(got, " | info | `rpcrdma-absent` |") + strings.Count(got, " | info | `reply-missing` |"); rows != 401 ||
		!strings.Contains(got, "| connections 1–600 (600), once each | info | `rpcrdma-absent` |") {
		t.Errorf("%d finding rows, want 401", rows)
	}
	if !strings.Contains(got, "\n1000 of 1200 findings are listed; `-T json` has all.\n") || strings.Contains(got, "connections are listed") {
		t.Errorf("wrong notes on what was left out")
	}
	got = string(render(t, output.Options{Format: output.Markdown, Budget: -1}, many))
	if !strings.Contains(got, "\n1000 of 1100 connections are listed; `-T json` has all.\n") || !strings.Contains(got, "| frames | 1100 |\n| messages | 1100 |\n| connections | 1100 |\n| established | 0 |\n| rejected | 0 |\n| no reply | 1100 |\n| cut | 0 |\n") {
		t.Errorf("no note on the connections left out, or wrong counts")
	}
	got = string(render(t, output.Options{Format: output.Text}, many))
	if !strings.Contains(got, "\n  100 more connections are not listed; -T json has all\n") || !strings.Contains(got, "1100 connections (1100 no reply)") {
		t.Errorf("text: no note on the connections left out, or wrong totals")
	}
}

// maxColumns is the most columns a Markdown table may have: a wider one
// does not fit in a GitHub comment (780 pixels).
const maxColumns = 7

// TestMarkdownTablesNarrow reads every Markdown golden report and checks
// that no row of any table has more than maxColumns cells.
func TestMarkdownTablesNarrow(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "golden", "*.md"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no golden reports: %v", err)
	}
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rows, inFence := 0, false
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if inFence || !strings.HasPrefix(l, "|") {
				continue
			}
			rows++
			if n := tableCells(l); n > maxColumns {
				t.Errorf("%s:%d: %d cells, more than %d: %s", filepath.Base(name), i+1, n, maxColumns, l)
			}
		}
		if rows == 0 {
			t.Errorf("%s: no table", filepath.Base(name))
		}
	}
}

// tableCells counts the cells of a table row: the pipes that are not
// escaped, less one.
func tableCells(row string) int {
	n := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++ // an escaped character, such as \|
		case '|':
			n++
		}
	}
	return n - 1
}
