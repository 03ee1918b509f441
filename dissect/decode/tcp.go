package decode

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// iWARP connection setup: the MPA Request and Reply frames are the first
// octets of each direction of a TCP connection. This file finds them on any
// port by their content, reassembling just those octets: segments may split
// the frame anywhere (even inside the 16-octet key), arrive out of order, or
// be sent twice. A stream stops being buffered as soon as its frame is
// complete or it is clearly not MPA; memory per stream and in total is
// capped, and hitting a cap is reported as a finding.

// Defaults of the state limits.
const (
	DefaultTCPBuffer = 16 << 20 // octets buffered for all TCP directions
	DefaultTCPFlows  = 32768    // TCP directions followed at once (about 400 octets each)
)

// TCPLimits bound the memory the reassembly uses.
type TCPLimits struct {
	StreamBytes  int // octets buffered for one direction; default 65555 (any PD_Length fits)
	TotalBytes   int // octets buffered for all directions together; default 16 MiB
	Flows  int // directions being followed at once; default 32768
	MaxEarlySegs int // segments kept from a direction whose start is unknown; default 1024
}

func (l TCPLimits) WithDefaults() TCPLimits {
	if l.StreamBytes <= 0 {
		l.StreamBytes = layers.MPAHeaderLen + 0xffff
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = DefaultTCPBuffer
	}
	if l.Flows <= 0 {
		l.Flows = DefaultTCPFlows
	}
	if l.MaxEarlySegs <= 0 {
		l.MaxEarlySegs = maxCarried
	}
	return l
}

// flowKey names one direction of a TCP connection.
type flowKey struct {
	src, dst     [16]byte
	sport, dport uint16
}

// tcpSeg is one TCP segment, pointing into the frame.
type tcpSeg struct {
	key           flowKey
	v6            bool
	seq           uint32
	syn, fin, rst bool
	payload       []byte
	wirePayload   int // payload length by the IP and TCP headers
	frame         int
	time          time.Time
}

// ival is a received range [lo, hi) of stream octets.
type ival struct{ lo, hi int }

// carry is a segment that carried octets of the frame: the range [lo, hi)
// of the stream, its frame and its capture time.
type carry struct {
	lo, hi int
	frame  int
	time   time.Time
}

// stream follows the first octets of one direction. Until its start is
// known (a SYN, or a segment that begins with a key) the octets kept are
// placed from the lowest sequence number seen so far (start, provisional):
// they can only matter as the later part of a frame that begins before
// them, so at most maxMPAFrame octets are kept, whatever the segments
// overlap. When the start becomes known they are moved into place.
type stream struct {
	key        flowKey
	v6         bool
	startKnown bool
	start      uint32  // sequence number of the first payload octet (provisional until startKnown)
	buf        []byte  // octets from start; holes are zero
	got        []ival  // received ranges, sorted and merged
	carried    []carry // per segment kept: the range it carried, its frame and capture time
	nEarly     int     // segments that added octets before the start was known (each costs earlyCost)
	dups       int     // segments that added nothing (retransmissions) recorded in carried
	anyData    bool    // a segment with payload was seen; end is set
	end        uint32  // sequence number after the highest octet seen in any segment
	fin        bool    // a FIN was seen: the stream ends at finSeq
	finSeq     uint32
	key16      bool // the 16-octet key is present and is an MPA key
	snapCut    bool // a contributing segment was cut by the snap length
	// soft: octets kept from before the SYN (frames before synFrame); a
	// later copy replaces them, and their frames count only while some of
	// their octets stand.
	soft     []ival
	synFrame int
	// lost: state of this direction was given up at a limit before it
	// showed a key (verdictLost); it is counted, and its frame flagged, once
	// the key shows.
	lost bool
	// differ is 1 + the lowest offset a later copy (a retransmission or
	// overlap) carried differently from the first; 0 when none did.
	// differFrame is that later copy's frame.
	differ      int
	differFrame int
	capped      string
	lastSeen    int // frame index of the last segment
	lastTime    time.Time
	// progressSeen and progress: the frame and capture time at which the
	// stream last stored new octets (or opened); eviction and ageing go by
	// them, so segments that add nothing do not keep a stream alive.
	progressSeen int
	progress     time.Time
}

// tcpState is the reassembly state of one input.
type tcpState struct {
	lim    TCPLimits
	active map[flowKey]*stream
	total  int // octets buffered in all streams
	// verdicts is a lossy cache of the directions no longer followed, by flow
	// hash: decided (done or not MPA, with the start when it was known), or
	// lost (given up at a limit before showing a key).
	verdicts  []uint64
	dropped   int       // directions given up because of a limit
	opens     int       // directions opened since the last sweep
	lastSweep time.Time // the ageing clock at the last sweep
	// clock is the ageing clock (see tick): ages are measured against it,
	// and a sweep runs only when it advanced sweepPeriod past the last one
	// (and at least an eighth as many segments as directions followed came
	// since), so timestamps that jump back and forth cost nothing. hwm is
	// the latest capture time seen so far.
	clock      time.Time
	hwm        time.Time
	behind     int // segments in a row stamped well before hwm
	sinceSweep int // segments since the last sweep
	sweeps     int // sweeps run (tests)
	// silentDrops counts directions given up at a limit whose first octets
	// were part of an MPA key, too little of one for a message to show.
	silentDrops int
	// keyless counts directions given up at a limit before they showed
	// any octet of an MPA key: nothing of a frame was lost (yet).
	keyless int
	// complete remembers exactly the directions whose MPA frame was shown
	// complete, with their start, for as many as Flows (the oldest
	// forgotten first, completeRing in order): the lossy verdict cache alone
	// could lose one to another flow's hash, and a retransmitted Request
	// would then be shown again.
	complete     map[flowKey]uint32
	completeRing []flowKey
	completeNext int
}

