// Package datapath follows the data traffic of the connections whose setup
// the tracker saw, and checks that the peers keep to what they negotiated.
//
// It has two parts. The Checker (this file, checks.go, header.go, calls.go
// and conn_findings.go) is the transport-independent one: it takes the RDMA
// Sends of one connection, reassembled, with the RDMA Read Requests and
// completions of each side, decodes the RPC-over-RDMA transport header of
// every Send, tracks the Calls outstanding (by XID, with the STags each
// advertised), the credit grant and the Reads outstanding, raises the
// data-path findings, writes the "rpc" records and keeps the figures of the
// connection's "datapath" object. The Follower (follower.go, send.go) is the InfiniBand-family
// transport: it ties RC frames (RoCEv2, RoCEv1, native InfiniBand) to the
// connections the tracker hands over, keeps the PSN bookkeeping, reassembles
// Sends and feeds a Checker per connection. An iWARP follower feeds the same
// Checker from MPA FPDUs, DDP segments and RDMAP messages.
//
// Nothing here allocates per frame once a connection is running: Sends are
// checked from the frame (a SEND Only) or from the first octets kept of a
// multi-packet Send; records are built only for messages that get one.
package datapath

import (
	"fmt"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// A Checker follows the RPC-over-RDMA traffic of one connection, whatever
// carries it. The transport calls it, in capture order:
//
//   - Frame for every frame of the connection's traffic (it is counted);
//   - Send for every RDMA Send, once it is complete (or known to be
//     incomplete): the opcode that ended it, the R_Key of a Send With
//     Invalidate, its length (the sum of its payloads, pad excluded), its
//     frames and its first octets (at least HeadLen of them when it is that
//     long, or all of it);
//   - ReadRequest when a side issues an RDMA Read Request (or an atomic:
//     they share the same limit), and ReadDone when its response has
//     completed (the last packet of the READ Response, or the ATOMIC
//     Acknowledge);
//   - Lost when frames of a side's requests are missing from the capture:
//     Calls or Replies may have gone unseen, so what depends on seeing them
//     all is no longer judged;
//   - Close when the connection ends (it releases the Calls it tracked).
//
// The Checker decides whether the connection carries RPC-over-RDMA (from
// Negotiated.Rule, or else from its first Sends), raises the data-path
// findings on the "rpc" records it adds to its Output (Take), and keeps the
// connection's figures (Figures) and connection findings (Findings) for its
// connection record. A Checker is not safe for concurrent use.
//
// Sides are numbered 0 and 1: 0 is the initiator and 1 the responder when
// Negotiated.Known; otherwise 0 is the side seen first.
type Checker struct {
	out       *Output
	neg       Negotiated
	peers     Peers
	transport record.Transport

	rule  Rule // RuleUndecided until decided
	tries int  // Sends looked at by the heuristic

	calls     []call // outstanding Calls
	callsCap  int    // how many this connection may track
	lostCalls bool   // a side lost traffic: a Reply without its Call is not judged
	// gone: the side's traffic is lost for good (LostForGood, gone.go).
	gone     [2]bool
	grant    uint32
	hasGrant bool

	reads     [2]int
	readsOver [2]readsOver
	// untracked counts, by side, the Read Requests that came when the
	// transport tracked as many as it does one by one; dma the requests
	// whose DMA Length is over MaxDMALength (the first described).
	untracked [2]counted
	dma       struct {
		counted
		side   int
		op     uint8
		length uint32
	}
	limitNote bool // a Call was not tracked at a limit (noted once on the connection)

	fig     record.Datapath
	touched bool         // a frame or Send was seen
	end     record.State // Terminated once a Terminate was seen (Note)

	// notes are further connection findings: the transport's own (the
	// iWARP FPDU follower's, Note) and iSER's; notesCut counts those past
	// maxConnNotes. iser counts the target's Sends With Invalidate that
	// the initiator's iSER CM header did not allow; the first is noted.
	notes    []finding.Finding
	notesCut int
	iser     int

	// The RPC layer (rpc.go): what it made of the Send under way, the
	// figures, and the finding on the Calls left unanswered at the end
	// (once final).
	seen     rpcSeen
	rpc      rpcStats
	final    bool
	endNotes []finding.Finding

	// Chunks (chunk.go): the segments the outstanding Calls advertised
	// (segsCut: more than maxSegs, no longer judged), what the chunks
	// moved, and the long messages not decoded for the budget.
	segs        []advSeg
	segsCut     bool
	segsRefused int
	chunks      chunkFigures
	longRefused int

	// hl is the RC transport's health (health.go); nil on iWARP and on
	// traffic whose setup was not seen.
	hl *rcHealth
	// tcp is the TCP's health of an iWARP connection (health_tcp.go), once
	// a direction ended.
	tcp *tcpHealth
}

// maxConnNotes bounds the further findings a connection keeps.
const maxConnNotes = 32

// Negotiated is what the connection setup agreed, as far as it was seen.
type Negotiated struct {
	// Known is set when the setup was seen (and accepted): thresholds,
	// credits, R bits and Read limits are judged. Otherwise the traffic is
	// decoded and counted, never judged against what was not seen.
	Known bool
	// Unknown: the capture cut the private data of the setup, so the
	// thresholds and R bits are not known and not judged.
	Unknown bool
	// Connection is the request frame of the connection, for the "rpc"
	// records, and Number its Number; 0 when the setup was not seen.
	Connection, Number int
	// Inline is the inline threshold each way (RFC 8797, section 4.2).
	Inline record.InlineThresholds
	// InitiatorRPCRDMA, ResponderRPCRDMA: that side sent usable RFC 8797
	// data (the thresholds and R bits of one that did not are defaults).
	InitiatorRPCRDMA, ResponderRPCRDMA bool
	// InitiatorR and ResponderR are the R bits each side advertised;
	// RemoteInvalidation is both (RFC 8797, section 4.1).
	InitiatorR, ResponderR bool
	RemoteInvalidation     bool
	// ReadLimit is how many RDMA Reads (and atomics) each side may have
	// outstanding, when HasReadLimit; readWhy says where it comes from.
	ReadLimit    [2]int
	HasReadLimit [2]bool
	readWhy      [2]readWhy
	// Rule says whether the setup shows RPC-over-RDMA (setupRule); with
	// RuleUndecided the Checker decides from the first Sends.
	Rule Rule
	// ISERForbidsInvalidate: an iSER connection whose initiator said it
	// does not support Send With Invalidate (conn.ISERForbidsInvalidate).
	ISERForbidsInvalidate bool
}

// readWhy says where a side's Read limit comes from, shown only when a
// finding needs it: "REQ Initiator Depth 16, REP Responder Resources 8" or
// "MPA Request ORD 4, MPA Reply IRD 8" for the initiator's Reads, the
// mirror (the REP's or the MPA Reply's first) for the responder's.
type readWhy struct {
	kind     uint8 // cmReads or mpaReads, with mirrored for the responder's
	own, per uint16
}

const (
	cmReads  = 1
	mpaReads = 2
	mirrored = 4
)

func (w readWhy) String() string {
	first, second, own, peer := "REQ", "REP", "Initiator Depth", "Responder Resources"
	if w.kind&mpaReads != 0 {
		first, second, own, peer = "MPA Request", "MPA Reply", "ORD", "IRD"
	}
	if w.kind&mirrored != 0 {
		first, second = second, first
	}
	return fmt.Sprintf("%s %s %d, %s %s %d", first, own, w.own, second, peer, w.per)
}

// Peers are the two sides as the records name them (the initiator and the
// responder when the setup is known).
type Peers [2]record.Endpoint

// Send is one RDMA Send, reassembled by its transport.
type Send struct {
	Side int // 0 or 1

	// Opcode names the operation that completed it, as the JSON shows it
	// (SEND_ONLY, SEND_LAST_WITH_INVALIDATE, or the transport's own names).
	Opcode string
	// Invalidate and InvalidateSTag: a Send With Invalidate and the R_Key
	// (STag) it invalidates.
	Invalidate     bool
	InvalidateSTag uint32

	// Length is the octets of the whole Send; LengthKnown is false when a
	// packet of it is missing from the capture (a PSN gap), so its length
	// is unknown.
	Length      int
	LengthKnown bool
	// Complete is false when the Send's end was not seen (its last packet
	// is missing): what its first octets say is still used.
	Complete bool

	Frame  int   // the frame that completed it (or the last one seen)
	Frames []int // every frame of it; read during the call only
	// FramesDropped counts frames beyond those listed (a transport bounds
	// the list).
	FramesDropped int
	Time          time.Time

	// Head holds the Send's first octets, read during the call only: all
	// of it when HeadWhole, else the first len(Head). HeadCut says why it is
	// shorter: "capture" when the capture's snap length cut a packet,
	// "limit" when the transport kept no more (a state limit), "" when it
	// is whole.
	Head      []byte
	HeadWhole bool
	HeadCut   string

	// Flaws are what its packets showed wrong in their lengths (the
	// InfiniBand family: flaws.go).
	Flaws Flaws
}

// HeadLen is how many first octets of a Send a transport keeps at least
// (when the Send is that long): enough for any header with the segments a
// decode keeps.
const HeadLen = 2048

// Mode says which RPC-over-RDMA messages get an "rpc" record.
type Mode uint8

// Modes of --datapath.
const (
	ModeFindings Mode = iota // a record for each message with a finding (the default)
	ModeAll                  // a record for every message
	ModeOff                  // the data path is not followed
)

// modeNames are the --datapath values, by Mode.
var modeNames = [...]string{ModeFindings: "findings", ModeAll: "all", ModeOff: "off"}

// ParseMode reads a --datapath value: all, findings or off.
func ParseMode(s string) (Mode, bool) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), true
		}
	}
	return 0, false
}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "off"
}

