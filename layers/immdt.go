package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// ImmDt is the Immediate Extended Transport Header (IBTA Vol 1, section
// 9.3) of the SEND and RDMA WRITE opcodes "with Immediate": 4 octets handed
// to the receiver with its completion.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                        Immediate Data                         |
//	+---------------------------------------------------------------+
type ImmDt struct {
	golayers.BaseLayer
	Data uint32 // Immediate Data
}

// ImmDtLen is the size of the ImmDt.
const ImmDtLen = 4

func (h *ImmDt) LayerType() gopacket.LayerType  { return LayerTypeImmDt }
func (h *ImmDt) CanDecode() gopacket.LayerClass { return LayerTypeImmDt }

// NextLayerType is the payload: the SEND's or RDMA WRITE's data.
func (h *ImmDt) NextLayerType() gopacket.LayerType {
	return extNext(OpSendOnlyImm, ltImmDt, h.Payload)
}

// DecodeFromBytes decodes the ImmDt.
func (h *ImmDt) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*h = ImmDt{}
	if err := need("immdt", data, ImmDtLen); err != nil {
		df.SetTruncated()
		return err
	}
	h.Data = binary.BigEndian.Uint32(data[0:4])
	h.Contents = data[:ImmDtLen]
	h.Payload = data[ImmDtLen:]
	return nil
}

// SerializeTo writes the ImmDt.
func (h *ImmDt) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := b.PrependBytes(ImmDtLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(d, h.Data)
	return nil
}

// Fields lists the ImmDt's fields for display.
func (h *ImmDt) Fields() []Field {
	f := make(fieldList, 0, 1)
	f.hex("Immediate Data", "immediate_data", 32, uint64(h.Data))
	return f
}

func decodeImmDt(data []byte, p gopacket.PacketBuilder) error {
	h := &ImmDt{}
	if err := h.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(h)
	return p.NextDecoder(h.NextLayerType())
}
