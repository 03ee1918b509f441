package datapath

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Chunks (RFC 8166, section 3.4): the segments an outstanding Call
// advertised, and the RDMA Reads and Writes that move octets in and out of
// them. A requester exposes read chunks for the responder to pull (a data
// item at position P > 0; the whole Call at position 0: a Long Call, sent
// as RDMA_NOMSG), write chunks for result data, and a reply chunk for a
// Reply too long to send inline (a Long Reply: the responder writes it
// there and sends RDMA_NOMSG). Every Write and Read must fall inside a
// segment an outstanding Call advertised, and a Reply's write list or
// reply chunk cannot claim more than its Call offered (chunk-violation).
//
// The transport hands over each RDMA operation (RDMAWrite, RDMARead) and
// the octets of each (RDMAWrite, RDMAReadData); the first octets of a Long
// Call's position-zero read chunk and of a Long Reply's reply chunk are
// kept (at most chunkKeep), and decoded as an inline message is. The data
// of write chunks, and of read chunks at other positions, is never kept.

// segKind is what a segment is for.
type segKind uint8

const (
	segRead  segKind = iota // a read chunk's: the responder pulls it (RDMA Read)
	segWrite                // a write chunk's: the responder pushes result data (RDMA Write)
	segReply                // the reply chunk's: the responder pushes a Long Reply
)

var segKindNames = [...]string{"read chunk", "write chunk", "reply chunk"}

// advSeg is a segment an outstanding Call advertised.
type advSeg struct {
	xid      uint32
	callSide uint8
	kind     segKind
	pos      uint32
	handle   uint32
	offset   uint64
	length   uint32
	// at is where its octets start in the Call's kept message (a
	// position-zero read segment or a reply chunk segment): the lengths
	// of the segments before it.
	at uint32
}

// maxSegs bounds the segments a connection tracks; past it, chunks are
// not judged (the Calls' STags are still tracked, up to STagsPerCall).
const maxSegs = 512

// chunkKeep is how many first octets of a Long Call or Long Reply are
// kept for its decode: the RPC header and an NFSv4 operation list.
const chunkKeep = 4096

// longBuf is the first octets of a Long Call or a Long Reply, as they
// come: in any order (a capture may show Read Responses out of order),
// each octet counted once (a retransmission brings it again).
type longBuf struct {
	b    []byte // want octets: those not in yet are zeros
	in   [chunkKeep / 64]uint64
	want uint32 // the octets to wait for: the message's length, at most chunkKeep
	have uint32 // the octets of b in: the bits set in in
	len  uint32 // the message's length: its segments' lengths together
}

// chunkFigures counts, per direction of the octets, what the chunks moved.
type chunkFigures struct {
	long       [2]int
	needed     [2]int // the smallest inline threshold that would have carried every long message
	octets     [2]int64
	violations int
	// notes are the first maxChunkNotes violations, described; opFrames
	// the frame of each that was an RDMA operation (0 for a Reply's).
	notes    []finding.Finding
	opFrames []int32
	// longProcs names the procedures of the long messages, by direction.
	longProcs [2][]longCount
}

// maxChunkNotes bounds the chunk violations described one by one on a
// connection; the others are counted.
const maxChunkNotes = 8

// violated counts a chunk violation, of the RDMA operation of opFrame (0:
// a Reply's), and describes it (describe is called only for the first
// few: nothing is formatted for a flood of them).
func (c *Checker) violated(opFrame int, describe func() finding.Finding) {
	f := &c.chunks
	f.violations++
	c.fig.ChunkViolations = f.violations
	if len(f.notes) < maxChunkNotes {
		f.notes = append(f.notes, describe())
		f.opFrames = append(f.opFrames, int32(opFrame))
	}
}

// violatedAt reports whether the RDMA operation of frame is a chunk
// violation described.
func (c *Checker) violatedAt(frame int32) bool {
	return frame != 0 && slices.Contains(c.chunks.opFrames, frame)
}

