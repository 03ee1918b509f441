package datapath

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/mpa"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// iWARP's RDMA operations, for the chunks (chunk.go). An RDMA Write is a
// tagged DDP message: its segments name the data sink (the STag the
// requester advertised as a handle) and the Tagged Offset of their first
// octet, and carry no total length. An RDMA Read Request (RFC 5040,
// section 4) names the octets it pulls, the Data Source STag and TO
// (the requester's chunk) and the RDMA Read Message Size, and where they
// land, the Data Sink STag and TO of the reader's own buffer. Its Read
// Response is tagged by that sink: the Request maps each of its octets
// back to the chunk.
//
// Each Write segment is judged on its own (its STag, TO and length), as
// an RC Write is by its RETH: a Write message whose segments fall outside
// every segment advertised is one chunk-violation, at its first segment
// outside. The framer hands each segment on in pieces (one per TCP
// segment it spans, or between markers); the octets of a segment inside
// count as explicit RDMA, those of one outside do not.

// The framer hands on the first mpa.TaggedKeep octets of each tagged
// message: at least what the Checker keeps of a long message.
var _ [mpa.TaggedKeep - chunkKeep]struct{}

// iwChunks is what a connection's chunks need of its iWARP traffic, by
// side (the side that sent the Write, or issued the Read).
type iwChunks struct {
	// writeBad: the Write message in progress had a segment outside
	// every segment advertised (its later segments are not judged);
	// segOut: the Write segment in progress is outside (the octets of its
	// later pieces do not count).
	writeBad, segOut [2]bool
	reads            [2][]iwRead
}

// iwRead is an outstanding RDMA Read Request: its data sink and source.
type iwRead struct {
	sinkSTag, srcSTag uint32
	sinkTO, srcTO     uint64
	size              uint32
}

// chunks is the connection's chunk state, made on first use; nil when its
// traffic is not RPC-over-RDMA.
func (t *iwFlow) chunks() *iwChunks {
	c := t.chk
	if !c.rule.IsRPCRDMA() && !c.judgeChunks() {
		return nil
	}
	if t.ch == nil {
		t.ch = &iwChunks{}
	}
	return t.ch
}

// readChunk takes a Read Request side issued: it is judged against the
// chunks, and kept until its Response ends (at most readsPerSide a side,
// the oldest forgotten first).
func (t *iwFlow) readChunk(side, frame int, rr *layers.RDMAPReadRequest) {
	ch := t.chunks()
	if ch == nil || rr == nil {
		return
	}
	t.chk.RDMARead(side, frame, rr.SourceSTag, rr.SourceTO, rr.Size)
	rs := ch.reads[side]
	if len(rs) == readsPerSide {
		rs = rs[:copy(rs, rs[1:])]
	}
	ch.reads[side] = append(rs, iwRead{sinkSTag: rr.SinkSTag, srcSTag: rr.SourceSTag, sinkTO: rr.SinkTO, srcTO: rr.SourceTO, size: rr.Size})
}

// Tagged takes a piece of a tagged segment: of an RDMA Write, or of the
// Read Response to a Read Request of the other side.
func (t *iwFlow) Tagged(g *mpa.Tagged) {
	t.resolve()
	ch := t.chunks()
	if ch == nil {
		return
	}
	c := t.chk
	side, n := g.Side, uint32(g.N)
	switch g.Opcode {
	case layers.RDMAPOpWrite:
		if !g.Start {
			if !ch.segOut[side] {
				c.RDMAWrite(side, g.Frame, g.STag, g.TO, g.Data, n, false, 0)
			}
			return
		}
		if g.First {
			ch.writeBad[side] = false
		}
		// The segment, whole, inside a segment advertised (or not: none of
		// its octets count).
		_, ok := c.findSeg(side, g.STag, g.TO, uint32(g.SegmentLen), segWrite, segReply)
		if ok || !ch.writeBad[side] {
			c.RDMAWrite(side, g.Frame, g.STag, g.TO, g.Data, n, true, uint32(g.SegmentLen))
		}
		ch.segOut[side] = !ok
		ch.writeBad[side] = ch.writeBad[side] || !ok
	case layers.RDMAPOpReadResponse:
		reader := 1 - side
		rs := ch.reads[reader]
		for i := range rs {
			r := &rs[i]
			if r.sinkSTag != g.STag || g.TO < r.sinkTO || g.TO-r.sinkTO > uint64(r.size) {
				continue
			}
			at := g.TO - r.sinkTO
			c.RDMAReadData(reader, g.Frame, r.srcSTag, r.srcTO+at, g.Data, n)
			if g.Last && g.End { // the Response is done
				ch.reads[reader] = append(rs[:i], rs[i+1:]...)
			}
			return
		}
	}
}
