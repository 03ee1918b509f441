package cmd

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The sinks dissect puts between the run loop and the renderer.

// severityCounter passes records on, keeps the highest severity seen, and
// remembers the findings at or above the --fail-on threshold, to say which
// tripped it.
type severityCounter struct {
	next      record.Sink
	max       finding.Severity
	threshold finding.Severity // 0: never
	multiFile bool
	tripped   map[finding.Code]*trip
	order     []finding.Code
}

// trip is what tripped --fail-on with one code: how often, and where.
type trip struct {
	sev   finding.Severity
	n     int
	where []string // the first tripPlaces
}

// tripPlaces is how many places the --fail-on line names for each code;
// tripCodes how many codes.
const tripPlaces, tripCodes = 3, 5

func (s *severityCounter) Message(m *record.Message) error {
	s.see(m.Findings, place{what: "frame", n: m.Frame, file: m.File})
	return s.next.Message(m)
}

func (s *severityCounter) Connection(c *record.Connection) error {
	s.see(c.Findings, place{what: "connection", n: c.Number})
	return s.next.Connection(c)
}

func (s *severityCounter) Update(u *record.ConnectionUpdate) error {
	s.see(u.Findings, place{what: "connection", n: u.Number})
	return s.next.Update(u)
}

// Summary counts the findings of the run as a whole (a state limit hit by
// TCP directions that never showed an MPA key, say) before passing it on.
func (s *severityCounter) Summary(sum *record.Summary) error {
	s.see(sum.Notes, place{what: "the run"})
	return s.next.Summary(sum)
}

// place says where findings were, made into words only for those that
// trip --fail-on: "frame 12", "frame 12 (rpc) of a.pcap", "connection 3",
// "the run".
type place struct {
	what string // "frame", "connection", or the whole place
	n    int
	rpc  bool
	file string // with several inputs, the frame's
}

func (s *severityCounter) words(p place) string {
	if p.n == 0 && p.what != "frame" {
		return p.what
	}
	w := fmt.Sprintf("%s %d", p.what, p.n)
	if p.rpc {
		w += " (rpc)"
	}
	if s.multiFile && p.what == "frame" {
		w += " of " + p.file
	}
	return w
}

func (s *severityCounter) see(fs []finding.Finding, at place) {
	for _, f := range fs {
		s.max = max(s.max, f.Severity)
		if s.threshold == 0 || f.Severity < s.threshold {
			continue
		}
		if s.tripped == nil {
			s.tripped = map[finding.Code]*trip{}
		}
		t := s.tripped[f.Code]
		if t == nil {
			t = &trip{sev: f.Severity}
			s.tripped[f.Code] = t
			s.order = append(s.order, f.Code)
		}
		t.n++
		where := s.words(at)
		if len(t.where) < tripPlaces && (len(t.where) == 0 || t.where[len(t.where)-1] != where) {
			t.where = append(t.where, where)
		}
	}
}

// failOn is the exit --fail-on asks for: ExitFindings, with the line that
// says which findings reached the threshold, or nil.
func (s *severityCounter) failOn(st *IOStreams) error {
	if s.threshold == 0 || s.max < s.threshold {
		return nil
	}
	printError(st, errors.New(s.report()))
	return findingsReached()
}

// report is the line that says which findings tripped --fail-on: "--fail-on
// info: 3 findings at or above it: rpcrdma-absent (info: frame 2); ...".
func (s *severityCounter) report() string {
	total := 0
	var parts []string
	for i, c := range s.order {
		t := s.tripped[c]
		total += t.n
		if i >= tripCodes {
			continue
		}
		p := fmt.Sprintf("%s (%s", c, t.sev)
		if t.n > 1 {
			p += fmt.Sprintf(", %d times", t.n)
		}
		p += ": " + strings.Join(t.where, ", ")
		if t.n > len(t.where) {
			p += ", ..."
		}
		parts = append(parts, p+")")
	}
	if len(s.order) > tripCodes {
		parts = append(parts, fmt.Sprintf("and %d more codes", len(s.order)-tripCodes))
	}
	return fmt.Sprintf("--fail-on %s: %d %s at or above it: %s", s.threshold, total, plural(total, "finding"),
		strings.Join(parts, "; "))
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// baseName is a path's last element ("-" stays "-").
func baseName(p string) string {
	if p == "-" || p == "" {
		return p
	}
	return filepath.Base(p)
}

// baseNames replaces the inputs' paths in text by their base names.
func baseNames(text string, files []string) string {
	for _, f := range files {
		if b := baseName(f); b != f {
			text = strings.ReplaceAll(text, f, b)
			// Errors name inputs escaped (dissect.InputError).
			text = strings.ReplaceAll(text, record.EscapeControl(f), record.EscapeControl(b))
		}
	}
	return text
}

// renameError is err with the inputs named by their base names, each of
// the errors it joins apart (one per failed input).
func renameError(err error, files []string) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, renameError(e, files))
		}
		return errors.Join(errs...)
	}
	return errors.New(baseNames(err.Error(), files))
}

// renamer names the inputs of the records by their base names (--basename),
// also where a run-level finding names one.
type renamer struct{ next record.Sink }

func (r renamer) Message(m *record.Message) error {
	m.File = baseName(m.File)
	return r.next.Message(m)
}

func (r renamer) Connection(c *record.Connection) error {
	c.File = baseName(c.File)
	return r.next.Connection(c)
}

func (r renamer) Update(u *record.ConnectionUpdate) error {
	u.File = baseName(u.File)
	return r.next.Update(u)
}

func (r renamer) RPC(rec *record.RPC) error {
	rec.File = baseName(rec.File)
	return r.next.RPC(rec)
}

func (r renamer) Summary(s *record.Summary) error {
	var files []string
	for i := range s.Inputs {
		files = append(files, s.Inputs[i].Name)
		s.Inputs[i].Name = baseName(s.Inputs[i].Name)
	}
	for i := range s.Notes {
		s.Notes[i].Message = baseNames(s.Notes[i].Message, files)
	}
	return r.next.Summary(s)
}

// commandLine shows the command as a shell would take it back, with the
// paths listed by their base names (--basename).
func commandLine(args []string, paths []string) string {
	isPath := func(a string) bool {
		for _, p := range paths {
			if a == p {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	b.WriteString("rdmacm-pd")
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") && isPath(v) {
			a = k + "=" + baseName(v)
		} else if isPath(a) {
			a = baseName(a)
		}
		b.WriteByte(' ')
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == ',' || r == '+' ||
				r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) < 0 {
			b.WriteString(a)
		} else if e := record.EscapeControl(a); e != a {
			// Control characters: bash's $'...', so that the line stays
			// one line and nothing in it acts on a terminal.
			b.WriteString("$'" + record.EscapeControl(strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(a)) + "'")
		} else {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		}
	}
	return b.String()
}
