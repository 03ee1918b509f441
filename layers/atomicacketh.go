package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// AtomicAckETH is the Atomic Acknowledge Extended Transport Header (IBTA
// Vol 1, section 9.3) of an ATOMIC Acknowledge, after its AETH: the remote
// operand as it was before the operation.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                     Original Remote Data                      |
//	|                          (64 bits)                            |
//	+---------------------------------------------------------------+
type AtomicAckETH struct {
	golayers.BaseLayer
	OrigData uint64 // Original Remote Data
}

// AtomicAckETHLen is the size of the AtomicAckETH.
const AtomicAckETHLen = 8

func (h *AtomicAckETH) LayerType() gopacket.LayerType  { return LayerTypeAtomicAckETH }
func (h *AtomicAckETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicAckETH }

// NextLayerType is nothing (anything left is payload).
func (h *AtomicAckETH) NextLayerType() gopacket.LayerType {
	return extNext(OpAtomicAcknowledge, ltAtomicAckETH, h.Payload)
}

// DecodeFromBytes decodes the AtomicAckETH.
func (h *AtomicAckETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*h = AtomicAckETH{}
	if err := need("atomicacketh", data, AtomicAckETHLen); err != nil {
		df.SetTruncated()
		return err
	}
	h.OrigData = binary.BigEndian.Uint64(data[0:8])
	h.Contents = data[:AtomicAckETHLen]
	h.Payload = data[AtomicAckETHLen:]
	return nil
}

// SerializeTo writes the AtomicAckETH.
func (h *AtomicAckETH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := b.PrependBytes(AtomicAckETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(d, h.OrigData)
	return nil
}

// Fields lists the AtomicAckETH's fields for display.
func (h *AtomicAckETH) Fields() []Field {
	f := make(fieldList, 0, 1)
	f.hex("Original Remote Data", "original_remote_data", 64, h.OrigData)
	return f
}

func decodeAtomicAckETH(data []byte, p gopacket.PacketBuilder) error {
	h := &AtomicAckETH{}
	if err := h.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(h)
	return p.NextDecoder(h.NextLayerType())
}
