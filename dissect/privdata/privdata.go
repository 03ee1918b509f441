// Package privdata is the RFC 8797 step of the pipeline: it looks for the
// RPC-over-RDMA Version 1 CM Private Data message at every offset of a
// connection message's private data, decodes the one a receiver would use,
// and raises the findings on it; without one, it reads the private data as
// the upper layer protocol it belongs to (NVMe over Fabrics, iSER, SRP,
// ...; ulp.go). CM messages and MPA frames go through Examine, the decode
// command through Blob.
package privdata

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Carrier describes what carried the private data.
type Carrier struct {
	// Name is the message's name (REQ, MPA_REP, ...), "" for a blob checked
	// on its own.
	Name string
	// Where says where the carrier puts the RFC 8797 message, for people:
	// "an IP CM header", "MPA revision 2", "the REP".
	Where string
	// Expected is the offset where the carrier puts the message.
	Expected int
	// Size is the private data's size on the wire; when less of it was
	// captured, absence cannot be told.
	Size int
	// AbsentMatters: the carrier is one that RFC 8797 peers put the message
	// in (REQ, REP, REJ, MPA frames), so its absence is worth saying.
	AbsentMatters bool
	// Into, when set, is where the usable message is written (the caller
	// reuses it from message to message); else a new one is made.
	Into *record.RPCRDMA
}

// Check searches pd and returns the usable message (nil when none) and the
// findings on it, in a stable order: rpcrdma-absent first.
func Check(pd []byte, c Carrier) (*record.RPCRDMA, []finding.Finding) {
	rp, absent, fs := check(pd, c)
	if absent != "" {
		fs = append([]finding.Finding{AbsentFinding(absent)}, fs...)
	}
	return rp, fs
}

// AbsentFinding is rpcrdma-absent for a message whose Result.Absent is
// where.
func AbsentFinding(where string) finding.Finding {
	return finding.New(finding.RPCRDMAAbsent, "%s: this peer counts as Send Size 1024, Receive Size 1024, R=0", where)
}

// check is the RFC 8797 step without rpcrdma-absent, which it returns as
// what the finding would say ("" when the message is there, or when absence
// cannot be told).
func check(pd []byte, c Carrier) (*record.RPCRDMA, string, []finding.Finding) {
	s := layers.SearchRPCRDMA(pd)
	var rp *record.RPCRDMA
	if s.Found {
		rp = c.Into
		if rp == nil {
			rp = new(record.RPCRDMA)
		}
		*rp = record.RPCRDMAOf(&s.Message, s.Offset)
	}
	cut := len(pd) < c.Size
	var out []finding.Finding
	absent := ""
	// When the capture cut the private data short, absence cannot be told.
	if c.AbsentMatters && !s.Found && !cut {
		absent = "no usable RPC-over-RDMA private data in " + c.Name
		if c.Name == "" {
			absent = "no usable RPC-over-RDMA message in the private data"
		}
	}
	// The occurrences a receiver looked at and passed over: all of them
	// when none is usable, else those before it.
	var version, short []string
	for _, mt := range s.Recorded() {
		if s.Found && mt.Offset >= s.Offset {
			break
		}
		switch {
		case mt.Complete && mt.Version != layers.RPCRDMAVersion:
			version = append(version, fmt.Sprintf("Version %d at offset %d", mt.Version, mt.Offset))
		case !mt.Complete && !cut:
			short = append(short, fmt.Sprintf("offset %d (%d octets left)", mt.Offset, len(pd)-mt.Offset))
		}
	}
	if len(version) > 0 {
		out = append(out, finding.New(finding.RPCRDMAVersionUnknown, "Format Identifier with %s: ignored", strings.Join(version, ", ")))
	}
	if len(short) > 0 {
		out = append(out, finding.New(finding.RPCRDMATruncated, "Format Identifier too close to the end of the private data at %s",
			strings.Join(short, ", ")))
	}
	if s.Found && s.Message.Reserved != 0 {
		octet := s.Message.Reserved << 1
		if s.Message.RemoteInvalidate {
			octet |= 1
		}
		out = append(out, finding.New(finding.RPCRDMAReservedNonzero, "Reserved bits are 0x%02x (octet 5 is 0x%02x)", s.Message.Reserved, octet))
	}
	if s.Occurrences > 1 {
		var offs []string
		for _, mt := range s.Recorded() {
			offs = append(offs, fmt.Sprint(mt.Offset))
		}
		more := ""
		if s.Occurrences > s.NMatches {
			more = ", ..."
		}
		out = append(out, finding.New(finding.RPCRDMAMultiple, "Format Identifier found %d times (offsets %s%s)", s.Occurrences,
			strings.Join(offs, ", "), more))
	}
	if s.Found && s.Offset != c.Expected {
		where := c.Where
		if where == "" {
			where = "its carrier"
		}
		out = append(out, finding.New(finding.RPCRDMAUnexpectedOffset,
			"RPC-over-RDMA message at offset %d, where %s puts it at %d: possibly a chance match", s.Offset, where, c.Expected))
	}
	return rp, absent, out
}

// Result is what the private data step found in one message.
type Result struct {
	// RPCRDMA is the usable RFC 8797 message, or nil.
	RPCRDMA *record.RPCRDMA
	// Absent is rpcrdma-absent when the message counts as carrying no RFC
	// 8797 data, held for the connection rules: they raise it only where
	// RPC-over-RDMA's rules apply. Its place is before Findings.
	Absent *finding.Finding
	// ULP is the private data read as another upper layer's, or nil.
	ULP *record.ULP
	// Findings are the RFC 8797 step's, then the upper layer's.
	Findings []finding.Finding
}

// Examine is the step for one message: the RFC 8797 search, and without a
// usable RFC 8797 message the upper layer the private data belongs to.
func Examine(pd []byte, c Carrier, u Context) Result {
	var r Result
	var absent string
	r.RPCRDMA, absent, r.Findings = check(pd, c)
	if absent != "" {
		f := AbsentFinding(absent)
		r.Absent = &f
	}
	if r.RPCRDMA == nil {
		u.Cut = u.Cut || len(pd) < c.Size
		var fs []finding.Finding
		r.ULP, fs = Identify(pd, u)
		r.Findings = append(r.Findings, fs...)
	}
	return r
}

// Hold adds a message's held rpcrdma-absent, if any, at its place: before
// the step's findings, which start at index at of the message's.
func (r *Result) Hold(m *record.Message, at int) {
	if r.Absent != nil {
		m.Held = append(m.Held, record.HeldFinding{At: at, Finding: *r.Absent})
	}
}

// Blob checks private data pasted on its own (from a log, say) as if a REQ
// had carried it: expected is the offset where its carrier would put the
// message.
func Blob(pd []byte, expected int) (*record.RPCRDMA, []finding.Finding) {
	return Check(pd, Carrier{Expected: expected, Size: len(pd), AbsentMatters: true})
}
