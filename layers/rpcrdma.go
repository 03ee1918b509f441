package layers

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// RPCRDMAPrivateData is the RPC-over-RDMA Version 1 CM Private Data message
// of RFC 8797, section 7.1: 8 octets that RPC-over-RDMA peers exchange in the
// connection manager's private data.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                  Format Identifier (0xf6ab0e18)               |
//	+---------------+-------------+-+---------------+---------------+
//	|    Version    |  Reserved   |R|   Send Size   | Receive Size  |
//	+---------------+-------------+-+---------------+---------------+
type RPCRDMAPrivateData struct {
	golayers.BaseLayer
	FormatIdentifier   uint32 // Format Identifier: 0xf6ab0e18
	Version            uint8  // Version: 1
	Reserved           uint8  // Reserved: bits 7..1 of octet 5, shifted down (senders zero them)
	RemoteInvalidate   bool   // R: remote invalidation supported for all STags this peer exposes
	SendSizeEncoded    uint8  // Send Size as sent: the largest Send this peer transmits is (value+1)*1024
	ReceiveSizeEncoded uint8  // Receive Size as sent: the largest Send this peer receives is (value+1)*1024
}

// RFC 8797 constants.
const (
	RPCRDMAFormatID = 0xf6ab0e18 // Format Identifier, IANA "RDMA-CM Private Data Identifiers"
	RPCRDMAVersion  = 1          // the only Version defined
	RPCRDMALen      = 8          // size of the message
	DefaultInline   = 1024       // inline threshold without the message (RFC 8166, section 3.3.3)
)

var rpcrdmaID = []byte{0xf6, 0xab, 0x0e, 0x18}

// SendSize and ReceiveSize decode the sizes, in octets.
func (m *RPCRDMAPrivateData) SendSize() int    { return DecodeInlineSize(m.SendSizeEncoded) }
func (m *RPCRDMAPrivateData) ReceiveSize() int { return DecodeInlineSize(m.ReceiveSizeEncoded) }

// DecodeInlineSize turns an encoded Send or Receive Size into octets.
func DecodeInlineSize(v uint8) int { return (int(v) + 1) * 1024 }

// EncodeInlineSize turns a size in octets into its encoding: a multiple of
// 1024 from 1024 to 262144.
func EncodeInlineSize(octets int) (uint8, error) {
	if octets < 1024 || octets > 256*1024 || octets%1024 != 0 {
		return 0, fmt.Errorf("inline size %d is not a multiple of 1024 between 1024 and 262144", octets)
	}
	return uint8(octets/1024 - 1), nil
}

func (m *RPCRDMAPrivateData) LayerType() gopacket.LayerType  { return LayerTypeRPCRDMA }
func (m *RPCRDMAPrivateData) CanDecode() gopacket.LayerClass { return LayerTypeRPCRDMA }

// NextLayerType is payload for whatever private data follows the message.
func (m *RPCRDMAPrivateData) NextLayerType() gopacket.LayerType {
	if len(m.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes the 8 octets at the start of data, whatever the
// identifier; SearchRPCRDMA is what decides whether they are the message.
func (m *RPCRDMAPrivateData) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = RPCRDMAPrivateData{}
	if err := need("rpc-over-rdma private data", data, RPCRDMALen); err != nil {
		df.SetTruncated()
		return err
	}
	m.decode(data)
	m.Contents = data[:RPCRDMALen]
	m.Payload = data[RPCRDMALen:]
	return nil
}

func (m *RPCRDMAPrivateData) decode(d []byte) {
	m.FormatIdentifier = binary.BigEndian.Uint32(d[0:4])
	m.Version = d[4]
	m.Reserved = d[5] >> 1
	m.RemoteInvalidate = d[5]&0x01 != 0
	m.SendSizeEncoded = d[6]
	m.ReceiveSizeEncoded = d[7]
}

// Encode writes the 8 octets into b, which must hold at least 8.
func (m *RPCRDMAPrivateData) Encode(b []byte) {
	binary.BigEndian.PutUint32(b[0:4], m.FormatIdentifier)
	b[4] = m.Version
	b[5] = m.Reserved<<1 | bit(m.RemoteInvalidate, 0x01)
	b[6] = m.SendSizeEncoded
	b[7] = m.ReceiveSizeEncoded
}

// SerializeTo writes the message in front of any payload.
func (m *RPCRDMAPrivateData) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := b.PrependBytes(RPCRDMALen)
	if err != nil {
		return err
	}
	m.Encode(d)
	return nil
}

