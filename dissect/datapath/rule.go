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

// NFSRDMAPort is the port of NFS/RDMA (RFC 8166, section 5; RFC 8267).
const NFSRDMAPort = 20049

func (r Rule) String() string {
	switch r {
	case RulePrivateData:
		return "RFC 8797 private data"
	case RuleService:
		return "NFS/RDMA port 20049"
	case RuleHeuristic:
		return "heuristic: first Sends parse as RPC-over-RDMA"
	case RuleNone:
		return "not RPC-over-RDMA"
	case RuleOtherULP:
		return "another upper layer"
	}
	return "undecided"
}

// IsRPCRDMA reports whether the rule says the connection carries
// RPC-over-RDMA.
func (r Rule) IsRPCRDMA() bool { return r == RulePrivateData || r == RuleService || r == RuleHeuristic }

// Classify decides from a connection's setup whether it carries
// RPC-over-RDMA: either peer sent RFC 8797 data, or the service is NFS/RDMA
// (an IP CM Service ID, or an iWARP responder port, of 20049). A connection
// whose setup names another upper layer (issue 18's ULP) is not. Otherwise it
// returns RuleUndecided, and the Checker decides from the first Sends. This
// is the one place that knows the rule; what other upper layers a
// connection's private data shows can join it here.
func Classify(c *record.Connection) Rule {
	switch {
	case c.InitiatorRPCRDMA != nil || c.ResponderRPCRDMA != nil:
		return RulePrivateData
	case c.ULP != "" && c.ULP != record.ULPRPCRDMA:
		return RuleOtherULP // its private data, magic or port named another
	case c.HasServiceID && layers.IsIPCMServiceID(c.ServiceID) && layers.IPCMPort(c.ServiceID) == NFSRDMAPort:
		return RuleService
	case c.HasPort && c.Port == NFSRDMAPort:
		return RuleService
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
