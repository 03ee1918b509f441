// Package mpa finds iWARP MPA Request and Reply frames (RFC 5044, and the
// enhanced connection establishment of RFC 6581) in TCP directions that
// dissect/reassembly follows, and turns each into a message record.
//
// A direction's MPA frame is at its first octet, or, when the upper layer
// exchanged TCP streaming-mode data first (iSER logs in over plain TCP;
// RFC 5044 section 6 allows it), at a key found within its first
// ScanWindow octets. Without a captured SYN a direction starts at a
// segment that begins with a key (Starts); up to EarlyWindow octets of it
// are kept before that, in case the segments came out of order. The frame
// is reported whole when its PD_Length octets arrived, or as far as it
// arrived when the direction ended first (the capture ended, a FIN, an RST,
// a new connection, a limit): from ten octets of a key on, enough to tell a
// Request from a Reply.
package mpa

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Sizes the framer works with.
const (
	// MaxFrame is the longest MPA frame within the RFC's limit (PD_Length
	// 512): the early window. A frame with a longer PD_Length whose later
	// octets arrive before its first 20 is reported cut short.
	MaxFrame = layers.MPAHeaderLen + layers.MPAMaxPDLength
	// ScanWindow: a key is looked for at stream offsets below it.
	ScanWindow = 64 << 10
	// minKeyPrefix is how many octets of a key a direction that ends
	// inside it must have shown to be reported: 10 ("MPA ID Req" or "MPA ID
	// Rep") tell a Request from a Reply, and are specific enough not to be
	// another protocol's first octets.
	minKeyPrefix = 10
	// maxCarried bounds the segments remembered per direction for the
	// frames list, whatever a flood of retransmissions does; maxDupCarried
	// the ones among them that added nothing.
	maxCarried    = 1024
	maxDupCarried = 8
	// carryCost is what an entry of the frames list costs in the total
	// buffer.
	carryCost = 48
)

// keyPrefix is what the Request and Reply keys share.
var keyPrefix = []byte(layers.MPAKeyStem)

// Framer is the reassembly.Protocol that reads MPA frames. Messages go to
// emit; they name the input set by SetFile.
type Framer struct {
	file    string
	emit    func(*record.Message)
	pool    []*reader
	dropped int
	silent  int

	// Following the data traffic (Follow).
	link         func(*Pair) Traffic
	conns        map[pairKey]*iwConn
	heads        [][]byte // head buffers for reuse
	heldHeads    int      // head buffers lent
	followers    []*followed
	headsRefused int // times one could not be had
	// Directions whose FPDUs were not followed: at MaxFollowed, and for
	// the memory budget.
	notFollowed, notFollowedBudget int
	budget                         *budget.Budget
	aside                          *aside // CheckAside; nil: CRCs are checked at once
	// The frame being decoded and the sums computed over its octets as it
	// was read ahead (Lend).
	lent []byte
	sums []capture.Sum
	// crcSeen: a direction was followed whose FPDUs carry a CRC
	// (CRCInUse). Read on the capture's read-ahead goroutine.
	crcSeen atomic.Bool
	// trace, when set, sees each FPDU as it ends (tests).
	trace func(frame int, f *follower)
}

// New returns a framer.
func New(file string, emit func(*record.Message)) *Framer { return &Framer{file: file, emit: emit} }

// SetBudget makes the framer charge the connections whose traffic it
// follows to b, the run's memory budget.
func (f *Framer) SetBudget(b *budget.Budget) { f.budget = b }

// SetFile names the input of the messages that follow.
func (f *Framer) SetFile(name string) { f.file = name }

// Dropped counts directions given up at a state limit that showed (part
// of) an MPA key: each is reported once, by a message with a
// state-limit-reached finding or, for those too short to show (Silent), by
// the run.
func (f *Framer) Dropped() int { return f.dropped }

// Silent counts the directions of Dropped that no message shows: given up
// with too little of an MPA key for a message.
func (f *Framer) Silent() int { return f.silent }

// Starts reports whether p begins an MPA key; strong when it holds at
// least minKeyPrefix octets of one.
func (f *Framer) Starts(p []byte) (ok, strong bool) {
	if len(p) == 0 || !layers.MPAKeyPrefix(p) {
		return false, false
	}
	return true, len(p) >= minKeyPrefix
}

// EarlyWindow is the span of an MPA frame within the RFC's limit.
func (f *Framer) EarlyWindow() int { return MaxFrame }

// Open returns the reader of a direction.
func (f *Framer) Open(d *reassembly.Dir) reassembly.Reader {
	var r *reader
	if n := len(f.pool); n > 0 {
		r, f.pool = f.pool[n-1], f.pool[:n-1]
	} else {
		r = &reader{}
	}
	*r = reader{f: f, d: d, keyAt: -1, buf: r.buf[:0], carried: r.carried[:0], lost: d.Lost}
	return r
}

// maxPooledReaders bounds the readers kept for reuse: enough for the
// directions that open and close all the time, without holding megabytes
// once a flood of them is over.
const maxPooledReaders = 1024

