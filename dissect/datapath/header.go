package datapath

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The transport header of each RPC-over-RDMA message judged (checks.go):
// what makes it invalid, or keeps it from being checked.

// headerProblems raises what makes the header invalid, or uncheckable,
// and reports whether the lists were read whole. A header that did not
// decode is judged by what stopped the decode (undecoded); one that did,
// by its values (valueProblems).
func (c *Checker) headerProblems(s *Send, h *layers.RPCRDMAHeader, err error, add func(finding.Code, string, ...any)) bool {
	if err != nil {
		c.undecoded(s, h, err, add)
		return false
	}
	valueProblems(s, h, add)
	return true
}

// undecoded says why a header did not decode: an XDR boolean that is
// neither 0 nor 1, or too few octets. Too few octets are the transport's
// doing when it kept fewer than the Send has (notKept), else the sender's:
// a Send shorter than the fixed part, or a list that runs past its end.
func (c *Checker) undecoded(s *Send, h *layers.RPCRDMAHeader, err error, add func(finding.Code, string, ...any)) {
	// The layer returns its error types as they are: a type switch (rather
	// than errors.As, whose target escapes) keeps this allocation-free.
	te, _ := err.(*layers.TruncatedError)
	xe, _ := err.(*layers.XDRBoolError)
	switch {
	case xe != nil:
		add(finding.RPCRDMAHeaderInvalid, "%s", strings.TrimPrefix(xe.Error(), "rpc-over-rdma: "))
	case te == nil:
		add(finding.RPCRDMAHeaderInvalid, "%v", err)
	case !s.HeadWhole:
		c.notKept(s, h, te, add)
	case len(s.Head) < layers.RPCRDMAFixedLen:
		add(finding.RPCRDMAHeaderInvalid, "the Send has %d octets, fewer than the %d of an RPC-over-RDMA header's fixed part", len(s.Head), layers.RPCRDMAFixedLen)
	default:
		part := strings.TrimPrefix(te.Layer, "rpc-over-rdma")
		if part == "" || part == " msgp" {
			part = " header"
		}
		add(finding.RPCRDMAHeaderInvalid, "the%s runs past the end of the Send (%d octets)", part, len(s.Head))
	}
}

// notKept says why the header runs past the octets the transport kept of
// the Send: none kept at a limit, the capture's snap length, or a header
// longer than what is kept: its chunk lists are cut there (counted for the
// run), and how many segments were read is said, with the count the chunk
// being read announces when it is a counted one.
func (c *Checker) notKept(s *Send, h *layers.RPCRDMAHeader, te *layers.TruncatedError, add func(finding.Code, string, ...any)) {
	switch {
	case len(s.Head) == 0 && s.HeadCut == "limit":
		add(finding.StateLimitReached, "the first octets of the Send were not kept (more than %d multi-packet Sends were in progress at once, --max-send-buffers, or the memory budget was full): its header is not checked",
			c.out.Limits.HeadBuffers)
	case s.HeadCut == "capture":
		add(finding.CaptureTruncated, "the capture holds %d octets of the Send, which end inside its RPC-over-RDMA header: the header is not checked", len(s.Head))
	case listCut(s, te):
		c.out.ListsCut++
		list := strings.TrimPrefix(te.Layer, "rpc-over-rdma ")
		read, shown := h.Segments()+h.NotKept, h.Segments()
		more := "how many more the list holds is not known"
		if h.HasCutCount {
			more = fmt.Sprintf("the %s at the cut announces %d segments, none of them read", chunkName(list), h.CutCount)
		}
		add(finding.StateLimitReached, "the header's %s runs past the %d octets kept of the Send, which cut it: %d segments were read before the cut (%d shown and checked); %s",
			list, len(s.Head), read, shown, more)
	default:
		add(finding.StateLimitReached, "the header runs past the %d octets kept of the Send: it is not checked", len(s.Head))
	}
}

// listCut reports whether a header's decode stopped in its chunk lists
// because the transport kept fewer octets of the Send (HeadLen) than it
// has.
func listCut(s *Send, te *layers.TruncatedError) bool {
	return te != nil && !s.HeadWhole && s.HeadCut == "limit" && len(s.Head) > 0 &&
		(strings.HasSuffix(te.Layer, " list") || strings.HasSuffix(te.Layer, " chunk"))
}

// chunkName is what a counted array of the named list is.
func chunkName(list string) string {
	if list == "write list" {
		return "write chunk"
	}
	return list
}

// valueProblems judges the values of a header that decoded: the version,
// the procedure, where the RPC message is, its XID.
func valueProblems(s *Send, h *layers.RPCRDMAHeader, add func(finding.Code, string, ...any)) {
	switch {
	case h.Proc == layers.RPCRDMAError:
		errorProblems(h, add)
	case h.Vers != layers.RPCRDMAVersion:
		add(finding.RPCRDMAHeaderInvalid, "rdma_vers is %d, not 1", h.Vers)
	case h.Proc > layers.RPCRDMAError:
		add(finding.RPCRDMAHeaderInvalid, "rdma_proc %d is not a procedure of version 1", h.Proc)
	case h.Proc == layers.RPCRDMAMsgP:
		add(finding.RPCRDMAHeaderInvalid, "RDMA_MSGP is no longer supported (RFC 8166, section 4.6.1): senders must not send it")
	case h.Proc == layers.RPCRDMADone:
		add(finding.RPCRDMAHeaderInvalid, "RDMA_DONE is no longer supported (RFC 8166, section 4.6.2): senders must not send it")
	case h.Proc == layers.RPCRDMANoMsg && len(h.ReadList) == 0 && len(h.WriteList) == 0 && !h.HasReplyChunk:
		add(finding.RPCRDMAHeaderInvalid, "an RDMA_NOMSG with no chunk: its RPC message is nowhere")
	case h.Proc == layers.RPCRDMAMsg && !h.HasRPCXID && s.HeadWhole:
		add(finding.RPCRDMAHeaderInvalid, "an RDMA_MSG with no RPC message after its %d-octet header", len(h.Contents))
	case h.Proc == layers.RPCRDMAMsg && h.HasRPCXID && h.RPCXID != h.XID:
		add(finding.RPCRDMAHeaderInvalid, "the RPC message's XID 0x%08x differs from rdma_xid 0x%08x", h.RPCXID, h.XID)
	}
}

// errorProblems judges an RDMA_ERROR: a known rdma_err, and version 1
// unless it is ERR_VERS, which echoes the version of the failing request.
func errorProblems(h *layers.RPCRDMAHeader, add func(finding.Code, string, ...any)) {
	if layers.RPCRDMAErrName(h.Err) == "" {
		add(finding.RPCRDMAHeaderInvalid, "rdma_err %d is neither ERR_VERS (1) nor ERR_CHUNK (2)", h.Err)
	}
	if h.Vers != layers.RPCRDMAVersion && h.Err != layers.RPCRDMAErrVers {
		add(finding.RPCRDMAHeaderInvalid, "rdma_vers is %d, not 1", h.Vers)
	}
}
