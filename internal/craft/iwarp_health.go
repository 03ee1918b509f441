package craft

import (
	"fmt"
	"slices"
)

// The TCP transport cases of an iWARP connection, each on the NFS traffic
// of NFSTraffic (iwarp_nfs.go), so that a test can make each on demand
// (rdmacm-pd craft --transport iwarp --tcp-health CASE):
//
//   - retransmit: the initiator's third data segment (its second Call's
//     FPDU) is sent a second time, right after the first;
//   - missing: a segment in the middle of the responder's RDMA Write of a
//     READ's data (data segment 22 of the default traffic) is left out of
//     the capture; the closing segments acknowledge it all the same;
//   - zero-window: after the first data segment, the responder advertises
//     a zero window, then opens it again;
//   - reset: the initiator ends the connection with an RST instead of FINs.
//
// The connection closes with a FIN each way, but for reset.

// TCPHealth cases.
const (
	TCPRetransmit = "retransmit"
	TCPMissing    = "missing"
	TCPZeroWindow = "zero-window"
	TCPReset      = "reset"
)

// TCPHealthCases are the cases TCPHealthTraffic writes.
var TCPHealthCases = []string{TCPRetransmit, TCPMissing, TCPZeroWindow, TCPReset}

// The data segments the cases act on (counted from 0 after the Reply):
// the initiator's second Call is sent again; a segment of the responder's
// last RDMA Write is lost.
const (
	tcpResent = 2
	tcpLost   = 22
)

// TCPHealthTraffic writes an RFC 8797 iWARP setup and the NFS traffic of t
// after it, with the TCP cases asked for.
func (x *IWARPExchange) TCPHealthTraffic(cases []string, t Traffic) ([]Frame, error) {
	xx := *x
	xx.Close = true
	for _, c := range cases {
		switch c {
		case TCPRetransmit:
			xx.Retransmit = append(slices.Clone(xx.Retransmit), tcpResent)
		case TCPMissing:
			xx.Drop = append(slices.Clone(xx.Drop), tcpLost)
		case TCPZeroWindow:
			xx.ZeroWindow = append(slices.Clone(xx.ZeroWindow), 0)
		case TCPReset:
			xx.Reset, xx.Close = true, false
		default:
			return nil, fmt.Errorf("craft: unknown TCP case %q (want %v)", c, TCPHealthCases)
		}
	}
	return xx.NFSTraffic(t)
}
