package datapath

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Rule says what decided whether a connection carries RPC-over-RDMA.
type Rule uint8

// The rules, in the order they apply.
const (
	// RuleUndecided: the setup does not say; the first Sends will.
	RuleUndecided Rule = iota
	// RulePrivateData: a peer sent usable RFC 8797 private data.
	RulePrivateData
	// RuleService: the service is NFS/RDMA (port 20049).
	RuleService
	// RuleHeuristic: the first Sends parse as RPC-over-RDMA version 1
	// headers whose RPC message repeats rdma_xid (Wireshark's heuristic).
	RuleHeuristic
	// RuleNone: not RPC-over-RDMA (the first Sends did not parse so).
	RuleNone
	// RuleOtherULP: the setup names another upper layer (NVMe-oF, iSER,
	// ...: record.Connection.ULP), whose traffic RPC-over-RDMA's rules do
	// not judge.
	RuleOtherULP
)

var ruleNames = [...]string{
	RuleUndecided:   "undecided",
	RulePrivateData: "RFC 8797 private data",
	RuleService:     "NFS/RDMA port 20049",
	RuleHeuristic:   "heuristic: first Sends parse as RPC-over-RDMA",
	RuleNone:        "not RPC-over-RDMA",
	RuleOtherULP:    "another upper layer",
}

func (r Rule) String() string {
	if int(r) < len(ruleNames) {
		return ruleNames[r]
	}
	return "undecided"
}

// IsRPCRDMA reports whether the rule says the connection carries
// RPC-over-RDMA.
func (r Rule) IsRPCRDMA() bool { return r == RulePrivateData || r == RuleService || r == RuleHeuristic }

// setupRule is what a connection's setup says of its traffic, as the
// connection rules decided it (dissect/conn): RFC 8797 data from either
// peer, or a service that names RPC-over-RDMA (NFS/RDMA's port 20049),
// makes it RPC-over-RDMA; another upper layer makes it not; otherwise the
// Checker decides from the first Sends.
func setupRule(c *record.Connection) Rule {
	switch {
	case c.ULPEvidence == record.EvidenceRFC8797:
		return RulePrivateData
	case c.ULP == record.ULPRPCRDMA:
		return RuleService
	case c.ULP != "":
		return RuleOtherULP // its private data, magic or port named another
	}
	return RuleUndecided
}

// heuristicTries is how many Sends the heuristic looks at before it
// decides the connection is not RPC-over-RDMA.
const heuristicTries = 4

// looksRPCRDMA is the heuristic on one Send, whose header h decoded with
// err: +1 when the Send is an RPC-over-RDMA version 1 message carrying its
// RPC message (RDMA_MSG) whose XID repeats rdma_xid, -1 when it cannot be
// one, 0 when it may be one but says too little (a valid RDMA_NOMSG or
// RDMA_ERROR, which carry no RPC XID to compare).
func looksRPCRDMA(h *layers.RPCRDMAHeader, err error, s *Send) int {
	if err != nil {
		if !s.HeadWhole {
			return 0 // its header is not all in the octets kept
		}
		return -1
	}
	if h.Vers != layers.RPCRDMAVersion || !h.HasBody {
		return -1
	}
	switch h.Proc {
	case layers.RPCRDMAMsg:
		if h.HasRPCXID && h.RPCXID == h.XID && h.HasRPCMsgType && h.RPCMsgType <= 1 {
			return 1
		}
		return -1
	case layers.RPCRDMANoMsg:
		if len(h.ReadList) == 0 && len(h.WriteList) == 0 && !h.HasReplyChunk || len(h.Payload) > 0 {
			return -1
		}
		return 0
	case layers.RPCRDMAError:
		if layers.RPCRDMAErrName(h.Err) == "" || len(h.Payload) > 0 {
			return -1
		}
		return 0
	}
	return -1 // RDMA_MSGP and RDMA_DONE are no longer sent
}
