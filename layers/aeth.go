package layers

import (
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// AETH is the ACK Extended Transport Header (IBTA Vol 1, section 9.3) of an
// Acknowledge, an ATOMIC Acknowledge and the READ Response First, Last and
// Only packets.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------+-----------------------------------------------+
//	|   Syndrome    |                      MSN                      |
//	+---------------+-----------------------------------------------+
//
// The Syndrome's bits 6-5 say what it is: 00 ACK (bits 4-0 a credit count),
// 01 RNR NAK (bits 4-0 a timer), 11 NAK (bits 4-0 a code: 0 PSN sequence
// error, 1 invalid request, 2 remote access error, 3 remote operational
// error, 4 invalid RD request); bit 7 is reserved.
type AETH struct {
	golayers.BaseLayer
	Syndrome uint8  // Syndrome
	MSN      uint32 // Message Sequence Number (24 bits)

	// BTH is a setting, kept across decodes, as in RETH: its OpCode tells
	// NextLayerType whether AtomicAckETH follows (ATOMIC Acknowledge).
	BTH *BTH
}

// AETHLen is the size of the AETH.
const AETHLen = 4

// AETH syndrome kinds (bits 6-5).
const (
	SyndromeACK    = 0
	SyndromeRNRNAK = 1
	SyndromeNAK    = 3
)

// Kind is the syndrome's kind: SyndromeACK, SyndromeRNRNAK, SyndromeNAK (or 2,
// reserved).
func (a *AETH) Kind() uint8 { return a.Syndrome >> 5 & 0x03 }

// Value is the syndrome's low five bits: the credit count, RNR timer or NAK
// code.
func (a *AETH) Value() uint8 { return a.Syndrome & 0x1f }

// syndromeKinds says what the low five bits of each syndrome kind are; kind
// 2 is reserved and has none.
var syndromeKinds = [4]string{
	SyndromeACK:    "ACK, credit count",
	SyndromeRNRNAK: "RNR NAK, timer",
	SyndromeNAK:    "NAK, code",
}

// nakCodes names the NAK codes (see AETH); codes 5 to 31 are reserved.
var nakCodes = [...]string{
	"PSN sequence error",
	"invalid request",
	"remote access error",
	"remote operational error",
	"invalid RD request",
}

// SyndromeName says what a syndrome means, for people.
func SyndromeName(s uint8) string {
	kind, v := s>>5&0x03, s&0x1f
	if kind == SyndromeNAK && int(v) < len(nakCodes) {
		return "NAK: " + nakCodes[v]
	}
	if syndromeKinds[kind] == "" {
		return "reserved"
	}
	return fmt.Sprintf("%s %d", syndromeKinds[kind], v)
}

func (a *AETH) LayerType() gopacket.LayerType  { return LayerTypeAETH }
func (a *AETH) CanDecode() gopacket.LayerClass { return LayerTypeAETH }

// NextLayerType is AtomicAckETH in an ATOMIC Acknowledge (when the BTH is
// linked), the payload in a READ Response, nothing in an Acknowledge.
func (a *AETH) NextLayerType() gopacket.LayerType {
	op := uint8(OpReadResponseOnly)
	if a.BTH != nil {
		op = a.BTH.OpCode
	}
	return extNext(op, ltAETH, a.Payload)
}

// DecodeFromBytes decodes the AETH.
func (a *AETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*a = AETH{BTH: a.BTH}
	if err := need("aeth", data, AETHLen); err != nil {
		df.SetTruncated()
		return err
	}
	a.Syndrome = data[0]
	a.MSN = uint24(data[1:4])
	a.Contents = data[:AETHLen]
	a.Payload = data[AETHLen:]
	return nil
}

// SerializeTo writes the AETH.
func (a *AETH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(AETHLen)
	if err != nil {
		return err
	}
	h[0] = a.Syndrome
	putUint24(h[1:4], a.MSN)
	return nil
}

// Fields lists the AETH's fields for display.
func (a *AETH) Fields() []Field {
	f := make(fieldList, 0, 2)
	f.hex("Syndrome", "syndrome", 8, uint64(a.Syndrome))
	f.note(SyndromeName(a.Syndrome))
	f.dec("Message Sequence Number", "msn", uint64(a.MSN))
	return f
}

func decodeAETH(data []byte, p gopacket.PacketBuilder) error {
	a := &AETH{BTH: bthOf(p)}
	if err := a.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(a)
	return p.NextDecoder(a.NextLayerType())
}