// deniedNote is what a chunk violation's description adds when the peer
// answered that RDMA operation with a Remote Access Error NAK (the first
// one, as transport health notes it): the link between the two findings.
func (c *Checker) deniedNote(opFrame int32) string {
	if c.hl == nil || opFrame == 0 {
		return ""
	}
	for side := range c.hl.sides {
		s := &c.hl.sides[side]
		if n := &s.denied; n.found && n.what.frame == opFrame {
			return fmt.Sprintf("; the %s answered it with a Remote Access Error NAK (frame %d, rc-nak)",
				c.who(side), s.nakFrame[record.NAKRemoteAccessError])
		}
	}
	return ""
}

// chunkNotes are the chunk violations described, and a word on the rest.
func (c *Checker) chunkNotes() []finding.Finding {
	f := &c.chunks
	out := append([]finding.Finding(nil), f.notes...)
	for i := range out {
		out[i].Message += c.deniedNote(f.opFrames[i])
	}
	if c.segsRefused > 0 {
		out = append(out, finding.New(finding.StateLimitReached, "%d chunk %s of outstanding Calls %s not tracked (more than %d at once): from then on RDMA Reads and Writes were not matched to chunks or judged",
			c.segsRefused, plural(c.segsRefused, "segment", "segments"), plural(c.segsRefused, "was", "were"), maxSegs))
	}
	if c.longRefused > 0 {
		out = append(out, finding.New(finding.StateLimitReached, "%d long %s not put together for its decode: the memory budget was full",
			c.longRefused, plural(c.longRefused, "message was", "messages were")))
	}
	if n := f.violations - len(f.notes); n > 0 {
		out = append(out, finding.New(finding.ChunkViolation, "%d more chunk %s on this connection (the first %d are described)",
			n, plural(n, "violation", "violations"), maxChunkNotes))
	}
	return out
}

// addSegments tracks the segments of the Call just registered at index i.
// Past maxSegs they are counted, and chunks are no longer judged; a long
// message none of whose segments are tracked is not kept for its decode.
func (c *Checker) addSegments(i int, h *layers.RPCRDMAHeader) {
	k := &c.calls[i]
	tracked := true
	add := func(kind segKind, pos uint32, s layers.RPCRDMASegment, at uint32) {
		if len(c.segs) >= maxSegs {
			c.segsCut, tracked = true, false
			c.segsRefused++
			c.out.SegmentsUntracked++
			return
		}
		c.segs = append(c.segs, advSeg{xid: k.xid, callSide: k.side, kind: kind, pos: pos, handle: s.Handle, offset: s.Offset,
			length: s.Length, at: at})
	}
	var at uint32
	for _, r := range h.ReadList {
		a := uint32(0)
		if r.Position == 0 {
			a = at
			at += r.Length
		}
		add(segRead, r.Position, r.RPCRDMASegment, a)
	}
	if at > 0 && h.Proc == layers.RPCRDMANoMsg && tracked {
		k.longCall = c.newLong(at)
	}
	for _, ch := range h.WriteList {
		for _, s := range ch {
			add(segWrite, 0, s, 0)
		}
	}
	at, tracked = 0, true
	for _, s := range h.ReplyChunk {
		add(segReply, 0, s, at)
		at += s.Length
	}
	if at > 0 && tracked {
		k.reply = c.newLong(at)
	}
}

// newLong makes the buffer of a long message of n octets, from the
// Output's pool, charged to the budget; nil when the budget is full (the
// message is then not decoded).
func (c *Checker) newLong(n uint32) *longBuf {
	b := c.out.Limits.Budget
	if !b.Charge(budget.Datapath, longCost) {
		b.Lost(budget.Datapath)
		c.longRefused++
		c.out.LongsRefused++
		return nil
	}
	c.out.longsOut++
	var l *longBuf
	if k := len(c.out.longs); k > 0 {
		l, c.out.longs = c.out.longs[k-1], c.out.longs[:k-1]
	} else {
		l = &longBuf{b: make([]byte, 0, chunkKeep)}
	}
	l.have, l.len, l.want = 0, n, min(n, chunkKeep)
	l.b = l.b[:l.want]
	clear(l.b)
	clear(l.in[:])
	return l
}

