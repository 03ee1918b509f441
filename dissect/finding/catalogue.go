package finding

import "fmt"

// Code names a kind of finding. Codes are listed in catalogue order, which
// is the order the JSON summary counts them in; their String is the stable
// kebab-case name.
type Code uint8

// The codes.
const (
	RPCRDMAAbsent Code = iota + 1
	RPCRDMAVersionUnknown
	RPCRDMATruncated
	RPCRDMAReservedNonzero
	RPCRDMAMultiple
	RPCRDMAUnexpectedOffset
	ICRCMismatch
	VCRCMismatch
	CaptureTruncated
	LengthMismatch
	ICRCAbsent
	CMUndecodable
	IPFragmentSkipped
	MADUnexpectedHeader
	CMNotGSI
	CMIPHeaderInvalid
	MPAPDTooLong
	MPARevUnknown
	MPAReservedNonzero
	MPAEnhancedMismatch
	PDCapacityTooSmall
	MPATruncated
	TCPRetransmissionMismatch
	MPAReject
	RPCRDMAOneSided
	RemoteInvalidationOneSided
	PropertiesChangedOnReconnect
	ReplyMissing
	ConnectionRejected
	StateLimitReached
	InlineThresholdExceeded
	SendWithInvalidateNotAllowed
	InvalidateSTagUnknown
	CreditsExceeded
	RPCRDMAHeaderInvalid
	RPCRDMAErrorReply
	RDMAReadLimitExceeded
	MPACRCMismatch
	MPACRCMissing
	RDMAPTerminate
	FPDUFramingLost
	ULPPrivateDataInvalid
	NVMeRDMARejected
	ISERSendWithInvalidateUnsupported
	RecordLengthInconsistent
	IPLengthZero
	IPv6ChainTooLong
	TimestampOutOfRange
	RCPacketLengthInvalid
	RDMALengthInvalid
	RunInterrupted
	RPCReplyError
	RPCCallUnanswered
	RPCCallResent
	ChunkViolation
	InlineThresholdTooSmall
	RCNAK
	RCRNRNAK
	RCRetransmission
	RCPacketsMissing
	RoCECongestion
	RPCRDMANotRC
	TCPRetransmission
	TCPSegmentsMissing
	TCPReset
)

// Check describes one finding code: its fixed severity, the specification
// it rests on, and what it means.
type Check struct {
	Code      Code
	Name      string // the kebab-case code, as in the JSON output
	Severity  Severity
	Reference string
	Summary   string
}

