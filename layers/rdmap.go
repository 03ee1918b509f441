package layers

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// RDMAPReadRequest is the RDMA Read Request header (RFC 5040, section 4.4),
// the payload of an untagged DDP segment on queue 1: its receiver is to
// send Size octets from the Data Source buffer (its own memory) into the
// Data Sink buffer (the requester's), with RDMA Read Responses.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                         Data Sink STag                        |
//	+---------------------------------------------------------------+
//	|                  Data Sink Tagged Offset (64)                 |
//	+---------------------------------------------------------------+
//	|                    RDMA Read Message Size                     |
//	+---------------------------------------------------------------+
//	|                        Data Source STag                       |
//	+---------------------------------------------------------------+
//	|                 Data Source Tagged Offset (64)                |
//	+---------------------------------------------------------------+
type RDMAPReadRequest struct {
	golayers.BaseLayer
	SinkSTag   uint32
	SinkTO     uint64
	Size       uint32 // RDMA Read Message Size
	SourceSTag uint32
	SourceTO   uint64
}

// RDMAPReadRequestLen is the size of the Read Request header.
const RDMAPReadRequestLen = 28

func (r *RDMAPReadRequest) LayerType() gopacket.LayerType     { return LayerTypeRDMAPReadRequest }
func (r *RDMAPReadRequest) CanDecode() gopacket.LayerClass    { return LayerTypeRDMAPReadRequest }
func (r *RDMAPReadRequest) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes decodes the header.
func (r *RDMAPReadRequest) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*r = RDMAPReadRequest{}
	if err := need("rdmap read request", data, RDMAPReadRequestLen); err != nil {
		df.SetTruncated()
		return err
	}
	r.SinkSTag = binary.BigEndian.Uint32(data[0:4])
	r.SinkTO = binary.BigEndian.Uint64(data[4:12])
	r.Size = binary.BigEndian.Uint32(data[12:16])
	r.SourceSTag = binary.BigEndian.Uint32(data[16:20])
	r.SourceTO = binary.BigEndian.Uint64(data[20:28])
	r.Contents = data[:RDMAPReadRequestLen]
	r.Payload = data[RDMAPReadRequestLen:]
	return nil
}

// SerializeTo writes the header.
func (r *RDMAPReadRequest) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(RDMAPReadRequestLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(h[0:4], r.SinkSTag)
	binary.BigEndian.PutUint64(h[4:12], r.SinkTO)
	binary.BigEndian.PutUint32(h[12:16], r.Size)
	binary.BigEndian.PutUint32(h[16:20], r.SourceSTag)
	binary.BigEndian.PutUint64(h[20:28], r.SourceTO)
	return nil
}

// Fields lists the header's fields; the keys follow tshark's iwarp_rdma.*.
func (r *RDMAPReadRequest) Fields() []Field {
	f := make(fieldList, 0, 5)
	f.hex("Data Sink STag", "sinkstag", 32, uint64(r.SinkSTag))
	f.id64("Data Sink Tagged Offset", "sinkto", r.SinkTO)
	f.dec("RDMA Read Message Size", "rdmardsz", uint64(r.Size))
	f.hex("Data Source STag", "srcstag", 32, uint64(r.SourceSTag))
	f.id64("Data Source Tagged Offset", "srcto", r.SourceTO)
	return f
}

func decodeRDMAPReadRequest(data []byte, p gopacket.PacketBuilder) error {
	r := &RDMAPReadRequest{}
	if err := r.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(r)
	return nil
}

// RDMAPTerminate is the Terminate header (RFC 5040, section 4.8), the
// payload of an untagged DDP segment on queue 2: which layer failed, how
// and why, then copies of the headers of the segment that failed.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------+-------+---------------+-+-+-+-------------------------+
//	| Layer | EType |  Error Code   |M|D|R|        Reserved         |
//	+-------+-------+---------------+-+-+-+-------------------------+
//	|  DDP Segment Length (M) | Terminated DDP header (D) | RDMA header (R)
//	+---------------------------------------------------------------+
type RDMAPTerminate struct {
	golayers.BaseLayer
	Layer     uint8 // 0 RDMAP, 1 DDP, 2 LLP (MPA)
	EType     uint8
	ErrorCode uint8
	M, D, R   bool // what the rest holds: the DDP segment length, the DDP header, the RDMAP header
	Reserved  uint16
}

