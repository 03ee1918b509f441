package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// The upper layers' CM private data. Without RFC 8797 data a connection's
// private data usually belongs to another protocol, which the files
// nvmerdma.go, iser.go, srp.go, rds.go, rsocket.go, lustre.go, sdp.go and
// ipoibcm.go decode, one protocol each. Their layers share this shape:
// DecodeFromBytes takes the octets where the protocol's data starts (after
// the IP CM header of a REQ, after MPA revision 2's IRD/ORD words) and
// fails only when too few octets are there for the fixed fields; Problem
// judges the decoded values against the layout (a wrong record format, an
// unknown version); Fields lists them for display, Summary in one line.
// Reserved octets are never required to be zero: implementations leave
// garbage there (Linux in the NVMe-oF REP).

// ULPPrivateData is an upper layer's CM private data, decoded.
type ULPPrivateData interface {
	gopacket.DecodingLayer
	gopacket.Layer
	// Fields lists the decoded fields with their specification's names and
	// their JSON keys.
	Fields() []Field
	// Summary is the one-line form of the message: "NVMe-oF qid=0 hrqsize=32 hsqsize=31".
	Summary() string
	// Problem says which decoded field does not fit the layout, or "".
	Problem() string
}

// text adds a field whose value is text (a Lustre NID, say).
func (l *fieldList) text(name, key, s string) {
	*l = append(*l, Field{Name: name, Key: key, Kind: Text, Bytes: []byte(s)})
}

// addr adds an IPv4 or IPv6 address held in 4 or 16 octets.
func (l *fieldList) addr(name, key string, b []byte) {
	*l = append(*l, Field{Name: name, Key: key, Kind: Addr, Bytes: append([]byte(nil), b...)})
}

// nextPayload is the next layer type of private data that may be followed by
// more octets: payload, or nothing.
func nextPayload(payload []byte) gopacket.LayerType {
	if len(payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// split sets a layer's Contents to the first n octets of data (or all of
// them when fewer) and its Payload to the rest.
func split(data []byte, n int) (contents, payload []byte) {
	n = min(n, len(data))
	return data[:n], data[n:]
}

// decodeULP decodes an upper layer's private data for gopacket.NewPacket.
func decodeULP(l ULPPrivateData, data []byte, p gopacket.PacketBuilder) error {
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return p.NextDecoder(l.NextLayerType())
}

// byteOrderName names a byte order for display.
func byteOrderName(o binary.ByteOrder) string {
	if o == binary.BigEndian {
		return "big-endian"
	}
	return "little-endian"
}