// Limits bound the data path's state; zero fields take the defaults.
type Limits struct {
	// CallsPerConnection bounds the outstanding Calls tracked on one
	// connection; CallBudget those tracked on all connections together.
	CallsPerConnection int
	CallBudget         int
	// Directions bounds the directions of traffic without its setup
	// followed at once (each decides by itself whether it is
	// RPC-over-RDMA).
	Directions int
	// HeadBuffers bounds the multi-packet Sends in progress at once whose
	// first octets (HeadLen) and frames (up to 256) are kept.
	HeadBuffers int
	// Connections bounds the connections whose traffic is followed at
	// once: beyond, the least recently active is given up.
	Connections int
	// Budget, when set, is the run's memory budget: what is followed is
	// charged to it too, and when it is full the data path gives up as at
	// the limits above.
	Budget *budget.Budget
}

// Default limits.
const (
	DefaultCallsPerConnection = 1024
	DefaultCallBudget         = 1 << 16
	DefaultDirections         = 4096
	DefaultHeadBuffers        = 1024
	DefaultConnections        = 8192
	// STagsPerCall is how many distinct STags of a Call are kept: a Send
	// With Invalidate naming another is not judged (and the Call's record
	// says so).
	STagsPerCall = 16
	// readsPerSide bounds the Reads a follower tracks per side (IBTA
	// depths are 8-bit: no setup allows more than 255).
	readsPerSide = 256
	// maxFrames bounds the frames listed in a record.
	maxFrames = 256
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.CallsPerConnection, DefaultCallsPerConnection)
	def(&l.CallBudget, DefaultCallBudget)
	def(&l.Directions, DefaultDirections)
	def(&l.HeadBuffers, DefaultHeadBuffers)
	def(&l.Connections, DefaultConnections)
	return l
}

