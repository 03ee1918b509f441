package layers

import (
	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// Each CM message's layout is written once, in internal/cmgen/messages.go;
// cm_generate.go writes from it the message's struct, octet diagram,
// DecodeFromBytes, SerializeTo and Fields into cm_req.go, cm_rep.go and the
// other cm_*.go files. The code they share is here.
//
//go:generate go run cm_generate.go

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

// cmInfo names one CM message and makes its layer.
type cmInfo struct {
	name     string
	newLayer func() CMMessage
}

// cmTable describes every CM message, indexed by attribute ID - 0x10. Each
// message's layout, private data offset and size included, is its own
// (see the go:generate line above).
var cmTable = [...]cmInfo{
	{"REQ", func() CMMessage { return &CMReq{} }},
	{"MRA", func() CMMessage { return &CMMra{} }},
	{"REJ", func() CMMessage { return &CMRej{} }},
	{"REP", func() CMMessage { return &CMRep{} }},
	{"RTU", func() CMMessage { return &CMRtu{} }},
	{"DREQ", func() CMMessage { return &CMDreq{} }},
	{"DREP", func() CMMessage { return &CMDrep{} }},
	{"SIDR_REQ", func() CMMessage { return &CMSidrReq{} }},
	{"SIDR_REP", func() CMMessage { return &CMSidrRep{} }},
	{"LAP", func() CMMessage { return &CMLap{} }},
	{"APR", func() CMMessage { return &CMApr{} }},
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

// split checks that the fixed part, its first fixed octets, is present and
// slices the private data, clipping it to its size on the wire: the rest of
// the MAD data.
func (c *cmBase) split(name string, data []byte, fixed int, df gopacket.DecodeFeedback) error {
	if err := need(name, data, fixed); err != nil {
		df.SetTruncated()
		return err
	}
	pd := data[fixed:]
	if size := MADDataLen - fixed; len(pd) > size {
		pd = pd[:size]
	} else if len(pd) < size {
		df.SetTruncated()
	}
	c.Contents = data[:fixed]
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

// nextIPCM is NextLayerType for a message with a Service ID (REQ,
// SIDR_REQ): the IP CM header when the Service ID carries the IP CM prefix,
// otherwise as next says.
func (c *cmBase) nextIPCM(serviceID uint64) gopacket.LayerType {
	if IsIPCMServiceID(serviceID) && len(c.PrivateData) > 0 {
		return LayerTypeIPCM
	}
	return c.next()
}

// serialize prepends the whole 232-octet MAD data and returns it, zeroed but
// for the private data after the first fixed octets, itself zero-filled or
// cut to its size on the wire. The caller writes the fixed fields into the
// zeros: a CM message is always the whole MAD data.
func (c *cmBase) serialize(b gopacket.SerializeBuffer, fixed int) ([]byte, error) {
	h, err := b.PrependBytes(MADDataLen)
	if err != nil {
		return nil, err
	}
	clear(h)
	copy(h[fixed:], c.PrivateData)
	return h, nil
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

// REJ reasons this package names (IBTA Vol 1, table 109).
const (
	RejReasonNoQP             = 1
	RejReasonTimeout          = 4
	RejReasonInvalidServiceID = 8
	RejReasonStaleConn        = 10
	RejReasonConsumerReject   = 28
)

// RejectReasonName names a REJ reason code (IBTA Vol 1, table 109), or "".
func RejectReasonName(r uint16) string {
	if int(r) < len(rejReasons) {
		return rejReasons[r]
	}
	return ""
}

// rejReasons names the REJ reasons by code; 34 is not defined.
var rejReasons = [...]string{
	1:  "No QP available",
	2:  "No EEC available",
	3:  "No resources available",
	4:  "Timeout",
	5:  "Unsupported request",
	6:  "Invalid Communication ID",
	7:  "Invalid Communication Instance",
	8:  "Invalid Service ID",
	9:  "Invalid Transport Service Type",
	10: "Stale connection",
	11: "RDC does not exist",
	12: "Primary Remote Port GID rejected",
	13: "Primary Remote Port LID rejected",
	14: "Invalid Primary SL",
	15: "Invalid Primary Traffic Class",
	16: "Invalid Primary Hop Limit",
	17: "Invalid Primary Packet Rate",
	18: "Alternate Remote Port GID rejected",
	19: "Alternate Remote Port LID rejected",
	20: "Invalid Alternate SL",
	21: "Invalid Alternate Traffic Class",
	22: "Invalid Alternate Hop Limit",
	23: "Invalid Alternate Packet Rate",
	24: "Port CM redirection",
	25: "Port redirection",
	26: "Invalid Path MTU",
	27: "Insufficient Responder Resources",
	28: "Consumer reject",
	29: "RNR Retry Count rejected",
	30: "Duplicate Local Comm ID",
	31: "Unsupported class version",
	32: "Invalid Flow Label",
	33: "Invalid Alternate Flow Label",
	35: "Vendor option not supported",
}
