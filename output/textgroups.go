package output

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
)

// With -q, text shows the findings alone; the same code on the same
// connection is one entry, with its count and first frames, as --fail-on
// and the Markdown report give them: a workload that repeats a finding on
// every Send would otherwise bury the rest. The entries come before the
// connections table, in the order of their first finding. A live capture,
// whose findings are news as they come, still shows each at once.

// maxGroups bounds the entries held; the findings of entries beyond are
// shown at once, as a live capture's.
const maxGroups = 4096

// entryKey names an entry: a finding code on a connection (0: none) of an
// input.
type entryKey struct {
	file string
	conn int
	code finding.Code
}

// findingGroup is an entry: its first finding, how often, and where.
type findingGroup struct {
	key    entryKey
	first  finding.Finding
	n      int
	frames []int
}

// findingGroups holds the entries of a run.
type findingGroups struct {
	at   map[entryKey]int
	list []*findingGroup
}

// add counts f of frame on conn; it reports false when f is to be shown
// at once (no room for a new entry).
func (g *findingGroups) add(file string, conn, frame int, f finding.Finding) bool {
	k := entryKey{file, conn, f.Code}
	if i, ok := g.at[k]; ok {
		e := g.list[i]
		e.n++
		if len(e.frames) < groupFrames && e.frames[len(e.frames)-1] != frame {
			e.frames = append(e.frames, frame)
		}
		return true
	}
	if len(g.list) >= maxGroups {
		return false
	}
	if g.at == nil {
		g.at = map[entryKey]int{}
	}
	g.at[k] = len(g.list)
	g.list = append(g.list, &findingGroup{key: k, first: f, n: 1, frames: []int{frame}})
	return true
}

// where is an entry's count and frames: "3 times: frame 19, 28, 45, ...",
// or "" for a finding seen once.
func (e *findingGroup) where() string {
	if e.n == 1 {
		return ""
	}
	frames := make([]string, len(e.frames))
	for i, f := range e.frames {
		frames[i] = strconv.Itoa(f)
	}
	more := ""
	if e.n > len(e.frames) {
		more = ", ..."
	}
	on := ""
	if e.key.conn != 0 {
		on = fmt.Sprintf(" on connection %d", e.key.conn)
	}
	return fmt.Sprintf("%d times%s: frame %s%s", e.n, on, strings.Join(frames, ", "), more)
}

// quietFinding shows or counts a finding under -q.
func (r *textRenderer) quietFinding(file string, conn, frame int, f finding.Finding) {
	if !r.opts.Live && r.groups.add(file, conn, frame, f) {
		return
	}
	r.header()
	fmt.Fprintf(r.w, "%5d  %s\n", frame, r.finding(f, 7))
}

// flushGroups writes the entries held: the first finding of each under its
// first frame, its count and frames beneath.
func (r *textRenderer) flushGroups() {
	for _, e := range r.groups.list {
		r.input(e.key.file)
		r.header()
		fmt.Fprintf(r.w, "%5d  %s\n", e.frames[0], r.finding(e.first, 7))
		if where := e.where(); where != "" {
			fmt.Fprintf(r.w, "%s%s\n", strings.Repeat(" ", 15), wrapSpans(r.width, 15, 15, span{text: where, style: r.p.dim}))
		}
	}
	r.groups = findingGroups{}
}