func (f *Framer) recycle(r *reader) {
	if cap(r.buf) > 4096 {
		r.buf = nil
	}
	r.d = nil
	if len(f.pool) < maxPooledReaders {
		f.pool = append(f.pool, r)
	}
}

// carry is a segment that carried octets [lo, hi) of the stream.
type carry struct {
	lo, hi int
	frame  int
	time   time.Time
	cut    bool
}

// reader follows one direction: it looks for the key, then collects the
// frame.
type reader struct {
	f *Framer
	d *reassembly.Dir
	// keyAt is the stream offset where the frame starts, -1 while looking.
	keyAt int
	// scanned: stream offsets below it have been looked at; tail holds the
	// last octets looked at, in case a key straddles deliveries.
	scanned int
	tail    [15]byte
	ntail   int
	buf     []byte // the frame's octets from keyAt, as far as they arrived in order
	carried []carry
	// carriedMessy: carried is not in order and disjoint (frameAt then
	// scans it from the start).
	carriedMessy bool
	dups         int
	// differ is 1 + the lowest stream offset a later copy carried
	// differently; differFrame that copy's frame.
	differ, differFrame int
	lost                bool // earlier octets of the direction were given up at a limit
	done                bool

	// After the frame: the FPDUs (traffic.go). conn is nil until then.
	conn *iwConn
	side int
	fol  *followed // while conn is set
}

// Seen records a segment for the frames list. While the key is looked
// for, the list holds only what may still be part of a frame (see scan)
// and is not charged: a direction that never shows a key costs the total
// buffer nothing beyond what the assembler holds for it.
func (r *reader) Seen(lo, hi int, frame int, at time.Time, added, cut bool) {
	if r.conn != nil {
		r.seenFollowing(lo, hi, frame, at, added, cut)
		return
	}
	if len(r.carried) >= maxCarried || !added && r.dups >= maxDupCarried {
		return
	}
	if !added {
		if r.keyAt >= 0 && !r.d.Fits(carryCost) {
			return // a retransmission is listed only while there is room
		}
		r.dups++
	}
	if r.keyAt >= 0 {
		r.d.Charge(carryCost)
	}
	r.addCarried(carry{lo, hi, frame, at, cut})
}

// Need is how far octets are worth holding.
func (r *reader) Need() int {
	limit := r.d.StreamBytes()
	switch {
	case r.conn != nil:
		return r.fol.next() + limit
	case r.keyAt < 0 && r.scanned == 0:
		return min(MaxFrame, limit) // the key is expected first
	case r.keyAt < 0:
		return ScanWindow + layers.MPAHeaderLen
	case len(r.buf) < layers.MPAHeaderLen:
		return r.keyAt + min(MaxFrame, limit)
	}
	return r.keyAt + min(r.full(), limit)
}

// full is the frame's length by its header; the header must be in.
func (r *reader) full() int {
	return layers.MPAHeaderLen + int(uint16(r.buf[18])<<8|uint16(r.buf[19]))
}

// Data takes the next octets in order.
func (r *reader) Data(off int, b []byte) reassembly.Status {
	if r.conn != nil {
		return r.follow(off, b)
	}
	if r.keyAt == 0 && len(r.buf) < 16 {
		// The first octets were a key's so far: still?
		var w [16]byte
		m := copy(w[:], r.buf)
		m += copy(w[m:], b)
		if !layers.MPAKeyPrefix(w[:m]) {
			// Not MPA at its start: look further on, from offset 1.
			data := append(append([]byte(nil), r.buf[1:]...), b...)
			r.d.Charge(-len(r.buf) - len(r.carried)*carryCost)
			r.buf, r.keyAt, r.scanned, r.ntail = r.buf[:0], -1, 1, 0
			return r.Data(1, data)
		}
	}
	if r.keyAt < 0 {
		if !r.scan(off, b) {
			if r.scanned >= ScanWindow {
				r.done = true
				r.f.recycle(r)
				return reassembly.Done // no key where one may be
			}
			return reassembly.More
		}
		r.d.Charge(len(r.carried) * carryCost)
		if r.keyAt < off {
			// The key starts in the octets before b.
			r.collect(r.tail[r.ntail-(off-r.keyAt) : r.ntail])
		} else {
			b = b[r.keyAt-off:]
		}
	}
	return r.collect(b)
}

