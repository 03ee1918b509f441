package decode

import (
	"fmt"
	"slices"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// mpaMessage builds the message of an MPA frame reassembled from a stream.
// frame holds the frame's octets as far as they arrived; ended says why the
// rest never came ("" when the frame is complete).
func (d *Decoder) mpaMessage(st *stream, frame []byte, last int, now time.Time, ended string) *record.Message {
	var mpa layers.MPAFrame
	_ = mpa.DecodeFromBytes(frame, gopacket.NilDecodeFeedback) // the key was checked; a short header leaves zeros
	frames := st.framesWithin(max(len(frame), 1))
	if ended != "" && len(frames) > 0 {
		// The last frame that carried part of it, and that frame's time.
		last = frames[len(frames)-1]
		if t, ok := st.timeOf(last); ok {
			now = t
		}
	}
	m := &record.Message{
		File:      d.file,
		Frame:     last,
		Frames:    frames,
		Time:      now.UTC(),
		Transport: record.IWARP,
		Src:       endpoint(st.key.src, st.v6, st.key.sport),
		Dst:       endpoint(st.key.dst, st.v6, st.key.dport),
		Kind:      record.KindMPAReply,
	}
	if mpa.Request || string(frame[:min(16, len(frame))]) == string(layers.MPARequestKey[:min(16, len(frame))]) {
		m.Kind = record.KindMPARequest
	}
	c := &msgCtx{m: m, absentApplies: true}
	switch n := len(frame); {
	case n >= layers.MPAHeaderLen:
		c.mpa = &mpa
		m.MPA = mpa.Fields()
		m.PrivateData = slices.Clone(mpa.PrivateData)
		m.PrivateDataSize = int(mpa.PDLength)
		c.pd, c.pdSize = mpa.PrivateData, int(mpa.PDLength)
		if mpa.Rev == 2 {
			m.ExpectedOffset = layers.MPAIRDORDLen
		}
		c.search = layers.SearchRPCRDMA(mpa.PrivateData)
		if c.search.Found {
			m.RPCRDMA = record.NewRPCRDMA(&c.search.Message, c.search.Offset)
		}
	default:
		// The frame ends inside its header: show the fields that arrived. The
		// key (or its first octets), then the flags (octet 16), then Rev
		// (octet 17); PD_Length never did.
		c.pdSize = 1 // the header itself is missing: absence cannot be told
		if n <= 16 {
			m.MPA = []layers.Field{{Name: "Key", Key: "key", Kind: layers.Text, Bytes: slices.Clone(frame)}}
			break
		}
		var hdr [layers.MPAHeaderLen]byte
		copy(hdr[:], frame)
		_ = mpa.DecodeFromBytes(hdr[:], gopacket.NilDecodeFeedback)
		fields := mpa.Fields()
		if n == 17 {
			m.MPA = fields[:6] // through the reserved flag bits
			break
		}
		m.MPA = fields[:7] // through Rev
		c.mpa, c.mpaNoLength = &mpa, true
	}
	if ended != "" {
		want := layers.MPAHeaderLen + int(mpa.PDLength)
		if len(frame) < layers.MPAHeaderLen {
			want = layers.MPAHeaderLen
		}
		if st.snapCut {
			c.cut = fmt.Sprintf("the capture cut a segment: %d of the MPA frame's %d octets arrived", len(frame), want)
		} else if st.capped == "" {
			c.mpaEnded = fmt.Sprintf("%s after %d of the MPA frame's %d octets", ended, len(frame), want)
		}
	}
	m.MPAInfo = mpaHeader(&mpa, m.Kind == record.KindMPARequest, len(frame))
	c.limit = st.capped
	if st.differ > 0 && st.differ <= len(frame) {
		c.retransDiffer = fmt.Sprintf("frame %d carried octet %d of the MPA frame again with different contents; the first copy is shown, the receiver may have kept the other",
			st.differFrame, st.differ-1)
	}
	m.Findings = runRules(messageRules, c)
	return m
}

// mpaHeader is what the n octets that arrived of an MPA frame say.
func mpaHeader(f *layers.MPAFrame, request bool, n int) *record.MPAHeader {
	h := &record.MPAHeader{Request: request}
	if n > 16 {
		h.HasFlags, h.Marker, h.CRC, h.Reject, h.Enhanced = true, f.Marker, f.CRC, f.Reject, f.Enhanced
	}
	if n > 17 {
		h.HasRev, h.Rev = true, f.Rev
	}
	if n >= layers.MPAHeaderLen {
		h.HasPDLength, h.PDLength = true, f.PDLength
		h.HasIRDORD, h.IRD, h.ORD = f.HasIRDORD, f.IRD, f.ORD
	}
	return h
}

// The MPA rules; they run in the message rule table (rules.go).
var mpaRules = []rule{
	{finding.MPATruncated, func(c *msgCtx) (string, bool) {
		return c.mpaEnded, c.mpaEnded != ""
	}},
	{finding.StateLimitReached, func(c *msgCtx) (string, bool) {
		return c.limit, c.limit != ""
	}},
	{finding.TCPRetransmissionMismatch, func(c *msgCtx) (string, bool) {
		return c.retransDiffer, c.retransDiffer != ""
	}},
	{finding.MPARevUnknown, func(c *msgCtx) (string, bool) {
		if c.mpa == nil || c.mpa.Rev == 1 || c.mpa.Rev == 2 {
			return "", false
		}
		return fmt.Sprintf("revision %d: only 1 (RFC 5044) and 2 (RFC 6581) are defined", c.mpa.Rev), true
	}},
	{finding.MPAReservedNonzero, func(c *msgCtx) (string, bool) {
		if c.mpa == nil {
			return "", false
		}
		if c.mpa.ReservedFlags != 0 {
			return fmt.Sprintf("reserved flag bits are 0x%x (flags octet 0x%02x)", c.mpa.ReservedFlags, c.mpa.Flags()), true
		}
		if c.mpa.Request && c.mpa.Reject {
			return "the R (reject) bit is set in a Request, where it is reserved", true
		}
		return "", false
	}},
	{finding.MPAEnhancedMismatch, func(c *msgCtx) (string, bool) {
		switch {
		case c.mpa == nil:
		case c.mpa.Rev == 1 && c.mpa.Enhanced:
			return "the enhanced connection establishment flag (0x10) is set with revision 1", true
		case c.mpa.Rev == 2 && !c.mpa.Enhanced:
			return "revision 2 without the enhanced connection establishment flag (0x10): a peer may not take the first 4 octets for IRD/ORD", true
		}
		return "", false
	}},
	{finding.MPAPDTooLong, func(c *msgCtx) (string, bool) {
		if c.mpa == nil || c.mpaNoLength || c.mpa.PDLength <= layers.MPAMaxPDLength {
			return "", false
		}
		return fmt.Sprintf("PD_Length is %d, over the limit of %d", c.mpa.PDLength, layers.MPAMaxPDLength), true
	}},
	{finding.PDCapacityTooSmall, func(c *msgCtx) (string, bool) {
		if c.mpa == nil || c.mpaNoLength || c.mpa.Rev != 2 || int(c.mpa.PDLength) >= layers.MPAIRDORDLen+layers.RPCRDMALen {
			return "", false
		}
		if c.mpa.PDLength < layers.MPAIRDORDLen {
			return fmt.Sprintf("PD_Length %d cannot even hold the 4 octets of IRD/ORD", c.mpa.PDLength), true
		}
		return fmt.Sprintf("PD_Length %d leaves %d octets after the IRD/ORD words, fewer than the 8 of an RPC-over-RDMA message",
			c.mpa.PDLength, int(c.mpa.PDLength)-layers.MPAIRDORDLen), true
	}},
	{finding.MPAReject, func(c *msgCtx) (string, bool) {
		if c.mpa == nil || c.mpa.Request || !c.mpa.Reject {
			return "", false
		}
		return "the MPA Reply rejects the connection (R set)", true
	}},
}
