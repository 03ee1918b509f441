package output

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// A selection's expression (select.go): the tree it is parsed into and its
// evaluation on a record, the lexer, and the parser, which checks the
// fields named and the values given for them and suggests a name for one
// mistyped (Closest).

// The expression tree.
type node interface{ eval(fieldRecord) bool }

type orNode struct{ a, b node }
type andNode struct{ a, b node }
type notNode struct{ a node }

func (n orNode) eval(r fieldRecord) bool  { return n.a.eval(r) || n.b.eval(r) }
func (n andNode) eval(r fieldRecord) bool { return n.a.eval(r) && n.b.eval(r) }
func (n notNode) eval(r fieldRecord) bool { return !n.a.eval(r) }

// test compares a field with values: true when any value of the field
// compares true with any of them (op "" tests that the field is there).
type test struct {
	field string
	op    string
	want  []value
}

func (t test) eval(r fieldRecord) bool {
	vals, ok := r.values(t.field)
	if t.op == "!=" {
		return !test{t.field, "==", t.want}.eval(r)
	}
	if !ok {
		return false
	}
	if t.op == "" {
		return true
	}
	for _, v := range vals {
		for _, w := range t.want {
			if compare(t.field, t.op, v, w) {
				return true
			}
		}
	}
	return false
}

// The lexer: words (field names, values), quoted strings, operators and
// parentheses.
func lex(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(' || c == ')' || c == '{' || c == '}' || c == ',':
			toks = append(toks, string(c))
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated string %s", s[i:])
			}
			toks = append(toks, s[i:i+j+2])
			i += j + 2
		case strings.ContainsRune("=!<>&|", rune(c)):
			j := i + 1
			for j < len(s) && strings.ContainsRune("=&|", rune(s[j])) && j-i < 2 {
				j++
			}
			op := s[i:j]
			if !slices.Contains([]string{"==", "!=", "<", "<=", ">", ">=", "!", "&&", "||", "="}, op) {
				return nil, fmt.Errorf("unknown operator %q", op)
			}
			if op == "=" {
				op = "=="
			}
			toks = append(toks, op)
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n(){},\"=!<>&|", rune(s[j])) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks, nil
}

type parser struct {
	toks []string
	i    int
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *parser) next() string {
	t := p.peek()
	p.i++
	return t
}

func (p *parser) or() (node, error) {
	n, err := p.and()
	for err == nil && (p.peek() == "or" || p.peek() == "||") {
		p.next()
		var m node
		if m, err = p.and(); err == nil {
			n = orNode{n, m}
		}
	}
	return n, err
}

func (p *parser) and() (node, error) {
	n, err := p.not()
	for err == nil && (p.peek() == "and" || p.peek() == "&&") {
		p.next()
		var m node
		if m, err = p.not(); err == nil {
			n = andNode{n, m}
		}
	}
	return n, err
}

var opWords = map[string]string{"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

func (p *parser) not() (node, error) {
	switch t := p.next(); t {
	case "":
		return nil, fmt.Errorf("the expression ends where a test should follow")
	case "not", "!":
		n, err := p.not()
		return notNode{n}, err
	case "(":
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		return n, nil
	default:
		return p.test(t)
	}
}

func (p *parser) test(field string) (node, error) {
	if a, ok := fieldAliases[field]; ok {
		field = a
	}
	if !slices.ContainsFunc(SelectFields, func(f struct{ Name, Meaning string }) bool { return f.Name == field }) {
		var names []string
		for _, f := range SelectFields {
			names = append(names, f.Name)
		}
		hint := ""
		if s := Closest(field, names); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", s)
		}
		return nil, fmt.Errorf("unknown field %q%s; the fields are %s", field, hint, strings.Join(names, ", "))
	}
	op := p.peek()
	if w, ok := opWords[op]; ok {
		op = w
	}
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		p.next()
		if op != "==" && op != "!=" && !slices.Contains([]string{"conn", "frame", "severity", "retransmission"}, field) {
			return nil, fmt.Errorf("%s %s: only conn, frame, severity and retransmission are ordered; use == or !=", field, op)
		}
		v, err := p.value(field)
		if err != nil {
			return nil, err
		}
		return test{field, op, []value{v}}, nil
	case "in":
		p.next()
		if p.next() != "{" {
			return nil, fmt.Errorf("%s in: want { values }", field)
		}
		var vs []value
		for p.peek() != "}" {
			if p.peek() == "," {
				p.next()
				continue
			}
			v, err := p.value(field)
			if err != nil {
				return nil, err
			}
			vs = append(vs, v)
		}
		p.next()
		if len(vs) == 0 {
			return nil, fmt.Errorf("%s in {}: no values", field)
		}
		return test{field, "==", vs}, nil
	}
	return test{field: field}, nil
}

