package mpa

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/privdata"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// report builds and hands on the message of the frame: frame holds its
// octets as far as they arrived; complete says whether all did, else e
// says why the direction ended. The findings are raised here, where what
// arrived is known, in a fixed order: how the stream ended, the header's
// fields, then the RFC 8797 step.
func (r *reader) report(frame []byte, e reassembly.End, complete bool) *record.Message {
	var mpa layers.MPAFrame
	_ = mpa.DecodeFromBytes(frame, gopacket.NilDecodeFeedback) // the key was checked; a short header leaves zeros
	last, at := r.d.Last()
	frames := r.framesWithin(max(len(frame), 1))
	if !complete && len(frames) > 0 {
		// The last frame that carried part of it, and that frame's time.
		last = frames[len(frames)-1]
		if t, ok := r.timeOf(last); ok {
			at = t
		}
	}
	fl := r.d.Flow
	m := &record.Message{
		File:      r.f.file,
		Frame:     last,
		Frames:    frames,
		Time:      at.UTC(),
		Transport: record.IWARP,
		Src:       record.TCPEndpoint(fl.Src, fl.V6, fl.SrcPort),
		Dst:       record.TCPEndpoint(fl.Dst, fl.V6, fl.DstPort),
		Kind:      record.KindMPAReply,
	}
	if n := min(16, len(frame)); mpa.Request || string(frame[:n]) == string(layers.MPARequestKey[:n]) {
		m.Kind = record.KindMPARequest
	}
	var pd []byte
	pdSize, hasLength := 1, false // without PD_Length, absence cannot be told
	m.Octets.MPA = slices.Clone(frame[:min(len(frame), layers.MPAFieldsLen)])
	if len(frame) >= layers.MPAHeaderLen {
		m.PrivateData = slices.Clone(mpa.PrivateData)
		m.PrivateDataSize = int(mpa.PDLength)
		pd, pdSize, hasLength = mpa.PrivateData, int(mpa.PDLength), true
		if mpa.Rev == 2 {
			m.ExpectedOffset = layers.MPAIRDORDLen
		}
	} else if len(frame) > 16 {
		// It ends inside its header: the flags (octet 16), then Rev (octet
		// 17) are checked; PD_Length never arrived.
		var hdr [layers.MPAHeaderLen]byte
		copy(hdr[:], frame)
		_ = mpa.DecodeFromBytes(hdr[:], gopacket.NilDecodeFeedback)
	}
	m.MPAInfo = header(&mpa, m.Kind == record.KindMPARequest, len(frame))

	var fs []finding.Finding
	add := func(c finding.Code, format string, args ...any) { fs = append(fs, finding.New(c, format, args...)) }
	limit := ""
	switch e.Kind {
	case reassembly.EndLimit:
		limit = e.Detail
	case reassembly.EndQuiet:
		limit = fmt.Sprintf("nothing more arrived for %s: this MPA frame was given up", e.Quiet)
	}
	if r.lost {
		// Earlier octets of the direction were given up before its key
		// showed: counted now, once.
		r.lost = false
		r.f.dropped++
		if limit == "" {
			limit = "octets of this direction that arrived before its MPA key were given up at a state limit"
		}
	}
	if !complete {
		want := layers.MPAHeaderLen
		if hasLength {
			want += int(mpa.PDLength)
		}
		switch {
		case r.snapCut(want):
			add(finding.CaptureTruncated, "the capture cut a segment: %d of the MPA frame's %d octets arrived", len(frame), want)
		case limit == "":
			add(finding.MPATruncated, "%s after %d of the MPA frame's %d octets", why(e), len(frame), want)
		}
	}
	if limit != "" {
		add(finding.StateLimitReached, "%s", limit)
	}
	if d := r.differ - 1 - r.keyAt; r.differ > 0 && d >= 0 && d < len(frame) {
		add(finding.TCPRetransmissionMismatch,
			"frame %d carried octet %d of the MPA frame again with different contents; the first copy is shown, the receiver may have kept the other",
			r.differFrame, d)
	}
	if len(frame) > 17 {
		fs = headerFindings(m, fs, &mpa, hasLength)
	}
	res := privdata.Examine(pd, privdata.Carrier{Name: m.Name(), Where: fmt.Sprintf("MPA revision %d", mpa.Rev),
		Expected: m.ExpectedOffset, Size: pdSize, AbsentMatters: true}, ulpContext(m, fl, len(pd)))
	m.RPCRDMA, m.ULP = res.RPCRDMA, res.ULP
	res.Hold(m, len(fs))
	m.Findings = append(fs, res.Findings...)
	r.f.emit(m)
	return m
}

