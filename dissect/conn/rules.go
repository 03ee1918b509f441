package conn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/privdata"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The connection rules: the one place that decides a connection's upper
// layer and whether RPC-over-RDMA's rules apply to it, and what those rules
// say of what was agreed.
//
// A connection's upper layer is decided from both sides' private data and
// its service, strongest evidence first: RFC 8797 data on either side
// (rfc8797); a magic number or layout check of the initiator's private
// data, else of the responder's (private-data); the REQ's Service ID or the
// iWARP TCP port (service-port, tcp-port). A connection whose request's
// private data says one upper layer and whose service names another is the
// former's: a port alone is weak.
//
// RPC-over-RDMA's rules apply to an RPC-over-RDMA connection, and to one of
// an unknown upper layer on a TCP-port-space service, which NFS/RDMA may
// be. Only then do the 1024/1024 defaults, the inline thresholds, remote
// invalidation under RFC 8797 and the RPC-over-RDMA findings apply
// (rpcrdma-absent, rpcrdma-one-sided, remote-invalidation-one-sided; on the
// data path, its RPC-over-RDMA checks, whose traffic rule reads the same
// decision: Connection.ULP and ULPEvidence).

// Decide applies the connection rules to what c's two sides sent and its
// service: it sets c's upper layer, what decided it, and whether
// RPC-over-RDMA's rules apply (Connection.RPCRDMARules).
func Decide(c *record.Connection) { c.RPCRDMARules = decideULP(c) }

// decideULP sets c's upper layer and its evidence from what the two sides
// sent and the service, and reports whether RPC-over-RDMA's rules apply.
func decideULP(c *record.Connection) bool {
	strong := func(u *record.ULP) bool { return u != nil && u.Evidence == record.EvidencePrivateData }
	switch {
	case c.InitiatorRPCRDMA != nil || c.ResponderRPCRDMA != nil:
		c.ULP, c.ULPEvidence = record.ULPRPCRDMA, record.EvidenceRFC8797
	case strong(c.InitiatorULP):
		c.ULP, c.ULPEvidence = c.InitiatorULP.Protocol, record.EvidencePrivateData
	case strong(c.ResponderULP):
		c.ULP, c.ULPEvidence = c.ResponderULP.Protocol, record.EvidencePrivateData
	default:
		c.ULP, c.ULPEvidence = serviceULP(c)
	}
	return c.ULP == record.ULPRPCRDMA || c.ULP == "" && tcpPortSpace(c)
}

// tcpPortSpace reports whether the connection's service is a TCP-port-space
// one: an IP CM Service ID of the TCP port space, or any iWARP connection.
func tcpPortSpace(c *record.Connection) bool {
	if c.Transport == record.IWARP {
		return true
	}
	return c.HasServiceID && layers.IsIPCMServiceID(c.ServiceID) && layers.IPCMPortSpace(c.ServiceID) == layers.PortSpaceTCP
}

// serviceULP is the upper layer the connection's service names.
func serviceULP(c *record.Connection) (record.ULPName, record.ULPEvidence) {
	switch {
	case c.HasPort:
		if u := privdata.PortULP(c.Port); u != "" {
			return u, record.EvidenceTCPPort
		}
	case c.HasServiceID:
		if u := privdata.ServiceULP(c.ServiceID); u != "" {
			return u, record.EvidenceServicePort
		}
	}
	return "", ""
}

// Negotiate computes what two sides agree from their RFC 8797 messages; a
// side without one counts as Send Size 1024, Receive Size 1024, R=0.
func Negotiate(ini, res *record.RPCRDMA) (record.InlineThresholds, bool) {
	send := func(r *record.RPCRDMA) int {
		if r == nil {
			return layers.DefaultInline
		}
		return r.SendSize
	}
	recv := func(r *record.RPCRDMA) int {
		if r == nil {
			return layers.DefaultInline
		}
		return r.ReceiveSize
	}
	inv := func(r *record.RPCRDMA) bool { return r != nil && r.RemoteInvalidate }
	return record.InlineThresholds{
		InitiatorToResponder: min(send(ini), recv(res)),
		ResponderToInitiator: min(send(res), recv(ini)),
	}, inv(ini) && inv(res)
}

