package output

import (
	"fmt"
	"strings"

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
