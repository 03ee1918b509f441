package output

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The Markdown report's ladder diagrams: a Mermaid sequenceDiagram per
// connection (GitHub and GitLab draw them), with the two peers, the CM or
// MPA messages and their RFC 8797 summary, the first data-path findings
// where they were raised, a dashed arrow each way for the traffic in
// between, and the teardown.

// Bounds of the diagrams: how many connections get one, how many arrows
// and notes one holds, and how many data-path findings it shows.
const (
	MaxDiagrams      = 8
	maxDiagramSteps  = 16
	maxDiagramRPCs   = 3
	maxDiagramLabel  = 90
	diagramInitiator = "I"
	diagramResponder = "R"
)

// ladder is what a diagram shows of one connection, collected as its
// messages and rpc records go by.
type ladder struct {
	initiator string // the Src of its request, to tell the sides apart
	steps     []ladderStep
	more      int // steps past maxDiagramSteps
	rpcs      int // rpc records with findings kept
	setupEnd  int // steps of the setup, before any traffic or teardown
}

// ladderStep is one arrow (and its note, if any).
type ladderStep struct {
	fromInitiator bool
	label         string
	note          string // the worst finding, "" when none
	rpc           bool
}

// ladderFor is the ladder of connection n, or nil past MaxDiagrams.
func (m *markdownRenderer) ladderFor(n int) *ladder {
	if n == 0 {
		return nil
	}
	if l, ok := m.ladders[n]; ok {
		return l
	}
	if len(m.ladders) >= MaxDiagrams {
		return nil
	}
	if m.ladders == nil {
		m.ladders = map[int]*ladder{}
	}
	l := &ladder{}
	m.ladders[n] = l
	return l
}

// add puts a step on the ladder, within its bound.
func (l *ladder) add(s ladderStep) {
	if len(l.steps) >= maxDiagramSteps {
		l.more++
		return
	}
	l.steps = append(l.steps, s)
}

// ladderMessage notes a CM or MPA message of a connection.
func (m *markdownRenderer) ladderMessage(msg *record.Message) {
	l := m.ladderFor(msg.Conn)
	if l == nil {
		return
	}
	src := msg.Src.String()
	request := msg.Kind == record.KindMPARequest || msg.Name() == "REQ"
	if request && l.initiator == "" {
		l.initiator = src
	}
	label := fmt.Sprintf("frame %d %s", msg.Frame, msg.Name())
	if msg.RPCRDMA != nil || msg.ULP != nil || carriesSetup(msg) {
		label += " " + m.text.summary(msg)
	}
	s := ladderStep{fromInitiator: src == l.initiator, label: label}
	if len(msg.Findings) > 0 {
		s.note = worstOf(msg.Findings)
	}
	l.add(s)
	if l.rpcs == 0 && !teardown(msg.Name()) {
		l.setupEnd = len(l.steps)
	}
}

// carriesSetup reports whether a message is one whose private data RFC
// 8797 is about: a request, a reply or a reject.
func carriesSetup(msg *record.Message) bool {
	switch msg.Name() {
	case "REQ", "REP", "REJ", "MPA_REQ", "MPA_REP":
		return true
	}
	return msg.Kind.IsMPA()
}

// teardown reports whether a message ends a connection.
func teardown(name string) bool { return name == "DREQ" || name == "DREP" }

// ladderRPC notes an rpc record with findings: the first few of each
// connection.
func (m *markdownRenderer) ladderRPC(rec *record.RPC) {
	if len(rec.Findings) == 0 {
		return
	}
	l := m.ladderFor(rec.Conn)
	if l == nil || l.rpcs >= maxDiagramRPCs {
		return
	}
	l.rpcs++
	label := fmt.Sprintf("frame %d", rec.Frame)
	if rec.Message != nil {
		label += " " + rpcMessageName(rec.Message)
	}
	if rec.LengthKnown {
		label += fmt.Sprintf(" Send of %d octets", rec.Length)
	}
	l.add(ladderStep{fromInitiator: rec.Direction != record.ResponderToInitiator, label: label, note: worstOf(rec.Findings), rpc: true})
}

// rpcMessageName names an RPC message briefly: "NFS3 WRITE Call".
func rpcMessageName(r *record.RPCMessage) string {
	s := strings.TrimSpace(r.ProgramName + " " + r.ProcedureName)
	if r.Type == "call" {
		return s + " Call"
	}
	return s + " Reply"
}