// negotiate works out what c agreed under its upper layer's rules: under
// RPC-over-RDMA's, the inline thresholds and remote invalidation of RFC
// 8797; under iSER's, whether the target may use Send With Invalidate;
// under any other, nothing.
func negotiate(c *attempt) {
	c.RPCRDMARules = decideULP(&c.Connection)
	if c.RPCRDMARules && c.PrivateDataCut {
		// What a side advertised was cut away: the thresholds and remote
		// invalidation are not known (not the defaults of no RFC 8797 data).
		c.Inline, c.RemoteInvalidation = nil, false
		return
	}
	if c.RPCRDMARules {
		c.inline, c.RemoteInvalidation = Negotiate(c.InitiatorRPCRDMA, c.ResponderRPCRDMA)
		c.Inline = &c.inline
		return
	}
	c.Inline, c.RemoteInvalidation = nil, iserInvalidation(&c.Connection)
}

// iserInvalidation reports whether the iSER target may answer with Send
// With Invalidate: the initiator's iSER CM header did not say it does not
// support it (Annex A12). Without the header, it is not known: no.
func iserInvalidation(c *record.Connection) bool {
	u := c.InitiatorULP
	return c.ULP == record.ULPISER && u != nil && u.HasISERFlags && !u.SendWithInvalidateNotSupported
}

// ISERForbidsInvalidate reports whether the initiator of an iSER
// connection said, in its iSER CM header, that it does not support Send
// With Invalidate: the target's Send With Invalidate then breaks the rule
// (iser-send-with-invalidate-unsupported).
func ISERForbidsInvalidate(c *record.Connection) bool {
	u := c.InitiatorULP
	return c.ULP == record.ULPISER && u != nil && u.HasISERFlags && u.SendWithInvalidateNotSupported
}

// ISERSendWithInvalidate is the finding on a Send With Invalidate that the
// target of an iSER connection whose initiator forbade it
// (ISERForbidsInvalidate) sent: InfiniBand SEND Last or Only with
// Invalidate (BTH opcodes 0x16, 0x17), iWARP Send with Invalidate or Send
// with SE and Invalidate (RDMAP opcodes 4, 6); frame is the frame that
// carries it, stag the invalidated R_Key or STag, request the frame of the
// connection's request.
func ISERSendWithInvalidate(frame int, stag uint32, request int) finding.Finding {
	return finding.New(finding.ISERSendWithInvalidateUnsupported,
		"frame %d: the target sent a Send With Invalidate of STag 0x%08x although the initiator's iSER CM header (frame %d) says it does not support Send With Invalidate",
		frame, stag, request)
}