// longCost is what a long message's buffer holds.
const longCost = chunkKeep + int(unsafe.Sizeof(longBuf{})) + 16

// freeLong gives a buffer back.
func (c *Checker) freeLong(l *longBuf) {
	if l == nil {
		return
	}
	c.out.Limits.Budget.Release(budget.Datapath, longCost)
	c.out.longsOut--
	if len(c.out.longs) < 64 {
		c.out.longs = append(c.out.longs, l)
	}
}

// dropSegments forgets the segments of the Call k (retired or dropped).
func (c *Checker) dropSegments(k *call) {
	n := 0
	for _, s := range c.segs {
		if s.xid != k.xid || s.callSide != k.side {
			c.segs[n] = s
			n++
		}
	}
	c.segs = c.segs[:n]
	c.freeLong(k.longCall)
	c.freeLong(k.reply)
	k.longCall, k.reply = nil, nil
}

// judgeChunks reports whether chunk operations are judged: the setup was
// seen, the traffic is RPC-over-RDMA, and every Call was followed.
func (c *Checker) judgeChunks() bool {
	return c.neg.Known && c.rule.IsRPCRDMA() && !c.lostCalls && !c.segsCut
}

// findSeg finds the segment of handle, of one of kinds, that a Call from
// the other side than side advertised and that holds [va, va+n): ok, or
// the index of one with that handle that does not hold them (-1: none).
func (c *Checker) findSeg(side int, handle uint32, va uint64, n uint32, kinds ...segKind) (i int, ok bool) {
	other := -1
	for j := range c.segs {
		s := &c.segs[j]
		if s.handle != handle || int(s.callSide) == side {
			continue
		}
		kindOK := false
		for _, k := range kinds {
			kindOK = kindOK || s.kind == k
		}
		if kindOK && va >= s.offset && va-s.offset <= uint64(s.length) && uint64(n) <= uint64(s.length)-(va-s.offset) {
			return j, true
		}
		other = j
	}
	return other, false
}

// RDMAWrite takes the octets of an RDMA Write packet side sent: n octets
// at (handle, va), data those captured. first says it begins the Write
// (it carries the RETH), and is the one judged. It reports whether the
// octets fell inside a segment: the transport hands on no more packets of
// a Write whose first did not (the peer refuses it: its octets did not
// move).
func (c *Checker) RDMAWrite(side, frame int, handle uint32, va uint64, data []byte, n uint32, first bool, whole uint32) bool {
	if len(c.segs) == 0 && !c.judgeChunks() {
		return false
	}
	check := n
	if first {
		check = whole // the Write's DMA Length, all its packets
	}
	i, ok := c.findSeg(side, handle, va, check, segWrite, segReply)
	if !ok {
		if first && c.judgeChunks() {
			c.violation(frame, "an RDMA Write", side, handle, va, whole, i)
		}
		return false
	}
	c.chunks.octets[side] += int64(n)
	c.fig.ExplicitRDMAOctets = c.chunks.octets
	s := &c.segs[i]
	if s.kind == segReply {
		if k := c.callOf(s); k != nil && k.reply != nil {
			k.reply.fill(s.at+uint32(va-s.offset), data)
		}
	}
	return true
}

// RDMARead takes an RDMA Read Request side sent: n octets at (handle, va)
// of the other side's memory; it is judged. It reports false for a Read
// outside every segment: the transport counts none of its responses (the
// peer refuses it).
func (c *Checker) RDMARead(side, frame int, handle uint32, va uint64, n uint32) bool {
	if !c.judgeChunks() {
		return true
	}
	if i, ok := c.findSeg(side, handle, va, n, segRead); !ok {
		c.violation(frame, "an RDMA Read Request", side, handle, va, n, i)
		return false
	}
	return true
}