// ExtraMemory estimates the heap the limits may take beyond what the
// defaults take (which the program's base memory budget covers).
func (l Limits) ExtraMemory() int64 {
	l = l.withDefaults()
	over := func(v, def, each int) int64 { return int64(max(0, v-def)) * int64(each) }
	return over(l.Connections, DefaultConnections, connCost) + over(l.Directions, DefaultDirections, dirCost) +
		over(l.CallBudget, DefaultCallBudget, callCost) + over(l.HeadBuffers, DefaultHeadBuffers, headCost)
}

// Output is what the Checkers of one input share: the mode, the limits,
// where records go, and the counters the summary takes.
type Output struct {
	Mode   Mode
	Limits Limits
	// File names the input on each record (live capture: the interface of
	// the frame).
	File string
	// queue holds the "rpc" records made and not yet taken, in capture
	// order, from place qbase+1, nheld of them held (queue.go); items and
	// recs are what Take and TakeItems return; updates the connection
	// updates (TakeUpdates).
	queue   []queued
	qbase   uint64
	nheld   int
	items   []Item
	recs    []*record.RPC
	updates []*record.ConnectionUpdate

	// RPCMessages counts the RPC-over-RDMA messages seen (recorded or not).
	RPCMessages int
	// CallsUntracked counts Calls not tracked at a limit.
	CallsUntracked int
	// ListsCut counts the headers whose chunk lists ran past the octets
	// kept of their Send (HeadLen).
	ListsCut int
	// SegmentsUntracked counts the chunk segments of outstanding Calls not
	// tracked (past maxSegs on a connection); LongsRefused the long
	// messages not put together for the memory budget (chunk.go).
	SegmentsUntracked, LongsRefused int
	// Evidence, when set, is told the frames of the traffic followed of
	// each connection whose setup was seen, by its Number: what -w's
	// second pass writes for the records shown.
	Evidence func(conn, frame int)

	calls int                  // Calls tracked, all connections
	hdr   layers.RPCRDMAHeader // scratch, reused by every decode
	msg   oncrpc.Message       // the RPC message's, too (rpc.go)
	longs []*longBuf           // free buffers of long messages (chunk.go)
	// longsOut counts the buffers of long messages charged to the budget.
	longsOut int
	// ended are the forward Calls connections ended without a Reply to,
	// by host pair (rpc-call-resent).
	ended map[hostPair][]endedCall
}

