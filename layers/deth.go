package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// DETH is the Datagram Extended Transport Header (IBTA Vol 1, 9.3.3) of an
// Unreliable Datagram packet.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                             Q_Key                             |
//	+---------------+-----------------------------------------------+
//	|   Reserved    |                    SrcQP                      |
//	+---------------+-----------------------------------------------+
type DETH struct {
	golayers.BaseLayer
	QKey     uint32 // Queue Key
	Reserved uint8
	SrcQP    uint32 // Source QP (24 bits)
}

// DETHLen is the size of the DETH.
const DETHLen = 8

// GSIQKey is the well-known Q_Key of the General Services Interface (QP1),
// where Communication Manager MADs are sent.
const GSIQKey = 0x80010000

func (d *DETH) LayerType() gopacket.LayerType  { return LayerTypeDETH }
func (d *DETH) CanDecode() gopacket.LayerClass { return LayerTypeDETH }

// NextLayerType is MAD for datagrams of the management QPs (source QP 0 or 1,
// or the GSI Q_Key); other datagrams stay payload.
func (d *DETH) NextLayerType() gopacket.LayerType {
	if d.SrcQP <= 1 || d.QKey == GSIQKey {
		return LayerTypeMAD
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes the DETH.
func (d *DETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*d = DETH{}
	if err := need("deth", data, DETHLen); err != nil {
		df.SetTruncated()
		return err
	}
	d.QKey = binary.BigEndian.Uint32(data[0:4])
	d.Reserved = data[4]
	d.SrcQP = uint24(data[5:8])
	d.Contents = data[:DETHLen]
	d.Payload = data[DETHLen:]
	return nil
}

// SerializeTo writes the DETH.
func (d *DETH) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(DETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(h[0:4], d.QKey)
	h[4] = d.Reserved
	putUint24(h[5:8], d.SrcQP)
	return nil
}

// Fields lists the DETH's fields for display.
func (d *DETH) Fields() []Field {
	f := make(fieldList, 0, 2)
	f.hex("Queue Key", "q_key", 32, uint64(d.QKey))
	f.hex("Source QP", "src_qp", 24, uint64(d.SrcQP))
	return f
}

func decodeDETH(data []byte, p gopacket.PacketBuilder) error {
	d := &DETH{}
	if err := d.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(d)
	return p.NextDecoder(d.NextLayerType())
}