// RDMAReadData takes the octets an RDMA Read Response brought to side,
// which read them: n octets at (handle, va), data those captured. The
// first octets of a Long Call are kept, and decoded once they are in.
func (c *Checker) RDMAReadData(side, frame int, handle uint32, va uint64, data []byte, n uint32) {
	i, ok := c.findSeg(side, handle, va, n, segRead)
	if !ok {
		return
	}
	c.chunks.octets[1-side] += int64(n)
	c.fig.ExplicitRDMAOctets = c.chunks.octets
	s := &c.segs[i]
	if s.pos != 0 {
		return
	}
	k := c.callOf(s)
	if k == nil || k.longCall == nil {
		return
	}
	l := k.longCall
	l.fill(s.at+uint32(va-s.offset), data)
	if l.have >= l.want && !k.decoded {
		c.longCallIn(k, frame)
	}
}

// fill copies data, which belongs at offset at of the message, into what
// is kept of it, and counts the octets new to it.
func (l *longBuf) fill(at uint32, data []byte) {
	if at >= l.want {
		return // past what is kept
	}
	end := min(at+uint32(min(len(data), chunkKeep)), l.want)
	copy(l.b[at:end], data)
	for i := at; i < end; {
		bit := i % 64
		n := min(64-bit, end-i)
		mask := ^uint64(0) >> (64 - n) << bit
		l.have += uint32(bits.OnesCount64(mask &^ l.in[i/64]))
		l.in[i/64] |= mask
		i += n
	}
}

// prefix is the first octets of the message, as far as they are all in.
func (l *longBuf) prefix() []byte {
	n := 0
	for _, w := range l.in {
		n += bits.TrailingZeros64(^w)
		if w != ^uint64(0) {
			break
		}
	}
	return l.b[:min(n, len(l.b))]
}

// callOf is the outstanding Call a segment belongs to.
func (c *Checker) callOf(s *advSeg) *call {
	if i := c.findCall(s.xid, int(s.callSide)); i >= 0 {
		return &c.calls[i]
	}
	return nil
}

// violation raises chunk-violation for an RDMA operation outside every
// segment: other is the index of a segment with its handle (-1: none).
func (c *Checker) violation(frame int, what string, side int, handle uint32, va uint64, n uint32, other int) {
	c.violated(frame, func() finding.Finding {
		if other < 0 {
			return finding.New(finding.ChunkViolation, "frame %d: %s from the %s to handle 0x%08x (offset 0x%016x, %d octets), which no outstanding Call advertised",
				frame, what, sideNames[side], handle, va, n)
		}
		s := &c.segs[other]
		return finding.New(finding.ChunkViolation, "frame %d: %s from the %s of %d octets at offset 0x%016x, outside the %s segment the Call of XID 0x%08x advertised for handle 0x%08x (offset 0x%016x, %d octets)",
			frame, what, sideNames[side], n, va, segKindNames[s.kind], s.xid, handle, s.offset, s.length)
	})
}

// replyChunks checks a Reply's write list and reply chunk against what its
// Call k offered.
func (c *Checker) replyChunks(frame int, side int, h *layers.RPCRDMAHeader, k *call) {
	if !c.judgeChunks() {
		return
	}
	check := func(s layers.RPCRDMASegment, kinds ...segKind) {
		for j := range c.segs {
			o := &c.segs[j]
			if o.xid == k.xid && o.callSide == k.side && o.handle == s.Handle {
				for _, kind := range kinds {
					if o.kind == kind {
						if s.Length > o.length {
							c.violated(0, func() finding.Finding {
								return finding.New(finding.ChunkViolation, "frame %d: the Reply to XID 0x%08x claims %d octets in handle 0x%08x, where its Call offered %d (%s)",
									frame, k.xid, s.Length, s.Handle, o.length, segKindNames[o.kind])
							})
						}
						return
					}
				}
			}
		}
		c.violated(0, func() finding.Finding {
			return finding.New(finding.ChunkViolation, "frame %d: the Reply to XID 0x%08x names handle 0x%08x, which its Call did not offer for a %s",
				frame, k.xid, s.Handle, segKindNames[kinds[0]])
		})
	}
	for _, ch := range h.WriteList {
		for _, s := range ch {
			check(s, segWrite)
		}
	}
	for _, s := range h.ReplyChunk {
		check(s, segReply)
	}
}

