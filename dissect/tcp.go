package dissect

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"net/netip"
	"slices"
	"time"

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
	ActiveFlows  int // directions being followed at once; default 32768
	MaxEarlySegs int // segments kept from a direction whose start is unknown; default 1024
}

func (l TCPLimits) withDefaults() TCPLimits {
	if l.StreamBytes <= 0 {
		l.StreamBytes = layers.MPAHeaderLen + 0xffff
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = DefaultTCPBuffer
	}
	if l.ActiveFlows <= 0 {
		l.ActiveFlows = DefaultTCPFlows
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

// early is a segment kept while a direction's start is unknown.
type early struct {
	seq   uint32
	data  []byte
	frame int
	time  time.Time
	cut   bool
}

// stream follows the first octets of one direction.
type stream struct {
	key        flowKey
	v6         bool
	startKnown bool
	start      uint32  // sequence number of the first payload octet
	buf        []byte  // octets from start; holes are zero
	got        []ival  // received ranges, sorted and merged
	carried    []carry // per segment kept: the range it carried, its frame and capture time
	early      []early
	key16      bool // the 16-octet key is present and is an MPA key
	snapCut    bool // a contributing segment was cut by the snap length
	// differ is 1 + the offset of the first octet a later copy (a
	// retransmission or overlap) carried differently from the first; 0 when
	// none did. differFrame is that later copy's frame.
	differ      int
	differFrame int
	capped      string
	lastSeen    int // frame index, for eviction
	lastTime    time.Time
}

// tcpState is the reassembly state of one input.
type tcpState struct {
	lim      TCPLimits
	seed     maphash.Seed
	active   map[flowKey]*stream
	total    int      // octets buffered in all streams
	verdicts []uint64 // lossy cache of flow hashes already decided (done or not MPA)
	dropped  int      // directions given up because of a limit
	opens    int      // directions opened since the last sweep
	// silentDrops counts directions given up before they showed an MPA key:
	// no message can carry their finding, so only the count tells.
	silentDrops int
}

const verdictSlots = 1 << 18

// maxCarried bounds the segments remembered per direction (for the frames
// list), whatever a flood of retransmissions does.
const maxCarried = 1024

// maxMPAFrame is the longest MPA frame within the RFC's limits (PD_Length
// 512); a segment without a key that is longer cannot belong to one.
const maxMPAFrame = layers.MPAHeaderLen + layers.MPAMaxPDLength

func newTCPState(lim TCPLimits) *tcpState {
	return &tcpState{lim: lim.withDefaults(), seed: maphash.MakeSeed(), active: map[flowKey]*stream{}}
}

func (t *tcpState) hash(k *flowKey) uint64 {
	h := maphash.Comparable(t.seed, *k)
	if h == 0 {
		h = 1
	}
	return h
}

// The verdict cache is allocated with the first TCP segment: captures
// without TCP do not pay for it.
func (t *tcpState) decided(h uint64) bool {
	return t.verdicts != nil && t.verdicts[h&(verdictSlots-1)] == h
}

func (t *tcpState) decide(h uint64) {
	if t.verdicts == nil {
		t.verdicts = make([]uint64, verdictSlots)
	}
	t.verdicts[h&(verdictSlots-1)] = h
}
func (t *tcpState) undecide(h uint64) {
	if t.decided(h) {
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
func (d *Decoder) segment(s *tcpSeg, emit func(*Message)) {
	t := d.tcp
	h := t.hash(&s.key)
	// The common case, TCP bulk: a direction already decided (its MPA frame
	// done, or not MPA). Only a new SYN reopens it.
	if !s.syn && t.decided(h) {
		return
	}
	// The SYN occupies its own sequence number, before the first data octet
	// (RFC 9293, section 3.4): data carried in a SYN (TCP Fast Open) starts
	// at ISN+1.
	seq := s.seq
	if s.syn {
		seq++
	}
	st := t.active[s.key]
	if st != nil && s.syn && st.startKnown && st.start != seq {
		// A SYN with another ISN: a new connection on the same addresses and
		// ports. What the old one began ends here.
		d.finish(st, h, "the connection is replaced by a new one (SYN)", emit)
		st = nil
	}
	if st == nil {
		switch {
		case s.syn:
			st = d.open(s, seq, true, emit)
		case len(s.payload) == 0:
			return
		case layers.MPAKeyPrefix(s.payload):
			st = d.open(s, seq, true, emit)
		case len(s.payload) > maxMPAFrame && len(s.payload) > t.lim.StreamBytes:
			// No handshake, no key, and longer than any MPA frame and than
			// what a stream may buffer: bulk data of a connection whose start
			// is not in the capture.
			t.decide(h)
			return
		default:
			// No handshake seen and this segment does not start a key: the
			// capture may begin mid-connection, or this may be a later part of
			// a frame whose start arrives next (keepEarly).
			st = d.open(s, 0, false, emit)
		}
	}
	st.lastSeen, st.lastTime = s.frame, s.time
	if s.syn && !st.startKnown {
		st.startKnown, st.start = true, seq
		t.replayEarly(st)
	}
	if len(s.payload) > 0 {
		cut := len(s.payload) < s.wirePayload
		if !st.startKnown {
			if layers.MPAKeyPrefix(s.payload) && t.earlyAfter(st, seq) {
				st.startKnown, st.start = true, seq
				t.add(st, seq, s.payload, s.frame, s.time, cut)
				t.replayEarly(st)
			} else if !d.keepEarly(st, h, s, seq, cut, emit) {
				return
			}
		} else {
			t.add(st, seq, s.payload, s.frame, s.time, cut)
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
	if s.fin || s.rst {
		// The direction ends here: what has not arrived will not.
		why := "the stream ends (FIN)"
		if s.rst {
			why = "the connection is reset (RST)"
		}
		d.finish(st, h, why, emit)
	}
}

// earlyCost is what a kept early segment costs besides its octets; it is
// charged to the total buffer so that many tiny segments stay bounded too.
const earlyCost = 64

// keepEarly keeps a segment of a direction whose start is not known yet: no
// handshake and no key so far. The octets kept are bounded by what one MPA
// frame can span, by the per-stream limit and by the total buffer; the
// segments by MaxEarlySegs. It reports false when the direction was closed:
// not MPA (its octets span more than an MPA frame within the RFC's limit can
// hold, and none starts a key), or given up at a limit (counted, never
// silent).
func (d *Decoder) keepEarly(st *stream, h uint64, s *tcpSeg, seq uint32, cut bool, emit func(*Message)) bool {
	t := d.tcp
	n := len(s.payload)
	lo, hi := seq, seq+uint32(n)
	for _, e := range st.early {
		if e.seq == seq && len(e.data) >= n {
			return true // a retransmission: nothing new
		}
		if int32(e.seq-lo) < 0 {
			lo = e.seq
		}
		if end := e.seq + uint32(len(e.data)); int32(end-hi) > 0 {
			hi = end
		}
	}
	span := int(hi - lo)
	switch {
	case len(st.early) > 0 && span > maxMPAFrame:
		// A single long segment may be the tail of an over-long frame whose
		// start comes next; more octets than that, and still no key: not
		// MPA, or not its first octets.
		t.close(st, h)
		return false
	case span > t.lim.StreamBytes:
		st.capped = fmt.Sprintf("%d octets arrived before the start of the stream, more than the per-stream limit of %d", span, t.lim.StreamBytes)
	case len(st.early) >= t.lim.MaxEarlySegs:
		st.capped = fmt.Sprintf("more than %d segments arrived before the start of the stream", t.lim.MaxEarlySegs)
	case t.reserve(st, n+earlyCost):
		st.early = append(st.early, early{seq: seq, data: append([]byte(nil), s.payload...), frame: s.frame, time: s.time, cut: cut})
		return true
	}
	d.giveUp(st, h, emit)
	return false
}

// open starts following a direction. At the active-flow limit the least
// recently seen eighth of the directions is given up first (in one sort, so
// a flood of connections costs O(log n) per connection).
func (d *Decoder) open(s *tcpSeg, start uint32, known bool, emit func(*Message)) *stream {
	t := d.tcp
	// Sweep after as many new directions as are followed (at least
	// sweepEvery): a sweep costs one look at each, so each new direction
	// pays for one look or fewer.
	if t.opens++; t.opens >= max(sweepEvery, len(t.active)) {
		t.opens = 0
		d.sweep(s.time, emit)
	}
	if len(t.active) >= t.lim.ActiveFlows {
		d.evict(emit)
	}
	st := &stream{key: s.key, v6: s.v6, startKnown: known, start: start}
	t.active[s.key] = st
	t.undecide(t.hash(&s.key))
	return st
}

// Directions that go quiet are not kept for ever. An MPA Request or Reply
// follows the TCP handshake at once, and its segments follow each other
// closely: a direction still undecided after these spans of capture time is
// decided by age.
const (
	sweepEvery   = 1024
	quietUnknown = 2 * time.Second  // no handshake and no key seen yet: not MPA
	quietNoData  = 10 * time.Second // a SYN, then nothing: not MPA
	quietMPA     = 60 * time.Second // an MPA frame begun and not finished: reported, given up
)

// sweep decides the directions that have been quiet too long.
func (d *Decoder) sweep(now time.Time, emit func(*Message)) {
	t := d.tcp
	for _, st := range t.active {
		quiet := now.Sub(st.lastTime)
		switch {
		case st.reportable():
			if quiet > quietMPA {
				st.capped = fmt.Sprintf("nothing more arrived for %s: this MPA frame was given up", quietMPA)
				d.giveUp(st, t.hash(&st.key), emit)
			}
		case !st.startKnown && quiet > quietUnknown, st.startKnown && quiet > quietNoData:
			t.close(st, t.hash(&st.key))
		}
	}
}

// evict gives up the least recently seen directions. One that already showed
// an MPA key is reported with what arrived; every one is counted.
func (d *Decoder) evict(emit func(*Message)) {
	t := d.tcp
	all := make([]*stream, 0, len(t.active))
	for _, st := range t.active {
		all = append(all, st)
	}
	slices.SortFunc(all, func(a, b *stream) int { return a.lastSeen - b.lastSeen })
	for _, st := range all[:max(1, len(all)/8)] {
		st.capped = fmt.Sprintf("more than %d TCP directions were being followed at once; this one was given up", t.lim.ActiveFlows)
		d.giveUp(st, t.hash(&st.key), emit)
	}
}

// earlyAfter reports whether every kept early segment lies at or after seq,
// so that seq can be the start of the stream.
func (t *tcpState) earlyAfter(st *stream, seq uint32) bool {
	for _, e := range st.early {
		if int32(e.seq-seq) < 0 {
			return false
		}
	}
	return true
}

func (t *tcpState) replayEarly(st *stream) {
	for _, e := range st.early {
		t.total -= len(e.data) + earlyCost
		t.add(st, e.seq, e.data, e.frame, e.time, e.cut)
	}
	st.early = nil
}

// reserve accounts n more buffered octets, within the limits.
func (t *tcpState) reserve(st *stream, n int) bool {
	if t.total+n > t.lim.TotalBytes {
		if st.capped == "" {
			st.capped = fmt.Sprintf("the reassembly buffers of all streams are full (%d octets)", t.lim.TotalBytes)
		}
		return false
	}
	t.total += n
	return true
}

// add stores a segment's octets that fall inside the part of the stream we
// want; the first copy of an octet wins over retransmissions.
func (t *tcpState) add(st *stream, seq uint32, data []byte, frame int, now time.Time, cut bool) {
	off := int(int32(seq - st.start))
	if off < 0 {
		if -off >= len(data) {
			return
		}
		data, off = data[-off:], 0
	}
	want := st.want(t.lim.StreamBytes)
	if off >= want {
		return
	}
	if off+len(data) > want {
		data = data[:want-off]
		cut = false // what was cut lies beyond the frame
	}
	if off+len(data) > len(st.buf) {
		grow := off + len(data) - len(st.buf)
		if !t.reserve(st, grow) {
			return
		}
		st.buf = append(st.buf, make([]byte, grow)...)
	}
	lo, hi := off, off+len(data)
	if len(st.carried) < maxCarried {
		st.carried = append(st.carried, carry{lo, hi, frame, now})
	}
	if cut {
		st.snapCut = true
	}
	added := false
	// Fill only the gaps between ranges already received.
	pos := lo
	for _, g := range st.got {
		if g.hi <= pos || g.lo >= hi {
			continue
		}
		if g.lo > pos {
			copy(st.buf[pos:g.lo], data[pos-off:g.lo-off])
			added = true
		}
		// The octets already held: the first copy stays; note a difference.
		if a, b := max(pos, g.lo), min(hi, g.hi); st.differ == 0 && a < b {
			for i := a; i < b; i++ {
				if st.buf[i] != data[i-off] {
					st.differ, st.differFrame = i+1, frame
					break
				}
			}
		}
		pos = max(pos, g.hi)
	}
	if pos < hi {
		copy(st.buf[pos:hi], data[pos-off:])
		added = true
	}
	if !added {
		return
	}
	st.got = mergeIval(st.got, ival{lo, hi})
}

// framesWithin lists, in order and once each, the frames whose segments
// carried octets of the first n octets of the stream.
func (st *stream) framesWithin(n int) []int {
	var out []int
	for _, c := range st.carried {
		if c.lo < n && !slices.Contains(out, c.frame) {
			out = append(out, c.frame)
		}
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

func mergeIval(got []ival, n ival) []ival {
	out := got[:0:0]
	placed := false
	for _, g := range got {
		switch {
		case g.hi < n.lo:
			out = append(out, g)
		case n.hi < g.lo:
			if !placed {
				out = append(out, n)
				placed = true
			}
			out = append(out, g)
		default:
			n = ival{min(g.lo, n.lo), max(g.hi, n.hi)}
		}
	}
	if !placed {
		out = append(out, n)
	}
	return out
}

// contiguous is how many octets from the start have arrived.
func (st *stream) contiguous() int {
	if len(st.got) == 0 || st.got[0].lo != 0 {
		return 0
	}
	return st.got[0].hi
}

// want is how many octets of the stream to keep: the whole frame once its
// header (with PD_Length) is in, up to the limit before that.
func (st *stream) want(limit int) int {
	if st.contiguous() < layers.MPAHeaderLen {
		return limit
	}
	pdl := int(binary.BigEndian.Uint16(st.buf[18:20]))
	return min(layers.MPAHeaderLen+pdl, limit)
}

// checkStream looks at what has arrived: not an MPA key, a complete frame,
// or not yet. It reports whether the stream was closed.
func (d *Decoder) checkStream(st *stream, h uint64, frame int, now time.Time, emit func(*Message)) bool {
	t := d.tcp
	n := st.contiguous()
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
		emit(d.mpaMessage(st, st.buf[:full], frame, now, ""))
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
// end of the capture, a limit) before its frame was complete. One that
// showed an MPA key is reported with what arrived; finish reports whether it
// was.
func (d *Decoder) finish(st *stream, h uint64, why string, emit func(*Message)) bool {
	shown := st.reportable()
	if shown {
		emit(d.mpaMessage(st, st.buf[:st.contiguous()], st.lastSeen, st.lastTime, why))
	}
	d.tcp.close(st, h)
	return shown
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

// giveUp stops following a direction at a state limit; st.capped says
// which. Every direction given up is counted once in dropped (the summary's
// state_limit_drops). One that showed an MPA key is reported with what
// arrived and a state-limit-reached finding; the others, which no message
// can show, are counted in silentDrops too (the summary's warning).
func (d *Decoder) giveUp(st *stream, h uint64, emit func(*Message)) {
	d.tcp.dropped++
	if !d.finish(st, h, "it was given up", emit) {
		d.tcp.silentDrops++
	}
}

// close stops following a direction and remembers it is decided.
func (t *tcpState) close(st *stream, h uint64) {
	t.total -= len(st.buf)
	for _, e := range st.early {
		t.total -= len(e.data) + earlyCost
	}
	delete(t.active, st.key)
	t.decide(h)
}

// flushTCP reports, at the end of an input, every direction with a
// recognised key whose frame never completed.
func (d *Decoder) flushTCP(emit func(*Message)) {
	t := d.tcp
	var open []*stream
	for _, st := range t.active {
		open = append(open, st)
	}
	// Report in the order the streams were last seen, so output is stable.
	slices.SortFunc(open, func(a, b *stream) int { return a.lastSeen - b.lastSeen })
	for _, st := range open {
		d.finish(st, t.hash(&st.key), "the capture ends", emit)
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