// agreement holds the connection rules on what an accepted connection
// agreed: whether both sides sent RFC 8797 data, whether both set R, and
// whether the properties changed since the service's previous connection.
func (t *Tracker) agreement(c *attempt) []finding.Finding {
	var out []finding.Finding
	ini, res := c.InitiatorRPCRDMA != nil, c.ResponderRPCRDMA != nil
	if ini != res {
		who, other := "initiator", "responder"
		if res {
			who, other = "responder", "initiator"
		}
		out = append(out, finding.New(finding.RPCRDMAOneSided,
			"only the %s sent RPC-over-RDMA private data; the %s counts as Send Size 1024, Receive Size 1024, R=0", who, other))
	}
	iniR := ini && c.InitiatorRPCRDMA.RemoteInvalidate
	resR := res && c.ResponderRPCRDMA.RemoteInvalidate
	if iniR != resR {
		who, other := "the initiator", "the responder"
		if resR {
			who, other = "the responder", "the initiator"
		}
		out = append(out, finding.New(finding.RemoteInvalidationOneSided,
			"%s set R, %s did not: replies use plain Send, never Send With Invalidate", who, other))
	}
	in, inv := *c.Inline, c.RemoteInvalidation
	if prev := t.previous(c); prev != nil && (prev.inline != in || prev.inv != inv) {
		var what []string
		if prev.inline.InitiatorToResponder != in.InitiatorToResponder {
			what = append(what, fmt.Sprintf("initiator→responder %d → %d", prev.inline.InitiatorToResponder, in.InitiatorToResponder))
		}
		if prev.inline.ResponderToInitiator != in.ResponderToInitiator {
			what = append(what, fmt.Sprintf("responder→initiator %d → %d", prev.inline.ResponderToInitiator, in.ResponderToInitiator))
		}
		if prev.inv != inv {
			what = append(what, fmt.Sprintf("remote invalidation %s → %s", onOff(prev.inv), onOff(inv)))
		}
		out = append(out, finding.New(finding.PropertiesChangedOnReconnect, "since the connection of frame %d: %s",
			prev.frame, strings.Join(what, ", ")))
	}
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// judge applies the connection rules to a message before it is handed on:
// a reply whose own private data said nothing is read again as the upper
// layer its request named, and rpcrdma-absent is raised only where
// RPC-over-RDMA's rules apply, as far as the connection is known when the
// message arrives. A reply whose request was not seen has no known
// service: only its own private data (or, over iWARP, its TCP port) can
// make the rules apply.
//
// On a connection whose upper layer is unknown (rping, perftest with
// rdma_cm: the rules apply only because its service is a TCP-port-space
// one), rpcrdma-absent is said once: on its first message without RFC
// 8797 data, not again on a CM retry of the REQ nor on the reply. On an
// RPC-over-RDMA connection it stays on each message, since each says
// which peer fell back to the defaults.
func (t *Tracker) judge(m *record.Message) {
	var c record.Connection
	var a *attempt // the attempt the message belongs to, when known already
	switch m.Kind {
	case record.KindREQ, record.KindMPARequest:
		c = record.Connection{Transport: m.Transport, ServiceID: m.ServiceID, HasServiceID: m.HasServiceID,
			InitiatorRPCRDMA: m.RPCRDMA, InitiatorULP: m.ULP}
		if m.Kind == record.KindMPARequest {
			c.Port, c.HasPort = m.Dst.Port, m.Dst.HasPort
			c.HasServiceID = false
		} else if r := t.req(keyOf(m.Src, m.Dst, m.LocalCommID)); r != nil && isRetry(r, m) {
			a = r
		}
	case record.KindREP, record.KindREJ, record.KindMPAReply:
		fromInitiator := false
		switch m.Kind {
		case record.KindREP:
			a = t.req(keyOf(m.Dst, m.Src, m.RemoteCommID))
		case record.KindREJ:
			a, fromInitiator = t.byLocal(m)
		default:
			a = t.byTCP[tcpConnKey{m.Dst, m.Src}]
		}
		if a != nil {
			c = a.Connection
			t.readAs(m, &c)
		} else {
			c = record.Connection{Transport: m.Transport}
			if m.Kind.IsMPA() {
				c.Port, c.HasPort = m.Src.Port, m.Src.HasPort
			}
		}
		if !fromInitiator {
			c.ResponderRPCRDMA, c.ResponderULP = m.RPCRDMA, m.ULP
		}
	default:
		return
	}
	if decideULP(&c) {
		if a != nil && a.absent && c.ULP == "" {
			m.Held = slices.DeleteFunc(m.Held, func(h record.HeldFinding) bool {
				return h.Finding.Code == finding.RPCRDMAAbsent
			})
		}
		m.Release()
	}
	m.Held = nil
}

// hasAbsent reports whether m carries rpcrdma-absent.
func hasAbsent(m *record.Message) bool {
	return slices.ContainsFunc(m.Findings, func(f finding.Finding) bool { return f.Code == finding.RPCRDMAAbsent })
}

// readAs reads a reply whose private data said nothing of its own as the
// upper layer its connection c is known to be (its request said so).
func (t *Tracker) readAs(m *record.Message, c *record.Connection) {
	if m.ULP != nil || m.RPCRDMA != nil || c.ULP == "" || c.ULP == record.ULPRPCRDMA {
		return
	}
	ctx := privdata.ContextOf(m)
	ctx.Claim, ctx.ClaimEvidence, ctx.ClaimWhy = c.ULP, c.ULPEvidence, "as its request"
	u, fs := privdata.Identify(m.PrivateData, ctx)
	if u != nil {
		m.ULP = u
		m.Findings = append(m.Findings, fs...)
	}
}
