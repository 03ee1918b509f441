package output

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Selection is a display filter (dissect -Y): an expression over the
// fields of messages and connections, in the spirit of tshark's display
// filters. A record is shown when the expression is true for it; a field
// the record does not have makes a comparison false, as in tshark (msg is
// a message's, state a connection's), so "msg == REJ" shows REJ messages
// and no connection, "conn == 2" connection 2 and its messages.
//
//	expr   = and { ("or" | "||") and }
//	and    = not { ("and" | "&&") not }
//	not    = ("not" | "!") not | "(" expr ")" | field [ op value | "in" "{" value... "}" ]
//	op     = "==" | "!=" | "<" | "<=" | ">" | ">=" (and eq, ne, lt, le, gt, ge)
//
// A field alone is true when the record has it ("code": it has a
// finding). "!=" is the negation of "==".
type Selection struct {
	src  string
	expr node

	messages, shownMessages int
	conns, shownConns       int
	rpcs, shownRPCs         int
	// shown marks the connections shown, by number: their updates are
	// shown too.
	shown []uint64
}

// SelectFields lists the fields a selection may name, with what each is.
var SelectFields = []struct{ Name, Meaning string }{
	{"addr", "an address of the message (src or dst) or connection (initiator or responder); a host matches with any port"},
	{"src", "the message's source, the connection's initiator"},
	{"dst", "the message's destination, the connection's responder"},
	{"msg", "the message: REQ, REP, REJ, RTU, MRA, DREQ, DREP, SIDR_REQ, SIDR_REP, LAP, APR, MPA_REQ, MPA_REP, RPC (a data-path rpc record)"},
	{"code", "a finding code of the message or connection"},
	{"severity", "the highest severity of its findings: none, info, warning, error"},
	{"conn", "the connection number (a message's or rpc record's: the connection it belongs to)"},
	{"state", "the connection's state: established, rejected, no-reply, cut"},
	{"transport", "rocev2, rocev1, infiniband, iwarp"},
	{"frame", "a frame of the message, the connection's request or reply frame"},
	{"file", "the input, by its name as given or its base name"},
	{"prog", "an rpc record's RPC program, by name (NFS, MOUNT, NLM, ...) or number"},
	{"proc", "an rpc record's RPC procedure, by name (READ, COMPOUND, CB_COMPOUND, ...) or number"},
	{"op", "an operation of an rpc record's NFSv4 COMPOUND or CB_COMPOUND (SEQUENCE, READ, CB_RECALL, ...)"},
	{"xid", "an rpc record's RPC XID (decimal, or hex with 0x)"},
	{"rpc_status", "an rpc record's Reply status: its reply, accept, reject, auth or NFS status (PROC_UNAVAIL, NFS3ERR_STALE, NFS4_OK, ...)"},
	{"nak", "a NAK a connection's RC traffic carried: psn_sequence_error, invalid_request, remote_access_error, remote_operational_error, invalid_rd_request, rnr_nak (alone: any)"},
	{"retransmission", "the packets a connection's RC traffic sent again, both ways (alone: any)"},
}

// fieldAliases are the tshark spellings taken for fields.
var fieldAliases = map[string]string{"ip.addr": "addr", "ip.src": "src", "ip.dst": "dst", "finding": "code",
	"connection": "conn", "message": "msg", "kind": "msg"}

// maxSelection bounds an expression (and so the depth of its parse).
const maxSelection = 4096

// ParseSelection reads a display filter expression.
func ParseSelection(s string) (*Selection, error) {
	if len(s) > maxSelection {
		return nil, fmt.Errorf("the expression is longer than %d characters", maxSelection)
	}
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty expression (try: addr == 192.0.2.1, msg == REJ, severity >= warning, conn == 2)")
	}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q after a complete expression (join tests with and, or)", p.toks[p.i])
	}
	return &Selection{src: s, expr: n}, nil
}

// String is the expression as given.
func (s *Selection) String() string { return s.src }

// Message reports whether the selection shows m.
func (s *Selection) Message(m *record.Message) bool { return s.expr.eval(msgRecord{m}) }

// Connection reports whether the selection shows c.
func (s *Selection) Connection(c *record.Connection) bool { return s.expr.eval(connRecord{c}) }

// Filter passes on to next the records the selection shows, and the
// summary, counting what it saw.
func (s *Selection) Filter(next record.Sink) record.Sink { return &selectSink{s, next} }

// SelectionCounts are the records a selection saw, and those it showed.
type SelectionCounts struct {
	Messages, ShownMessages int
	Connections, ShownConns int
	RPCs, ShownRPCs         int // the data path's rpc records
}

// Counts are the records shown, and those seen.
func (s *Selection) Counts() SelectionCounts {
	return SelectionCounts{s.messages, s.shownMessages, s.conns, s.shownConns, s.rpcs, s.shownRPCs}
}