// ulpContext is what the upper layer step needs to know of an MPA frame:
// Request, accepting or rejecting Reply (a frame that ended before its
// flags is none), the responder's TCP port, and the two addresses. The
// consumer's data follows revision 2's IRD/ORD words.
func ulpContext(m *record.Message, fl reassembly.Flow, pdLen int) privdata.Context {
	c := privdata.Context{HasPort: true}
	c.Src, c.Dst = netip.AddrFrom16(fl.Src), netip.AddrFrom16(fl.Dst)
	if !fl.V6 {
		c.Src, c.Dst = netip.AddrFrom4([4]byte(fl.Src[12:16])), netip.AddrFrom4([4]byte(fl.Dst[12:16]))
	}
	if m.ExpectedOffset == layers.MPAIRDORDLen && pdLen >= layers.MPAIRDORDLen {
		c.Consumer = layers.MPAIRDORDLen
	}
	switch h := m.MPAInfo; {
	case m.Kind == record.KindMPARequest:
		c.Role, c.Port = privdata.RoleRequest, fl.DstPort
	case h == nil || !h.HasFlags:
		c.Role, c.Port = privdata.RoleOther, fl.SrcPort
	case h.Reject:
		c.Role, c.Port = privdata.RoleReject, fl.SrcPort
	default:
		c.Role, c.Port = privdata.RoleAccept, fl.SrcPort
	}
	return c
}

// headerFindings checks the fields of an MPA frame's header; without its
// PD_Length (hasLength false) only the flags and the revision. Room too
// small for the RFC 8797 message is held on m for the connection rules: it
// matters only to RPC-over-RDMA.
func headerFindings(m *record.Message, fs []finding.Finding, f *layers.MPAFrame, hasLength bool) []finding.Finding {
	add := func(c finding.Code, format string, args ...any) { fs = append(fs, finding.New(c, format, args...)) }
	if f.Rev != 1 && f.Rev != 2 {
		add(finding.MPARevUnknown, "revision %d: only 1 (RFC 5044) and 2 (RFC 6581) are defined", f.Rev)
	}
	switch {
	case f.ReservedFlags != 0:
		add(finding.MPAReservedNonzero, "reserved flag bits are 0x%x (flags octet 0x%02x)", f.ReservedFlags, f.Flags())
	case f.Request && f.Reject:
		add(finding.MPAReservedNonzero, "the R (reject) bit is set in a Request, where it is reserved")
	}
	switch {
	case f.Rev == 1 && f.Enhanced:
		add(finding.MPAEnhancedMismatch, "the enhanced connection establishment flag (0x10) is set with revision 1")
	case f.Rev == 2 && !f.Enhanced:
		add(finding.MPAEnhancedMismatch, "revision 2 without the enhanced connection establishment flag (0x10): a peer may not take the first 4 octets for IRD/ORD")
	}
	if hasLength && f.PDLength > layers.MPAMaxPDLength {
		add(finding.MPAPDTooLong, "PD_Length is %d, over the limit of %d", f.PDLength, layers.MPAMaxPDLength)
	}
	if hasLength && f.Rev == 2 && int(f.PDLength) < layers.MPAIRDORDLen+layers.RPCRDMALen {
		if f.PDLength < layers.MPAIRDORDLen {
			add(finding.PDCapacityTooSmall, "PD_Length %d cannot even hold the 4 octets of IRD/ORD", f.PDLength)
		} else {
			m.Held = append(m.Held, record.HeldFinding{At: len(fs), Finding: finding.New(finding.PDCapacityTooSmall,
				"PD_Length %d leaves %d octets after the IRD/ORD words, fewer than the 8 of an RPC-over-RDMA message",
				f.PDLength, int(f.PDLength)-layers.MPAIRDORDLen)})
		}
	}
	if !f.Request && f.Reject {
		add(finding.MPAReject, "the MPA Reply rejects the connection (R set)")
	}
	return fs
}

// why says how a direction ended, for mpa-truncated.
func why(e reassembly.End) string {
	switch e.Kind {
	case reassembly.EndFIN:
		return "the stream ends (FIN)"
	case reassembly.EndRST:
		return "the connection is reset (RST)"
	case reassembly.EndReplaced:
		return "the connection is replaced by a new one (SYN)"
	case reassembly.EndLimit, reassembly.EndQuiet:
		return "it was given up"
	case reassembly.EndInput:
		if e.FINMissing {
			return "the stream ends (FIN) with octets missing before it; the capture ends"
		}
	}
	return "the capture ends"
}

// header is what the n octets that arrived of an MPA frame say.
func header(f *layers.MPAFrame, request bool, n int) *record.MPAHeader {
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

// framesWithin lists, in order and once each, the frames whose segments
// carried octets of the first n octets of the frame.
func (r *reader) framesWithin(n int) []int {
	var out []int
	lo, hi := r.keyAt, r.keyAt+n
	for _, c := range r.carried {
		if c.lo < hi && lo < c.hi && !slices.Contains(out, c.frame) {
			out = append(out, c.frame)
		}
	}
	slices.Sort(out)
	return out
}

// timeOf is the capture time of a frame that carried octets of the stream.
func (r *reader) timeOf(frame int) (time.Time, bool) {
	for _, c := range r.carried {
		if c.frame == frame {
			return c.time, true
		}
	}
	return time.Time{}, false
}

// snapCut reports whether the capture's snap length cut a segment inside
// the want octets of the frame.
func (r *reader) snapCut(want int) bool {
	for _, c := range r.carried {
		if c.cut && c.hi > r.keyAt && c.hi < r.keyAt+want {
			return true
		}
	}
	return false
}