// longCallIn decodes a Long Call once the first octets of its
// position-zero read chunk are in: its record (waiting for them) gets the
// decode, and the Call what its Reply needs.
func (c *Checker) longCallIn(k *call, frame int) {
	k.decoded = true
	m := &c.out.msg
	l := k.longCall
	opt := oncrpc.CallOptions{CallbackProgram: oncrpc.LinuxCallbackProgram, Backchannel: c.neg.Known && k.side == 1}
	err := oncrpc.DecodeCall(l.b, opt, m)
	if m.Type != oncrpc.Call || m.RPCVers != 2 || err != nil && !isTruncated(err) {
		c.releaseLong(k, nil)
		return
	}
	k.info = m.CallInfo()
	c.countCall(int(k.side))
	c.longMessage(int(k.side), l.len, &k.info)
	if k.longSeq == 0 {
		return // no record waits for it (--datapath findings, no finding)
	}
	c.releaseLong(k, messageRecord(m, false, k, k.at, "read_chunk"))
}

// releaseLong lets a Long Call's record go, with its decode (nil: none).
func (c *Checker) releaseLong(k *call, msg *record.RPCMessage) {
	if k.longSeq == 0 {
		return
	}
	if r := c.out.waiting(k.longSeq); r != nil && msg != nil {
		r.Message = msg
	}
	c.out.release(k.longSeq, 0)
	k.longSeq = 0
}

// longMessage counts a long message of n octets (its RPC message) sent by
// side, of the procedure info names.
func (c *Checker) longMessage(side int, n uint32, info *oncrpc.CallInfo) {
	f := &c.chunks
	f.long[side]++
	c.fig.LongMessages[side] = f.long[side]
	need := min((n+28+1023)/1024*1024, 262144)
	if n+28 > 262144 {
		need = 262144 + 1 // none RFC 8797 can express
	}
	f.needed[side] = max(f.needed[side], int(need))
	c.fig.InlineNeeded[side] = f.needed[side]
	// Named only when the finding is written: a long message costs no
	// allocation.
	k := longProc{info.Known, info.Callback, info.Program, info.Version, info.Procedure}
	for i := range f.longProcs[side] {
		if f.longProcs[side][i].k == k {
			f.longProcs[side][i].n++
			return
		}
	}
	if len(f.longProcs[side]) < 8 {
		f.longProcs[side] = append(f.longProcs[side], longCount{k, 1})
	}
}

// longProc is a procedure whose messages went long; longCount counts them.
type longProc struct {
	known, callback             bool
	program, version, procedure uint32
}

type longCount struct {
	k longProc
	n int
}

// thresholdAdvice raises inline-threshold-too-small per direction whose
// long messages a larger threshold RFC 8797 can express would have carried
// inline.
func (c *Checker) thresholdAdvice() []finding.Finding {
	var out []finding.Finding
	for side := range 2 {
		need := c.chunks.needed[side]
		if c.chunks.long[side] == 0 || !c.neg.Known || c.neg.Unknown || need <= c.threshold(side) {
			continue
		}
		var ps []string
		for _, p := range c.chunks.longProcs[side] {
			info := oncrpc.CallInfo{Known: p.k.known, Callback: p.k.callback, Program: p.k.program, Version: p.k.version, Procedure: p.k.procedure}
			ps = append(ps, fmt.Sprintf("%s ×%d", procText(&info), p.n))
		}
		sender, receiver := sideNames[side], sideNames[1-side]
		them := plural(c.chunks.long[side], "it", "them")
		what := fmt.Sprintf("%d would have carried %s inline: the %s's Receive Size (and the %s's Send Size) would have to be at least %d",
			need, them, receiver, sender, need)
		if need > 262144 {
			what = fmt.Sprintf("even 262144, the largest RFC 8797 can express, would not have carried %s all inline", them)
		}
		out = append(out, finding.New(finding.InlineThresholdTooSmall,
			"%d %s from the %s went long (%s): the %s inline threshold is %d (%s); %s",
			c.chunks.long[side], plural(c.chunks.long[side], "message", "messages"), sender, strings.Join(ps, ", "),
			c.dirName(side), c.threshold(side), c.thresholdWhy(side), what))
	}
	return out
}
