package record

import (
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// ULPName names the upper layer protocol of a connection, as the JSON output
// spells it ("ulp"). The empty name is an unknown upper layer (null).
type ULPName string

// The upper layers the dissector tells apart.
const (
	ULPRPCRDMA   ULPName = "rpc-over-rdma"
	ULPNVMeRDMA  ULPName = "nvme-rdma"
	ULPISER      ULPName = "iser"
	ULPSRP       ULPName = "srp"
	ULPRDS       ULPName = "rds"
	ULPRSockets  ULPName = "rsockets"
	ULPLustre    ULPName = "lustre-o2iblnd"
	ULPSDP       ULPName = "sdp"
	ULPIPoIBCM   ULPName = "ipoib-cm"
	ULPSMBDirect ULPName = "smb-direct"
)

// ulpTitles are the upper layers' names for people.
var ulpTitles = map[ULPName]string{
	ULPRPCRDMA:   "RPC-over-RDMA",
	ULPNVMeRDMA:  "NVMe-oF",
	ULPISER:      "iSER",
	ULPSRP:       "SRP",
	ULPRDS:       "RDS",
	ULPRSockets:  "rsockets",
	ULPLustre:    "Lustre o2iblnd",
	ULPSDP:       "SDP",
	ULPIPoIBCM:   "IPoIB-CM",
	ULPSMBDirect: "SMB Direct",
}

// Title is the upper layer's name for people: "NVMe-oF", "iSER".
func (n ULPName) Title() string {
	if t, ok := ulpTitles[n]; ok {
		return t
	}
	return string(n)
}

// ULPEvidence says what decided a connection's (or a message's) upper layer.
// A port alone is weak evidence; a magic number or a layout check of the
// private data is strong; RFC 8797 data is conclusive.
type ULPEvidence string

// The kinds of evidence, as the JSON output spells them ("ulp_evidence").
const (
	EvidenceRFC8797     ULPEvidence = "rfc8797"      // RFC 8797 data on either side
	EvidencePrivateData ULPEvidence = "private-data" // a magic number or a layout check
	EvidenceServicePort ULPEvidence = "service-port" // the REQ's Service ID: its port space and port, or a ULP's own prefix
	EvidenceTCPPort     ULPEvidence = "tcp-port"     // iWARP: the responder's TCP port
)

// ULP is what one message's private data says of its upper layer: the
// protocol it was read as, where that protocol's data starts, and the
// decoded fields (none when the protocol defines no private data, or when
// the octets did not fit: ulp-private-data-invalid then says why).
type ULP struct {
	Protocol ULPName
	Offset   int         // where the protocol's data starts in the private data
	Evidence ULPEvidence // what identified it for this message
	Name     string      // the structure's name: "NVMe-oF RDMA_CM_REQUEST Private Data"
	Summary  string      // one line: "NVMe-oF qid=0 hrqsize=32 hsqsize=31"
	Fields   []layers.Field
	// Problem is why the octets do not fit the protocol's layout, or "".
	Problem string

	// iSER: the Send With Invalidate not supported flag (in a REP: the
	// target will not use it). HasISERFlags says whether the iSER CM header
	// was there.
	HasISERFlags                   bool
	SendWithInvalidateNotSupported bool
}

// HeldFinding is a finding held back from a message's Findings until the
// connection rules decide whether it applies; At is its place in Findings
// when it was raised.
type HeldFinding struct {
	At      int
	Finding finding.Finding
}

// Release puts the held findings into Findings, each at its place, and
// forgets them.
func (m *Message) Release() {
	for i, h := range m.Held {
		m.Findings = slices.Insert(m.Findings, min(h.At+i, len(m.Findings)), h.Finding)
	}
	m.Held = nil
}
