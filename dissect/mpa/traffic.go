package mpa

import (
	"fmt"
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The data traffic of an iWARP connection: once a direction's MPA frame is
// in (and the Reply did not reject the connection), the reader of that
// direction goes on to follow its FPDUs. The two directions of a
// connection share an iwConn, which knows both MPA frames (so whether
// markers and CRC are in use each way) and hands what its followers read
// to the connection's Traffic.

// Traffic receives the data traffic of one followed iWARP connection;
// sides are 0 for the initiator (the sender of the MPA Request) and 1 for
// the responder.
type Traffic interface {
	// Frame counts a TCP frame that carried octets of the traffic: frame
	// names it.
	Frame(frame int)
	// Send is a Send (of any of its four kinds), whole or as far as it
	// was seen.
	Send(s *Send)
	// ReadRequest: side issued the RDMA Read Request rr (read during the
	// call only), in frame.
	ReadRequest(side, frame int, at time.Time, rr *layers.RDMAPReadRequest)
	// ReadDone: the RDMA Read Response to a Read Request of side ended.
	ReadDone(side int)
	// Tagged: octets of a tagged DDP segment (an RDMA Write or Read
	// Response) passed, in the frame that carried them (t and its Data
	// are read during the call only).
	Tagged(t *Tagged)
	// Lost: what follows of side's traffic is not seen.
	Lost(side int)
	// Finding is a finding of the connection (its message names the
	// frame).
	Finding(f finding.Finding)
	// Close: both directions ended; tcp is what each side's TCP segments
	// showed (retransmissions, holes the capture lost, zero windows,
	// resets), by side, read during the call only.
	Close(tcp *[2]TCPHealth)
}

// TCPHealth is what a direction's TCP segments showed of TCP's own work,
// as the reassembler counted it.
type TCPHealth = reassembly.Health

// Send is one RDMAP Send message, reassembled from its DDP segments.
type Send struct {
	Side           int
	Opcode         string // SEND, SEND_WITH_INVALIDATE, SEND_WITH_SE, SEND_WITH_SE_AND_INVALIDATE
	Invalidate     bool
	InvalidateSTag uint32
	// Length is the octets of the whole message; LengthKnown is false when
	// a segment of it is missing.
	Length      int
	LengthKnown bool
	Complete    bool // its last segment was read
	Frame       int  // the frame that completed it (or the last one seen)
	Frames      []int
	// FramesDropped counts frames beyond those listed.
	FramesDropped int
	Time          time.Time
	// Head holds its first octets (read during the call only): all of it
	// when HeadWhole; HeadCut says why it is shorter ("limit" when no
	// buffer could be had, "capture" when a segment is missing, "" when it
	// is only longer than HeadLen).
	Head      []byte
	HeadWhole bool
	HeadCut   string
}

// Tagged is a piece of a tagged DDP segment (RFC 5041, section 4.2): of
// an RDMA Write, or of an RDMA Read Response (RFC 5040, section 4), whose
// octets land in the data sink buffer STag names, from TO on. A segment
// comes in as many pieces as the TCP segments (and markers) cut it into,
// in order: the first (Start) when its headers are in, with the payload
// octets that came with them (maybe none), the last with End.
type Tagged struct {
	Side   int // the sender
	Frame  int // the frame that carried the piece (its first octet, or the headers')
	Opcode uint8
	STag   uint32
	TO     uint64 // the Tagged Offset of the piece's first octet
	N      int    // the piece's octets
	// Data holds the piece's octets as captured, those at offsets of the
	// message below TaggedKeep (nil past them).
	Data       []byte
	Start      bool // the piece begins the segment: TO is the segment's
	SegmentLen int  // the segment's payload octets
	First      bool // the segment begins its message
	Last       bool // the segment is its message's last (L)
	End        bool // the piece ends the segment
}

// Pair is a connection whose traffic is about to be followed: its MPA
// Request and Reply as far as they were seen (nil when not), each with its
// file, frame, time, transport, addresses and MPA header only.
type Pair struct {
	Request, Reply *record.Message
}

// Follow makes the framer follow the traffic of the connections it sees
// set up: link gives the Traffic of each, called once per connection,
// when both of its MPA frames are in or its first FPDU octets arrive.
func (f *Framer) Follow(link func(p *Pair) Traffic) { f.link = link }

// MaxFollowed bounds the iWARP connections whose traffic is followed at
// once (with one direction's MPA frame in); the directions of more are
// not followed, counted in NotFollowed.
const MaxFollowed = 4096

// connCost is what a connection followed costs, charged to the budget.
const connCost = 4608

// NotFollowed counts the directions whose FPDUs were not followed, by
// cause: MaxFollowed connections were followed already (limit), or the
// memory budget was full (budget).
func (f *Framer) NotFollowed() (limit, budget int) { return f.notFollowed, f.notFollowedBudget }

// Limits of the data traffic.
const (
	// maxFrames bounds the frames listed for a Send.
	maxFrames = 1024
	// maxHeads bounds the Sends whose first octets are held at once (in
	// all directions); each costs HeadLen octets of the total buffer.
	maxHeads = 8192
	// pooledHeads bounds the head buffers kept for reuse.
	pooledHeads = 256
	// maxTerminates bounds the Terminates reported one by one per
	// direction; the rest are counted.
	maxTerminates = 4
)

// pairKey names a TCP connection whichever way its segments go.
type pairKey struct {
	a, b [16]byte
	pa   uint16
	pb   uint16
}

func keyOf(fl reassembly.Flow) pairKey {
	k := pairKey{a: fl.Src, b: fl.Dst, pa: fl.SrcPort, pb: fl.DstPort}
	if string(k.b[:]) < string(k.a[:]) || k.a == k.b && k.pb < k.pa {
		k.a, k.b, k.pa, k.pb = k.b, k.a, k.pb, k.pa
	}
	return k
}

// iwConn is what the two directions of a connection share.
type iwConn struct {
	key      pairKey
	frames   [2]*frameSeen // by side: the Request, the Reply
	hdr      [2]*record.MPAHeader
	readers  [2]*reader
	traffic  Traffic
	linked   bool
	rejected bool
	attached int
	// lastSend is the last Send of each side read so far, which a
	// Terminate of the other side names.
	lastSend [2]sendSeen
	// tcp is what each side's TCP segments showed, once its direction
	// ended (handed on with Close).
	tcp [2]TCPHealth
}

// frameSeen is what a connection keeps of one of its MPA frames.
type frameSeen struct {
	file      string
	src, dst  record.Endpoint
	frame     int
	at        time.Time
	transport record.Transport
	hdr       *record.MPAHeader
}

// message is the frame as the Pair shows it; nil when it was not seen.
func (s *frameSeen) message() *record.Message {
	if s == nil {
		return nil
	}
	return &record.Message{File: s.file, Frame: s.frame, Time: s.at, Transport: s.transport, Src: s.src, Dst: s.dst, MPAInfo: s.hdr}
}

// mpaFlags are the flags of a side's MPA frame, when it was seen.
func (c *iwConn) markersFor(side int) mode {
	// Markers go to the receiver that asked for them.
	if h := c.hdr[1-side]; h != nil {
		return modeOf(h.Marker)
	}
	return modeGuess
}

func (c *iwConn) crcFor(side int) mode {
	own, peer := c.hdr[side], c.hdr[1-side]
	switch {
	case own != nil && own.CRC, peer != nil && peer.CRC:
		return modeOn
	case own != nil && peer != nil:
		return modeOff
	}
	return modeGuess
}

func modeOf(on bool) mode {
	if on {
		return modeOn
	}
	return modeOff
}

// link gets the connection's Traffic, once.
func (c *iwConn) link(f *Framer) {
	if !c.linked {
		c.linked = true
		c.traffic = f.link(&Pair{Request: c.frames[0].message(), Reply: c.frames[1].message()})
	}
}

// heads lends the buffers of Sends' first octets, charged to the total
// buffer of the direction that holds one.
type heads struct {
	f    *Framer
	d    *reassembly.Dir
	held *int
}

func (h heads) get() []byte {
	f := h.f
	if f.heldHeads >= maxHeads || !h.d.Fits(HeadLen) {
		f.headsRefused++
		return nil
	}
	h.d.Charge(HeadLen)
	f.heldHeads++
	*h.held += HeadLen
	if n := len(f.heads); n > 0 {
		b := f.heads[n-1]
		f.heads = f.heads[:n-1]
		return b
	}
	return make([]byte, HeadLen)
}

func (h heads) put(b []byte) {
	f := h.f
	h.d.Charge(-HeadLen)
	f.heldHeads--
	*h.held -= HeadLen
	if len(f.heads) < pooledHeads {
		f.heads = append(f.heads, b)
	}
}

// startFollow turns the reader, whose MPA frame (msg) ended at stream
// offset pos, to the FPDUs after it. It reports false when there is
// nothing to follow: the data path is off, the Reply rejected the
// connection, or the frame is not one a connection starts with.
func (r *reader) startFollow(msg *record.Message, pos int) bool {
	f := r.f
	if f.link == nil || msg.MPAInfo == nil {
		return false
	}
	side := 0
	if !msg.MPAInfo.Request {
		side = 1
	}
	k := keyOf(r.d.Flow)
	c := f.conns[k]
	// Each connection followed costs about 4.5 KB (its two directions'
	// followers, its checker): past the limit, or when the run's memory
	// budget is full, its FPDUs are not read. A full budget is made room in
	// first: the flow tables give back what they can (Dir.Room), and a
	// connection may take the budget a sixteenth over its limit, which the
	// run loop then has the largest holder give back (handing on finished
	// connection attempts loses nothing).
	switch {
	case c != nil:
	case len(f.conns) >= MaxFollowed:
		f.notFollowed++
		return false
	case !f.budget.Charge(budget.TCP, connCost) && !(r.d.Room(connCost) && f.budget.Charge(budget.TCP, connCost)) &&
		!f.budget.ChargeOver(budget.TCP, connCost, f.budget.Limit()/16):
		f.budget.Lost(budget.TCP)
		f.notFollowedBudget++
		return false
	}
	if c == nil {
		if f.conns == nil {
			f.conns = make(map[pairKey]*iwConn)
		}
		c = &iwConn{key: k}
		f.conns[k] = c
	}
	if c.readers[side] != nil || c.frames[side] != nil {
		return false // a second Request (or Reply) on the connection: not followed
	}
	// Only what the link and the data path read is kept of the message:
	// a followed connection may last the whole input, and the message
	// (448 octets, and its fields and private data, about 1.3 KB) is the
	// sink's.
	c.frames[side] = &frameSeen{file: msg.File, frame: msg.Frame, at: msg.Time, transport: msg.Transport,
		src: msg.Src, dst: msg.Dst, hdr: msg.MPAInfo}
	c.hdr[side] = msg.MPAInfo
	if msg.MPAInfo.Reject {
		c.rejected = true
	}
	// The other direction may have begun without this frame's flags.
	if o := c.readers[1-side]; o != nil && o.fol.pos == o.fol.base && o.fol.npeek == 0 && o.fol.o == 0 {
		o.fol.markers, o.fol.crc = c.markersFor(1-side), c.crcFor(1-side)
	}
	if c.frames[0] != nil && c.frames[1] != nil && !c.rejected {
		c.link(f)
	}
	if c.rejected {
		if c.attached == 0 {
			delete(f.conns, k)
			f.budget.Release(budget.TCP, connCost)
		}
		return false
	}
	r.conn, r.side = c, side
	c.readers[side] = r
	c.attached++
	if n := len(f.followers); n > 0 {
		r.fol, f.followers = f.followers[n-1], f.followers[:n-1]
	} else {
		r.fol = new(followed)
	}
	frames := r.fol.sendFrames[:0]
	*r.fol = followed{sendFrames: frames}
	r.fol.init(r, heads{f: f, d: r.d, held: &r.fol.heldHead}, pos, c.markersFor(side), c.crcFor(side))
	// A hole in the FPDUs is reported, not waited for (fpdu-framing-lost).
	r.d.AcceptGaps()
	// The frame's octets are no longer needed.
	r.d.Charge(-len(r.buf))
	r.buf = nil // a followed direction may last the input: not its frame's 64 KiB
	r.pruneCarried(pos)
	return true
}

// follow reads octets of the FPDUs.
func (r *reader) follow(off int, b []byte) reassembly.Status {
	if c := r.conn; !c.linked {
		c.link(r.f)
	}
	// After framing was lost the direction is still followed, to its end,
	// only to count what could not be read (reportCounts).
	r.fol.feed(off, b)
	if r.fol.crc == modeOn {
		r.f.noteCRC() // its MPA frames said so, or its CRC fields did
	}
	return reassembly.More
}

// seenFollowing takes a segment's carry while following.
func (r *reader) seenFollowing(lo, hi, frame int, at time.Time, added, cut bool) {
	if t := r.traffic(); t != nil {
		t.Frame(frame)
	}
	if !added || r.fol.done {
		return // after a loss of framing no frame is named any more
	}
	if len(r.carried) >= 32 {
		r.pruneCarried(r.fol.start)
	}
	if len(r.carried) >= maxCarried {
		r.fol.carriedDropped = true
		return
	}
	r.d.Charge(carryCost)
	r.addCarried(carry{lo, hi, frame, at, cut})
}

// frameAt is the frame that first carried octet off of the stream, and
// its time; the latest frame when none is listed.
func (r *reader) frameAt(off int) (int, time.Time) {
	if r.carriedMessy {
		for _, c := range r.carried { // the first copy wins
			if c.lo <= off && off < c.hi {
				return c.frame, c.time
			}
		}
		return r.d.Last()
	}
	// In order and disjoint: the one segment that holds it, nearly always
	// one of the last (an FPDU ends in the segment just read).
	for i := len(r.carried) - 1; i >= 0; i-- {
		if c := &r.carried[i]; c.lo <= off {
			if off < c.hi {
				return c.frame, c.time
			}
			break
		}
	}
	return r.d.Last()
}

// pruneCarried forgets the segments wholly below off.
func (r *reader) pruneCarried(off int) {
	n := len(r.carried)
	r.dropCarriedBelow(off)
	r.d.Charge(-(n - len(r.carried)) * carryCost)
}

func (r *reader) traffic() Traffic {
	if r.conn == nil {
		return nil
	}
	return r.conn.traffic
}

// detach ends the reader's part in its connection.
func (r *reader) detach() {
	c := r.conn
	if c == nil {
		return
	}
	r.fol.end()
	if r.fol.aside > 0 {
		r.f.Settle() // the counts are complete
	}
	r.reportCounts()
	if len(r.f.followers) < 1024 {
		r.f.followers = append(r.f.followers, r.fol)
	}
	r.fol = nil
	r.conn = nil
	c.readers[r.side] = nil
	if c.attached--; c.attached == 0 {
		if c.traffic != nil {
			c.traffic.Close(&c.tcp)
		}
		delete(r.f.conns, c.key)
		r.f.budget.Release(budget.TCP, connCost)
	}
	r.pruneCarried(int(^uint(0) >> 1))
}

// endFollowing ends the follow of a direction.
func (r *reader) endFollowing(e reassembly.End) {
	if r.fol.done && e.GivenUp() {
		// Its framing was lost already: only the count of what could not
		// be read ends early, and the finding that reports it says so.
		r.fol.givenUp = e.Detail
		if e.Kind == reassembly.EndQuiet {
			r.fol.givenUp = fmt.Sprintf("nothing more arrived for %s", e.Quiet)
		}
	} else if t := r.traffic(); t != nil && e.GivenUp() {
		t.Lost(r.side)
		detail := e.Detail
		if e.Kind == reassembly.EndQuiet {
			detail = fmt.Sprintf("nothing more arrived for %s", e.Quiet)
		}
		t.Finding(finding.New(finding.StateLimitReached, "frame %d: the traffic from the %s was given up: %s", e.Frame, sideName(r.side), detail))
	}
	if c := r.conn; c != nil {
		c.tcp[r.side] = e.Health
	}
	r.detach()
}

func sideName(side int) string {
	if side == 0 {
		return "initiator"
	}
	return "responder"
}

// The follower's events.

func (r *reader) fpdu(start, end int, m *untagged) {
	r.fol.endFrame, r.fol.endTime = r.frameAt(end - 1)
	if r.f.trace != nil {
		r.f.trace(r.fol.endFrame, &r.fol.follower)
	}
	if m == nil {
		return
	}
	if m.segments == 1 && len(r.fol.sendFrames) == 0 {
		r.fol.sendDropped = 0
	}
	for _, c := range r.carried {
		if c.lo < end && start < c.hi && !slices.Contains(r.fol.sendFrames, c.frame) {
			if len(r.fol.sendFrames) >= maxFrames {
				r.fol.sendDropped++
				continue
			}
			r.fol.sendFrames = append(r.fol.sendFrames, c.frame)
		}
	}
}

func (r *reader) message(m *untagged, head []byte) {
	defer func() { r.fol.sendFrames, r.fol.sendDropped = r.fol.sendFrames[:0], 0 }()
	t := r.traffic()
	if t == nil {
		return
	}
	frame, at := r.fol.endFrame, r.fol.endTime
	slices.Sort(r.fol.sendFrames)
	s := &r.fol.out // not allocated per Send
	*s = Send{
		Side: r.side, Opcode: layers.RDMAPOpcodeName(m.opcode),
		Invalidate: layers.RDMAPInvalidates(m.opcode), InvalidateSTag: m.invalidate,
		Length: m.length, LengthKnown: !m.gap, Complete: m.complete,
		Frame: frame, Frames: r.fol.sendFrames, FramesDropped: r.fol.sendDropped, Time: at,
		Head: head, HeadWhole: !m.headCut && !m.gap && m.complete && len(head) == m.length,
	}
	if !s.Invalidate {
		s.InvalidateSTag = 0
	}
	if c := r.conn; c != nil {
		c.lastSend[r.side] = sendSeen{frame: int32(frame), length: int32(min(m.length, 1<<31-1)), opcode: m.opcode, complete: m.complete && !m.gap}
	}
	switch {
	case m.headLimit:
		s.HeadCut = "limit"
	case m.gap:
		s.HeadCut = "capture"
	}
	t.Send(s)
}

func (r *reader) readRequest(rr *layers.RDMAPReadRequest) {
	if t := r.traffic(); t != nil {
		t.ReadRequest(r.side, r.fol.endFrame, r.fol.endTime, rr)
	}
}

func (r *reader) tagged(off int, t *Tagged) {
	tr := r.traffic()
	if tr == nil {
		return
	}
	t.Side = r.side
	t.Frame, _ = r.frameAt(off)
	tr.Tagged(t)
}

func (r *reader) readResponseDone() {
	if t := r.traffic(); t != nil {
		t.ReadDone(1 - r.side) // the Read Response answers the other side's Request
	}
}

func (r *reader) terminate(term *layers.RDMAPTerminate) {
	r.fol.terminates++
	t := r.traffic()
	if t == nil || r.fol.terminates > maxTerminates {
		return
	}
	frame := r.fol.endFrame
	t.Finding(finding.New(finding.RDMAPTerminate, "frame %d: the %s terminated the connection: %s%s", frame, sideName(r.side), term.TermDescription(),
		r.conn.peerSend(r.side)))
}

func (r *reader) framingLost(why string) {
	frame, _ := r.d.Last()
	if r.fol.holeEnd > 0 {
		frame, _ = r.frameAt(r.fol.holeEnd)
	}
	r.fol.lostFrame, r.fol.lostWhy = frame, why
	r.pruneCarried(int(^uint(0) >> 1))
	if t := r.traffic(); t != nil {
		t.Lost(r.side)
	}
}

// followed is a follower with what the reader keeps of the direction's
// traffic: it exists only while the direction is followed.
type followed struct {
	follower
	heldHead       int   // octets of head buffers held
	sendFrames     []int // the frames of the Send in progress
	sendDropped    int
	carriedDropped bool
	terminates     int
	// The frame and cause of a loss of framing, and the limit that gave
	// the direction up after it (the count of what was not read stops
	// there).
	lostFrame   int
	lostWhy     string
	givenUp     string
	crcMismatch crcCount
	crcMissing  crcCount
	aside       int // checks of the direction's CRCs not yet joined (crc.go)
	// The frame that carried the last octet of the FPDU just read, and its
	// time.
	endFrame int
	endTime  time.Time
	out      Send // the Send handed on
}

// crcCount is the FPDUs of a direction with one kind of CRC problem.
type crcCount struct {
	n, frame        int
	field, computed uint32
}

// reportCounts hands on what the direction counted, at its end.
func (r *reader) reportCounts() {
	t := r.traffic()
	if t == nil {
		return
	}
	who := sideName(r.side)
	if r.fol.done {
		t.Finding(finding.New(finding.FPDUFramingLost, "frame %d: the FPDUs from the %s cannot be followed further: %s; %s",
			r.fol.lostFrame, who, r.fol.lostWhy, r.fol.afterLoss()))
	}
	if p := r.fol.crcMismatch; p.n > 0 {
		t.Finding(finding.New(finding.MPACRCMismatch, "frame %d: %s from the %s with a CRC that does not match: the field is 0x%08x, the octets give 0x%08x",
			p.frame, fpdus(p.n), who, p.field, p.computed))
	}
	if p := r.fol.crcMissing; p.n > 0 {
		if r.fol.crc == modeOn {
			t.Finding(finding.New(finding.MPACRCMissing, "frame %d: %s from the %s with a zero CRC field, although CRC is in use (an MPA frame set C)",
				p.frame, fpdus(p.n), who))
		} else {
			t.Finding(finding.New(finding.MPACRCMissing, "frame %d: %s from the %s with a CRC field (0x%08x) that is not zero, although CRC is not in use (neither MPA frame set C)",
				p.frame, fpdus(p.n), who, p.field))
		}
	}
	if n := r.fol.terminates - maxTerminates; n > 0 {
		t.Finding(finding.New(finding.RDMAPTerminate, "%d more Terminates from the %s", n, who))
	}
}

// afterLoss says what could not be read after framing was lost.
func (f *followed) afterLoss() string {
	s := "nothing of the direction came after that"
	if f.unread > 0 {
		s = fmt.Sprintf("%s from there on %s not read", octets(f.unread), plural(f.unread, "was", "were"))
	}
	if f.missing > 0 {
		s += fmt.Sprintf(", and %s more never arrived", octets(f.missing))
	}
	if f.givenUp != "" {
		s += " (counted until the direction was given up: " + f.givenUp + ")"
	}
	return s
}

func octets(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "octet", "octets")) }

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

// fpdus counts FPDUs for a finding: "an FPDU", or "12 FPDUs, the first,".
func fpdus(n int) string {
	if n == 1 {
		return "an FPDU"
	}
	return fmt.Sprintf("%d FPDUs, the first,", n)
}