const verdictSlots = 1 << 18

// A verdict slot holds the identity bits of the flow hash, the verdict in
// the top two bits, the aged flag below them and, for verdictStart, the
// start in the low 32 bits.
const (
	verdictIDBits = 0x1fffffff_00000000
	// verdictAged marks a verdictStart given by age to a direction that had
	// shown a SYN and nothing else: it lost nothing, so a segment that
	// begins an MPA key at its start takes it up again (a timestamp that
	// jumped ahead can age a direction early).
	verdictAged  = 1 << 61
	verdictDone  = 1 // decided, start unknown
	verdictStart = 2 // decided, the direction's data started at the stored sequence number
	verdictLost  = 3 // given up at a limit before any key showed; not decided
)

// maxCarried bounds the segments remembered per direction (for the frames
// list), whatever a flood of retransmissions does.
const maxCarried = 1024

// maxMPAFrame is the longest MPA frame within the RFC's limits (PD_Length
// 512). Before a direction's header is in, no more octets than this are
// kept: octets beyond a hole at the start or before the key. A frame with a
// longer PD_Length whose later octets arrive before its first 20 is
// reported cut short.
const maxMPAFrame = layers.MPAHeaderLen + layers.MPAMaxPDLength

func newTCPState(lim TCPLimits) *tcpState {
	return &tcpState{lim: lim.WithDefaults(), active: map[flowKey]*stream{}}
}

// hash is the flow hash of the verdict cache. It is fixed (no random seed)
// so that a run is deterministic: the same capture gives the same output,
// collisions in the cache included.
func (t *tcpState) hash(k *flowKey) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range [5]uint64{
		binary.LittleEndian.Uint64(k.src[0:8]), binary.LittleEndian.Uint64(k.src[8:16]),
		binary.LittleEndian.Uint64(k.dst[0:8]), binary.LittleEndian.Uint64(k.dst[8:16]),
		uint64(k.sport)<<16 | uint64(k.dport),
	} {
		h = mix64(h ^ w)
	}
	return h
}

// mix64 is SplitMix64's finaliser.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// rememberComplete records a direction whose frame was shown complete.
func (t *tcpState) rememberComplete(st *stream) {
	if t.complete == nil {
		t.complete = map[flowKey]uint32{}
	}
	if _, ok := t.complete[st.key]; !ok {
		if len(t.completeRing) < t.lim.Flows {
			t.completeRing = append(t.completeRing, st.key)
		} else {
			delete(t.complete, t.completeRing[t.completeNext])
			t.completeRing[t.completeNext] = st.key
			t.completeNext = (t.completeNext + 1) % len(t.completeRing)
		}
	}
	t.complete[st.key] = st.start
}

// verdict is what the cache holds for a flow hash: 0 when nothing.
func (t *tcpState) verdict(h uint64) (v int, start uint32) {
	v, start, _ = t.verdictAged(h)
	return v, start
}

// verdictAged is verdict, and whether the verdict was given by age to a
// direction that showed nothing but a SYN.
func (t *tcpState) verdictAged(h uint64) (v int, start uint32, aged bool) {
	if t.verdicts == nil {
		return 0, 0, false
	}
	x := t.verdicts[h&(verdictSlots-1)]
	if (x^h)&verdictIDBits != 0 {
		return 0, 0, false
	}
	return int(x >> 62), uint32(x), x&verdictAged != 0
}

// setVerdict records a verdict. The cache is allocated with the first one:
// captures without TCP do not pay for it.
func (t *tcpState) setVerdict(h uint64, v int, start uint32) {
	if t.verdicts == nil {
		t.verdicts = make([]uint64, verdictSlots)
	}
	t.verdicts[h&(verdictSlots-1)] = h&verdictIDBits | uint64(v)<<62 | uint64(start)
}

func (t *tcpState) undecide(h uint64) {
	if v, _ := t.verdict(h); v != 0 {
		t.verdicts[h&(verdictSlots-1)] = 0
	}
}

// parseTCP reads a TCP segment at l4 of a frame classified as TCP. It does
// not allocate.
func parseTCP(b []byte, fi *frameInfo, s *tcpSeg) bool {
	l3, l4 := fi.l3, fi.l4
	if len(b) < l4+20 {
		return false
	}
	*s = tcpSeg{}
	var ipEnd int
	if fi.ipv6 {
		copy(s.key.src[:], b[l3+8:l3+24])
		copy(s.key.dst[:], b[l3+24:l3+40])
		ipEnd = l3 + 40 + int(binary.BigEndian.Uint16(b[l3+4:l3+6]))
		s.v6 = true
	} else {
		copy(s.key.src[12:], b[l3+12:l3+16])
		copy(s.key.dst[12:], b[l3+16:l3+20])
		ipEnd = l3 + int(binary.BigEndian.Uint16(b[l3+2:l3+4]))
	}
	s.key.sport = binary.BigEndian.Uint16(b[l4 : l4+2])
	s.key.dport = binary.BigEndian.Uint16(b[l4+2 : l4+4])
	s.seq = binary.BigEndian.Uint32(b[l4+4 : l4+8])
	hl := int(b[l4+12]>>4) * 4
	flags := b[l4+13]
	s.fin, s.syn, s.rst = flags&0x01 != 0, flags&0x02 != 0, flags&0x04 != 0
	start := l4 + hl
	if ipEnd < start {
		ipEnd = start
	}
	s.wirePayload = ipEnd - start
	end := min(ipEnd, len(b))
	if start <= end {
		s.payload = b[start:end]
	}
	return true
}

