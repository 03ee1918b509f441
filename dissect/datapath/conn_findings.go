package datapath

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The connection findings, kept for the connection record rather than
// raised on an "rpc" record: the RDMA Read Requests each side has
// outstanding against its Read limit (and those not matched one by one),
// the requests over the largest DMA Length, the Calls a limit kept from
// being followed, and the notes of the transport and of iSER.

// readsOver is what was seen of Reads over a side's limit.
type readsOver struct {
	frame, outstanding int // the first Request over the limit, and how many were outstanding then
	count, most        int // Requests over the limit, the most outstanding
}

// ReadRequest counts an RDMA Read Request (or atomic) that a side issued,
// in the given frame.
func (c *Checker) ReadRequest(side, frame int) {
	c.touched = true
	c.reads[side]++
	n := c.reads[side]
	c.fig.MaxOutstandingRDMAReads[side] = max(c.fig.MaxOutstandingRDMAReads[side], n)
	if c.neg.Known && c.neg.HasReadLimit[side] && n > c.neg.ReadLimit[side] && !c.gone[1-side] {
		o := &c.readsOver[side]
		if o.count == 0 {
			o.frame, o.outstanding = frame, n
		}
		o.count++
		o.most = max(o.most, n)
	}
}

// ReadsUntracked says that a side issued a Read Request (or atomic), in
// the given frame, when the transport tracked as many of its Reads one by
// one as it does: it is counted as outstanding all the same, but its
// response is not matched to it (a connection finding).
func (c *Checker) ReadsUntracked(side, frame int) { c.untracked[side].add(frame) }

// DMALengthInvalid says that a side sent a request with a RETH (opcode
// op) whose DMA Length is over MaxDMALength, in the given frame (a
// connection finding).
func (c *Checker) DMALengthInvalid(side, frame int, op uint8, length uint32) {
	if c.dma.add(frame); c.dma.n == 1 {
		c.dma.side, c.dma.op, c.dma.length = side, op, length
	}
}

// ReadDone retires one of a side's outstanding Reads.
func (c *Checker) ReadDone(side int) {
	if c.reads[side] > 0 {
		c.reads[side]--
	}
}

// Findings are the connection findings: the Read limit exceeded (by side),
// the Read Requests not matched one by one, the requests over the largest
// DMA Length, the Calls a limit kept from being followed, and the notes
// (with a count of those not kept).
func (c *Checker) Findings() []finding.Finding {
	var out []finding.Finding
	for side, o := range c.readsOver {
		if o.count == 0 {
			continue
		}
		out = append(out, finding.New(finding.RDMAReadLimitExceeded,
			"frame %d: %d RDMA Read Requests outstanding from the %s, more than the %d its connection setup allows it (%s); over the limit %s, at most %d outstanding",
			o.frame, o.outstanding, sideNames[side], c.neg.ReadLimit[side], c.neg.readWhy[side], times(o.count), o.most))
	}
	for side, u := range c.untracked {
		if u.n > 0 {
			out = append(out, finding.New(finding.StateLimitReached,
				"frame %d: more than %d RDMA Read Requests (and atomics) outstanding from the %s, more than any connection setup allows: %d of them were counted as outstanding, but their responses were not matched one by one",
				u.first, readsPerSide, sideNames[side], u.n))
		}
	}
	if d := c.dma; d.n > 0 {
		out = append(out, finding.New(finding.RDMALengthInvalid,
			"frame %d: %s from the %s, DMA Length %d, over the 2^31 octets of the largest message; %d %s on this connection",
			d.first, layers.OpCodeName(d.op), sideNames[d.side], d.length, d.n, plural(d.n, "such request", "such requests")))
	}
	if c.limitNote {
		out = append(out, finding.New(finding.StateLimitReached,
			"Calls beyond %d outstanding on this connection (or %d on all) were not followed: their Replies were not checked", c.callsCap, c.out.Limits.CallBudget))
	}
	for _, f := range c.notes {
		if f.Code == finding.ISERSendWithInvalidateUnsupported && c.iser > 1 {
			f.Message += fmt.Sprintf("; %d such Sends With Invalidate in all", c.iser)
		}
		out = append(out, f)
	}
	if c.notesCut > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%d further findings on this connection's traffic were not kept (at most %d are)", c.notesCut, maxConnNotes))
	}
	return out
}

// Note adds a connection finding the transport raised (the iWARP FPDU
// follower's CRC, Terminate and framing findings), at most maxConnNotes.
func (c *Checker) Note(f finding.Finding) {
	if f.Code == finding.RDMAPTerminate {
		c.end = record.Terminated // the capture shows the connection's end
	}
	if len(c.notes) == maxConnNotes {
		c.notesCut++
		return
	}
	c.notes = append(c.notes, f)
}

// times says how often: once, twice, 3 times.
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