// NewOutput makes the Output of one input.
func NewOutput(mode Mode, lim Limits, file string) *Output {
	return &Output{Mode: mode, Limits: lim.withDefaults(), File: file}
}

// TakeUpdates returns the connection updates made since the last call,
// in the order they were made; the slice is valid until the next call.
func (o *Output) TakeUpdates() []*record.ConnectionUpdate {
	us := o.updates
	o.updates = o.updates[:0]
	return us
}

// NewChecker makes the Checker of one connection.
func NewChecker(out *Output, n Negotiated, p Peers, transport record.Transport) *Checker {
	c := &Checker{out: out, neg: n, peers: p, transport: transport, rule: n.Rule}
	c.callsCap = out.Limits.CallsPerConnection
	for i := range 2 {
		c.fig.RDMAReadLimit[i], c.fig.HasReadLimit[i] = n.ReadLimit[i], n.HasReadLimit[i]
	}
	return c
}

// Frame counts one frame of the connection's traffic.
func (c *Checker) Frame() {
	c.fig.Frames++
	c.touched = true
}

// Figures are the connection's data-path figures, nil when none of its
// traffic was seen.
func (c *Checker) Figures() *record.Datapath {
	if !c.touched {
		return nil
	}
	f := c.fig
	if c.rule.IsRPCRDMA() {
		f.Rule = c.rule.String()
	}
	c.rpcFigures(&f)
	c.healthFigures(&f)
	return &f
}

// result is what the connection's traffic showed: its figures, its
// connection findings, and its end when the traffic showed it. end says
// that this is the connection's last result, and why ("" while it goes
// on): its Calls without a Reply are then unanswered.
func (c *Checker) result(end string) result {
	if end != "" && !c.final {
		c.final = true
		if c.neg.Known && !c.lostCalls && !c.gone[0] && !c.gone[1] {
			if f := c.unanswered(end); f != nil {
				c.endNotes = append(c.endNotes, *f)
			}
		}
		c.endNotes = append(c.endNotes, c.thresholdAdvice()...)
	}
	fs := append(append(append(c.Findings(), c.chunkNotes()...), c.healthFindings()...), c.endNotes...)
	return result{fig: c.Figures(), findings: fs, end: c.end}
}

// Rule is what decided whether the connection carries RPC-over-RDMA, so far.
func (c *Checker) Rule() Rule { return c.rule }

// Close ends the connection: the Calls it tracked are released.
func (c *Checker) Close() {
	c.dropCalls()
	c.calls = nil
	c.reads = [2]int{}
}