// NamesRPC reports whether the expression tests msg against RPC: rpc
// records are made for every Send only with --datapath all.
func (s *Selection) NamesRPC() bool { return namesRPC(s.expr) }

func namesRPC(n node) bool {
	switch n := n.(type) {
	case orNode:
		return namesRPC(n.a) || namesRPC(n.b)
	case andNode:
		return namesRPC(n.a) || namesRPC(n.b)
	case notNode:
		return namesRPC(n.a)
	case test:
		if n.field == "msg" {
			for _, v := range n.want {
				if strings.EqualFold(v.s, "RPC") {
					return true
				}
			}
		}
	}
	return false
}

type selectSink struct {
	s    *Selection
	next record.Sink
}

func (f *selectSink) Message(m *record.Message) error {
	f.s.messages++
	if !f.s.Message(m) {
		return nil
	}
	f.s.shownMessages++
	return f.next.Message(m)
}

func (f *selectSink) Connection(c *record.Connection) error {
	f.s.conns++
	if !f.s.Connection(c) {
		return nil
	}
	f.s.shownConns++
	if n := c.Number; n >= 0 && n < maxMarked {
		for len(f.s.shown) <= n/64 {
			f.s.shown = append(f.s.shown, 0)
		}
		f.s.shown[n/64] |= 1 << (n % 64)
	}
	return f.next.Connection(c)
}

// maxMarked bounds the connections whose being shown is marked (2 MiB of
// marks); the update of one beyond is shown when the selection shows it.
const maxMarked = 1 << 24

// Update passes on the update of a connection shown, and one whose own
// findings and figures the selection shows (a finding that came after the
// record was handed on).
func (f *selectSink) Update(u *record.ConnectionUpdate) error {
	n := u.Number
	if n >= 0 && n/64 < len(f.s.shown) && f.s.shown[n/64]&(1<<(n%64)) != 0 {
		return f.next.Update(u)
	}
	c := record.Connection{Number: u.Number, File: u.File, Transport: u.Transport, Initiator: u.Initiator, Responder: u.Responder,
		RequestFrame: u.RequestFrame, Datapath: u.Datapath, Findings: u.Findings}
	if !f.s.expr.eval(connRecord{&c}) {
		return nil
	}
	return f.next.Update(u)
}

// RPC passes on the data path's rpc records the selection shows (they are
// not counted among the messages).
func (f *selectSink) RPC(rec *record.RPC) error {
	f.s.rpcs++
	if !f.s.expr.eval(rpcRecord{rec}) {
		return nil
	}
	f.s.shownRPCs++
	return f.next.RPC(rec)
}

func (f *selectSink) Summary(sum *record.Summary) error { return f.next.Summary(sum) }

// A record is what a selection looks at: the values of a field, or
// ok false when the record has no such field.
type fieldRecord interface {
	values(field string) (vals []value, ok bool)
}

// value is one value of a field: a word (compared as the field says) or
// a number (conn, frame, severity).
type value struct {
	s string
	n int
}

type msgRecord struct{ m *record.Message }

func (r msgRecord) values(field string) ([]value, bool) {
	m := r.m
	switch field {
	case "addr":
		return []value{{s: m.Src.String()}, {s: m.Dst.String()}}, true
	case "src":
		return []value{{s: m.Src.String()}}, true
	case "dst":
		return []value{{s: m.Dst.String()}}, true
	case "msg":
		return []value{{s: m.Name()}}, true
	case "code":
		return codeValues(m.Findings)
	case "severity":
		return []value{{n: int(finding.Max(m.Findings))}}, true
	case "conn":
		if m.Conn == 0 {
			return nil, false
		}
		return []value{{n: m.Conn}}, true
	case "transport":
		return []value{{s: string(m.Transport)}}, true
	case "frame":
		vs := []value{{n: m.Frame}}
		for _, f := range m.Frames {
			vs = append(vs, value{n: f})
		}
		return vs, true
	case "file":
		return []value{{s: m.File}}, true
	}
	return nil, false
}

// rpcRecord is an rpc record: its msg is "RPC"; its conn is that of its
// connection, none when the setup was not seen.
type rpcRecord struct{ r *record.RPC }