// segment takes one TCP segment; emit receives MPA messages it completes.
func (d *Decoder) segment(s *tcpSeg, emit func(*record.Message)) {
	t := d.tcp
	// Quiet directions are swept by capture time too, so that the age rules
	// apply while the capture goes on, not only when many directions open:
	// when the capture time's high-water mark advanced sweepPeriod since the
	// last sweep, never on a backwards jump, and after at least an eighth as
	// many segments as directions followed (a sweep looks at each: a
	// segment pays for 8 looks or fewer, however the timestamps jump).
	t.tick(s.time)
	if t.sinceSweep++; t.clock.Sub(t.lastSweep) >= sweepPeriod && t.sinceSweep >= len(t.active)/8 {
		t.lastSweep, t.sinceSweep = t.clock, 0
		if len(t.active) > 0 {
			d.sweep(t.clock, emit)
		}
	}
	h := t.hash(&s.key)
	// The SYN occupies its own sequence number, before the first data octet
	// (RFC 9293, section 3.4): data carried in a SYN (TCP Fast Open) starts
	// at ISN+1.
	seq := s.seq
	if s.syn {
		seq++
	}
	// A direction whose frame was shown complete: a retransmission (of the
	// Request, or of the SYN) changes nothing; a SYN with another ISN starts
	// a new connection.
	if start, ok := t.complete[s.key]; ok {
		if !s.syn || start == seq {
			return
		}
		delete(t.complete, s.key) // its ring entry stays: at most one stale slot per key
	}
	// The common case, TCP bulk: a direction already decided (its MPA frame
	// done, or not MPA). Only a SYN of a new connection reopens it: one with
	// the start already known is a retransmission.
	switch v, start, aged := t.verdictAged(h); v {
	case verdictDone, verdictStart:
		if aged && !s.syn && seq == start && layers.MPAKeyPrefix(s.payload) {
			break // aged with nothing but its SYN: its key takes it up
		}
		if !s.syn || v == verdictStart && start == seq {
			return
		}
	case verdictLost:
		// Given up at a limit before it showed a key: only its key (or a new
		// SYN) takes it up again; other octets alone could not be shown.
		if !s.syn && !layers.MPAKeyPrefix(s.payload) {
			return
		}
	}
	st := t.active[s.key]
	if st != nil && s.syn {
		switch {
		case st.startKnown && st.start != seq:
			// A SYN with another ISN: a new connection on the same addresses
			// and ports. What the old one began ends here.
			d.finish(st, h, "the connection is replaced by a new one (SYN)", emit)
			st = nil
		case !st.startKnown:
			// Octets kept before the SYN: of this connection if the capture
			// reordered them, else of an earlier one. They are placed from
			// the SYN's start, and any later copy replaces them (soft).
			st.fin, st.differ = false, 0
			d.rebase(st, seq, nil, true, false, emit)
			st.soft, st.synFrame = slices.Clone(st.got), s.frame
			st.progressSeen, st.progress = s.frame, t.clock
		}
	}
	if st == nil {
		switch {
		case s.syn:
			st = d.open(s, h, seq, true, emit)
		case len(s.payload) == 0:
			return
		case layers.MPAKeyPrefix(s.payload):
			st = d.open(s, h, seq, true, emit)
		case len(s.payload) > maxMPAFrame && len(s.payload) > t.lim.StreamBytes:
			// No handshake, no key, and longer than any MPA frame and than
			// what a stream may buffer: bulk data of a connection whose start
			// is not in the capture.
			t.setVerdict(h, verdictDone, 0)
			return
		default:
			// No handshake seen and this segment does not start a key: the
			// capture may begin mid-connection, or this may be a later part of
			// a frame whose start arrives next (keepEarly).
			st = d.open(s, h, seq, false, emit)
		}
	}
	st.lastSeen, st.lastTime = s.frame, s.time
	if s.syn && !st.startKnown {
		st.startKnown, st.start = true, seq
		st.progressSeen, st.progress = s.frame, t.clock
	}
	if len(s.payload) > 0 {
		cut := len(s.payload) < s.wirePayload
		if !st.startKnown {
			// A segment that begins a key makes its sequence number the start:
			// below the octets kept (they follow it), or above them
			// (keyAbove).
			if layers.MPAKeyPrefix(s.payload) && (st.nEarly == 0 || int32(st.start-seq) >= 0 || st.keyAbove(seq, s.payload)) {
				d.rebase(st, seq, s, true, cut, emit)
			} else if !d.keepEarly(st, h, s, seq, cut, emit) {
				return
			}
		} else {
			d.add(st, seq, s.payload, s.frame, s.time, cut, emit)
		}
		if end := seq + uint32(len(s.payload)); !st.anyData || int32(end-st.end) > 0 {
			st.anyData, st.end = true, end
		}
	}
	if st.capped != "" {
		// The total buffer could not hold what arrived.
		d.giveUp(st, h, emit)
		return
	}
	if st.startKnown && d.checkStream(st, h, s.frame, s.time, emit) {
		return
	}
	if s.rst && st.rstInWindow(seq, t.lim.StreamBytes) {
		d.finish(st, h, "the connection is reset (RST)", emit)
		return
	}
	if s.fin && !st.fin && st.finInWindow(seq+uint32(len(s.payload))) {
		st.fin, st.finSeq = true, seq+uint32(len(s.payload))
	}
	// The direction ends at its FIN once every octet before it is in: what
	// has not arrived will not.
	if st.fin && st.startKnown && int(int32(st.finSeq-st.start)) <= st.contiguous() {
		d.finish(st, h, "the stream ends (FIN)", emit)
	}
}

