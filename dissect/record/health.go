package record

import "time"

// Health is what a connection's traffic showed of its transport, each
// pair indexed by the side that sent it: 0 the initiator, 1 the responder.
// On the InfiniBand family (RC) it counts the Acknowledge packets by their
// AETH, the retransmitted and missing packets, the congestion marks and
// the octets moved; on iWARP (TCP) the TCP segments retransmitted and
// missing, the zero windows and the resets.
type Health struct {
	// Kind says which half applies: HealthRC or HealthTCP ("" when none).
	Kind string

	// ACKs counts the Acknowledge packets whose AETH is an ACK; NAKs the
	// NAKs by code (NAKCodes); RNRNAKs the RNR NAKs.
	ACKs    [2]int
	NAKs    [2][NAKCodeCount]int
	RNRNAKs [2]int
	// Retransmitted counts the request packets (and READ Response packets)
	// sent again; Missing the request packets whose PSN the capture never
	// showed and no NAK named.
	Retransmitted [2]int
	Missing       [2]int
	// RetransmitMin and RetransmitMax are the shortest and longest time
	// from the NAK (or the first copy) to a retransmission, when
	// HasRetransmitDelay.
	RetransmitMin, RetransmitMax [2]time.Duration
	HasRetransmitDelay           [2]bool
	// CNPs counts the RoCEv2 Congestion Notification Packets a side sent;
	// ECNCE the RoCEv2 packets it sent that arrived marked CE.
	CNPs  [2]int
	ECNCE [2]int
	// Octets counts the payload octets of the packets a side sent (first
	// copies only), by kind (OctetsSend, OctetsWrite, OctetsReadResponse).
	Octets [2][3]int64
	// DSCP is the DSCP of a side's traffic (the first packet's), and
	// CNPDSCP that of the CNPs, when known (RoCEv2).
	DSCP       [2]uint8
	HasDSCP    [2]bool
	CNPDSCP    uint8
	HasCNPDSCP bool
	// FECN and BECN count the packets a side sent with the BTH's FECN or
	// BECN bit set (native InfiniBand congestion control).
	FECN, BECN [2]int

	// TCP (iWARP): segments sent again, gaps in the sequence that nothing
	// filled, segments that advertised a zero window, resets.
	TCPRetransmitted [2]int
	TCPMissing       [2]int
	TCPZeroWindows   [2]int
	TCPResets        [2]int
}

// Kinds of Health.
const (
	HealthRC  = "rc"
	HealthTCP = "tcp"
)

// The NAK codes of the AETH (IBTA Vol 1, section 9.7.5.2.4), as NAKs
// indexes them; NAKCodes names them as the JSON output does.
const (
	NAKPSNSequenceError = iota
	NAKInvalidRequest
	NAKRemoteAccessError
	NAKRemoteOperationalError
	NAKInvalidRDRequest
	NAKCodeCount
)

// NAKCodes are the NAK codes' names, by code.
var NAKCodes = [NAKCodeCount]string{"psn_sequence_error", "invalid_request", "remote_access_error",
	"remote_operational_error", "invalid_rd_request"}

// Octet kinds, as Octets indexes them; OctetKinds names them.
const (
	OctetsSend = iota
	OctetsWrite
	OctetsReadResponse
)

// OctetKinds are the octet kinds' names, by kind.
var OctetKinds = [3]string{"send", "write", "read_response"}

// NAKTotal is how many NAKs (of any code) and RNR NAKs a side sent.
func (h *Health) NAKTotal(side int) int {
	n := h.RNRNAKs[side]
	for _, v := range h.NAKs[side] {
		n += v
	}
	return n
}
