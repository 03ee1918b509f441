package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// IETH is the Invalidate Extended Transport Header (IBTA Vol 1, section
// 9.3) of SEND Last with Invalidate and SEND Only with Invalidate: the R_Key
// the receiver is asked to invalidate.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                             R_Key                             |
//	+---------------------------------------------------------------+
type IETH struct {
	golayers.BaseLayer
	RKey uint32 // R_Key to invalidate
}

// IETHLen is the size of the IETH.
const IETHLen = 4

func (h *IETH) LayerType() gopacket.LayerType  { return LayerTypeIETH }
func (h *IETH) CanDecode() gopacket.LayerClass { return LayerTypeIETH }

// NextLayerType is the payload: the SEND's data.
func (h *IETH) NextLayerType() gopacket.LayerType {
	return extNext(OpSendOnlyInvalidate, ltIETH, h.Payload)
}

// DecodeFromBytes decodes the IETH.
func (h *IETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*h = IETH{}
	if err := need("ieth", data, IETHLen); err != nil {
		df.SetTruncated()
		return err
	}
	h.RKey = binary.BigEndian.Uint32(data[0:4])
	h.Contents = data[:IETHLen]
	h.Payload = data[IETHLen:]
	return nil
}

// SerializeTo writes the IETH.
func (h *IETH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := b.PrependBytes(IETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(d, h.RKey)
	return nil
}

// Fields lists the IETH's fields for display.
func (h *IETH) Fields() []Field {
	f := make(fieldList, 0, 1)
	f.hex("R_Key", "r_key", 32, uint64(h.RKey))
	return f
}

func decodeIETH(data []byte, p gopacket.PacketBuilder) error {
	h := &IETH{}
	if err := h.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(h)
	return p.NextDecoder(h.NextLayerType())
}
