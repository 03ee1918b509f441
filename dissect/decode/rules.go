package decode

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The rule set: each rule looks at a decoded message and, when it applies,
// says why in one line. Rules run in table order, so findings come out in a
// stable order. Each code's severity and reference live in the Catalogue.

// msgCtx is what the rules see of one message.
type msgCtx struct {
	m    *record.Message
	blob bool // a private-data blob checked on its own (rdmacm-pd decode)

	// InfiniBand family
	bth  *layers.BTH
	deth *layers.DETH
	mad  *layers.MAD
	cm   layers.CMMessage
	cut  string // what the capture's snap length cut off inside the message, or ""

	lengths []string // header length fields that disagree with a complete frame
	noICRC  string   // the complete frame carries no ICRC: why it is not checked

	ipcmExpected bool               // the Service ID announces an IP CM header
	ipcm         *layers.IPCMHeader // the header, when the private data holds 36 octets

	// the private data, as captured, and its size on the wire
	pd            []byte
	pdSize        int
	absentApplies bool // REQ, REP, REJ, MPA frames
	search        layers.RPCRDMASearch

	// iWARP
	mpa           *layers.MPAFrame
	mpaNoLength   bool   // the frame ended before PD_Length: the rules on it do not apply
	mpaEnded      string // the stream ended before the frame was complete: why and how far
	limit         string // a state limit was hit: which
	retransDiffer string // a retransmission or overlapping segment disagreed with the first copy
}

// pdCut reports whether the frame holds less private data than the
// message's fixed size (cut by the capture, or by the headers' own length
// fields): absence of the RFC 8797 message cannot then be told.
func (c *msgCtx) pdCut() bool { return len(c.pd) < c.pdSize }

type rule struct {
	code  finding.Code
	check func(c *msgCtx) (string, bool)
}

func runRules(rules []rule, c *msgCtx) []finding.Finding {
	var out []finding.Finding
	for _, r := range rules {
		if msg, ok := r.check(c); ok {
			out = append(out, finding.New(r.code, "%s", msg))
		}
	}
	return out
}

var messageRules = slices.Concat(ibRules, mpaRules, rpcRules)

var ibRules = []rule{
	{finding.CaptureTruncated, func(c *msgCtx) (string, bool) {
		return c.cut, c.cut != ""
	}},
	{finding.LengthMismatch, func(c *msgCtx) (string, bool) {
		return strings.Join(c.lengths, "; "), len(c.lengths) > 0
	}},
	{finding.ICRCAbsent, func(c *msgCtx) (string, bool) {
		return c.noICRC, c.noICRC != ""
	}},
	{finding.ICRCMismatch, func(c *msgCtx) (string, bool) {
		k := crcOf(c.m.IB, true)
		if k == nil || k.Valid {
			return "", false
		}
		return fmt.Sprintf("ICRC is 0x%08x, the packet gives 0x%08x", k.Value, k.Computed), true
	}},
	{finding.VCRCMismatch, func(c *msgCtx) (string, bool) {
		k := crcOf(c.m.IB, false)
		if k == nil || k.Valid {
			return "", false
		}
		return fmt.Sprintf("VCRC is 0x%04x, the packet gives 0x%04x", k.Value, k.Computed), true
	}},
	{finding.MADUnexpectedHeader, func(c *msgCtx) (string, bool) {
		if c.mad == nil || (c.mad.BaseVersion == 1 && c.mad.ClassVersion == 2) {
			return "", false
		}
		return fmt.Sprintf("CM MAD with Base Version %d and Class Version %d (expected 1 and 2)",
			c.mad.BaseVersion, c.mad.ClassVersion), true
	}},
	{finding.CMNotGSI, func(c *msgCtx) (string, bool) {
		var why []string
		if c.bth != nil && c.bth.DestQP != 1 {
			why = append(why, fmt.Sprintf("sent to QP 0x%06x, not QP1", c.bth.DestQP))
		}
		if c.deth != nil && c.deth.QKey != layers.GSIQKey {
			why = append(why, fmt.Sprintf("Q_Key 0x%08x, not 0x80010000", c.deth.QKey))
		}
		return "CM MAD " + strings.Join(why, " and "), len(why) > 0
	}},
	{finding.CMIPHeaderInvalid, func(c *msgCtx) (string, bool) {
		if !c.ipcmExpected {
			return "", false
		}
		if c.ipcm == nil {
			if c.pdCut() {
				return "", false // the capture, not the sender, cut it: capture-truncated says so
			}
			return fmt.Sprintf("IP CM Service ID but only %d octets of private data", len(c.pd)), true
		}
		p := c.ipcm.Problem()
		return "IP CM header: " + p, p != ""
	}},
}