func (r rpcRecord) values(field string) ([]value, bool) {
	x := r.r
	if m := x.Message; m != nil {
		if vs, ok := rpcMessageValues(m, field); ok || isRPCField(field) {
			return vs, ok
		}
	}
	switch field {
	case "xid": // no RPC message (RDMA_NOMSG, RDMA_ERROR): the transport header's
		if x.Header == nil {
			return nil, false
		}
		return []value{{n: int(x.Header.XID)}}, true
	case "conn":
		if x.Conn == 0 {
			return nil, false
		}
		return []value{{n: x.Conn}}, true
	case "addr":
		return []value{{s: x.Src.String()}, {s: x.Dst.String()}}, true
	case "src":
		return []value{{s: x.Src.String()}}, true
	case "dst":
		return []value{{s: x.Dst.String()}}, true
	case "msg":
		return []value{{s: "RPC"}}, true
	case "code":
		return codeValues(x.Findings)
	case "severity":
		return []value{{n: int(finding.Max(x.Findings))}}, true
	case "transport":
		return []value{{s: string(x.Transport)}}, true
	case "frame":
		vs := []value{{n: x.Frame}}
		for _, f := range x.Frames {
			vs = append(vs, value{n: f})
		}
		return vs, true
	case "file":
		return []value{{s: x.File}}, true
	}
	return nil, false
}

type connRecord struct{ c *record.Connection }

func (r connRecord) values(field string) ([]value, bool) {
	c := r.c
	switch field {
	case "addr":
		return []value{{s: c.Initiator.String()}, {s: c.Responder.String()}}, true
	case "src":
		return []value{{s: c.Initiator.String()}}, true
	case "dst":
		return []value{{s: c.Responder.String()}}, true
	case "code":
		return codeValues(c.Findings)
	case "severity":
		return []value{{n: int(finding.Max(c.Findings))}}, true
	case "conn":
		return []value{{n: c.Number}}, true
	case "state":
		return []value{{s: string(c.State)}}, true
	case "transport":
		return []value{{s: string(c.Transport)}}, true
	case "frame":
		vs := []value{{n: c.RequestFrame}}
		if c.ReplyFrame != 0 {
			vs = append(vs, value{n: c.ReplyFrame})
		}
		return vs, true
	case "file":
		return []value{{s: c.File}}, true
	case "nak", "retransmission":
		return healthValues(c, field)
	}
	return nil, false
}

// isRPCField reports whether a field is the RPC message's.
func isRPCField(field string) bool {
	switch field {
	case "prog", "proc", "op", "xid", "rpc_status":
		return true
	}
	return false
}

// rpcMessageValues are the values of an RPC message's fields.
func rpcMessageValues(m *record.RPCMessage, field string) ([]value, bool) {
	var vs []value
	named := func(name string, n uint32) {
		if name != "" {
			vs = append(vs, value{s: name})
		}
		vs = append(vs, value{s: strconv.FormatUint(uint64(n), 10)})
	}
	switch field {
	case "xid":
		return []value{{n: int(m.XID)}}, true
	case "prog":
		if m.HasProgram {
			named(m.ProgramName, m.Program)
		}
	case "proc":
		if m.HasProgram {
			named(m.ProcedureName, m.Procedure)
		}
	case "op":
		for _, op := range m.Operations {
			vs = append(vs, value{s: op})
		}
	case "rpc_status":
		for _, st := range []string{m.ReplyStatus, m.AcceptStatus, m.RejectStatus, m.AuthStatus, m.NFSStatus} {
			if st != "" {
				vs = append(vs, value{s: st})
			}
		}
	default:
		return nil, false
	}
	return vs, len(vs) > 0
}

func codeValues(fs []finding.Finding) ([]value, bool) {
	if len(fs) == 0 {
		return nil, false
	}
	vs := make([]value, len(fs))
	for i, f := range fs {
		vs[i] = value{s: f.Code.String()}
	}
	return vs, true
}

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

func compare(field, op string, v, w value) bool {
	switch field {
	case "conn", "frame", "severity", "retransmission":
		switch op {
		case "==":
			return v.n == w.n
		case "<":
			return v.n < w.n
		case "<=":
			return v.n <= w.n
		case ">":
			return v.n > w.n
		case ">=":
			return v.n >= w.n
		}
		return false
	case "addr", "src", "dst":
		return sameAddr(v.s, w.s)
	case "file":
		return v.s == w.s || filepath.Base(v.s) == w.s
	case "msg", "prog", "proc", "op", "rpc_status", "nak":
		return strings.EqualFold(v.s, w.s)
	case "xid":
		return v.n == w.n
	}
	return v.s == w.s
}

// sameAddr compares an address as shown (IP, "[IPv6]:port", "IP:port",
// GID, "LID n") with one given: equal, or the same host when the one given
// has no port; an IPv4 address matches its IPv4-mapped GID.
func sameAddr(shown, given string) bool {
	if strings.EqualFold(shown, given) {
		return true
	}
	host := shown
	if ap, err := netip.ParseAddrPort(shown); err == nil {
		host = ap.Addr().String()
	}
	a, err1 := netip.ParseAddr(host)
	b, err2 := netip.ParseAddr(given)
	return err1 == nil && err2 == nil && a.Unmap() == b.Unmap()
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