// catalogue is indexed by Code - 1.
var catalogue = [...]Check{
	{RPCRDMAAbsent, "rpcrdma-absent", Info, "RFC 8797, section 5.1; RFC 8166, section 3.3.3",
		"A REQ, REP, REJ or MPA frame carries no usable RPC-over-RDMA private data: this peer is taken to use 1024-octet inline thresholds and no remote invalidation."},
	{RPCRDMAVersionUnknown, "rpcrdma-version-unknown", Warning, "RFC 8797, section 4",
		"The Format Identifier is present but its Version is not 1; a receiver ignores the message, so it counts as absent."},
	{RPCRDMATruncated, "rpcrdma-truncated", Warning, "RFC 8797, section 4",
		"The Format Identifier is present but fewer than 8 octets of the private data remain after it."},
	{RPCRDMAReservedNonzero, "rpcrdma-reserved-nonzero", Warning, "RFC 8797, section 4",
		"Senders must zero the Reserved bits; receivers ignore them."},
	{RPCRDMAMultiple, "rpcrdma-multiple", Warning, "RFC 8797, section 4",
		"The Format Identifier occurs more than once in the private data; the first usable occurrence is the one decoded."},
	{RPCRDMAUnexpectedOffset, "rpcrdma-unexpected-offset", Info, "RFC 8797, section 4",
		"The message is not where its carrier puts it (offset 0; 36 after an IP CM header; 4 after the MPA v2 IRD/ORD words), so it may be a chance match. Linux looks only at the expected offset."},
	{ICRCMismatch, "icrc-mismatch", Warning, "IBTA Vol 1, section 7.8.1; RoCEv2 Annex A17",
		"The Invariant CRC does not match the packet: it was damaged, or the capturing device rewrote it."},
	{VCRCMismatch, "vcrc-mismatch", Warning, "IBTA Vol 1, section 7.8.2",
		"The Variant CRC of a native InfiniBand packet does not match the packet."},
	{CaptureTruncated, "capture-truncated", Warning, "pcap snap length",
		"The capture's snap length cut the frame (its captured length is less than its original length) inside the message or before its CRC, so part of it could not be decoded or checked."},
	{LengthMismatch, "length-mismatch", Warning, "IBTA Vol 1, sections 7.7.8 (LRH PktLen) and 8.3.1 (GRH PayLen); RFC 768; RFC 791; RFC 8200; ERF record format",
		"A length field of the packet's headers (UDP Length, IPv4 Total Length, IPv6 Payload Length, GRH PayLen, LRH PktLen, or the ERF header's rlen and wlen) disagrees with a frame the capture did not cut: it says the packet is longer than the frame, is too small for the headers, or cuts the message short."},
	{ICRCAbsent, "icrc-absent", Info, "IBTA Vol 1, section 7.8.1; RoCEv2 Annex A17",
		"The frame is complete (nothing cut by the snap length) but ends exactly where its ICRC would start: the capturing device stripped the ICRC (and VCRC), so it is not checked."},
	{CMUndecodable, "cm-undecodable", Warning, "IBTA Vol 1, section 13.4; rdmacm-pd dissector",
		"Frames that look like CM MADs (a UD SEND with management class 0x07) but whose headers do not decode as far as the MAD, though the capture did not cut them: they are not shown as messages. The finding names the first and why it stopped."},
	{IPFragmentSkipped, "ip-fragment-skipped", Warning, "RFC 791, section 3.2; RFC 8200, section 4.5; rdmacm-pd dissector",
		"First IP fragments whose transport header shows the start of a CM MAD (UDP to a RoCEv2 port) or of an MPA frame: fragments are not reassembled, so these are not shown as messages. The finding counts them per input and names the first."},
	{MADUnexpectedHeader, "mad-unexpected-header", Warning, "IBTA Vol 1, sections 13.4.2 and 12.6",
		"A Communication Manager MAD with a Base Version other than 1 or a Class Version other than 2."},
	{CMNotGSI, "cm-not-gsi", Warning, "IBTA Vol 1, sections 12.6 and 13.5.1",
		"A Communication Manager MAD not addressed to QP1 (the General Services Interface) or not carrying the GSI Q_Key 0x80010000."},
	{CMIPHeaderInvalid, "cm-ip-header-invalid", Warning, "IBTA Vol 1, Annex A11",
		"The Service ID carries the IP CM prefix but the private data does not start with a well-formed 36-octet IP CM header."},
	{MPAPDTooLong, "mpa-pd-too-long", Warning, "RFC 5044, section 7.1.1",
		"PD_Length is over 512, the most private data an MPA Request or Reply may carry; what is there is still decoded."},
	{MPARevUnknown, "mpa-rev-unknown", Warning, "RFC 5044, section 7.1.1; RFC 6581, section 6",
		"The MPA revision is neither 1 (RFC 5044) nor 2 (RFC 6581)."},
	{MPAReservedNonzero, "mpa-reserved-nonzero", Warning, "RFC 5044, section 7.1.1; RFC 6581, section 6",
		"Reserved flag bits of an MPA frame are set (or the Reply-only R bit in a Request)."},
	{MPAEnhancedMismatch, "mpa-enhanced-mismatch", Warning, "RFC 6581, section 6",
		"The enhanced connection establishment flag (0x10) disagrees with the revision: set with revision 1, or missing with revision 2."},
	{PDCapacityTooSmall, "pd-capacity-too-small", Warning, "RFC 8797, section 4; RFC 6581, section 9",
		"The private data left after the MPA revision 2 IRD/ORD words is shorter than the 8 octets of the RPC-over-RDMA message."},
	{MPATruncated, "mpa-truncated", Warning, "RFC 5044, section 7.1.1",
		"The stream (or the capture) ends before the PD_Length octets of private data arrived."},
	{TCPRetransmissionMismatch, "tcp-retransmission-mismatch", Warning, "RFC 9293, section 3.10.7.4",
		"Two copies of the same TCP octets of an MPA frame (a retransmission or overlapping segments) differ; the first copy is shown, and the receiving TCP may have kept the other."},
	{MPAReject, "mpa-reject", Info, "RFC 5044, section 7.1.1",
		"The MPA Reply rejects the connection (R set); it may still carry private data."},
	{RPCRDMAOneSided, "rpcrdma-one-sided", Info, "RFC 8797, section 5.1",
		"Only one peer of the connection sent usable RPC-over-RDMA private data; the other counts as Send Size 1024, Receive Size 1024, R=0."},
	{RemoteInvalidationOneSided, "remote-invalidation-one-sided", Info, "RFC 8797, section 4.1",
		"One peer set R, the other did not: the responder replies with plain Send, never Send With Invalidate."},
	{PropertiesChangedOnReconnect, "properties-changed-on-reconnect", Info, "RFC 8797, section 3",
		"The same initiator, responder and service connected again and negotiated different properties; peers must be prepared for this."},
	{ReplyMissing, "reply-missing", Info, "IBTA Vol 1, section 12.6; RFC 5044, section 7.1",
		"No reply (REP, REJ or MPA Reply) to the request was seen by the end of the capture."},
	{ConnectionRejected, "connection-rejected", Info, "IBTA Vol 1, section 12.6.7; RFC 5044, section 7.1",
		"The responder (or the initiator, of a REP) rejected the connection."},
	{StateLimitReached, "state-limit-reached", Warning, "rdmacm-pd resource limits (docs/cli.md)",
		"A memory or state limit of the dissector was reached: a stream or connection was given up or not fully buffered. Raise the limit to see all."},
	{InlineThresholdExceeded, "inline-threshold-exceeded", Error, "RFC 8166, section 3.3.2; RFC 8797, sections 3.1 and 4.2",
		"An RDMA Send longer than the inline threshold its direction negotiated (1024 octets from or to a side that sent no RFC 8797 data): the receiver cannot take it, and the connection is usually lost."},
	{SendWithInvalidateNotAllowed, "send-with-invalidate-not-allowed", Warning, "RFC 8797, section 4.1",
		"A Send With Invalidate where RFC 8797 allows none: on a connection where a peer cleared R (or sent no RFC 8797 data), or from the initiator."},
	{InvalidateSTagUnknown, "invalidate-stag-unknown", Error, "RFC 8797, section 4.1",
		"A Send With Invalidate whose R_Key is not among the STags the outstanding Call with the same XID advertised: the requester may lose a registration it still uses."},
	{CreditsExceeded, "credits-exceeded", Warning, "RFC 8166, sections 3.3.1 and 3.3.3",
		"A Call that makes the Calls outstanding more than the responder's latest credit grant (1 before its first Reply)."},
	{RPCRDMAHeaderInvalid, "rpcrdma-header-invalid", Error, "RFC 8166, sections 4.2, 4.3 and 4.5.2",
		"On an RPC-over-RDMA connection, a Send whose transport header a receiver must reject: a version other than 1, an unknown procedure, chunk lists that do not parse or run past the Send, an RDMA_NOMSG without chunks, or an RPC XID that differs from rdma_xid."},
	{RPCRDMAErrorReply, "rpcrdma-error-reply", Warning, "RFC 8166, section 4.5",
		"The responder answered a Call with RDMA_ERROR: ERR_VERS (with the versions it supports) or ERR_CHUNK."},
	{RDMAReadLimitExceeded, "rdma-read-limit-exceeded", Error, "IBTA Vol 1, section 12.6 (CM REQ and REP: Responder Resources, Initiator Depth); RFC 6581, section 9.1 (MPA IRD and ORD)",
		"More RDMA Read (and atomic) requests outstanding from one side than the connection setup allows it: the lower of its own Initiator Depth (iWARP: ORD) and the other side's Responder Resources (IRD)."},
	{MPACRCMismatch, "mpa-crc-mismatch", Warning, "RFC 5044, sections 4.4 and 7.1.1",
		"CRC is in use on the iWARP connection, and an FPDU's CRC field does not match the CRC32c of its octets."},
	{MPACRCMissing, "mpa-crc-missing", Warning, "RFC 5044, sections 4.1 and 7.1.1",
		"An FPDU's CRC field is zero although an MPA frame asked for CRC, or it is not zero although neither did (the RFC lets it hold anything then, and the receiver must not check it: a sign that the peers disagree about CRC)."},
	{RDMAPTerminate, "rdmap-terminate", Warning, "RFC 5040, section 4.8; RFC 5041, section 7.2",
		"A peer sent an RDMAP Terminate: the layer, error type and code say what it found wrong (an inline overrun shows as DDP, untagged buffer, message too long)."},
	{FPDUFramingLost, "fpdu-framing-lost", Warning, "RFC 5044, sections 4.1 to 4.3",
		"The FPDUs of a direction could not be followed further (a length, a marker or a header that cannot be right); nothing after it in that direction is decoded."},
	{ULPPrivateDataInvalid, "ulp-private-data-invalid", Warning, "NVMe RDMA Transport Specification 1.0, section 3.1; IBTA Vol 1, Annexes A4 and A12; T10 SRP; RFC 4755, section 6",
		"The private data claims an upper layer (by its Service ID or TCP port, or by a magic number) but does not fit that layer's layout; the message names the field."},
	{NVMeRDMARejected, "nvme-rdma-rejected", Info, "NVMe RDMA Transport Specification 1.0, sections 3.1 (Figure 7) and 3.5 (Figure 11)",
		"An NVMe over Fabrics controller rejected the host's RDMA_CM_REQUEST; the message names the status."},
	{ISERSendWithInvalidateUnsupported, "iser-send-with-invalidate-unsupported", Warning, "IBTA Vol 1, Annex A12",
		"The iSER target sent a Send With Invalidate although the initiator's iSER CM header said it does not support Send With Invalidate."},
	{RecordLengthInconsistent, "record-length-inconsistent", Warning, "draft-ietf-opsawg-pcap, section 5; draft-ietf-opsawg-pcapng, section 4.3",
		"A capture record's captured length exceeds the file's (or interface's) snap length, or the record's original length: the record is read as its captured length says, and reading goes on with the next one."},
	{IPLengthZero, "ip-length-zero", Info, "RFC 791, section 3.1; RFC 8200, section 3",
		"The IPv4 Total Length (or IPv6 Payload Length) is 0, as segmentation offload (TSO, LRO, GRO) leaves it in captures: the packet's length is taken from the frame (or the UDP Length)."},
	{IPv6ChainTooLong, "ipv6-chain-too-long", Warning, "RFC 8200, section 4.1; RFC 7112",
		"IPv6 packets whose extension header chain is longer than the dissector follows (16 headers): what they carry was not looked at."},
	{TimestampOutOfRange, "timestamp-out-of-range", Warning, "draft-ietf-opsawg-pcapng, sections 4.2 (if_tsresol, if_tsoffset) and 4.3 (Timestamp)",
		"A capture record's timestamp, counted in the interface's if_tsresol units since 1970-01-01 00:00:00 UTC and moved by its if_tsoffset, falls outside the years 1970 to 9999: the frame is shown without a time (null in JSON) and left out of the input's first and last times."},
	{RCPacketLengthInvalid, "rc-packet-length-invalid", Warning, "IBTA Vol 1, chapter 9, compliance statement C9-92 (packet payload length against the path MTU)",
		"A SEND packet of a connection whose path MTU the REQ gave breaks the rule on its payload length: a First or Middle packet that does not carry exactly the path MTU, a Last or Only packet that carries more. The Send it belongs to is not judged against the inline threshold."},
	{RDMALengthInvalid, "rdma-length-invalid", Warning, "IBTA Vol 1, chapter 9, compliance statement C9-94 (RETH DMA Length at most 2^31)",
		"An RDMA READ Request or RDMA WRITE whose RETH DMA Length is over 2^31 octets, the largest message: the responder rejects it. The PSNs a READ Request of that length takes are still counted."},
	{RunInterrupted, "run-interrupted", Warning, "rdmacm-pd exit codes (docs/cli.md)",
		"An interrupt (Ctrl-C, SIGTERM) ended the reading of a file or standard input before its end: everything decoded until then is reported, but the results are partial (exit 130). A live capture, which an interrupt ends normally, never gets it."},
	{RPCReplyError, "rpc-reply-error", Warning, "RFC 5531, section 9",
		"An RPC Reply that was denied (RPC_MISMATCH, AUTH_ERROR) or accepted without SUCCESS (PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR): the Call it answers was not carried out."},
	{RPCCallUnanswered, "rpc-call-unanswered", Info, "RFC 5531, section 9",
		"RPC Calls that no Reply with the same XID answered by the end of their connection (or of the capture)."},
	{RPCCallResent, "rpc-call-resent", Info, "RFC 5531, section 9",
		"An RPC Call sent again with the same XID while the first copy had no Reply: on the same connection, or on a later connection between the same two hosts (the Linux client retransmits after it reconnects)."},
	{ChunkViolation, "chunk-violation", Warning, "RFC 8166, sections 3.4 and 4.5.3",
		"An RDMA Write or Read outside every segment the outstanding Calls advertised (a handle nobody advertised, or octets past a segment's end), or a Reply whose write list or reply chunk claims more than its Call offered or a handle it did not offer."},
	{InlineThresholdTooSmall, "inline-threshold-too-small", Info, "RFC 8166, sections 3.3.2 and 3.5.3; RFC 8797, section 4.2",
		"Messages went long (a Long Call in a read chunk, a Long Reply in a reply chunk) that a larger inline threshold, which RFC 8797 can express, would have carried inline: which peer's Send Size or Receive Size would have to change, and to what."},
	{RCNAK, "rc-nak", Warning, "IBTA Vol 1, sections 9.3 (AETH) and 9.7.5.2 (NAK codes)",
		"A side of an RC connection sent NAKs: a PSN sequence error (packets lost on the wire, sent again from there), an invalid request (such as a Send longer than the receive buffer), a remote access error (an RDMA Write or Read outside a registered region), a remote operational error or an invalid RD request. Counted by code, once per direction, with the first frames and, for the first of each code, the request it answered."},
	{RCRNRNAK, "rc-rnr-nak", Warning, "IBTA Vol 1, section 9.7.5.2.8 (RNR NAK); RFC 8166, section 3.3.1 (credits)",
		"A side of an RC connection sent Receiver Not Ready NAKs: it had no receive buffer posted for a Send, which RPC-over-RDMA's credits exist to prevent. The requester retries after the RNR timer. The finding says how many Calls were outstanding against the credits granted."},
	{RCRetransmission, "rc-retransmission", Info, "IBTA Vol 1, section 9.7 (reliable service: the requester sends again from a NAK's PSN, or after a local ACK timeout)",
		"A side of an RC connection sent request packets (or READ Response packets) again: after a NAK, or after a local ACK timeout when none came. Counted in packets, with the time from the NAK (or the first copy) to each retransmission."},
	{RCPacketsMissing, "rc-packets-missing", Info, "IBTA Vol 1, section 9.7 (PSN sequence); pcap capture",
		"Request packets of an RC connection whose PSNs the capture never showed and no NAK named: the capture lost them, not the wire (a receiver that missed them would have sent a NAK). Every count of the connection is then a lower bound."},
	{RoCECongestion, "roce-congestion", Info, "RoCEv2 Annex A17.9.3 (CNP); RFC 3168, section 5 (ECN CE); IBTA Vol 1, Annex A10 (FECN, BECN)",
		"Congestion on a direction of an RC connection: RoCEv2 packets that arrived marked CE, the CNPs the receiver sent back, or native InfiniBand packets with FECN or BECN set. The sender is meant to slow down (DCQCN on RoCEv2)."},
	{RPCRDMANotRC, "rpcrdma-not-rc", Warning, "RFC 8797, section 7 (Security Considerations); IBTA Vol 1, section 12.6 (REQ Transport Service Type)",
		"A REQ carries RPC-over-RDMA private data but asks for a Transport Service Type other than Reliable Connected (UC, RD or a reserved value): RPC-over-RDMA runs on RC queue pairs only, and its security considerations rest on them."},
	{TCPRetransmission, "tcp-retransmission", Info, "RFC 9293, sections 3.8.1 (retransmission timeout) and 3.8.2 (congestion control: fast retransmit)",
		"A side of an iWARP connection sent TCP segments again whose every octet the capture had shown before: after a retransmission timeout or a fast retransmit (a segment that brings new octets with old ones is not counted). Counted in segments, once per direction, with the first frames; unlike tcp-retransmission-mismatch, the copies are not compared."},
	{TCPSegmentsMissing, "tcp-segments-missing", Info, "RFC 9293, section 3.4 (sequence numbers); pcap capture",
		"Gaps in the TCP sequence of a side of an iWARP connection that nothing filled by the end of the connection or the capture, while the peer acknowledged octets past them or the stream went on past them: the capture lost those segments, not the wire. Counted in gaps, once per direction; every count of the connection is then a lower bound."},
	{TCPReset, "tcp-reset", Warning, "RFC 9293, sections 3.5.2 (reset generation) and 3.6 (closing a connection: an abort)",
		"A side of an iWARP connection reset its TCP connection (an RST within the window) before the connection was closed with a FIN each way: an abort, which loses what was in flight. The finding names the frame and the Calls still outstanding when the connection's traffic ended."},
}

// Check returns the catalogue entry of c; an unknown code has an empty entry.
func (c Code) Check() Check {
	if c < 1 || int(c) > len(catalogue) {
		return Check{Code: c}
	}
	return catalogue[c-1]
}

// String is the code's kebab-case name.
func (c Code) String() string {
	if e := c.Check(); e.Name != "" {
		return e.Name
	}
	return fmt.Sprintf("code-%d", uint8(c))
}

// Catalogue lists every code, in order.
func Catalogue() []Check { return catalogue[:] }

var byName = func() map[string]Code {
	m := make(map[string]Code, len(catalogue))
	for _, e := range catalogue {
		m[e.Name] = e.Code
	}
	return m
}()

// Lookup finds a code by its kebab-case name.
func Lookup(name string) (Code, bool) {
	c, ok := byName[name]
	return c, ok
}