// rstInWindow reports whether an RST at seq ends the direction: its
// sequence number lies within the octets the frame needs or those seen so
// far (from the start; without the start known, within an MPA frame's
// length of the octets kept). Others (stale or forged) are ignored.
func (st *stream) rstInWindow(seq uint32, limit int) bool {
	if !st.startKnown {
		if !st.anyData {
			return true
		}
		return int32(seq-st.start) >= -maxMPAFrame && int32(seq-st.end) <= maxMPAFrame
	}
	off := int(int32(seq - st.start))
	hi := st.want(limit)
	if st.anyData {
		hi = max(hi, int(int32(st.end-st.start)))
	}
	return off >= 0 && off <= hi
}

// keyAbove reports whether a segment that begins a key at seq, above the
// octets kept before the start is known, starts the direction: it carries
// at least minKeyPrefix octets of a key, and the octets kept do not run up
// to it, or are just one octet right before it (the shape of a TCP
// keep-alive probe, RFC 9293 section 3.8.4). What lies before it is then
// not part of its frame, as if the key had come first. A key right after
// longer data is inside a stream, not at its start.
func (st *stream) keyAbove(seq uint32, p []byte) bool {
	off := int(int32(seq - st.start))
	if off <= 0 || len(p) < minKeyPrefix {
		return false
	}
	held, before := 0, false
	for _, g := range st.got {
		if g.lo < off {
			held += min(g.hi, off) - g.lo
			before = before || g.hi >= off
		}
	}
	return !before || held == 1
}

// finInWindow reports whether a FIN ending the stream at finSeq can be
// taken: not before the start, nor before octets already seen. Others
// (stale or forged) are ignored, like an RST outside the window.
func (st *stream) finInWindow(finSeq uint32) bool {
	if st.startKnown && int32(finSeq-st.start) < 0 {
		return false
	}
	return !st.anyData || int32(finSeq-st.end) >= 0
}

// earlyCost is what a segment kept before the start is known costs besides
// its octets and its entry in carried (carryCost): its received range. It
// is charged to the total buffer so that many tiny segments stay bounded
// too.
const earlyCost = 16

// carryCost is what an entry of carried costs (the size of a carry); every
// entry is charged to the total buffer.
const carryCost = 48

// maxDupCarried bounds the segments that added nothing (retransmissions)
// recorded per direction for the frames list: beyond it, a retransmission
// costs nothing and is not listed.
const maxDupCarried = 8

// held is what a direction has charged to the total buffer.
func (st *stream) held() int {
	return len(st.buf) + st.nEarly*earlyCost + len(st.carried)*carryCost
}

// keepEarly keeps a segment of a direction whose start is not known yet: no
// handshake and no key so far. The octets kept are bounded by what one MPA
// frame within the RFC's limit can span, by the per-stream limit and by the
// total buffer; the segments by MaxEarlySegs. It reports false when the
// direction was closed: not MPA (the segments span more than an MPA frame
// within the RFC's limit can hold, and none starts a key), or given up at a
// limit.
func (d *Decoder) keepEarly(st *stream, h uint64, s *tcpSeg, seq uint32, cut bool, emit func(*record.Message)) bool {
	t := d.tcp
	lo, hi := seq, seq+uint32(len(s.payload))
	if st.anyData {
		if int32(st.start-lo) < 0 {
			lo = st.start
		}
		if int32(st.end-hi) > 0 {
			hi = st.end
		}
	}
	span := int(hi - lo)
	switch {
	case st.anyData && span > maxMPAFrame:
		// A single long segment may be the tail of a frame whose start comes
		// next; more octets than an MPA frame spans, and still no key: not
		// MPA, or not its first octets.
		t.close(st, h)
		return false
	case span > t.lim.StreamBytes:
		st.capped = fmt.Sprintf("%d octets arrived before the start of the stream, more than the per-stream limit of %d", span, t.lim.StreamBytes)
	case st.nEarly >= t.lim.MaxEarlySegs:
		st.capped = fmt.Sprintf("more than %d segments arrived before the start of the stream", t.lim.MaxEarlySegs)
	default:
		if !st.anyData {
			st.start = seq
		} else if int32(seq-st.start) < 0 {
			d.rebase(st, seq, nil, false, false, emit)
		}
		if st.capped == "" && d.add(st, seq, s.payload, s.frame, s.time, cut, emit) && d.reserve(st, earlyCost, emit) {
			st.nEarly++
		}
		if st.capped == "" {
			return true
		}
	}
	d.giveUp(st, h, emit)
	return false
}

// rebase moves the octets kept to a start at seq: an early segment with a
// lower sequence number, the segment that begins with the key (key, added
// first), or a SYN. With known, seq becomes the known start. Octets before
// seq are dropped.
func (d *Decoder) rebase(st *stream, seq uint32, key *tcpSeg, known, cut bool, emit func(*record.Message)) {
	t := d.tcp
	shift := int(int32(st.start - seq))
	buf, got := st.buf, st.got
	t.total -= len(buf)
	st.buf, st.got, st.start = nil, nil, seq
	carried := st.carried[:0]
	for _, c := range st.carried {
		if c.hi+shift > 0 {
			carried = append(carried, carry{max(0, c.lo+shift), c.hi + shift, c.frame, c.time})
		}
	}
	t.total -= (len(st.carried) - len(carried)) * carryCost
	st.carried = carried
	if st.differ > 0 {
		st.differ = max(0, st.differ+shift)
	}
	if known {
		st.startKnown = true
		t.total -= st.nEarly * earlyCost
		st.nEarly = 0
	}
	if key != nil {
		d.add(st, seq, key.payload, key.frame, key.time, cut, emit)
	}
	limit := t.lim.StreamBytes
	for _, g := range got {
		// Store up to what is wanted, again if that grew (the header came in).
		for lo, hi := max(0, g.lo+shift), g.hi+shift; lo < hi && st.capped == ""; {
			w := min(hi, st.want(limit))
			if lo >= w {
				break
			}
			d.store(st, lo, buf[lo-shift:w-shift], st.frameAt(lo, w), emit)
			lo = w
		}
	}
}