// diagrams are the connections' diagrams, as many as l allows, and a line
// that says what was left out.
func (m *markdownRenderer) diagrams(w reportWriter, l limits) {
	conns := m.diagramConns()
	if len(conns) == 0 {
		return
	}
	fmt.Fprintf(w, "## Ladder diagrams\n\n")
	for _, c := range conns[:min(l.diagrams, len(conns))] {
		fmt.Fprintf(w, "Connection %d:\n\n```mermaid\n%s```\n\n", c.Number, m.diagram(c))
	}
	var left []string
	if n := len(conns) - l.diagrams; n > 0 {
		left = append(left, fmt.Sprintf("%d of %d diagrams were left out for the budget", n, len(conns)))
	}
	if m.nConns > len(conns) {
		left = append(left, fmt.Sprintf("only the first %d connections get one", MaxDiagrams))
	}
	if len(left) > 0 {
		fmt.Fprintf(w, "%s.\n\n", upperFirst(strings.Join(left, "; ")))
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// diagramConns are the connections shown that get a diagram, by number.
func (m *markdownRenderer) diagramConns() []*record.Connection {
	var out []*record.Connection
	for _, c := range m.conns {
		if _, ok := m.ladders[c.Number]; ok {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b *record.Connection) int { return a.Number - b.Number })
	return out
}

// diagram is one connection's sequenceDiagram, without the fence.
func (m *markdownRenderer) diagram(c *record.Connection) string {
	l := m.ladders[c.Number]
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	fmt.Fprintf(&b, "    participant %s as initiator %s\n", diagramInitiator, mermaidText(c.Initiator.String()))
	fmt.Fprintf(&b, "    participant %s as responder %s\n", diagramResponder, mermaidText(c.Responder.String()))
	for i, s := range l.steps {
		if i == l.setupEnd {
			m.traffic(&b, c)
		}
		from, to := diagramInitiator, diagramResponder
		if !s.fromInitiator {
			from, to = to, from
		}
		arrow := "->>"
		if s.rpc {
			arrow = "-)"
		}
		fmt.Fprintf(&b, "    %s%s%s: %s\n", from, arrow, to, mermaidText(s.label))
		if s.note != "" {
			fmt.Fprintf(&b, "    Note over %s: %s\n", to, mermaidText(s.note))
		}
		if i+1 == l.setupEnd && c.State == record.Established {
			fmt.Fprintf(&b, "    Note over %s,%s: %s\n", diagramInitiator, diagramResponder, mermaidText(agreed(c)))
		}
	}
	if l.setupEnd >= len(l.steps) {
		m.traffic(&b, c)
	}
	if l.more > 0 {
		fmt.Fprintf(&b, "    Note over %s,%s: %s left out\n", diagramInitiator, diagramResponder, count(l.more, "more message"))
	}
	worst := "none"
	if f, ok := m.worst.of(c); ok {
		worst = f.Severity.String() + " " + f.Code.String()
	}
	state := string(c.Shown())
	if c.RejectReason != "" {
		state += " (" + c.RejectReason + ")"
	}
	fmt.Fprintf(&b, "    Note over %s,%s: %s\n", diagramInitiator, diagramResponder, mermaidText(state+", worst finding "+worst))
	return b.String()
}

// agreed says what an established connection's setup agreed.
func agreed(c *record.Connection) string {
	if c.Inline == nil || c.TrafficNotRPCRDMA() || !c.RPCRDMARules {
		return "established"
	}
	inv := "no remote invalidation"
	if c.RemoteInvalidation {
		inv = "remote invalidation"
	}
	return fmt.Sprintf("inline %d I→R, %d R→I, %s", c.Inline.InitiatorToResponder, c.Inline.ResponderToInitiator, inv)
}

// traffic writes the dashed arrows that sum up a connection's traffic:
// its RPC-over-RDMA messages each way, or its frames.
func (m *markdownRenderer) traffic(b *strings.Builder, c *record.Connection) {
	d := c.Datapath
	if d == nil || d.Frames == 0 {
		return
	}
	if d.RPCMessages[0]+d.RPCMessages[1] == 0 {
		fmt.Fprintf(b, "    %s-->>%s: %s, no RPC-over-RDMA\n", diagramInitiator, diagramResponder, count(d.Frames, "data frame"))
		return
	}
	var calls, replies int
	for _, p := range d.RPCProcedures {
		calls += p.Calls
		replies += p.Replies
	}
	side := func(i int, what, whats string, n int, long string) string {
		s := count(d.RPCMessages[i], "RPC-over-RDMA message")
		var parts []string
		if n == 1 {
			parts = append(parts, "1 "+what)
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d %s", n, whats))
		}
		if d.LongMessages[i] > 0 {
			parts = append(parts, count(d.LongMessages[i], long))
		}
		if len(parts) > 0 {
			s += " (" + strings.Join(parts, ", ") + ")"
		}
		return s
	}
	if d.RPCMessages[0] > 0 {
		fmt.Fprintf(b, "    %s-->>%s: %s\n", diagramInitiator, diagramResponder, side(0, "Call", "Calls", calls, "Long Call"))
	}
	if d.RPCMessages[1] > 0 {
		fmt.Fprintf(b, "    %s-->>%s: %s\n", diagramResponder, diagramInitiator, side(1, "Reply", "Replies", replies, "Long Reply"))
	}
}

// mermaidText makes text safe in a Mermaid message or note: one line, no
// statement separator (;), no entity (#), no HTML, no comment (%%), at
// most maxDiagramLabel characters.
func mermaidText(s string) string {
	s = mermaidReplacer.Replace(s)
	if r := []rune(s); len(r) > maxDiagramLabel {
		s = string(r[:maxDiagramLabel-1]) + "…"
	}
	return strings.TrimSpace(s)
}

var mermaidReplacer = strings.NewReplacer(";", ",", "#", "no. ", "<", "‹", ">", "›", "%", " percent", "\n", " ", "\r", " ",
	"`", "'", "{", "(", "}", ")")
