package datapath

import (
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// Tombstones. A parked connection (none of its traffic seen yet) that has
// to be given up, at maxParked or for the budget, loses nothing if its
// traffic never comes: many idle connections cost no finding. It leaves a
// tombstone, a few dozen octets, so that if its traffic does come later the
// loss is counted and said on the connection (its record, or an update when
// the record went already), and its frames are counted as of no connection.
// Beyond maxTombs the oldest tombstone goes, counted in TombsForgotten and
// said in the run's notes.

// tomb is a parked connection given up: its Number, its request frame,
// whether its record went already, its network and its keys (by hash, with
// their filter slots).
type tomb struct {
	id, request int32
	handed      bool
	net         Net
	hash        [2]uint64
	slot        [2]uint32
}

// Tombstone costs and limit: two index entries, one by Number, the tomb
// and its place in the queue (TestParkCost).
const (
	tombCost = 160
	maxTombs = 1 << 16
)

// keyHash is a flowKey's hash (FNV-1a: fixed, so that runs agree).
func keyHash(k *flowKey) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for range 8 {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	le := binary.LittleEndian
	mix(uint64(k.net) | uint64(k.qp)<<8)
	mix(le.Uint64(k.src[:8]))
	mix(le.Uint64(k.src[8:]))
	mix(le.Uint64(k.dst[:8]))
	mix(le.Uint64(k.dst[8:]))
	return h
}

// bury leaves the tombstone of a parked connection being given up (before
// its release, which unindexes it): its keys stay in the filter.
func (fl *Follower) bury(f *flow) {
	if fl.tombs == nil {
		fl.tombs, fl.tombIDs = map[uint64]*tomb{}, map[int32]*tomb{}
	}
	// Charged even over the budget's limit, up to maxTombs (10 MiB): the
	// run loop then has the largest holder make room, and forgetting a
	// tombstone may lose what it stands for.
	if len(fl.tombIDs) >= maxTombs {
		fl.forgetTomb()
	}
	fl.force(tombCost)
	t := &tomb{id: int32(f.id), request: int32(f.neg.Connection), handed: f.handed.done, net: f.net}
	for i := range f.keys {
		t.hash[i], t.slot[i] = keyHash(&f.keys[i]), f.keys[i].slot()
		fl.tombs[t.hash[i]] = t
		fl.filter[t.slot[i]]++
	}
	fl.tombIDs[t.id] = t
	if len(fl.tombQ)-fl.tombHead > 2*len(fl.tombIDs)+64 {
		// Most of the queue's tombs went since (their traffic came):
		// their places would keep them alive until their turn.
		q := fl.tombQ[:0]
		for _, o := range fl.tombQ[fl.tombHead:] {
			if o.id >= 0 {
				q = append(q, o)
			}
		}
		clear(fl.tombQ[len(q):])
		fl.tombQ, fl.tombHead = q, 0
	}
	fl.tombQ = append(fl.tombQ, t)
}

// unbury removes a tombstone.
func (fl *Follower) unbury(t *tomb) {
	for i := range t.hash {
		if fl.tombs[t.hash[i]] == t {
			delete(fl.tombs, t.hash[i])
		}
		fl.filter[t.slot[i]]--
	}
	delete(fl.tombIDs, t.id)
	t.id = -1 // gone: its place in the queue is skipped
	fl.give(tombCost)
}

// forgetTomb removes the oldest tombstone; false when there is none.
func (fl *Follower) forgetTomb() bool {
	for fl.tombHead < len(fl.tombQ) {
		t := fl.tombQ[fl.tombHead]
		fl.tombQ[fl.tombHead] = nil
		fl.tombHead++
		if fl.tombHead > 64 && fl.tombHead > len(fl.tombQ)/2 {
			n := copy(fl.tombQ, fl.tombQ[fl.tombHead:])
			clear(fl.tombQ[n:])
			fl.tombQ, fl.tombHead = fl.tombQ[:n], 0
		}
		if t.id < 0 {
			continue
		}
		fl.unbury(t)
		fl.TombsForgotten++
		return true
	}
	return false
}

// wake says, at the first frame of a connection given up before its
// traffic began, that its traffic is not followed.
func (fl *Follower) wake(k *flowKey, p *Packet) bool {
	if len(fl.tombs) == 0 {
		return false
	}
	h := keyHash(k)
	t := fl.tombs[h]
	if t == nil {
		return false
	}
	id, request, handed, net := int(t.id), int(t.request), t.handed, t.net
	fl.unbury(t)
	fl.ConnectionsRetired++
	why := finding.New(finding.StateLimitReached,
		"more than %d connections were followed at once, and %d more set aside until their traffic began: this one was given up before its traffic, which began at frame %d; its frames are counted as of no connection",
		fl.out.Limits.Connections, maxParked, p.Frame)
	peers := Peers{p.Src.endpoint(p.Net), p.Dst.endpoint(p.Net)}
	if h == t.hash[1] {
		peers[0], peers[1] = peers[1], peers[0]
	}
	if !handed {
		r := fl.results[id]
		fl.give(r.cost)
		r.findings = append(r.findings, why)
		r.cost = resultCost(&r)
		fl.force(r.cost)
		fl.results[id] = r
		return true
	}
	fl.out.updates = append(fl.out.updates, &record.ConnectionUpdate{Number: id, RequestFrame: request, File: fl.out.File,
		Transport: net.transport(), Initiator: peers[0], Responder: peers[1], Findings: []finding.Finding{why}})
	return true
}

// handedTomb notes that the record of a connection given up before its
// traffic went.
func (fl *Follower) handedTomb(id int) {
	if t := fl.tombIDs[int32(id)]; t != nil {
		t.handed = true
	}
}