// rpcRules check the RFC 8797 message, whatever carried it.
var rpcRules = []rule{
	{finding.RPCRDMAAbsent, func(c *msgCtx) (string, bool) {
		// When the capture cut the private data short, absence cannot be told.
		if !c.absentApplies || c.search.Found || c.pdCut() {
			return "", false
		}
		where := "no usable RPC-over-RDMA private data in " + c.m.Name()
		if c.blob { // a blob checked on its own (rdmacm-pd decode)
			where = "no usable RPC-over-RDMA message in the private data"
		}
		return where + ": this peer counts as Send Size 1024, Receive Size 1024, R=0", true
	}},
	{finding.RPCRDMAVersionUnknown, func(c *msgCtx) (string, bool) {
		var at []string
		for _, mt := range c.unusableMatches() {
			if mt.Complete && mt.Version != layers.RPCRDMAVersion {
				at = append(at, fmt.Sprintf("Version %d at offset %d", mt.Version, mt.Offset))
			}
		}
		return "Format Identifier with " + strings.Join(at, ", ") + ": ignored", len(at) > 0
	}},
	{finding.RPCRDMATruncated, func(c *msgCtx) (string, bool) {
		var at []string
		for _, mt := range c.unusableMatches() {
			if !mt.Complete && !c.pdCut() {
				at = append(at, fmt.Sprintf("offset %d (%d octets left)", mt.Offset, len(c.pd)-mt.Offset))
			}
		}
		return "Format Identifier too close to the end of the private data at " + strings.Join(at, ", "), len(at) > 0
	}},
	{finding.RPCRDMAReservedNonzero, func(c *msgCtx) (string, bool) {
		if !c.search.Found || c.search.Message.Reserved == 0 {
			return "", false
		}
		return fmt.Sprintf("Reserved bits are 0x%02x (octet 5 is 0x%02x)", c.search.Message.Reserved,
			c.search.Message.Reserved<<1|bit(c.search.Message.RemoteInvalidate)), true
	}},
	{finding.RPCRDMAMultiple, func(c *msgCtx) (string, bool) {
		if c.search.Occurrences < 2 {
			return "", false
		}
		var offs []string
		for _, mt := range c.search.Recorded() {
			offs = append(offs, fmt.Sprint(mt.Offset))
		}
		more := ""
		if c.search.Occurrences > c.search.NMatches {
			more = ", ..."
		}
		return fmt.Sprintf("Format Identifier found %d times (offsets %s%s)", c.search.Occurrences,
			strings.Join(offs, ", "), more), true
	}},
	{finding.RPCRDMAUnexpectedOffset, func(c *msgCtx) (string, bool) {
		if !c.search.Found || c.search.Offset == c.m.ExpectedOffset {
			return "", false
		}
		return fmt.Sprintf("RPC-over-RDMA message at offset %d, where %s puts it at %d: possibly a chance match",
			c.search.Offset, c.carrier(), c.m.ExpectedOffset), true
	}},
}

// unusableMatches are the occurrences a receiver would have looked at and
// passed over: all of them when none is usable, else those before it.
func (c *msgCtx) unusableMatches() []layers.RPCRDMAMatch {
	var out []layers.RPCRDMAMatch
	for _, mt := range c.search.Recorded() {
		if c.search.Found && mt.Offset >= c.search.Offset {
			break
		}
		out = append(out, mt)
	}
	return out
}

// carrier describes where the RFC 8797 message is expected.
func (c *msgCtx) carrier() string {
	if c.ipcmExpected {
		return "an IP CM header"
	}
	if c.mpa != nil {
		return fmt.Sprintf("MPA revision %d", c.mpa.Rev)
	}
	if c.cm == nil {
		return "its carrier"
	}
	return "the " + c.m.Name()
}

// crc returns the ICRC (icrc true) or VCRC check, or nil.
func crcOf(h *record.IBHeaders, icrc bool) *record.CRCCheck {
	if h == nil {
		return nil
	}
	if icrc {
		return h.ICRC
	}
	return h.VCRC
}

func bit(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// CheckPrivateData searches a private-data blob on its own (pasted from a
// log, say) and checks it as if it were a REQ's: expected is the offset where
// its carrier would put the RFC 8797 message.
func CheckPrivateData(pd []byte, expected int) (*record.RPCRDMA, []finding.Finding) {
	m := &record.Message{ExpectedOffset: expected, PrivateData: pd, PrivateDataSize: len(pd)}
	c := &msgCtx{m: m, blob: true, pd: pd, pdSize: len(pd), absentApplies: true, search: layers.SearchRPCRDMA(pd)}
	if c.search.Found {
		m.RPCRDMA = record.NewRPCRDMA(&c.search.Message, c.search.Offset)
	}
	return m.RPCRDMA, runRules(messageRules, c)
}
