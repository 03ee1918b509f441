package conn

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/privdata"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The upper layer of a connection, and the rule that RPC-over-RDMA's rules
// apply only to RPC-over-RDMA connections (or to connections of an unknown
// upper layer on a TCP-port-space service, which NFS/RDMA may be).
//
// A connection's upper layer is decided from both sides' private data and
// its service, strongest evidence first: RFC 8797 data on either side
// (rfc8797); a magic number or layout check of the initiator's private
// data, else of the responder's (private-data); the REQ's Service ID or the
// iWARP TCP port (service-port, tcp-port). A connection whose request's
// private data says one upper layer and whose service names another is the
// former's: a port alone is weak.

// decideULP sets c's upper layer and its evidence from what the two sides
// sent and the service.
func decideULP(c *record.Connection) {
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

// iserInvalidation reports whether the iSER target may answer with Send
// With Invalidate: the initiator's iSER CM header did not say it does not
// support it (Annex A12). Without the header, it is not known: no.
func iserInvalidation(c *record.Connection) bool {
	u := c.InitiatorULP
	return c.ULP == record.ULPISER && u != nil && u.HasISERFlags && !u.SendWithInvalidateNotSupported
}

// negotiate works out what c agreed under its upper layer's rules: under
// RPC-over-RDMA's, the inline thresholds and remote invalidation of RFC
// 8797; under iSER's, whether the target may use Send With Invalidate;
// under any other, nothing.
func negotiate(c *record.Connection) {
	decideULP(c)
	if c.RPCRDMARulesApply() {
		in, inv := Negotiate(c.InitiatorRPCRDMA, c.ResponderRPCRDMA)
		c.Inline, c.RemoteInvalidation = &in, inv
		return
	}
	c.Inline, c.RemoteInvalidation = nil, iserInvalidation(c)
}

// judge applies the connection rules to a message before it is handed on:
// a reply whose own private data said nothing is read again as the upper
// layer its request named, and rpcrdma-absent is raised only where
// RPC-over-RDMA's rules apply, as far as the connection is known when the
// message arrives. A reply whose request was not seen has no known
// service: only its own private data (or, over iWARP, its TCP port) can
// make the rules apply.
func (t *Tracker) judge(m *record.Message) {
	var c record.Connection
	switch m.Kind {
	case record.KindREQ, record.KindMPARequest:
		c = record.Connection{Transport: m.Transport, ServiceID: m.ServiceID, HasServiceID: m.HasServiceID,
			InitiatorRPCRDMA: m.RPCRDMA, InitiatorULP: m.ULP}
		if m.Kind == record.KindMPARequest {
			c.Port, c.HasPort = portOf(m.Dst)
			c.HasServiceID = false
		}
	case record.KindREP, record.KindREJ, record.KindMPAReply:
		fromInitiator := false
		var a *attempt
		switch m.Kind {
		case record.KindREP:
			a = t.byReq[reqKey{m.Dst, m.Src, m.RemoteCommID}]
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
				c.Port, c.HasPort = portOf(m.Src)
			}
		}
		if !fromInitiator {
			c.ResponderRPCRDMA, c.ResponderULP = m.RPCRDMA, m.ULP
		}
	default:
		return
	}
	decideULP(&c)
	if c.RPCRDMARulesApply() {
		m.Release()
	}
	m.Held = nil
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
