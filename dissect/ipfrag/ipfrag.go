// Package ipfrag reassembles IPv4 and IPv6 datagrams from their fragments
// (RFC 791, section 3.2; RFC 8200, section 4.5), within limits: the
// datagrams, fragments and octets held at once, and an age counted in
// capture time, as dissect/reassembly does for TCP. What a limit gives up
// is counted, so that the run can say so.
//
// A datagram is complete when its octets from 0 to the end given by the
// fragment without More Fragments have all arrived. Where fragments
// overlap, the octets that arrived first are kept (as for TCP; RFC 5722
// has IPv6 receivers drop such datagrams, and a capture shows what was
// sent either way). Fragments the capture cut short still count as arrived
// for completeness: the datagram is then handed on as far as its octets
// were captured without a gap, with its wire length, so that the decoder
// reports the cut as for a frame.
//
// In steady state Add allocates nothing: the buffers of finished datagrams
// are reused.
package ipfrag

import (
	"time"
)

// Defaults of Options.
const (
	DefaultDatagrams = 1024
	DefaultFragments = 8192
	DefaultBytes     = 4 << 20
	DefaultTimeout   = 30 * time.Second // Linux's ipfrag_time
)

// MaxDatagram is the largest fragmentable part a datagram may have: the
// fragment offset and length fields allow no more than 65535 octets.
const MaxDatagram = 65535

// Options bound what a Reassembler holds. Zero fields take the defaults.
type Options struct {
	Datagrams int           // datagrams being reassembled at once
	Fragments int           // fragments held, all datagrams together
	Bytes     int           // octets held (each datagram's buffer up to its highest fragment, and the first fragment's headers), all together
	Timeout   time.Duration // capture time a datagram may wait for its missing fragments
}