// frameAt is the first frame kept that carried octets of [lo, hi).
func (st *stream) frameAt(lo, hi int) int {
	for _, c := range st.carried {
		if c.lo < hi && lo < c.hi {
			return c.frame
		}
	}
	return st.lastSeen
}

// open starts following a direction. At the active-flow limit the least
// recently progressed eighth of the directions is given up first (in one
// sort, so a flood of connections costs O(log n) per connection).
func (d *Decoder) open(s *tcpSeg, h uint64, start uint32, known bool, emit func(*record.Message)) *stream {
	t := d.tcp
	// Sweep after as many new directions as are followed (at least
	// sweepEvery): a sweep costs one look at each, so each new direction
	// pays for one look or fewer.
	if t.opens++; t.opens >= max(sweepEvery, len(t.active)) {
		t.opens = 0
		d.sweep(t.clock, emit)
	}
	if len(t.active) >= t.lim.Flows {
		d.evict(emit)
	}
	st := &stream{key: s.key, v6: s.v6, startKnown: known, start: start, progressSeen: s.frame, progress: t.clock}
	// A SYN starts the direction afresh: what was lost before it was of an
	// earlier connection.
	if v, _ := t.verdict(h); v == verdictLost && !s.syn {
		st.lost = true
	}
	t.active[s.key] = st
	t.undecide(h)
	return st
}

// Directions that go quiet are not kept for ever. An MPA Request or Reply
// follows the TCP handshake at once, and its segments follow each other
// closely: a direction that stored nothing new for these spans of capture
// time is decided by age. Sweeps run after sweepEvery new directions (or as
// many as are followed) and whenever capture time advanced sweepPeriod.
const (
	sweepEvery   = 1024
	sweepPeriod  = 10 * time.Second
	quietUnknown = 2 * time.Second  // no handshake and no key seen yet: not MPA
	quietNoData  = 10 * time.Second // a SYN, then nothing: not MPA
	quietMPA     = 60 * time.Second // an MPA frame begun and not finished: reported, given up
)

// maxClockStep is the most one segment moves the ageing clock forward.
const maxClockStep = time.Second

// rebaseAfter is how many segments in a row stamped more than maxClockStep
// before the latest timestamp make that timestamp a fluke: the clock then
// follows the segments' own time again.
const rebaseAfter = 64

// tick advances the ageing clock by how far a segment's capture time moves
// the latest one seen (the high-water mark) forward, at most maxClockStep:
// a backwards jump moves nothing, and one frame with a wrong timestamp (an
// hour ahead, a damaged first record from 1970) or a real idle hour moves
// it a second, not an hour. When rebaseAfter segments in a row are stamped
// well before the mark, the mark was a fluke (one frame from a skewed
// clock) and is set back to them, so the clock follows the capture again
// instead of standing still. The clock itself never moves back: ageing may
// come late, not early.
func (t *tcpState) tick(at time.Time) {
	switch {
	case t.hwm.IsZero():
		t.hwm, t.clock = at, at
	case at.After(t.hwm):
		t.clock = t.clock.Add(min(at.Sub(t.hwm), maxClockStep))
		t.hwm, t.behind = at, 0
	case t.hwm.Sub(at) > maxClockStep:
		if t.behind++; t.behind >= rebaseAfter {
			t.hwm, t.behind = at, 0
		}
	default:
		t.behind = 0
	}
}

// sweep decides the directions that have been quiet too long.
func (d *Decoder) sweep(now time.Time, emit func(*record.Message)) {
	t := d.tcp
	t.sweeps++
	for _, st := range t.active {
		quiet := now.Sub(st.progress)
		switch {
		case st.reportable():
			if full := st.fullLen(); quiet > quietMPA && full >= 0 && st.contiguous() >= full {
				d.finish(st, t.hash(&st.key), "", emit) // complete with octets from before the SYN
			} else if quiet > quietMPA {
				st.capped = fmt.Sprintf("nothing more arrived for %s: this MPA frame was given up", quietMPA)
				d.giveUp(st, t.hash(&st.key), emit)
			}
		case st.keyStart():
			// The first octets of a key, too few for a message yet: an MPA
			// frame begun, given up (and counted) only as one would be.
			if quiet > quietMPA {
				st.capped = fmt.Sprintf("nothing more arrived for %s: this MPA frame was given up", quietMPA)
				d.giveUp(st, t.hash(&st.key), emit)
			}
		case !st.startKnown && quiet > quietUnknown, st.startKnown && quiet > quietNoData:
			d.ageOut(st, t.hash(&st.key), emit)
		}
	}
}

// ageOut stops following a direction that showed no MPA frame and has been
// quiet too long. Age is measured by capture time, which one frame with a
// wrong timestamp can move ahead, so age decides nothing it cannot undo:
// one that showed nothing but a SYN lost nothing and is marked aged (its
// key at its start still takes it up); one that held octets, none of them a
// key's first, is given up like a direction at a limit (marked lost: only
// its key takes it up again, and then it is counted and its frame flagged,
// as the octets kept before were lost). One that showed the first octets of
// a key, too few for a message, is decided as before.
func (d *Decoder) ageOut(st *stream, h uint64, emit func(*record.Message)) {
	t := d.tcp
	switch {
	case st.startKnown && !st.anyData && len(st.buf) == 0:
		t.close(st, h)
		t.verdicts[h&(verdictSlots-1)] |= verdictAged
	case len(st.buf) > 0 && !st.keyStart():
		t.total -= st.held()
		delete(t.active, st.key)
		t.setVerdict(h, verdictLost, 0)
	default:
		d.finish(st, h, "", emit)
	}
}

