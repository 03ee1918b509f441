package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// Communication Manager attribute IDs (IBTA Vol 1, table 104): each names the
// message a CM MAD carries.
const (
	AttrClassPortInfo = 0x0001
	AttrREQ           = 0x0010
	AttrMRA           = 0x0011
	AttrREJ           = 0x0012
	AttrREP           = 0x0013
	AttrRTU           = 0x0014
	AttrDREQ          = 0x0015
	AttrDREP          = 0x0016
	AttrSIDRREQ       = 0x0017
	AttrSIDRREP       = 0x0018
	AttrLAP           = 0x0019
	AttrAPR           = 0x001a
)

// CMMessage is what every CM message body layer offers beyond gopacket's
// interfaces: enough for a dissector to track connections and find the
// consumer's private data without knowing each message's layout.
type CMMessage interface {
	gopacket.DecodingLayer
	gopacket.SerializableLayer
	// AttributeID is the MAD attribute that carries this message.
	AttributeID() uint16
	// CommIDs are the Local and Remote Communication IDs (SIDR messages:
	// the Request ID as local, 0 as remote; REQ: 0 as remote).
	CommIDs() (local, remote uint32)
	// PrivateDataBytes is the private data present in the packet: the whole
	// fixed-size field, or less when the capture cut it short.
	PrivateDataBytes() []byte
	// PrivateDataOffset and PrivateDataSize are where the private data sits
	// in the 232-octet MAD data and how long it is on the wire.
	PrivateDataOffset() int
	PrivateDataSize() int
	// Fields lists every decoded field for display.
	Fields() []Field
}

// cmInfo is the fixed layout of one CM message.
type cmInfo struct {
	name     string
	pdOffset int
	pdSize   int
	newLayer func() CMMessage
}

// cmTable describes every CM message, indexed by attribute ID - 0x10.
var cmTable = [...]cmInfo{
	{"REQ", 140, 92, func() CMMessage { return &CMReq{} }},
	{"MRA", 10, 222, func() CMMessage { return &CMMra{} }},
	{"REJ", 84, 148, func() CMMessage { return &CMRej{} }},
	{"REP", 36, 196, func() CMMessage { return &CMRep{} }},
	{"RTU", 8, 224, func() CMMessage { return &CMRtu{} }},
	{"DREQ", 12, 220, func() CMMessage { return &CMDreq{} }},
	{"DREP", 8, 224, func() CMMessage { return &CMDrep{} }},
	{"SIDR_REQ", 16, 216, func() CMMessage { return &CMSidrReq{} }},
	{"SIDR_REP", 96, 136, func() CMMessage { return &CMSidrRep{} }},
	{"LAP", 64, 168, func() CMMessage { return &CMLap{} }},
	{"APR", 84, 148, func() CMMessage { return &CMApr{} }},
}

func cmLookup(attr uint16) (*cmInfo, bool) {
	i := int(attr) - AttrREQ
	if i < 0 || i >= len(cmTable) {
		return nil, false
	}
	return &cmTable[i], true
}

func cmLayerType(attr uint16) (gopacket.LayerType, bool) {
	if _, ok := cmLookup(attr); !ok {
		return 0, false
	}
	// The CM layer types were registered in attribute order (layertypes.go).
	return gopacket.LayerType(layerTypeBase + cmLayerTypeOffset + int(attr) - AttrREQ), true
}

// CMMessageName is the IBTA name of the message an attribute ID carries
// (REQ, REP, SIDR_REQ, ...), or "" when it is none of them.
func CMMessageName(attr uint16) string {
	if info, ok := cmLookup(attr); ok {
		return info.name
	}
	return ""
}

// NewCMMessage returns an empty layer for the message an attribute ID
// carries, or nil.
func NewCMMessage(attr uint16) CMMessage {
	if info, ok := cmLookup(attr); ok {
		return info.newLayer()
	}
	return nil
}

// cmBase holds what every CM message has: its layer bookkeeping and private
// data. Contents is the fixed part, Payload the private data.
type cmBase struct {
	golayers.BaseLayer
	// PrivateData is the private data present in the packet (see
	// CMMessage.PrivateDataBytes).
	PrivateData []byte
}

func (c *cmBase) PrivateDataBytes() []byte { return c.PrivateData }

// split checks that the fixed part is present and slices the private data,
// clipping it to its size on the wire.
func (c *cmBase) split(name string, data []byte, attr uint16, df gopacket.DecodeFeedback) error {
	info, _ := cmLookup(attr)
	if err := need(name, data, info.pdOffset); err != nil {
		df.SetTruncated()
		return err
	}
	pd := data[info.pdOffset:]
	if len(pd) > info.pdSize {
		pd = pd[:info.pdSize]
	} else if len(pd) < info.pdSize {
		df.SetTruncated()
	}
	c.Contents = data[:info.pdOffset]
	c.Payload = pd
	c.PrivateData = pd
	return nil
}

