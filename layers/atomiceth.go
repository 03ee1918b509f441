package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// AtomicETH is the Atomic Extended Transport Header (IBTA Vol 1, section
// 9.3) of a CmpSwap or FetchAdd request.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                        Virtual Address                        |
//	|                          (64 bits)                            |
//	+---------------------------------------------------------------+
//	|                             R_Key                             |
//	+---------------------------------------------------------------+
//	|                    Swap (or Add) Data                         |
//	|                          (64 bits)                            |
//	+---------------------------------------------------------------+
//	|                         Compare Data                          |
//	|                          (64 bits)                            |
//	+---------------------------------------------------------------+
type AtomicETH struct {
	golayers.BaseLayer
	VA       uint64 // Virtual Address of the remote operand
	RKey     uint32 // R_Key
	SwapData uint64 // Swap Data (CmpSwap) or Add Data (FetchAdd)
	CmpData  uint64 // Compare Data (CmpSwap)
}

// AtomicETHLen is the size of the AtomicETH.
const AtomicETHLen = 28

func (h *AtomicETH) LayerType() gopacket.LayerType  { return LayerTypeAtomicETH }
func (h *AtomicETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicETH }

// NextLayerType is nothing: an atomic request carries no payload (anything
// left is payload).
func (h *AtomicETH) NextLayerType() gopacket.LayerType {
	return extNext(OpCmpSwap, ltAtomicETH, h.Payload)
}

// DecodeFromBytes decodes the AtomicETH.
func (h *AtomicETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*h = AtomicETH{}
	if err := need("atomiceth", data, AtomicETHLen); err != nil {
		df.SetTruncated()
		return err
	}
	h.VA = binary.BigEndian.Uint64(data[0:8])
	h.RKey = binary.BigEndian.Uint32(data[8:12])
	h.SwapData = binary.BigEndian.Uint64(data[12:20])
	h.CmpData = binary.BigEndian.Uint64(data[20:28])
	h.Contents = data[:AtomicETHLen]
	h.Payload = data[AtomicETHLen:]
	return nil
}

// SerializeTo writes the AtomicETH.
func (h *AtomicETH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := b.PrependBytes(AtomicETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(d[0:8], h.VA)
	binary.BigEndian.PutUint32(d[8:12], h.RKey)
	binary.BigEndian.PutUint64(d[12:20], h.SwapData)
	binary.BigEndian.PutUint64(d[20:28], h.CmpData)
	return nil
}

// Fields lists the AtomicETH's fields for display.
func (h *AtomicETH) Fields() []Field {
	f := make(fieldList, 0, 4)
	f.hex("Virtual Address", "va", 64, h.VA)
	f.hex("R_Key", "r_key", 32, uint64(h.RKey))
	f.hex("Swap (or Add) Data", "swap_data", 64, h.SwapData)
	f.hex("Compare Data", "compare_data", 64, h.CmpData)
	return f
}

func decodeAtomicETH(data []byte, p gopacket.PacketBuilder) error {
	h := &AtomicETH{}
	if err := h.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(h)
	return p.NextDecoder(h.NextLayerType())
}