// Terminate layers (RFC 5040, section 7).
const (
	TermLayerRDMAP = 0
	TermLayerDDP   = 1
	TermLayerLLP   = 2
)

// RDMAPTerminateLen is the size of the Terminate Control field.
const RDMAPTerminateLen = 4

func (t *RDMAPTerminate) LayerType() gopacket.LayerType  { return LayerTypeRDMAPTerminate }
func (t *RDMAPTerminate) CanDecode() gopacket.LayerClass { return LayerTypeRDMAPTerminate }
func (t *RDMAPTerminate) NextLayerType() gopacket.LayerType {
	if len(t.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes the Terminate Control field; the copied headers
// stay payload.
func (t *RDMAPTerminate) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*t = RDMAPTerminate{}
	if err := need("rdmap terminate", data, RDMAPTerminateLen); err != nil {
		df.SetTruncated()
		return err
	}
	w := binary.BigEndian.Uint32(data[0:4])
	t.Layer = uint8(w >> 28)
	t.EType = uint8(w >> 24 & 0x0f)
	t.ErrorCode = uint8(w >> 16)
	t.M, t.D, t.R = w&0x8000 != 0, w&0x4000 != 0, w&0x2000 != 0
	t.Reserved = uint16(w & 0x1fff)
	t.Contents = data[:RDMAPTerminateLen]
	t.Payload = data[RDMAPTerminateLen:]
	return nil
}

// SerializeTo writes the Terminate Control field.
func (t *RDMAPTerminate) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(RDMAPTerminateLen)
	if err != nil {
		return err
	}
	w := uint32(t.Layer&0x0f)<<28 | uint32(t.EType&0x0f)<<24 | uint32(t.ErrorCode)<<16 | uint32(t.Reserved&0x1fff)
	if t.M {
		w |= 0x8000
	}
	if t.D {
		w |= 0x4000
	}
	if t.R {
		w |= 0x2000
	}
	binary.BigEndian.PutUint32(h, w)
	return nil
}

// Fields lists the Terminate's fields; the keys follow tshark's
// iwarp_rdma.term_*.
func (t *RDMAPTerminate) Fields() []Field {
	f := make(fieldList, 0, 6)
	f.dec("Layer", "term_layer", uint64(t.Layer))
	f.note(TermLayerName(t.Layer))
	f.dec("Error Type", "term_etype", uint64(t.EType))
	f.dec("Error Code", "term_errcode", uint64(t.ErrorCode))
	f.note(TermErrorName(t.Layer, t.EType, t.ErrorCode))
	f.flag("DDP Segment Length valid", "term_hdrct_m", t.M)
	f.flag("DDP header included", "term_hdrct_d", t.D)
	f.flag("RDMAP header included", "term_hdrct_r", t.R)
	return f
}

func decodeRDMAPTerminate(data []byte, p gopacket.PacketBuilder) error {
	t := &RDMAPTerminate{}
	if err := t.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(t)
	return p.NextDecoder(t.NextLayerType())
}

// TermLayerName names a Terminate's layer.
func TermLayerName(l uint8) string {
	if int(l) < len(termLayerNames) {
		return termLayerNames[l]
	}
	return ""
}

var termLayerNames = [...]string{
	TermLayerRDMAP: "RDMAP",
	TermLayerDDP:   "DDP",
	TermLayerLLP:   "LLP (MPA)",
}