// WithDefaults fills the zero fields.
func (o Options) WithDefaults() Options {
	if o.Datagrams <= 0 {
		o.Datagrams = DefaultDatagrams
	}
	if o.Fragments <= 0 {
		o.Fragments = DefaultFragments
	}
	if o.Bytes <= 0 {
		o.Bytes = DefaultBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Key identifies the datagram a fragment belongs to (RFC 791: source,
// destination, protocol and Identification; RFC 8200: source, destination
// and Identification). IPv4 addresses sit in the last 4 octets.
type Key struct {
	Src, Dst [16]byte
	ID       uint32
	Proto    uint8 // IPv4 only; 0 for IPv6
	V6       bool
}

// Fragment is one fragment as the decoder found it. Data and Header point
// into the frame and are only read during Add.
type Fragment struct {
	Key     Key
	Offset  int    // octets from the start of the fragmentable part
	More    bool   // More Fragments
	Data    []byte // the fragment's payload, as captured
	WireLen int    // its payload octets on the wire, by the IP length fields
	// Header is the frame's octets before the payload (link and tunnel
	// headers, the IP header, IPv6 extension headers with the Fragment
	// header); only the offset-0 fragment's is kept. L3 is where its IP
	// header starts, FragHdr where the IPv6 Fragment header does (IPv6).
	Header      []byte
	L3, FragHdr int
	Frame       int
	Time        time.Time
	// Flagged marks the offset-0 fragment whose transport header starts
	// something of interest (a CM MAD, an MPA frame): what the limits give
	// up of such datagrams is counted apart.
	Flagged bool
}

// Datagram is a reassembled datagram. Its slices belong to the
// Reassembler and are valid until the next call.
type Datagram struct {
	Key         Key
	Header      []byte // the offset-0 fragment's Header
	L3, FragHdr int
	Payload     []byte // the fragmentable part, as far as it was captured without a gap
	WireLen     int    // the fragmentable part's length on the wire
	Frames      []int  // the frames of its fragments, in arrival order (at most MaxFrames)
	Flagged     bool
}

// MaxFrames bounds the frames a Datagram lists.
const MaxFrames = 64

// Stats count what a Reassembler did.
type Stats struct {
	Reassembled int // datagrams handed on
	// Datagrams given up: at the datagram, fragment or octet limit; by age;
	// still incomplete at Flush; malformed (beyond 65535 octets, or
	// disagreeing on where they end).
	Limit, Aged, Incomplete, Malformed int
	// Duplicates counts the datagrams made only of copies of fragments of
	// a datagram reassembled shortly before (a retransmission, or the same
	// packet captured twice): given up without loss.
	Duplicates int
	// The same, for the flagged datagrams only, and the frame of the
	// first flagged one given up.
	FlaggedLimit, FlaggedAged, FlaggedIncomplete, FlaggedMalformed int
	FlaggedFirst                                                   int
}

// Lost is how many flagged datagrams were given up.
func (s Stats) Lost() int {
	return s.FlaggedLimit + s.FlaggedAged + s.FlaggedIncomplete + s.FlaggedMalformed
}

// span is a range [lo, hi) of the fragmentable part.
type span struct{ lo, hi int }

// dgram is a datagram being reassembled.
type dgram struct {
	key     Key
	gen     uint32 // bumped when the entry is reused: stale queue entries are skipped
	start   time.Time
	buf     []byte // the fragmentable part, at its offsets
	hdr     []byte
	l3, fh  int
	hasHdr  bool
	have    []span // wire coverage, sorted, disjoint
	total   int    // the end, once the last fragment came; -1 before
	cutAt   int    // the first octet a cut fragment did not capture; MaxDatagram+1 when none
	frags   int
	held    int // octets charged
	frames  []int
	flagged bool
	first   int  // frame of the first fragment
	again   bool // its key is that of a datagram reassembled within the timeout
}

// doneKey is a datagram reassembled, remembered for a while: fragments of
// it that come again are not a loss when they never complete.
type doneKey struct {
	key Key
	at  time.Time
}

// maxDone bounds the reassembled datagrams remembered.
const maxDone = 4096

type queued struct {
	d   *dgram
	gen uint32
}

// Reassembler reassembles the fragments of one input. It is not safe for
// concurrent use.
type Reassembler struct {
	opts  Options
	m     map[Key]*dgram
	queue []queued // in creation order, for ageing and eviction
	head  int
	free  []*dgram
	frags int
	bytes int
	now   time.Time
	stats Stats
	out   Datagram
	done  map[Key]time.Time
	ring  [maxDone]doneKey
	ringN int
}

// New returns a Reassembler with the given limits.
func New(opts Options) *Reassembler {
	return &Reassembler{opts: opts.WithDefaults(), m: map[Key]*dgram{}, done: map[Key]time.Time{}}
}

// Stats returns the counters.
func (r *Reassembler) Stats() Stats { return r.stats }

// Pending is how many datagrams are being reassembled.
func (r *Reassembler) Pending() int { return len(r.m) }

// Why a datagram is given up.
const (
	whyLimit = iota
	whyAged
	whyIncomplete
	whyMalformed
)

// Add takes one fragment. When it completes its datagram, Add returns the
// datagram, valid until the next call.
func (r *Reassembler) Add(f *Fragment) (*Datagram, bool) {
	if f.Time.After(r.now) {
		r.now = f.Time
	}
	r.expire()
	d := r.m[f.Key]
	if malformed(f) {
		if d == nil {
			d = r.open(f) // so that it is counted (and flagged) as given up
		}
		d.flagged = d.flagged || f.Flagged
		r.giveUp(d, whyMalformed)
		return nil, false
	}
	if d == nil {
		d = r.open(f)
	}
	end := f.Offset + f.WireLen
	if !r.makeRoom(d, f, end) {
		return nil, false
	}
	if !d.setEnd(f.More, end) {
		r.giveUp(d, whyMalformed)
		return nil, false
	}
	r.take(d, f, end)
	if d.total < 0 || !d.covered() || !d.hasHdr {
		return nil, false
	}
	return r.finish(d), true
}

// malformed reports a fragment no datagram can have: one beyond 65535
// octets, at a negative offset or of a negative length, or one before the
// last (More Fragments set) whose length is no multiple of 8, as offsets
// count 8-octet units.
func malformed(f *Fragment) bool {
	return f.Offset+f.WireLen > MaxDatagram || f.Offset < 0 || f.WireLen < 0 || (f.More && f.WireLen%8 != 0)
}

// makeRoom makes the limits hold a fragment of d that ends at end: its
// buffer grows to that end, and the offset-0 fragment's headers are kept.
// The oldest datagrams go first, d last; it reports false when d went.
func (r *Reassembler) makeRoom(d *dgram, f *Fragment, end int) bool {
	cost := max(end-len(d.buf), 0)
	if f.Offset == 0 && !d.hasHdr {
		cost += len(f.Header)
	}
	for !r.fits(cost) {
		old := r.oldest()
		if old == nil {
			break
		}
		r.giveUp(old, whyLimit)
		if old == d {
			return false
		}
	}
	if !r.fits(cost) {
		r.giveUp(d, whyLimit)
		return false
	}
	return true
}

// fits reports whether one more fragment, and cost more octets, are within
// the limits.
func (r *Reassembler) fits(cost int) bool {
	return r.frags+1 <= r.opts.Fragments && r.bytes+cost <= r.opts.Bytes
}

// setEnd checks where a fragment ends against where the datagram does: the
// last fragment (More Fragments clear) sets that end, and must agree with
// an earlier last one and end no earlier than an octet that arrived; any
// other must not end past it. It reports false when they disagree.
func (d *dgram) setEnd(more bool, end int) bool {
	if more {
		return d.total < 0 || end <= d.total
	}
	if d.total >= 0 && d.total != end || d.maxEnd() > end {
		return false
	}
	d.total = end
	return true
}

// take keeps a fragment of d that ends at end: its frame, the offset-0
// fragment's headers, where the capture cut it, and its octets.
func (r *Reassembler) take(d *dgram, f *Fragment, end int) {
	d.frags++
	r.frags++
	if len(d.frames) < MaxFrames {
		d.frames = append(d.frames, f.Frame)
	}
	if f.Offset == 0 && !d.hasHdr {
		d.hdr = append(d.hdr[:0], f.Header...)
		d.l3, d.fh, d.hasHdr = f.L3, f.FragHdr, true
		d.flagged = d.flagged || f.Flagged
		d.held += len(f.Header)
		r.bytes += len(f.Header)
	}
	if len(f.Data) < f.WireLen {
		d.cutAt = min(d.cutAt, f.Offset+len(f.Data))
	}
	grown := max(end-len(d.buf), 0)
	d.store(f.Offset, f.Data, end)
	d.held += grown
	r.bytes += grown
}

// finish hands on a datagram made whole, and releases it: the Datagram
// shares its buffers, which stay as they are until the next call.
func (r *Reassembler) finish(d *dgram) *Datagram {
	r.stats.Reassembled++
	r.remember(d.key)
	o := &r.out
	*o = Datagram{Key: d.key, Header: d.hdr, L3: d.l3, FragHdr: d.fh, WireLen: d.total,
		Payload: d.buf[:min(d.total, d.cutAt)], Frames: d.frames, Flagged: d.flagged}
	r.release(d)
	return o
}

// open starts a datagram.
func (r *Reassembler) open(f *Fragment) *dgram {
	for len(r.m) >= r.opts.Datagrams {
		old := r.oldest()
		if old == nil {
			break
		}
		r.giveUp(old, whyLimit)
	}
	var d *dgram
	if n := len(r.free); n > 0 {
		d, r.free = r.free[n-1], r.free[:n-1]
	} else {
		d = &dgram{}
	}
	*d = dgram{key: f.Key, gen: d.gen + 1, start: f.Time, buf: d.buf[:0], hdr: d.hdr[:0], have: d.have[:0],
		frames: d.frames[:0], total: -1, cutAt: MaxDatagram + 1, first: f.Frame}
	if f.Time.IsZero() {
		d.start = r.now
	}
	if at, ok := r.done[f.Key]; ok && r.now.Sub(at) <= r.opts.Timeout {
		d.again = true
	}
	r.m[f.Key] = d
	r.queue = append(r.queue, queued{d, d.gen})
	return d
}

// oldest returns the oldest datagram held, or nil.
func (r *Reassembler) oldest() *dgram {
	for r.head < len(r.queue) {
		q := r.queue[r.head]
		if q.d.gen == q.gen && r.m[q.d.key] == q.d {
			return q.d
		}
		r.pop()
	}
	return nil
}

func (r *Reassembler) pop() {
	r.queue[r.head] = queued{}
	r.head++
	if r.head == len(r.queue) {
		r.queue, r.head = r.queue[:0], 0
	} else if r.head > 1024 && r.head*2 > len(r.queue) {
		n := copy(r.queue, r.queue[r.head:])
		clear(r.queue[n:])
		r.queue, r.head = r.queue[:n], 0
	}
}

// expire gives up the datagrams older than the timeout, in capture time.
func (r *Reassembler) expire() {
	for {
		d := r.oldest()
		if d == nil || r.now.Sub(d.start) <= r.opts.Timeout {
			return
		}
		r.giveUp(d, whyAged)
	}
}

// Flush gives up every datagram still incomplete (the input ended).
func (r *Reassembler) Flush() {
	for d := r.oldest(); d != nil; d = r.oldest() {
		r.giveUp(d, whyIncomplete)
	}
}

func (r *Reassembler) giveUp(d *dgram, why int) {
	s := &r.stats
	if d.again && why != whyLimit && why != whyMalformed {
		s.Duplicates++ // copies of what was reassembled: nothing lost
		r.release(d)
		return
	}
	counts := [...]*int{&s.Limit, &s.Aged, &s.Incomplete, &s.Malformed}
	*counts[why]++
	if d.flagged {
		flagged := [...]*int{&s.FlaggedLimit, &s.FlaggedAged, &s.FlaggedIncomplete, &s.FlaggedMalformed}
		*flagged[why]++
		if s.FlaggedFirst == 0 {
			s.FlaggedFirst = d.first
		}
	}
	r.release(d)
}

// release drops a datagram and keeps its buffers.
func (r *Reassembler) release(d *dgram) {
	if r.m[d.key] == d {
		delete(r.m, d.key)
	}
	r.frags -= d.frags
	r.bytes -= d.held
	d.frags, d.held = 0, 0
	d.gen++
	if cap(d.buf) > 2*MaxDatagram {
		d.buf = nil
	}
	if len(r.free) < 32 {
		r.free = append(r.free, d)
	}
}

// maxEnd is the end of the highest octet received.
func (d *dgram) maxEnd() int {
	if len(d.have) == 0 {
		return 0
	}
	return d.have[len(d.have)-1].hi
}

// covered reports whether [0, total) has arrived.
func (d *dgram) covered() bool {
	return len(d.have) == 1 && d.have[0].lo == 0 && d.have[0].hi >= d.total
}

// store copies the captured octets of [off, end) that have not arrived
// before into the buffer, and records the wire range as arrived.
func (d *dgram) store(off int, data []byte, end int) {
	if len(d.buf) < end {
		if cap(d.buf) < end {
			nb := make([]byte, end, max(end, 2*cap(d.buf), 2048))
			copy(nb, d.buf)
			d.buf = nb
		} else {
			d.buf = d.buf[:end]
		}
	}
	// Copy the gaps of [off, off+len(data)) between the spans held.
	dataEnd := off + len(data)
	at := off
	for _, s := range d.have {
		if s.hi <= at {
			continue
		}
		if s.lo >= dataEnd {
			break
		}
		if s.lo > at {
			copy(d.buf[at:s.lo], data[at-off:])
		}
		at = max(at, s.hi)
	}
	if at < dataEnd {
		copy(d.buf[at:dataEnd], data[at-off:])
	}
	d.addSpan(off, end)
}

// addSpan merges [lo, hi) into the sorted, disjoint spans.
func (d *dgram) addSpan(lo, hi int) {
	if lo >= hi {
		return
	}
	i := 0
	for ; i < len(d.have) && d.have[i].hi < lo; i++ {
	}
	j := i
	for ; j < len(d.have) && d.have[j].lo <= hi; j++ {
		lo, hi = min(lo, d.have[j].lo), max(hi, d.have[j].hi)
	}
	if j == i { // overlaps none: insert
		d.have = append(d.have, span{})
		copy(d.have[i+1:], d.have[i:])
		d.have[i] = span{lo, hi}
		return
	}
	// Spans i to j-1 merge into one.
	d.have[i] = span{lo, hi}
	n := copy(d.have[i+1:], d.have[j:])
	d.have = d.have[:i+1+n]
}

// remember notes a reassembled datagram's key, forgetting the oldest
// beyond maxDone.
func (r *Reassembler) remember(k Key) {
	slot := &r.ring[r.ringN%maxDone]
	if r.ringN >= maxDone && r.done[slot.key] == slot.at {
		delete(r.done, slot.key)
	}
	*slot = doneKey{k, r.now}
	r.done[k] = r.now
	r.ringN++
}
