package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// ERF is the Extensible Record Format header (Endace ERF, as written by
// ibdump and found in Wireshark's InfiniBand samples) at the start of every
// record of a link type 197 capture. In a pcap record the header is followed
// by the packet only, so the payload is the record's octets after the
// headers, whatever RLen says.
//
//	octet  0  Timestamp (8, little-endian, 32.32 fixed point seconds)
//	       8  Type (7 bits, top bit: extension headers follow) | Flags | RLen (2) | LCtr (2) | WLen (2)
//	      16  extension headers (8 each, top bit of the first octet: another follows)
type ERF struct {
	golayers.BaseLayer
	Timestamp  uint64 // little-endian 32.32 fixed point
	Type       uint8  // record type (7 bits): 21 InfiniBand, 2, 11, 16, 20 Ethernet, 22 IPv4, 23 IPv6
	Flags      uint8
	RLen       uint16 // record length including padding (not trusted)
	LCtr       uint16 // loss counter or colour
	WLen       uint16 // wire length
	ExtHeaders int    // number of 8-octet extension headers
}

// ERF record types this package decodes: those that carry Ethernet,
// IPv4, IPv6 or InfiniBand, as Wireshark's ERF dissector takes them. The
// Ethernet types have 2 octets of offset and padding before the frame.
const (
	ERFTypeEthernet          = 2
	ERFTypeColorEthernet     = 11
	ERFTypeDSMColorEthernet  = 16
	ERFTypeColorHashEthernet = 20
	ERFTypeInfiniBand        = 21
	ERFTypeIPv4              = 22
	ERFTypeIPv6              = 23
)

// ERFEthernet reports whether an ERF record type carries an Ethernet frame
// (after 2 octets of offset and padding).
func ERFEthernet(t uint8) bool {
	switch t {
	case ERFTypeEthernet, ERFTypeColorEthernet, ERFTypeDSMColorEthernet, ERFTypeColorHashEthernet:
		return true
	}
	return false
}

// ERFHeaderLen is the size of the ERF header without extension headers.
const ERFHeaderLen = 16

func (e *ERF) LayerType() gopacket.LayerType  { return LayerTypeERF }
func (e *ERF) CanDecode() gopacket.LayerClass { return LayerTypeERF }

// NextLayerType is LRH for InfiniBand records, Ethernet for the Ethernet
// records, IPv4 or IPv6 for the IP records.
func (e *ERF) NextLayerType() gopacket.LayerType {
	switch {
	case e.Type == ERFTypeInfiniBand:
		return LayerTypeLRH
	case ERFEthernet(e.Type):
		return golayers.LayerTypeEthernet
	case e.Type == ERFTypeIPv4:
		return golayers.LayerTypeIPv4
	case e.Type == ERFTypeIPv6:
		return golayers.LayerTypeIPv6
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes the ERF header and its extension headers. An
// Ethernet record has 2 octets of offset and padding before the frame.
func (e *ERF) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*e = ERF{}
	if err := need("erf", data, ERFHeaderLen); err != nil {
		df.SetTruncated()
		return err
	}
	e.Timestamp = binary.LittleEndian.Uint64(data[0:8])
	e.Type = data[8] & 0x7f
	e.Flags = data[9]
	e.RLen = binary.BigEndian.Uint16(data[10:12])
	e.LCtr = binary.BigEndian.Uint16(data[12:14])
	e.WLen = binary.BigEndian.Uint16(data[14:16])
	n := ERFHeaderLen
	for more := data[8]&0x80 != 0; more; {
		if err := need("erf extension header", data, n+8); err != nil {
			df.SetTruncated()
			return err
		}
		more = data[n]&0x80 != 0
		n += 8
		e.ExtHeaders++
	}
	if ERFEthernet(e.Type) {
		if err := need("erf ethernet", data, n+2); err != nil {
			df.SetTruncated()
			return err
		}
		n += 2
	}
	e.Contents = data[:n]
	e.Payload = data[n:]
	return nil
}

// Fields lists the ERF header's fields for display.
func (e *ERF) Fields() []Field {
	f := make(fieldList, 0, 16)
	f.dec("Type", "type", uint64(e.Type))
	f.hex("Flags", "flags", 8, uint64(e.Flags))
	f.dec("Record Length", "rlen", uint64(e.RLen))
	f.dec("Loss Counter", "lctr", uint64(e.LCtr))
	f.dec("Wire Length", "wlen", uint64(e.WLen))
	return f
}

func decodeERF(data []byte, p gopacket.PacketBuilder) error {
	e := &ERF{}
	if err := e.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(e)
	return p.NextDecoder(e.NextLayerType())
}