// termErrors names the errors of RFC 5040 section 7 (with RFC 6581's for
// enhanced connection establishment), by layer, error type and code; a code
// of -1 names every code of its type.
var termErrors = []struct {
	layer, etype uint8
	code         int
	name         string
}{
	{TermLayerRDMAP, 0, -1, "local catastrophic error"},
	{TermLayerRDMAP, 1, 0x00, "remote protection error: invalid STag"},
	{TermLayerRDMAP, 1, 0x01, "remote protection error: base or bounds violation"},
	{TermLayerRDMAP, 1, 0x02, "remote protection error: access rights violation"},
	{TermLayerRDMAP, 1, 0x03, "remote protection error: STag not associated with the RDMAP stream"},
	{TermLayerRDMAP, 1, 0x04, "remote protection error: tagged offset wrap"},
	{TermLayerRDMAP, 1, 0x09, "remote protection error: STag cannot be invalidated"},
	{TermLayerRDMAP, 1, 0xff, "remote protection error: unspecified"},
	{TermLayerRDMAP, 2, 0x05, "remote operation error: invalid RDMAP version"},
	{TermLayerRDMAP, 2, 0x06, "remote operation error: unexpected opcode"},
	{TermLayerRDMAP, 2, 0x07, "remote operation error: catastrophic error, localized to the RDMAP stream"},
	{TermLayerRDMAP, 2, 0x08, "remote operation error: catastrophic error, global"},
	{TermLayerRDMAP, 2, 0x09, "remote operation error: STag cannot be invalidated"},
	{TermLayerRDMAP, 2, 0xff, "remote operation error: unspecified"},
	{TermLayerDDP, 0, -1, "local catastrophic error"},
	{TermLayerDDP, 1, 0x00, "tagged buffer error: invalid STag"},
	{TermLayerDDP, 1, 0x01, "tagged buffer error: base or bounds violation"},
	{TermLayerDDP, 1, 0x02, "tagged buffer error: STag not associated with the DDP stream"},
	{TermLayerDDP, 1, 0x03, "tagged buffer error: tagged offset wrap"},
	{TermLayerDDP, 1, 0x04, "tagged buffer error: invalid DDP version"},
	{TermLayerDDP, 2, 0x01, "untagged buffer error: invalid queue number"},
	{TermLayerDDP, 2, 0x02, "untagged buffer error: invalid MSN, no buffer available"},
	{TermLayerDDP, 2, 0x03, "untagged buffer error: invalid MSN, MSN range is not valid"},
	{TermLayerDDP, 2, 0x04, "untagged buffer error: invalid message offset"},
	{TermLayerDDP, 2, 0x05, "untagged buffer error: DDP message too long for the available buffer"},
	{TermLayerDDP, 2, 0x06, "untagged buffer error: invalid DDP version"},
	{TermLayerLLP, 0, 0x01, "MPA: TCP connection closed, terminated or lost"},
	{TermLayerLLP, 0, 0x02, "MPA: CRC error"},
	{TermLayerLLP, 0, 0x03, "MPA: marker and ULPDU pointer mismatch"},
	{TermLayerLLP, 0, 0x04, "MPA: invalid Request or Reply frame"},
	{TermLayerLLP, 0, 0x05, "MPA: local catastrophic error"},
	{TermLayerLLP, 0, 0x06, "MPA: insufficient IRD resources"},
	{TermLayerLLP, 0, 0x07, "MPA: no matching ready-to-receive"},
}

// TermErrorName names a Terminate's error, or "" for one RFC 5040 and RFC
// 6581 do not define.
func TermErrorName(layer, etype, code uint8) string {
	for _, e := range termErrors {
		if e.layer == layer && e.etype == etype && (e.code < 0 || e.code == int(code)) {
			return e.name
		}
	}
	return ""
}

// TermDescription says a Terminate's layer, type and code for people: "DDP,
// untagged buffer error: DDP message too long for the available buffer
// (layer 1, type 2, code 0x05)".
func (t *RDMAPTerminate) TermDescription() string {
	name := TermErrorName(t.Layer, t.EType, t.ErrorCode)
	layer := TermLayerName(t.Layer)
	if layer == "" {
		layer = fmt.Sprintf("layer %d", t.Layer)
	}
	if name == "" {
		name = "an error RFC 5040 does not define"
	}
	return fmt.Sprintf("%s, %s (layer %d, type %d, code 0x%02x)", layer, name, t.Layer, t.EType, t.ErrorCode)
}