// evict gives up the least recently progressed directions. One that already
// showed an MPA key is reported with what arrived; every one is counted.
func (d *Decoder) evict(emit func(*record.Message)) {
	t := d.tcp
	all := make([]*stream, 0, len(t.active))
	for _, st := range t.active {
		all = append(all, st)
	}
	slices.SortFunc(all, func(a, b *stream) int { return a.progressSeen - b.progressSeen })
	for _, st := range all[:max(1, len(all)/8)] {
		st.capped = fmt.Sprintf("more than %d TCP directions were being followed at once; this one was given up", t.lim.Flows)
		d.giveUp(st, t.hash(&st.key), emit)
	}
}

// reserve accounts n more buffered octets, within the limits. With the total
// buffer full, other directions are given up first (makeRoom).
func (d *Decoder) reserve(st *stream, n int, emit func(*record.Message)) bool {
	t := d.tcp
	if t.total+n > t.lim.TotalBytes {
		d.makeRoom(st, n, emit)
	}
	if t.total+n > t.lim.TotalBytes {
		if st.capped == "" {
			st.capped = fmt.Sprintf("the reassembly buffers of all streams are full (%d octets)", t.lim.TotalBytes)
		}
		return false
	}
	t.total += n
	return true
}

// makeRoom gives up other directions until n octets and an eighth of the
// total buffer are free: first those that showed no MPA key, least recently
// progressed first (by a histogram of the octets they hold over their last
// progress: no sort), then, if that was not enough, those that did, in the
// order they last progressed (reported in that order). Freeing an eighth of
// the buffer at a time, a flood pays O(1) per direction.
func (d *Decoder) makeRoom(keep *stream, n int, emit func(*record.Message)) {
	t := d.tcp
	goal := max(0, t.lim.TotalBytes-t.lim.TotalBytes/8-n)
	type cand struct {
		st         *stream
		seen, held int
		shown      bool
	}
	var all []cand
	lo, hi := math.MaxInt, math.MinInt
	for _, st := range t.active {
		if held := st.held(); st != keep && held > 0 {
			c := cand{st, st.progressSeen, held, st.reportable()}
			all = append(all, c)
			if !c.shown {
				lo, hi = min(lo, c.seen), max(hi, c.seen)
			}
		}
	}
	why := fmt.Sprintf("the reassembly buffers of all streams are full (%d octets); this one was given up for a newer one", t.lim.TotalBytes)
	if lo <= hi {
		const buckets = 64
		var hist [buckets]int
		width := (hi-lo)/buckets + 1
		for _, c := range all {
			if !c.shown {
				hist[(c.seen-lo)/width] += c.held
			}
		}
		cut, need := 0, t.total-goal
		for cut < buckets && need > 0 {
			need -= hist[cut]
			cut++
		}
		below := lo + cut*width
		for _, c := range all {
			if !c.shown && c.seen < below {
				c.st.capped = why
				d.giveUp(c.st, t.hash(&c.st.key), emit)
			}
		}
	}
	if t.total <= goal {
		return
	}
	all = slices.DeleteFunc(all, func(c cand) bool { return !c.shown })
	slices.SortFunc(all, func(a, b cand) int { return a.seen - b.seen })
	for _, c := range all {
		if t.total <= goal {
			break
		}
		c.st.capped = why
		d.giveUp(c.st, t.hash(&c.st.key), emit)
	}
}

// add stores a segment's octets that fall inside the part of the stream we
// want; the first copy of an octet wins over retransmissions. It reports
// whether the segment added octets.
func (d *Decoder) add(st *stream, seq uint32, data []byte, frame int, now time.Time, cut bool, emit func(*record.Message)) bool {
	limit := d.tcp.lim.StreamBytes
	off := int(int32(seq - st.start))
	if off < 0 {
		if -off >= len(data) {
			return false
		}
		data, off = data[-off:], 0
	}
	// What is wanted grows once the header is in: store up to what is
	// wanted, then again if the octets stored brought PD_Length.
	end, pos, added := off+len(data), off, false
	for pos < end && st.capped == "" {
		w := st.want(limit)
		if pos >= w {
			break
		}
		hi := min(end, w)
		if d.store(st, pos, data[pos-off:hi-off], frame, emit) {
			added = true
		}
		pos = hi
	}
	if pos <= off {
		return false
	}
	// Each segment that added octets is recorded for the frames list, and
	// the first few that added nothing; each entry is charged to the total
	// buffer (one that added nothing only while it has room).
	if len(st.carried) < maxCarried && (added || st.dups < maxDupCarried) {
		t := d.tcp
		if !added {
			st.dups++
		}
		if added || t.total+carryCost <= t.lim.TotalBytes {
			if !d.reserve(st, carryCost, emit) {
				// Over the limit (capped is set): the direction is given up
				// next, with this frame listed.
				t.total += carryCost
			}
			st.carried = append(st.carried, carry{off, pos, frame, now})
		}
	}
	if cut && pos == end {
		st.snapCut = true // else what was cut lies beyond the frame
	}
	if added {
		st.progressSeen, st.progress = frame, d.tcp.clock
	}
	return added
}