// value reads a value for field and checks it.
func (p *parser) value(field string) (value, error) {
	t := p.next()
	switch t {
	case "", "(", ")", "{", "}", "and", "or", "not", "&&", "||", "!":
		return value{}, fmt.Errorf("%s: a value is missing", field)
	}
	s := strings.Trim(t, `"`)
	switch field {
	case "conn", "frame", "retransmission":
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return value{}, fmt.Errorf("%s: %q is not a number", field, s)
		}
		return value{n: n}, nil
	case "xid":
		n, err := strconv.ParseUint(s, 0, 32)
		if err != nil {
			return value{}, fmt.Errorf("xid: %q is not a 32-bit number (decimal, or hex with 0x)", s)
		}
		return value{n: int(n)}, nil
	case "severity":
		if s == "none" {
			return value{n: 0}, nil
		}
		sev, err := finding.ParseSeverity(s)
		if err != nil {
			return value{}, fmt.Errorf("severity: %q is not none, info, warning or error", s)
		}
		return value{n: int(sev)}, nil
	case "nak":
		if !knownNAK(s) {
			return value{}, fmt.Errorf("nak: %q is not %s or rnr_nak", s, strings.Join(record.NAKCodes[:], ", "))
		}
	case "state":
		if !slices.Contains(record.States, record.State(s)) {
			return value{}, fmt.Errorf("state: %q is not established, rejected, no-reply or cut", s)
		}
	case "transport":
		switch record.Transport(s) {
		case record.RoCEv2, record.RoCEv1, record.InfiniBand, record.IWARP:
		default:
			return value{}, fmt.Errorf("transport: %q is not rocev2, rocev1, infiniband or iwarp", s)
		}
	case "msg":
		if !knownMessage(s) {
			return value{}, fmt.Errorf("msg: %q is not a message name (REQ, REP, REJ, RTU, MRA, DREQ, DREP, SIDR_REQ, SIDR_REP, LAP, APR, MPA_REQ, MPA_REP, RPC)", s)
		}
	case "code":
		if _, ok := finding.Lookup(s); !ok {
			var names []string
			for _, c := range finding.Catalogue() {
				names = append(names, c.Name)
			}
			hint := ""
			if c := Closest(s, names); c != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", c)
			}
			return value{}, fmt.Errorf("code: %q is not a finding code%s; docs/findings.md lists them", s, hint)
		}
	}
	return value{s: s}, nil
}

func knownMessage(s string) bool {
	if strings.EqualFold(s, "RPC") { // the data path's rpc records
		return true
	}
	for k := record.KindREQ; k <= record.KindMPAReply; k++ {
		if strings.EqualFold(k.String(), s) {
			return true
		}
	}
	return false
}

// Closest is the word of words nearest to w (at most 2 edits away, or w
// a prefix of it), or "".
func Closest(w string, words []string) string {
	best, bestD := "", 3
	for _, c := range words {
		d := editDistance(strings.ToLower(w), strings.ToLower(c))
		if strings.HasPrefix(c, w) && len(w) >= 2 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
