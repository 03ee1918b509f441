package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// LRH is the InfiniBand Local Route Header (IBTA Vol 1, 7.7), the first
// header of every packet on an InfiniBand link. The packet it starts ends with
// the 4-octet ICRC and a 2-octet VCRC.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------+-------+-------+---+---+-------------------------------+
//	|  VL   | LVer  |  SL   |rsv|LNH|          DLID                 |
//	+-------+-------+-------+---+---+-------------------------------+
//	|  rsv    |       PktLen        |          SLID                 |
//	+---------+---------------------+-------------------------------+
type LRH struct {
	golayers.BaseLayer
	VL        uint8  // Virtual Lane (4 bits)
	LVer      uint8  // Link Version (4 bits)
	SL        uint8  // Service Level (4 bits)
	Reserved  uint8  // 2 reserved bits after SL
	LNH       uint8  // Link Next Header (2 bits): 2 BTH follows, 3 GRH follows
	DLID      uint16 // Destination Local Identifier
	Reserved5 uint8  // 5 reserved bits before PktLen
	PktLen    uint16 // packet length in 4-octet words, LRH to ICRC inclusive (11 bits)
	SLID      uint16 // Source Local Identifier

	// VCRC is the Variant CRC after the ICRC, present when HasVCRC is set.
	VCRC    uint16
	HasVCRC bool
}

// LRH Link Next Header values.
const (
	LNHRaw  = 0 // raw packet, not IBA transport
	LNHIPv6 = 1 // raw IPv6
	LNHBTH  = 2 // IBA local: BTH follows
	LNHGRH  = 3 // IBA global: GRH follows
)

// LRHLen is the size of the LRH.
const LRHLen = 8

func (l *LRH) LayerType() gopacket.LayerType     { return LayerTypeLRH }
func (l *LRH) CanDecode() gopacket.LayerClass    { return LayerTypeLRH }
func (l *LRH) NextLayerType() gopacket.LayerType { return lnhLayer(l.LNH) }

func lnhLayer(lnh uint8) gopacket.LayerType {
	switch lnh {
	case LNHBTH:
		return LayerTypeBTH
	case LNHGRH:
		return LayerTypeGRH
	}
	return gopacket.LayerTypePayload
}

// LinkFlow is the flow from SLID to DLID.
func (l *LRH) LinkFlow() gopacket.Flow {
	var src, dst [2]byte
	binary.BigEndian.PutUint16(src[:], l.SLID)
	binary.BigEndian.PutUint16(dst[:], l.DLID)
	return gopacket.NewFlow(EndpointLID, src[:], dst[:])
}

// DecodeFromBytes decodes an LRH and splits off the VCRC using PktLen. When
// fewer octets are present than PktLen announces, the packet was cut short:
// the payload is what is there and df learns that it is truncated.
func (l *LRH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*l = LRH{}
	if err := need("lrh", data, LRHLen); err != nil {
		df.SetTruncated()
		return err
	}
	l.VL = data[0] >> 4
	l.LVer = data[0] & 0x0f
	l.SL = data[1] >> 4
	l.Reserved = data[1] >> 2 & 0x03
	l.LNH = data[1] & 0x03
	l.DLID = binary.BigEndian.Uint16(data[2:4])
	l.Reserved5 = data[4] >> 3
	l.PktLen = binary.BigEndian.Uint16(data[4:6]) & 0x07ff
	l.SLID = binary.BigEndian.Uint16(data[6:8])
	l.Contents = data[:LRHLen]
	end := int(l.PktLen) * 4
	switch {
	case end < LRHLen:
		// A PktLen shorter than the header itself: keep everything as payload.
		l.Payload = data[LRHLen:]
	case end > len(data):
		l.Payload = data[LRHLen:]
		df.SetTruncated()
	default:
		l.Payload = data[LRHLen:end]
		if len(data) >= end+2 {
			l.VCRC = binary.LittleEndian.Uint16(data[end : end+2])
			l.HasVCRC = true
		}
	}
	return nil
}

// SerializeTo writes the LRH. With FixLengths, PktLen covers the LRH and the
// payload, which is expected to end with the ICRC; the VCRC is not written.
func (l *LRH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		l.PktLen = uint16((LRHLen + len(b.Bytes()) + 3) / 4)
	}
	h, err := b.PrependBytes(LRHLen)
	if err != nil {
		return err
	}
	h[0] = l.VL<<4 | l.LVer&0x0f
	h[1] = l.SL<<4 | (l.Reserved&0x03)<<2 | l.LNH&0x03
	binary.BigEndian.PutUint16(h[2:4], l.DLID)
	binary.BigEndian.PutUint16(h[4:6], uint16(l.Reserved5)<<11|l.PktLen&0x07ff)
	binary.BigEndian.PutUint16(h[6:8], l.SLID)
	return nil
}

// Fields lists the LRH's fields for display.
func (l *LRH) Fields() []Field {
	f := make(fieldList, 0, 7)
	f.dec("Virtual Lane", "vl", uint64(l.VL))
	f.dec("Link Version", "lver", uint64(l.LVer))
	f.dec("Service Level", "sl", uint64(l.SL))
	f.dec("Link Next Header", "lnh", uint64(l.LNH))
	f.hex("Destination Local ID", "dlid", 16, uint64(l.DLID))
	f.dec("Packet Length", "pkt_len", uint64(l.PktLen))
	f.hex("Source Local ID", "slid", 16, uint64(l.SLID))
	return f
}

func decodeLRH(data []byte, p gopacket.PacketBuilder) error {
	l := &LRH{}
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	p.SetLinkLayer(l)
	return p.NextDecoder(l.NextLayerType())
}