// store puts data at offset off of the stream, filling only the gaps
// between the ranges already received. An octet already held that data
// carries differently is noted (the lowest such offset). It reports whether
// octets were added.
func (d *Decoder) store(st *stream, off int, data []byte, frame int, emit func(*record.Message)) bool {
	lo, hi := off, off+len(data)
	if hi > len(st.buf) {
		grow := hi - len(st.buf)
		if !d.reserve(st, grow, emit) {
			return false
		}
		st.buf = append(st.buf, make([]byte, grow)...)
	}
	added := false
	if len(st.soft) > 0 {
		added = st.replaceSoft(lo, hi, data, off)
	}
	pos := lo
	for _, g := range st.got {
		if g.hi <= pos || g.lo >= hi {
			continue
		}
		if g.lo > pos {
			copy(st.buf[pos:g.lo], data[pos-off:g.lo-off])
			added = true
		}
		// The octets already held: the first copy stays; note a difference
		// below any noted so far.
		a, b := max(pos, g.lo), min(hi, g.hi)
		if st.differ > 0 {
			b = min(b, st.differ-1)
		}
		for i := a; i < b; i++ {
			if st.buf[i] != data[i-off] {
				st.differ, st.differFrame = i+1, frame
				break
			}
		}
		pos = max(pos, g.hi)
	}
	if pos < hi {
		copy(st.buf[pos:hi], data[pos-off:])
		added = true
	}
	if added {
		st.got = mergeIval(st.got, ival{lo, hi})
		if len(st.got) > maxHoles+1 && st.capped == "" {
			st.capped = fmt.Sprintf("the octets received of this direction have more than %d holes", maxHoles)
		}
	}
	return added
}

// maxHoles bounds the holes between the ranges received of one direction
// (segments every other octet): beyond it the direction is given up at a
// limit, so that storing a segment costs O(maxHoles) at most.
const maxHoles = 64

// replaceSoft puts data over the octets kept from before the SYN it
// overlaps: a later copy wins over those. It reports whether it did.
func (st *stream) replaceSoft(lo, hi int, data []byte, off int) bool {
	var keep []ival
	replaced := false
	for _, g := range st.soft {
		a, b := max(g.lo, lo), min(g.hi, hi)
		if a >= b {
			keep = append(keep, g)
			continue
		}
		copy(st.buf[a:b], data[a-off:b-off])
		replaced = true
		if g.lo < a {
			keep = append(keep, ival{g.lo, a})
		}
		if b < g.hi {
			keep = append(keep, ival{b, g.hi})
		}
	}
	st.soft = keep
	return replaced
}

// framesWithin lists, in order and once each, the frames whose segments
// carried octets of the first n octets of the stream.
func (st *stream) framesWithin(n int) []int {
	var out []int
	for _, c := range st.carried {
		if c.lo >= n || slices.Contains(out, c.frame) {
			continue
		}
		// A segment from before the SYN counts while octets of it stand.
		if c.frame < st.synFrame && !slices.ContainsFunc(st.soft, func(g ival) bool { return g.lo < min(c.hi, n) && c.lo < g.hi }) {
			continue
		}
		out = append(out, c.frame)
	}
	slices.Sort(out)
	return out
}

// timeOf is the capture time of a frame that carried octets of the stream.
func (st *stream) timeOf(frame int) (time.Time, bool) {
	for _, c := range st.carried {
		if c.frame == frame {
			return c.time, true
		}
	}
	return time.Time{}, false
}

// mergeIval adds n to the sorted, merged ranges got, in place.
func mergeIval(got []ival, n ival) []ival {
	i := 0
	for i < len(got) && got[i].hi < n.lo {
		i++
	}
	j := i
	for j < len(got) && got[j].lo <= n.hi {
		n = ival{min(got[j].lo, n.lo), max(got[j].hi, n.hi)}
		j++
	}
	return slices.Replace(got, i, j, n)
}

// contiguous is how many octets from the start have arrived.
func (st *stream) contiguous() int {
	if len(st.got) == 0 || st.got[0].lo != 0 {
		return 0
	}
	return st.got[0].hi
}

// firm is how many octets from the start have arrived, not counting octets
// kept from before the SYN that a later copy may still replace: only these
// decide whether the stream is MPA and when its frame is complete.
func (st *stream) firm() int {
	n := st.contiguous()
	if len(st.soft) > 0 {
		n = min(n, st.soft[0].lo)
	}
	return n
}

// fullLen is the length of the frame by its header, -1 before the header.
func (st *stream) fullLen() int {
	if st.contiguous() < layers.MPAHeaderLen {
		return -1
	}
	return layers.MPAHeaderLen + int(binary.BigEndian.Uint16(st.buf[18:20]))
}

// want is how many octets of the stream to keep: the whole frame once its
// header (with PD_Length) is in, up to the limit; before that (or before the
// start is known) what an MPA frame within the RFC's limit spans.
func (st *stream) want(limit int) int {
	if !st.startKnown || st.firm() < layers.MPAHeaderLen {
		return min(limit, maxMPAFrame)
	}
	pdl := int(binary.BigEndian.Uint16(st.buf[18:20]))
	return min(layers.MPAHeaderLen+pdl, limit)
}

