package dissect

import (
	"fmt"
	"strings"
)

// Severity ranks a finding.
type Severity uint8

// Severities, in increasing order.
const (
	Info Severity = iota + 1
	Warning
	Error
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return "none"
}

// ParseSeverity reads "info", "warning" or "error".
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(s) {
	case "info":
		return Info, nil
	case "warning":
		return Warning, nil
	case "error":
		return Error, nil
	}
	return 0, fmt.Errorf("unknown severity %q (want info, warning or error)", s)
}

// Finding is one validation result on a message or a connection.
type Finding struct {
	Code      string
	Severity  Severity
	Message   string
	Reference string
}

// Check describes one finding code: its fixed severity, the specification
// it rests on, and what it means. The catalogue is the public contract of
// finding codes; docs/findings.md documents each entry.
type Check struct {
	Code      string
	Severity  Severity
	Reference string
	Summary   string
}

// Catalogue lists every finding code the dissector can produce.
var Catalogue = []Check{
	{"rpcrdma-absent", Info, "RFC 8797, section 5.1; RFC 8166, section 3.3.3",
		"A REQ, REP, REJ or MPA frame carries no usable RPC-over-RDMA private data: this peer is taken to use 1024-octet inline thresholds and no remote invalidation."},
	{"rpcrdma-version-unknown", Warning, "RFC 8797, section 4",
		"The Format Identifier is present but its Version is not 1; a receiver ignores the message, so it counts as absent."},
	{"rpcrdma-truncated", Warning, "RFC 8797, section 4",
		"The Format Identifier is present but fewer than 8 octets of the private data remain after it."},
	{"rpcrdma-reserved-nonzero", Warning, "RFC 8797, section 4",
		"Senders must zero the Reserved bits; receivers ignore them."},
	{"rpcrdma-multiple", Warning, "RFC 8797, section 4",
		"The Format Identifier occurs more than once in the private data; the first usable occurrence is the one decoded."},
	{"rpcrdma-unexpected-offset", Info, "RFC 8797, section 4",
		"The message is not where its carrier puts it (offset 0; 36 after an IP CM header; 4 after the MPA v2 IRD/ORD words), so it may be a chance match. Linux looks only at the expected offset."},
	{"icrc-mismatch", Warning, "IBTA Vol 1, section 7.8.1; RoCEv2 Annex A17",
		"The Invariant CRC does not match the packet: it was damaged, or the capturing device rewrote it."},
	{"vcrc-mismatch", Warning, "IBTA Vol 1, section 7.8.2",
		"The Variant CRC of a native InfiniBand packet does not match the packet."},
	{"capture-truncated", Warning, "pcap snap length",
		"The capture's snap length cut the frame (its captured length is less than its original length) inside the message or before its CRC, so part of it could not be decoded or checked."},
	{"length-mismatch", Warning, "IBTA Vol 1, sections 7.7.8 (LRH PktLen) and 8.3.1 (GRH PayLen); RFC 768; RFC 791; RFC 8200; ERF record format",
		"A length field of the packet's headers (UDP Length, IPv4 Total Length, IPv6 Payload Length, GRH PayLen, LRH PktLen, or the ERF header's rlen and wlen) disagrees with a frame the capture did not cut: it says the packet is longer than the frame, is too small for the headers, or cuts the message short."},
	{"icrc-absent", Info, "IBTA Vol 1, section 7.8.1; RoCEv2 Annex A17",
		"The frame is complete (nothing cut by the snap length) but ends exactly where its ICRC would start: the capturing device stripped the ICRC (and VCRC), so it is not checked."},
	{"cm-undecodable", Warning, "IBTA Vol 1, section 13.4; rdmacm-pd dissector",
		"Frames that look like CM MADs (a UD SEND with management class 0x07) but whose headers do not decode as far as the MAD, though the capture did not cut them: they are not shown as messages. The finding names the first and why it stopped."},
	{"ip-fragment-skipped", Warning, "RFC 791, section 3.2; RFC 8200, section 4.5; rdmacm-pd dissector",
		"First IP fragments whose transport header shows the start of a CM MAD (UDP to a RoCEv2 port) or of an MPA frame: fragments are not reassembled, so these are not shown as messages. The finding counts them per input and names the first."},
	{"mad-unexpected-header", Warning, "IBTA Vol 1, sections 13.4.2 and 12.6",
		"A Communication Manager MAD with a Base Version other than 1 or a Class Version other than 2."},
	{"cm-not-gsi", Warning, "IBTA Vol 1, sections 12.6 and 13.5.1",
		"A Communication Manager MAD not addressed to QP1 (the General Services Interface) or not carrying the GSI Q_Key 0x80010000."},
	{"cm-ip-header-invalid", Warning, "IBTA Vol 1, Annex A11",
		"The Service ID carries the IP CM prefix but the private data does not start with a well-formed 36-octet IP CM header."},
	{"mpa-pd-too-long", Warning, "RFC 5044, section 7.1",
		"PD_Length is over 512, the most private data an MPA Request or Reply may carry; what is there is still decoded."},
	{"mpa-rev-unknown", Warning, "RFC 5044, section 7.1; RFC 6581, section 7",
		"The MPA revision is neither 1 (RFC 5044) nor 2 (RFC 6581)."},
	{"mpa-reserved-nonzero", Warning, "RFC 5044, section 7.1; RFC 6581, section 7",
		"Reserved flag bits of an MPA frame are set (or the Reply-only R bit in a Request)."},
	{"mpa-enhanced-mismatch", Warning, "RFC 6581, section 7",
		"The enhanced connection establishment flag (0x10) disagrees with the revision: set with revision 1, or missing with revision 2."},
	{"pd-capacity-too-small", Warning, "RFC 8797, section 4; RFC 6581, section 7",
		"The private data left after the MPA revision 2 IRD/ORD words is shorter than the 8 octets of the RPC-over-RDMA message."},
	{"mpa-truncated", Warning, "RFC 5044, section 7.1",
		"The stream (or the capture) ends before the PD_Length octets of private data arrived."},
	{"tcp-retransmission-mismatch", Warning, "RFC 9293, section 3.10.7.4",
		"Two copies of the same TCP octets of an MPA frame (a retransmission or overlapping segments) differ; the first copy is shown, and the receiving TCP may have kept the other."},
	{"mpa-reject", Info, "RFC 5044, section 7.1",
		"The MPA Reply rejects the connection (R set); it may still carry private data."},
	{"rpcrdma-one-sided", Info, "RFC 8797, section 5.1",
		"Only one peer of the connection sent usable RPC-over-RDMA private data; the other counts as Send Size 1024, Receive Size 1024, R=0."},
	{"remote-invalidation-one-sided", Info, "RFC 8797, section 4.1",
		"One peer set R, the other did not: the responder replies with plain Send, never Send With Invalidate."},
	{"properties-changed-on-reconnect", Info, "RFC 8797, section 3",
		"The same initiator, responder and service connected again and negotiated different properties; peers must be prepared for this."},
	{"reply-missing", Info, "IBTA Vol 1, section 12.6; RFC 5044, section 7.1",
		"No reply (REP, REJ or MPA Reply) to the request was seen by the end of the capture."},
	{"connection-rejected", Info, "IBTA Vol 1, section 12.6.7; RFC 5044, section 7.1",
		"The responder (or the initiator, of a REP) rejected the connection."},
	{"state-limit-reached", Warning, "rdmacm-pd resource limits (docs/cli.md)",
		"A memory or state limit of the dissector was reached: a stream or connection was given up or not fully buffered. Raise the limit to see all."},
}

var catalogueIndex = func() map[string]*Check {
	m := make(map[string]*Check, len(Catalogue))
	for i := range Catalogue {
		m[Catalogue[i].Code] = &Catalogue[i]
	}
	return m
}()

// LookupCheck returns the catalogue entry of a code.
func LookupCheck(code string) (Check, bool) {
	c, ok := catalogueIndex[code]
	if !ok {
		return Check{}, false
	}
	return *c, true
}

// newFinding makes a finding of a catalogued code; an unknown code is a
// programming error caught by the tests.
func newFinding(code, format string, args ...any) Finding {
	c, ok := catalogueIndex[code]
	if !ok {
		panic("dissect: finding code not in the catalogue: " + code)
	}
	return Finding{Code: code, Severity: c.Severity, Message: fmt.Sprintf(format, args...), Reference: c.Reference}
}
