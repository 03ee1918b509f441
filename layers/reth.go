package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// RETH is the RDMA Extended Transport Header (IBTA Vol 1, section 9.3): the
// remote buffer of an RDMA WRITE (First, Only) or of an RDMA READ Request.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                        Virtual Address                        |
//	|                          (64 bits)                            |
//	+---------------------------------------------------------------+
//	|                             R_Key                             |
//	+---------------------------------------------------------------+
//	|                          DMA Length                           |
//	+---------------------------------------------------------------+
type RETH struct {
	golayers.BaseLayer
	VA        uint64 // Virtual Address of the remote buffer
	RKey      uint32 // R_Key that grants access to it
	DMALength uint32 // DMA Length: octets of the whole transfer

	// BTH is a setting, kept across decodes: the BTH in front of this
	// header, whose OpCode tells NextLayerType whether ImmDt follows (RDMA
	// WRITE Only with Immediate). gopacket.NewPacket links it; a
	// DecodingLayerParser user sets it to the parser's BTH. Nil: the
	// payload follows.
	BTH *BTH
}

// RETHLen is the size of the RETH.
const RETHLen = 16

func (r *RETH) LayerType() gopacket.LayerType  { return LayerTypeRETH }
func (r *RETH) CanDecode() gopacket.LayerClass { return LayerTypeRETH }

// NextLayerType is ImmDt in an RDMA WRITE Only with Immediate (when the BTH
// is linked), else the payload: the data of an RDMA WRITE; nothing after a
// READ Request.
func (r *RETH) NextLayerType() gopacket.LayerType {
	op := uint8(OpWriteOnly)
	if r.BTH != nil {
		op = r.BTH.OpCode
	}
	return extNext(op, ltRETH, r.Payload)
}

// DecodeFromBytes decodes the RETH.
func (r *RETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*r = RETH{BTH: r.BTH}
	if err := need("reth", data, RETHLen); err != nil {
		df.SetTruncated()
		return err
	}
	r.VA = binary.BigEndian.Uint64(data[0:8])
	r.RKey = binary.BigEndian.Uint32(data[8:12])
	r.DMALength = binary.BigEndian.Uint32(data[12:16])
	r.Contents = data[:RETHLen]
	r.Payload = data[RETHLen:]
	return nil
}

// SerializeTo writes the RETH.
func (r *RETH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(RETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(h[0:8], r.VA)
	binary.BigEndian.PutUint32(h[8:12], r.RKey)
	binary.BigEndian.PutUint32(h[12:16], r.DMALength)
	return nil
}

// Fields lists the RETH's fields for display.
func (r *RETH) Fields() []Field {
	f := make(fieldList, 0, 4)
	f.hex("Virtual Address", "va", 64, r.VA)
	f.hex("R_Key", "r_key", 32, uint64(r.RKey))
	f.dec("DMA Length", "dma_length", uint64(r.DMALength))
	return f
}

// bthOf is the packet's BTH, when the packet being built has one.
func bthOf(p gopacket.PacketBuilder) *BTH {
	if pk, ok := p.(gopacket.Packet); ok {
		if b, ok := pk.Layer(ltBTH).(*BTH); ok {
			return b
		}
	}
	return nil
}

func decodeRETH(data []byte, p gopacket.PacketBuilder) error {
	r := &RETH{BTH: bthOf(p)}
	if err := r.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(r)
	return p.NextDecoder(r.NextLayerType())
}