// Fields lists the message's fields with the names RFC 8797 gives them.
func (m *RPCRDMAPrivateData) Fields() []Field {
	f := make(fieldList, 0, 6)
	f.hex("Format Identifier", "format_identifier", 32, uint64(m.FormatIdentifier))
	f.dec("Version", "version", uint64(m.Version))
	f.hex("Reserved", "reserved", 7, uint64(m.Reserved))
	f.flag("R", "remote_invalidate", m.RemoteInvalidate)
	f.dec("Send Size", "send_size", uint64(m.SendSize()))
	f.dec("Receive Size", "receive_size", uint64(m.ReceiveSize()))
	return f
}

func decodeRPCRDMA(data []byte, p gopacket.PacketBuilder) error {
	m := &RPCRDMAPrivateData{}
	if err := m.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(m)
	return p.NextDecoder(m.NextLayerType())
}

// IsRPCRDMAAt reports whether a usable RFC 8797 message sits at offset off of
// the private data: the identifier, Version 1, all 8 octets inside.
func IsRPCRDMAAt(pd []byte, off int) bool {
	return off >= 0 && off+RPCRDMALen <= len(pd) &&
		bytes.Equal(pd[off:off+4], rpcrdmaID) && pd[off+4] == RPCRDMAVersion
}

// RPCRDMAMatch is one occurrence of the Format Identifier in private data.
type RPCRDMAMatch struct {
	Offset   int
	Complete bool  // all 8 octets lie inside the private data
	Version  uint8 // the Version octet, when at least 5 octets are inside
	HasVer   bool
}

// Usable reports whether the match is a message a receiver acts on.
func (m RPCRDMAMatch) Usable() bool { return m.Complete && m.Version == RPCRDMAVersion }

// MaxRecordedMatches is how many occurrences a search records in order;
// it counts all of them.
const MaxRecordedMatches = 8

// RPCRDMASearch is the result of looking for the RFC 8797 message at every
// octet offset of some private data.
type RPCRDMASearch struct {
	// Found is set when a usable message was found: the first occurrence
	// with Version 1 and all 8 octets inside. Message and Offset describe it.
	Found   bool
	Offset  int
	Message RPCRDMAPrivateData
	// Occurrences counts every occurrence of the identifier.
	Occurrences int
	// Matches records the first MaxRecordedMatches occurrences, in order.
	Matches  [MaxRecordedMatches]RPCRDMAMatch
	NMatches int
}

// Recorded returns the recorded matches.
func (s *RPCRDMASearch) Recorded() []RPCRDMAMatch { return s.Matches[:s.NMatches] }

// SearchRPCRDMA looks for the Format Identifier at every octet offset of pd,
// as RFC 8797 section 5.1 allows other layers to put their headers first. A
// match counts only when its Version is 1 and all 8 octets lie inside pd;
// otherwise the search goes on. It does not allocate.
func SearchRPCRDMA(pd []byte) RPCRDMASearch {
	var s RPCRDMASearch
	for start := 0; start < len(pd); {
		i := bytes.Index(pd[start:], rpcrdmaID)
		if i < 0 {
			break
		}
		off := start + i
		m := RPCRDMAMatch{Offset: off, Complete: off+RPCRDMALen <= len(pd)}
		if off+4 < len(pd) {
			m.Version, m.HasVer = pd[off+4], true
		}
		s.Occurrences++
		if s.NMatches < MaxRecordedMatches {
			s.Matches[s.NMatches] = m
			s.NMatches++
		}
		if !s.Found && m.Usable() {
			s.Found = true
			s.Offset = off
			s.Message.decode(pd[off : off+RPCRDMALen])
		}
		start = off + 1
	}
	return s
}