// next is the layer after the private data's start: the RFC 8797 message
// when it sits at offset 0, otherwise plain payload.
func (c *cmBase) next() gopacket.LayerType {
	if IsRPCRDMAAt(c.PrivateData, 0) {
		return LayerTypeRPCRDMA
	}
	if len(c.PrivateData) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// serialize prepends the whole 232-octet MAD data: the fixed part, then the
// private data, zero-filled or cut to its size on the wire; fill writes the
// fixed fields. A CM message is always the whole MAD data.
func (c *cmBase) serialize(b gopacket.SerializeBuffer, attr uint16, fill func(h []byte)) error {
	info, _ := cmLookup(attr)
	h, err := b.PrependBytes(MADDataLen)
	if err != nil {
		return err
	}
	clear(h)
	copy(h[info.pdOffset:], c.PrivateData)
	fill(h)
	return nil
}

func decodeCM(attr uint16) func([]byte, gopacket.PacketBuilder) error {
	return func(data []byte, p gopacket.PacketBuilder) error {
		m := NewCMMessage(attr)
		if err := m.DecodeFromBytes(data, p); err != nil {
			return err
		}
		p.AddLayer(m.(gopacket.Layer))
		return p.NextDecoder(m.NextLayerType())
	}
}

// CMPath is one path description inside a REQ (primary or alternate): 44
// octets (IBTA Vol 1, table 106).
type CMPath struct {
	LocalPortLID    uint16   // Local Port LID
	RemotePortLID   uint16   // Remote Port LID
	LocalPortGID    [16]byte // Local Port GID
	RemotePortGID   [16]byte // Remote Port GID
	FlowLabel       uint32   // Flow Label (20 bits)
	PacketRate      uint8    // Packet Rate (6 bits)
	TrafficClass    uint8    // Traffic Class
	HopLimit        uint8    // Hop Limit
	SL              uint8    // Service Level (4 bits)
	SubnetLocal     bool     // Subnet Local
	LocalACKTimeout uint8    // Local ACK Timeout (5 bits)
}

func (p *CMPath) decode(b []byte) {
	p.LocalPortLID = binary.BigEndian.Uint16(b[0:2])
	p.RemotePortLID = binary.BigEndian.Uint16(b[2:4])
	copy(p.LocalPortGID[:], b[4:20])
	copy(p.RemotePortGID[:], b[20:36])
	p.FlowLabel = binary.BigEndian.Uint32(b[36:40]) >> 12
	p.PacketRate = b[39] & 0x3f
	p.TrafficClass = b[40]
	p.HopLimit = b[41]
	p.SL = b[42] >> 4
	p.SubnetLocal = b[42]&0x08 != 0
	p.LocalACKTimeout = b[43] >> 3
}

func (p *CMPath) encode(b []byte) {
	binary.BigEndian.PutUint16(b[0:2], p.LocalPortLID)
	binary.BigEndian.PutUint16(b[2:4], p.RemotePortLID)
	copy(b[4:20], p.LocalPortGID[:])
	copy(b[20:36], p.RemotePortGID[:])
	binary.BigEndian.PutUint32(b[36:40], p.FlowLabel<<12|uint32(p.PacketRate&0x3f))
	b[40] = p.TrafficClass
	b[41] = p.HopLimit
	b[42] = p.SL<<4 | bit(p.SubnetLocal, 0x08)
	b[43] = b[43]&0x07 | p.LocalACKTimeout<<3
}

func (p *CMPath) fields(f *fieldList, name, key string) {
	f.hex(name+" Local Port LID", key+"_local_lid", 16, uint64(p.LocalPortLID))
	f.hex(name+" Remote Port LID", key+"_remote_lid", 16, uint64(p.RemotePortLID))
	f.gid(name+" Local Port GID", key+"_local_gid", p.LocalPortGID)
	f.gid(name+" Remote Port GID", key+"_remote_gid", p.RemotePortGID)
	f.hex(name+" Flow Label", key+"_flow_label", 20, uint64(p.FlowLabel))
	f.dec(name+" Packet Rate", key+"_packet_rate", uint64(p.PacketRate))
	f.hex(name+" Traffic Class", key+"_traffic_class", 8, uint64(p.TrafficClass))
	f.dec(name+" Hop Limit", key+"_hop_limit", uint64(p.HopLimit))
	f.dec(name+" SL", key+"_sl", uint64(p.SL))
	f.flag(name+" Subnet Local", key+"_subnet_local", p.SubnetLocal)
	f.dec(name+" Local ACK Timeout", key+"_local_ack_timeout", uint64(p.LocalACKTimeout))
}
