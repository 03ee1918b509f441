package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// GRH is the InfiniBand Global Route Header (IBTA Vol 1, 8.3). It follows the
// LRH when LNH is 3, and it is the first header of a RoCEv1 packet (EtherType
// 0x8915). Its layout is that of an IPv6 header with GIDs for addresses.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------+---------------+---------------------------------------+
//	| IPVer |    TClass     |              FlowLabel                |
//	+-------+---------------+-------+---------------+---------------+
//	|            PayLen             |    NxtHdr     |    HopLmt     |
//	+-------------------------------+---------------+---------------+
//	|                      SGID (16 octets)                         |
//	|                      DGID (16 octets)                         |
//	+---------------------------------------------------------------+
type GRH struct {
	golayers.BaseLayer
	IPVer     uint8    // IP Version (4 bits), 6
	TClass    uint8    // Traffic Class
	FlowLabel uint32   // Flow Label (20 bits)
	PayLen    uint16   // octets after the GRH up to and including the ICRC
	NxtHdr    uint8    // Next Header: 0x1b for IBA transport
	HopLmt    uint8    // Hop Limit
	SGID      [16]byte // Source GID
	DGID      [16]byte // Destination GID
}

// GRHLen is the size of the GRH.
const GRHLen = 40

// NxtHdrIBA is the GRH Next Header value for an IBA transport header.
const NxtHdrIBA = 0x1b

func (g *GRH) LayerType() gopacket.LayerType  { return LayerTypeGRH }
func (g *GRH) CanDecode() gopacket.LayerClass { return LayerTypeGRH }

// NextLayerType is BTH for IBA transport; anything else is left as payload.
func (g *GRH) NextLayerType() gopacket.LayerType {
	if g.NxtHdr == NxtHdrIBA {
		return LayerTypeBTH
	}
	return gopacket.LayerTypePayload
}

// NetworkFlow is the flow from SGID to DGID, shown as IPv6 addresses.
func (g *GRH) NetworkFlow() gopacket.Flow {
	return gopacket.NewFlow(golayers.EndpointIPv6, g.SGID[:], g.DGID[:])
}

// DecodeFromBytes decodes a GRH; PayLen bounds the payload.
func (g *GRH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*g = GRH{}
	if err := need("grh", data, GRHLen); err != nil {
		df.SetTruncated()
		return err
	}
	w := binary.BigEndian.Uint32(data[0:4])
	g.IPVer = uint8(w >> 28)
	g.TClass = uint8(w >> 20)
	g.FlowLabel = w & 0x000fffff
	g.PayLen = binary.BigEndian.Uint16(data[4:6])
	g.NxtHdr = data[6]
	g.HopLmt = data[7]
	copy(g.SGID[:], data[8:24])
	copy(g.DGID[:], data[24:40])
	g.Contents = data[:GRHLen]
	end := GRHLen + int(g.PayLen)
	if end > len(data) {
		g.Payload = data[GRHLen:]
		df.SetTruncated()
	} else {
		g.Payload = data[GRHLen:end]
	}
	return nil
}

// SerializeTo writes the GRH; with FixLengths PayLen covers the payload.
func (g *GRH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		g.PayLen = uint16(len(b.Bytes()))
	}
	h, err := b.PrependBytes(GRHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(h[0:4], uint32(g.IPVer)<<28|uint32(g.TClass)<<20|g.FlowLabel&0x000fffff)
	binary.BigEndian.PutUint16(h[4:6], g.PayLen)
	h[6] = g.NxtHdr
	h[7] = g.HopLmt
	copy(h[8:24], g.SGID[:])
	copy(h[24:40], g.DGID[:])
	return nil
}

// Fields lists the GRH's fields for display.
func (g *GRH) Fields() []Field {
	f := make(fieldList, 0, 8)
	f.dec("IP Version", "ip_ver", uint64(g.IPVer))
	f.hex("Traffic Class", "tclass", 8, uint64(g.TClass))
	f.hex("Flow Label", "flow_label", 20, uint64(g.FlowLabel))
	f.dec("Payload Length", "pay_len", uint64(g.PayLen))
	f.hex("Next Header", "nxt_hdr", 8, uint64(g.NxtHdr))
	f.dec("Hop Limit", "hop_lmt", uint64(g.HopLmt))
	f.gid("Source GID", "sgid", g.SGID)
	f.gid("Destination GID", "dgid", g.DGID)
	return f
}

func decodeGRH(data []byte, p gopacket.PacketBuilder) error {
	g := &GRH{}
	if err := g.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(g)
	p.SetNetworkLayer(g)
	return p.NextDecoder(g.NextLayerType())
}
