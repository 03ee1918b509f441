package decode

import "github.com/rdmacm-pd/rdmacm-pd/dissect/finding"

// RPC-over-RDMA runs on Reliable Connected queue pairs (RFC 8797's
// security considerations rest on them): a REQ that carries its private
// data and asks for another Transport Service Type gets rpcrdma-not-rc.

// serviceTypes name the REQ's Transport Service Types (2 bits).
var serviceTypes = [4]string{"RC", "UC", "RD", "reserved"}

// notRC adds rpcrdma-not-rc to the findings of a REQ with RFC 8797 data
// whose Transport Service Type is st.
func notRC(fs []finding.Finding, st uint8) []finding.Finding {
	if st == 0 {
		return fs
	}
	return append(fs, finding.New(finding.RPCRDMANotRC,
		"the REQ carries RPC-over-RDMA private data but asks for Transport Service Type %d (%s), not RC: RPC-over-RDMA runs on Reliable Connected queue pairs only",
		st, serviceTypes[st&0x03]))
}