// checkStream looks at what has arrived: not an MPA key, a complete frame,
// or not yet. It reports whether the stream was closed.
func (d *Decoder) checkStream(st *stream, h uint64, frame int, now time.Time, emit func(*record.Message)) bool {
	t := d.tcp
	n := st.firm()
	if !st.key16 {
		if !layers.MPAKeyPrefix(st.buf[:n]) {
			t.close(st, h) // clearly not MPA
			return true
		}
		if n < 16 {
			return false
		}
		st.key16 = true
	}
	if n < layers.MPAHeaderLen {
		return false
	}
	pdl := int(binary.BigEndian.Uint16(st.buf[18:20]))
	full := layers.MPAHeaderLen + pdl
	if n >= full {
		d.chargeLost(st)
		emit(d.mpaMessage(st, st.buf[:full], frame, now, ""))
		t.rememberComplete(st)
		t.close(st, h)
		return true
	}
	if full > t.lim.StreamBytes && n >= t.lim.StreamBytes {
		st.capped = fmt.Sprintf("PD_Length %d needs %d octets, more than the per-stream limit of %d", pdl, full, t.lim.StreamBytes)
		d.giveUp(st, h, emit)
		return true
	}
	return false
}

// finish stops following a direction that ended (FIN, RST, a new SYN, the
// end of the capture, age, a limit) before its frame was complete. One that
// showed an MPA key is reported with what arrived; finish reports whether it
// was.
func (d *Decoder) finish(st *stream, h uint64, why string, emit func(*record.Message)) bool {
	t := d.tcp
	shown := st.reportable()
	if shown {
		d.chargeLost(st)
		n := st.contiguous()
		complete := false
		if full := st.fullLen(); full >= 0 && n >= full {
			// Complete with octets kept from before the SYN that no later
			// copy replaced.
			n, why, complete = full, "", true
		}
		emit(d.mpaMessage(st, st.buf[:n], st.lastSeen, st.lastTime, why))
		if complete {
			t.rememberComplete(st)
		}
	} else if st.lost && st.keyStart() {
		// Its key arrived after earlier state was given up at a limit, and
		// too little of it for a message.
		st.lost = false
		t.dropped++
		t.silentDrops++
	}
	t.close(st, h)
	return shown
}

// chargeLost counts, once, a direction shown with a key after earlier state
// of it was given up at a limit, and flags its frame.
func (d *Decoder) chargeLost(st *stream) {
	if !st.lost {
		return
	}
	st.lost = false
	d.tcp.dropped++
	if st.capped == "" {
		st.capped = "octets of this direction that arrived before its MPA key were given up at a state limit"
	}
}

// minKeyPrefix is how many octets of a key a direction that ends inside it
// must have shown to be reported: 10 octets ("MPA ID Req" or "MPA ID Rep")
// tell a Request from a Reply, and are specific enough not to be another
// protocol's first octets.
const minKeyPrefix = 10

// reportable reports whether a direction that ends now is shown as an MPA
// frame: its first octets are a key, or at least minKeyPrefix octets of one.
func (st *stream) reportable() bool {
	if !st.startKnown {
		return false
	}
	if st.key16 {
		return true
	}
	n := st.contiguous()
	return n >= minKeyPrefix && layers.MPAKeyPrefix(st.buf[:n])
}

// keyStart reports whether the direction's first octets are (part of) an
// MPA key.
func (st *stream) keyStart() bool {
	n := st.contiguous()
	return st.startKnown && n > 0 && layers.MPAKeyPrefix(st.buf[:n])
}

// giveUp stops following a direction at a state limit; st.capped says
// which. Every direction given up that began with (part of) an MPA key is
// counted once in dropped (the summary's state_limit_drops): one that
// showed enough of it is reported with what arrived and a
// state-limit-reached finding; the others, which no message can show, are
// counted in silentDrops too (the summary's warning). One that showed no key
// octet is marked lost in the verdict cache: it is counted, and its frame
// flagged, only if its key arrives later (chargeLost); a busy capture's
// other traffic given up at a limit loses nothing to report.
func (d *Decoder) giveUp(st *stream, h uint64, emit func(*record.Message)) {
	t := d.tcp
	switch {
	case st.startKnown && !st.anyData && len(st.buf) == 0:
		// Nothing but its SYN: nothing lost; its key at its start still
		// takes it up, unflagged (as when aged).
		t.keyless++
		t.close(st, h)
		t.verdicts[h&(verdictSlots-1)] |= verdictAged
		return
	case !st.reportable() && !st.keyStart():
		t.keyless++
		t.total -= st.held()
		delete(t.active, st.key)
		t.setVerdict(h, verdictLost, 0)
		return
	}
	if !st.lost {
		t.dropped++
		if !st.reportable() {
			t.silentDrops++
		}
	}
	d.finish(st, h, "it was given up", emit)
}

// close stops following a direction and remembers it is decided, with its
// start when known (a SYN repeating it is then a retransmission).
func (t *tcpState) close(st *stream, h uint64) {
	t.total -= st.held()
	delete(t.active, st.key)
	if st.startKnown {
		t.setVerdict(h, verdictStart, st.start)
	} else {
		t.setVerdict(h, verdictDone, 0)
	}
}

// flushTCP reports, at the end of an input, every direction with a
// recognised key whose frame never completed.
func (d *Decoder) flushTCP(emit func(*record.Message)) {
	t := d.tcp
	var open []*stream
	for _, st := range t.active {
		open = append(open, st)
	}
	// Report in the order the streams were last seen, so output is stable.
	slices.SortFunc(open, func(a, b *stream) int { return a.lastSeen - b.lastSeen })
	for _, st := range open {
		why := "the capture ends"
		if st.fin {
			why = "the stream ends (FIN) with octets missing before it; the capture ends"
		}
		d.finish(st, t.hash(&st.key), why, emit)
	}
}

// endpoint shows an address and port: 192.0.2.1:50000 or [2001:db8::1]:50000.
func endpoint(addr [16]byte, v6 bool, port uint16) string {
	a := netip.AddrFrom16(addr)
	if !v6 {
		a = netip.AddrFrom4([4]byte(addr[12:16]))
	}
	return netip.AddrPortFrom(a, port).String()
}