// scan looks for a key in b, delivered at off. At offset 0 any prefix of a
// key counts (the frame is expected there); further on, only a whole
// 16-octet key. It reports whether it found one (keyAt is set).
func (r *reader) scan(off int, b []byte) bool {
	if off == 0 && r.scanned == 0 && layers.MPAKeyPrefix(b) {
		r.keyAt = 0
		return true
	}
	// A key straddling the octets before b and b.
	if r.ntail > 0 {
		var w [31]byte
		n := copy(w[:], r.tail[:r.ntail])
		n += copy(w[n:], b[:min(len(b), 16)])
		for i := 0; i < r.ntail; i++ {
			if k := off - r.ntail + i; k >= 1 && isKey(w[i:n]) {
				r.keyAt = k
				return true
			}
		}
	}
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], keyPrefix)
		if j < 0 {
			break
		}
		if k := off + i + j; k >= 1 && k < ScanWindow && isKey(b[i+j:]) {
			r.keyAt = k
			return true
		}
		i += j + 1
	}
	r.scanned = off + len(b)
	// Keep the last octets: a key may start in them.
	if len(b) >= len(r.tail) {
		r.ntail = copy(r.tail[:], b[len(b)-len(r.tail):])
	} else {
		keep := min(r.ntail, len(r.tail)-len(b))
		copy(r.tail[:], r.tail[r.ntail-keep:r.ntail])
		r.ntail = keep + copy(r.tail[keep:], b)
	}
	// Frames wholly before what is still looked at cannot hold the frame.
	r.dropCarriedBelow(r.scanned - len(r.tail))
	return false
}

// isKey reports whether b starts with a whole Request or Reply key.
func isKey(b []byte) bool {
	return len(b) >= 16 && (string(b[:16]) == string(layers.MPARequestKey[:]) || string(b[:16]) == string(layers.MPAReplyKey[:]))
}

func (r *reader) dropCarriedBelow(off int) {
	kept := r.carried[:0]
	for _, c := range r.carried {
		if c.hi > off {
			kept = append(kept, c)
		}
	}
	r.carried = kept
	if len(kept) == 0 {
		r.carriedMessy = false
	}
}

// addCarried lists a segment, noting when the list stops being in order
// of sequence and disjoint (a retransmission or a reordered segment), so
// that frameAt knows whether the last holder of an octet is its only one.
func (r *reader) addCarried(c carry) {
	if n := len(r.carried); n > 0 && c.lo < r.carried[n-1].hi {
		r.carriedMessy = true
	}
	r.carried = append(r.carried, c)
}

// collect appends octets of the frame and reports it when complete.
func (r *reader) collect(b []byte) reassembly.Status {
	want := r.Need() - r.keyAt
	n := max(0, min(len(b), want-len(r.buf)))
	if n > 0 {
		r.d.Charge(n)
		r.buf = append(r.buf, b[:n]...)
	}
	if len(r.buf) < layers.MPAHeaderLen {
		return reassembly.More
	}
	if full := r.full(); len(r.buf) >= full {
		m := r.report(r.buf[:full], reassembly.End{}, true)
		if pos := r.keyAt + full; r.startFollow(m, pos) {
			if rest := b[n:]; len(rest) > 0 {
				return r.follow(pos, rest)
			}
			return reassembly.More
		}
		r.done = true
		r.f.recycle(r)
		return reassembly.Done
	} else if limit := r.d.StreamBytes(); full > limit && len(r.buf) >= limit {
		r.d.Limit(fmt.Sprintf("PD_Length %d needs %d octets, more than the per-stream limit of %d", full-layers.MPAHeaderLen, full, limit))
	}
	return reassembly.More
}

// Again compares octets carried again with the first copy.
func (r *reader) Again(off int, b []byte, frame int) {
	if r.keyAt < 0 || r.conn != nil {
		return
	}
	lo := max(off, r.keyAt)
	hi := min(off+len(b), r.keyAt+len(r.buf))
	for i := lo; i < hi; i++ {
		if r.buf[i-r.keyAt] != b[i-off] {
			r.Differ(i, frame)
			return
		}
	}
}

// Differ keeps the lowest offset carried again differently.
func (r *reader) Differ(off, frame int) {
	if r.differ == 0 || off+1 < r.differ {
		r.differ, r.differFrame = off+1, frame
	}
}

// Interest: a frame shown from ten octets of a key on (Shown), begun with
// fewer (Begun); the FPDUs of a connection Following, until their framing
// is lost (Shown).
func (r *reader) Interest() reassembly.Interest {
	switch n := len(r.buf); {
	case r.conn != nil && r.fol.done:
		// Framing lost: it only counts what it cannot read, and may age
		// and be given up before the directions still read.
		return reassembly.Shown
	case r.conn != nil:
		return reassembly.Following
	case r.keyAt < 0 || n == 0:
		return reassembly.Nothing
	case n >= minKeyPrefix:
		return reassembly.Shown
	}
	return reassembly.Begun
}

// End reports the frame as far as it arrived.
func (r *reader) End(e reassembly.End) {
	if r.done {
		return
	}
	if r.conn != nil {
		r.endFollowing(e)
		r.done = true
		r.f.recycle(r)
		return
	}
	switch r.Interest() {
	case reassembly.Shown:
		if e.GivenUp() && !r.lost {
			r.f.dropped++
		}
		r.report(r.buf, e, false)
	case reassembly.Begun:
		// Too little of a key for a message: counted when it was lost.
		if e.GivenUp() || r.lost {
			r.f.dropped++
			r.f.silent++
		}
	}
	r.done = true
	r.f.recycle(r)
}
