package conn

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The history of the services: what the latest connection of each
// initiator, responder and service negotiated, so that the next one is
// compared with it (properties-changed-on-reconnect). It is bounded by the
// tracker's limit: the oldest services are forgotten first, and a
// reconnection to a forgotten one is counted as a comparison lost
// (Tracker.Forgotten), exactly for the limit's worth of the latest
// forgotten services and, beyond, through a Bloom filter.

// serviceKey names a service as a client sees it: a reconnection from
// another TCP port is the same initiator.
type serviceKey struct {
	transport record.Transport
	ini, res  record.Endpoint
	svc       uint64
}

func (c *attempt) serviceKey() serviceKey {
	svc := c.ServiceID
	if c.HasPort {
		svc = uint64(c.Port)
	}
	return serviceKey{c.Transport, c.Initiator.Host(), c.Responder.Host(), svc}
}

// negotiated is what an established connection agreed, kept to compare the
// next connection of the same initiator, responder and service with it.
// Its attempt (id, its Number) tells it when it becomes final and whether
// it was rejected after all (attempt.settle); entries are reused once no
// chain holds them, so an attempt checks the id before it writes.
type negotiated struct {
	inline          record.InlineThresholds
	inv             bool
	final, rejected bool
	frame           int
	seq             int // when it was recorded, to evict the oldest
	id              int
	// prev is the entry it replaced while that one could still be
	// rejected (no RTU yet), so that a late REJ falls back to it.
	prev *negotiated
}

// entry is an entry to fill: a free one, or a new one.
func (t *Tracker) entry() *negotiated {
	if n := len(t.freeEntries); n > 0 {
		e := t.freeEntries[n-1]
		t.freeEntries = t.freeEntries[:n-1]
		return e
	}
	return new(negotiated)
}

// freeChain frees e and the entries behind it.
func (t *Tracker) freeChain(e *negotiated) {
	for e != nil {
		next := e.prev
		*e = negotiated{}
		t.freeEntries = append(t.freeEntries, e)
		e = next
	}
}

// maxHistoryChain bounds the entries kept behind one service's latest.
const maxHistoryChain = 4

type histEntry struct {
	k   serviceKey
	seq int
}

type histHash struct {
	h   uint64
	seq int
}

// remember records what an established attempt negotiated, to compare the
// next connection of the same initiator, responder and service with it.
func (t *Tracker) remember(c *attempt) {
	k := c.serviceKey()
	prev := t.history[k]
	if prev == nil {
		h := t.hash(k)
		if t.forgotten[h] != 0 {
			// A reconnection to a service whose history was forgotten: it
			// was not compared.
			delete(t.forgotten, h)
			t.forgot++
		} else if t.recalled(h) {
			t.forgot++
		}
	}
	for prev == nil && len(t.history) >= t.max && len(t.hOrder) > 0 {
		old := t.hOrder[0]
		t.hOrder = t.hOrder[1:]
		if cur := t.history[old.k]; cur != nil && cur.seq == old.seq {
			delete(t.history, old.k)
			t.forget(old.k)
			t.freeChain(cur)
		}
	}
	t.seq++
	e := t.entry()
	*e = negotiated{inline: *c.Inline, inv: c.RemoteInvalidation, frame: c.RequestFrame, seq: t.seq, id: c.Number,
		final: c.final, rejected: c.rejected}
	c.hist = e
	// Keep the entry it replaces while that one may still be rejected.
	switch {
	case prev != nil && !prev.final:
		e.prev = prev
		n := 1
		for p := prev; p != nil; p = p.prev {
			if n++; n > maxHistoryChain {
				t.freeChain(p.prev)
				p.prev = nil
				break
			}
		}
	case prev != nil:
		t.freeChain(prev)
	}
	t.history[k] = e
	t.hOrder = append(t.hOrder, histEntry{k, t.seq})
	if len(t.hOrder) > 2*len(t.history)+64 {
		kept := t.hOrder[:0]
		for _, h := range t.hOrder {
			if cur := t.history[h.k]; cur != nil && cur.seq == h.seq {
				kept = append(kept, h)
			}
		}
		t.hOrder = kept
	}
}

// previous is the latest earlier connection to the service of c that was
// not rejected after all.
func (t *Tracker) previous(c *attempt) *negotiated {
	for e := t.history[c.serviceKey()]; e != nil; e = e.prev {
		if !e.rejected && e.id != c.Number {
			return e
		}
	}
	return nil
}

// forget notes that the history of service k was evicted, so that a
// reconnection to it counts as a lost comparison. At most max services are
// noted exactly; the oldest beyond that go to the Bloom filter.
func (t *Tracker) forget(k serviceKey) {
	t.seq++
	h := t.hash(k)
	t.forgotten[h] = t.seq
	t.fOrder = append(t.fOrder, histHash{h, t.seq})
	for len(t.forgotten) > t.max && len(t.fOrder) > 0 {
		old := t.fOrder[0]
		t.fOrder = t.fOrder[1:]
		if t.forgotten[old.h] == old.seq {
			delete(t.forgotten, old.h)
			t.recallAdd(old.h)
		}
	}
	if len(t.fOrder) > 2*len(t.forgotten)+64 {
		kept := t.fOrder[:0]
		for _, f := range t.fOrder {
			if t.forgotten[f.h] == f.seq {
				kept = append(kept, f)
			}
		}
		t.fOrder = kept
	}
}

// recallBits is the size of the Bloom filter of forgotten services: 1 MiB,
// about 2 % false positives with a million services in it, far fewer below.
const recallBits = 1 << 23

// recallProbes are the filter's bit positions for h (double hashing).
func recallProbes(h uint64) [4]uint64 {
	h2 := (h*0x9e3779b97f4a7c15)>>29 | 1
	var p [4]uint64
	for i := range p {
		p[i] = (h + uint64(i)*h2) % recallBits
	}
	return p
}

// recallAdd puts h into the Bloom filter.
func (t *Tracker) recallAdd(h uint64) {
	if t.recall == nil {
		t.recall = make([]uint64, recallBits/64)
	}
	for _, b := range recallProbes(h) {
		t.recall[b/64] |= 1 << (b % 64)
	}
}

// recalled reports whether h may be in the Bloom filter.
func (t *Tracker) recalled(h uint64) bool {
	if t.recall == nil {
		return false
	}
	for _, b := range recallProbes(h) {
		if t.recall[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// hash is a 64-bit digest of a service key: the forgotten services are kept
// as these, 8 octets each, rather than as their endpoints.
func (t *Tracker) hash(k serviceKey) uint64 {
	var b [48]byte // the two addresses, their kinds, the service
	n := copy(b[:], k.ini.Addr[:])
	n += copy(b[n:], k.res.Addr[:])
	b[n], b[n+1] = byte(k.ini.Kind), byte(k.res.Kind)
	binary.LittleEndian.PutUint64(b[len(b)-8:], k.svc)
	var h maphash.Hash
	h.SetSeed(t.seed)
	h.Write(b[:])
	h.WriteString(string(k.transport))
	return h.Sum64()
}
