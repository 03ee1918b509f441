package privdata

import (
	"fmt"
	"net/netip"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The upper layer step: without RFC 8797 data, a message's private data
// usually belongs to another upper layer protocol. Identify finds which,
// from a magic number or a layout check of the octets (strong evidence) or
// from what the carrier claims: the REQ's Service ID, the iWARP TCP port,
// or the upper layer the connection is already known to be (weak
// evidence), and decodes the octets with that protocol's layout.

// Role is what a message is to the upper layers' layouts.
type Role uint8

// Roles. A REJ counts as Reject only when it is a consumer reject (reason
// 28), whose private data is the consumer's; an MPA Reply with R set counts
// as one too.
const (
	RoleOther   Role = iota // RTU, DREQ, a REJ for another reason: no upper layer data
	RoleRequest             // REQ, MPA Request
	RoleAccept              // REP, MPA Reply without R
	RoleReject              // consumer REJ, MPA Reply with R
)

// Context is what the carrier knows of the upper layer around the private
// data.
type Context struct {
	Role Role
	// Consumer is where the consumer's data starts: 36 after an IP CM
	// header, 4 after MPA revision 2's IRD/ORD words, else 0.
	Consumer int
	// The REQ's Service ID (InfiniBand family), or the responder's TCP port
	// (iWARP).
	ServiceID    uint64
	HasServiceID bool
	Port         uint16
	HasPort      bool
	// The REQ's IP CM header addresses, and the frame's own addresses
	// (RoCEv2 and iWARP IP addresses, IP-based GIDs): RDS repeats them.
	IPCMSrc, IPCMDst netip.Addr
	Src, Dst         netip.Addr
	// Claim is the upper layer the connection is already known to be (a
	// reply's request said so), with its evidence and, for messages, why:
	// "as its request". Empty: only the Service ID or port claims.
	Claim         record.ULPName
	ClaimEvidence record.ULPEvidence
	ClaimWhy      string
	// Cut: the capture holds less of the private data than the wire
	// carried, so too few octets are no fault of the sender's.
	Cut bool
}

// ServiceULP is the upper layer a REQ's Service ID names: an IP CM TCP
// port, IPoIB connected mode's prefix, or rdma_cm's SDP port space; "" when
// none.
func ServiceULP(sid uint64) record.ULPName {
	switch {
	case layers.IsIPoIBCMServiceID(sid):
		return record.ULPIPoIBCM
	case layers.IsSDPServiceID(sid):
		return record.ULPSDP
	case !layers.IsIPCMServiceID(sid) || layers.IPCMPortSpace(sid) != layers.PortSpaceTCP:
		return ""
	}
	return serviceULPs[layers.IPCMPort(sid)]
}

// serviceULPs are the upper layers the TCP ports of IP CM Service IDs
// name.
var serviceULPs = map[uint16]record.ULPName{
	layers.NFSRDMAPort:  record.ULPRPCRDMA,
	layers.NVMeRDMAPort: record.ULPNVMeRDMA,
	layers.ISERPort:     record.ULPISER,
	layers.RDSPort:      record.ULPRDS,
	layers.RDSCMPort:    record.ULPRDS,
	445:                 record.ULPSMBDirect,
}

// PortULP is the upper layer an iWARP responder's TCP port names, or "".
func PortULP(port uint16) record.ULPName { return tcpPortULPs[port] }

// tcpPortULPs are the upper layers iWARP responders' TCP ports name.
var tcpPortULPs = map[uint16]record.ULPName{
	layers.NFSRDMAPort:  record.ULPRPCRDMA,
	layers.NVMeRDMAPort: record.ULPNVMeRDMA,
	layers.ISERPort:     record.ULPISER,
	layers.RDSPort:      record.ULPRDS, // RDS over iWARP (Linux's rds_iw, until 4.9)
	layers.RDSCMPort:    record.ULPRDS,
	5445:                record.ULPSMBDirect,
}

// claim is what the context claims: the connection's upper layer, else the
// Service ID's or the port's.
func (c *Context) claim() (record.ULPName, record.ULPEvidence, string) {
	switch {
	case c.Claim != "":
		return c.Claim, c.ClaimEvidence, c.ClaimWhy
	case c.HasServiceID:
		if u := ServiceULP(c.ServiceID); u != "" {
			return u, record.EvidenceServicePort, serviceWhy(c.ServiceID)
		}
	case c.HasPort:
		if u := PortULP(c.Port); u != "" {
			return u, record.EvidenceTCPPort, fmt.Sprintf("TCP port %d", c.Port)
		}
	}
	return "", "", ""
}

func serviceWhy(sid uint64) string {
	switch {
	case layers.IsIPoIBCMServiceID(sid):
		return fmt.Sprintf("Service ID 0x%016x", sid)
	case layers.IsSDPServiceID(sid):
		return fmt.Sprintf("SDP Service ID, port %d", uint16(sid))
	}
	return fmt.Sprintf("Service ID port %d", layers.IPCMPort(sid))
}

// Identify reads the private data as an upper layer's: the one its octets
// show by a magic number or a layout check, else the one the context
// claims. It returns nil when neither says anything, and the findings on
// what it read: ulp-private-data-invalid when the octets do not fit the
// layout the claim or the magic stands for, nvme-rdma-rejected for an
// NVMe-oF reject.
func Identify(pd []byte, c Context) (*record.ULP, []finding.Finding) {
	if c.Role == RoleOther {
		return nil, nil
	}
	off := min(max(c.Consumer, 0), len(pd))
	data := pd[off:]
	r := recognise(data, &c)
	if r.u == nil {
		name, ev, why := c.claim()
		if name == "" || name == record.ULPRPCRDMA {
			return nil, nil
		}
		if r = decodeAs(name, data, &c); r.u == nil {
			return nil, nil
		}
		r.u.Evidence, r.why = ev, why
	}
	r.u.Offset += off
	var fs []finding.Finding
	if r.u.Problem != "" {
		fs = append(fs, finding.New(finding.ULPPrivateDataInvalid, "%s (%s): %s", r.u.Protocol.Title(), r.why, r.u.Problem))
	}
	if r.nvmeStatus >= 0 {
		s := uint16(r.nvmeStatus)
		name := layers.NVMeRDMAStatusName(s)
		if name == "" {
			name = "reserved"
		}
		fs = append(fs, finding.New(finding.NVMeRDMARejected, "the controller rejected the host's request with status %d (%s)", s, name))
	}
	return r.u, fs
}

// read is what reading the octets as one upper layer's gave: the record,
// why that layer (for ulp-private-data-invalid), and an NVMe-oF reject's
// status (-1 when the message is none).
type read struct {
	u          *record.ULP
	why        string
	nvmeStatus int
}

// result builds the record of a decoded layer, as evidence says.
func result(name record.ULPName, l layers.ULPPrivateData, ev record.ULPEvidence, why string) read {
	return read{u: &record.ULP{Protocol: name, Evidence: ev, Name: l.LayerType().String(), Summary: l.Summary(),
		Fields: l.Fields(), Problem: l.Problem()}, why: why, nvmeStatus: -1}
}

// ContextOf is the context of a message already decoded, from its record:
// what the connection rules need to read a reply again under the upper
// layer its request named. A REQ's IP CM header addresses are not in it.
func ContextOf(m *record.Message) Context {
	c := Context{Consumer: m.ExpectedOffset, Cut: len(m.PrivateData) < m.PrivateDataSize}
	switch m.Kind {
	case record.KindREQ:
		c.Role, c.ServiceID, c.HasServiceID = RoleRequest, m.ServiceID, m.HasServiceID
	case record.KindREP:
		c.Role = RoleAccept
	case record.KindREJ:
		if m.CMInfo != nil && m.CMInfo.RejectReason == layers.RejReasonConsumerReject {
			c.Role = RoleReject
		}
	case record.KindMPARequest:
		c.Role = RoleRequest
	case record.KindMPAReply:
		switch h := m.MPAInfo; {
		case h == nil || !h.HasFlags:
		case h.Reject:
			c.Role = RoleReject
		default:
			c.Role = RoleAccept
		}
	}
	c.Src, c.Dst = m.Src.IP(), m.Dst.IP()
	if !m.Kind.IsMPA() {
		return c
	}
	if c.Consumer != layers.MPAIRDORDLen || len(m.PrivateData) < layers.MPAIRDORDLen {
		c.Consumer = 0
	}
	c.HasPort, c.Port = true, m.Src.Port
	if m.Kind == record.KindMPARequest {
		c.Port = m.Dst.Port
	}
	return c
}
