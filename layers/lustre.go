package layers

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// Lustre LNet's InfiniBand driver, o2iblnd (lnet/klnds/o2iblnd/o2iblnd.h,
// struct kib_msg and struct kib_rej), puts a whole LNet message in the CM
// private data: CONNREQ in the REQ (after the IP CM header: exactly the 56
// octets left), CONNACK in the REP, and its reject structure in the REJ.
// Every field is in the sender's byte order, which the magic 0x0be91b91
// shows.

// LustreO2IBMsg is an o2iblnd message with connection parameters (CONNREQ
// or CONNACK), 56 octets.
//
//	octet  0  magic 0x0be91b91 (4)   4 version (2): 0x11, 0x12
//	       6  type: 0xc0 CONNREQ, 0xc1 CONNACK      7 credits returned
//	       8  nob (4): octets of the whole message  12 checksum (4; 0: none)
//	      16  source NID (8)           24 source incarnation stamp (8)
//	      32  destination NID (8)      40 destination incarnation stamp (8)
//	      48  queue depth (2)          50 max fragments (2)
//	      52  max message size (4)
type LustreO2IBMsg struct {
	golayers.BaseLayer
	ByteOrder  binary.ByteOrder // the sender's, from the magic
	Magic      uint32           // as the sender wrote it
	Version    uint16
	Type       uint8
	Credits    uint8
	Nob        uint32
	Checksum   uint32
	SrcNID     uint64
	SrcStamp   uint64
	DstNID     uint64
	DstStamp   uint64
	QueueDepth uint16
	MaxFrags   uint16
	MaxMsgSize uint32
}

// LustreO2IBRej is o2iblnd's reject structure, 24 octets (7 from old
// versions: magic, version and reason only).
//
//	octet  0  magic (4)    4 version (2)    6 why (reject reason)   7 padding
//	       8  incarnation (8)
//	      16  queue depth (2)   18 max fragments (2)   20 max message size (4)
type LustreO2IBRej struct {
	golayers.BaseLayer
	ByteOrder   binary.ByteOrder
	Magic       uint32
	Version     uint16
	Why         uint8
	Incarnation uint64
	HasParams   bool // the connection parameters are there (all but old versions)
	QueueDepth  uint16
	MaxFrags    uint16
	MaxMsgSize  uint32
}

// o2iblnd constants.
const (
	LustreO2IBMagic    = 0x0be91b91 // LNET_PROTO_IB_MAGIC
	LustreO2IBMsgLen   = 56
	LustreO2IBRejLen   = 24
	LustreO2IBRejMin   = 7
	LustreO2IBConnReq  = 0xc0
	LustreO2IBConnAck  = 0xc1
	lustreO2IBVersion1 = 0x11
	lustreO2IBVersion2 = 0x12
)

// LustreO2IBOrder returns the byte order of the magic at the start of b, or
// nil when there is none.
func LustreO2IBOrder(b []byte) binary.ByteOrder {
	switch {
	case len(b) < 4:
		return nil
	case binary.LittleEndian.Uint32(b) == LustreO2IBMagic:
		return binary.LittleEndian
	case binary.BigEndian.Uint32(b) == LustreO2IBMagic:
		return binary.BigEndian
	}
	return nil
}

// LustreO2IBRejectName names an o2iblnd reject reason, or "".
func LustreO2IBRejectName(why uint8) string {
	if int(why) < len(lustreRejectNames) {
		return lustreRejectNames[why]
	}
	return ""
}

// lustreRejectNames names the IBLND_REJECT_* reasons, by value.
var lustreRejectNames = [...]string{
	1: "connection race",
	2: "no resources",
	3: "fatal",
	4: "incompatible version",
	5: "stale peer",
	6: "RDMA fragments do not match",
	7: "message queue size does not match",
	8: "invalid service ID",
	9: "early",
}

// lustreTypeName names an o2iblnd message type, or "".
func lustreTypeName(t uint8) string { return lustreTypeNames[t] }

var lustreTypeNames = map[uint8]string{
	LustreO2IBConnReq: "CONNREQ",
	LustreO2IBConnAck: "CONNACK",
}

// lnetTypeNames names the LNet network types a NID may carry (LNet's
// SOCKLND, O2IBLND, LOLND, GNILND, KFILND).
var lnetTypeNames = map[uint32]string{2: "tcp", 5: "o2ib", 9: "lo", 13: "gni", 16: "kfi"}

// LustreNIDString shows an LNet NID as Lustre does: 192.0.2.1@o2ib,
// 192.0.2.1@o2ib1.
func LustreNIDString(nid uint64) string {
	addr, net := uint32(nid), uint32(nid>>32)
	typ, num := net>>16, net&0xffff
	name, ok := lnetTypeNames[typ]
	if !ok {
		name = fmt.Sprintf("net%d-", typ)
	}
	if num != 0 {
		name += fmt.Sprint(num)
	}
	if typ == 2 || typ == 5 {
		return fmt.Sprintf("%d.%d.%d.%d@%s", byte(addr>>24), byte(addr>>16), byte(addr>>8), byte(addr), name)
	}
	return fmt.Sprintf("%d@%s", addr, name)
}

func (m *LustreO2IBMsg) LayerType() gopacket.LayerType     { return LayerTypeLustreO2IBMsg }
func (m *LustreO2IBMsg) CanDecode() gopacket.LayerClass    { return LayerTypeLustreO2IBMsg }
func (m *LustreO2IBMsg) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }
func (m *LustreO2IBRej) LayerType() gopacket.LayerType     { return LayerTypeLustreO2IBRej }
func (m *LustreO2IBRej) CanDecode() gopacket.LayerClass    { return LayerTypeLustreO2IBRej }
func (m *LustreO2IBRej) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }

// DecodeFromBytes decodes a CONNREQ or CONNACK in the byte order of its
// magic (little-endian when the magic is wrong: Problem says so).
func (m *LustreO2IBMsg) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = LustreO2IBMsg{}
	if err := need("lustre o2ib msg", data, LustreO2IBMsgLen); err != nil {
		df.SetTruncated()
		return err
	}
	o := LustreO2IBOrder(data)
	if o == nil {
		o = binary.LittleEndian
	}
	m.ByteOrder = o
	m.Magic, m.Version = o.Uint32(data[0:]), o.Uint16(data[4:])
	m.Type, m.Credits = data[6], data[7]
	m.Nob, m.Checksum = o.Uint32(data[8:]), o.Uint32(data[12:])
	m.SrcNID, m.SrcStamp = o.Uint64(data[16:]), o.Uint64(data[24:])
	m.DstNID, m.DstStamp = o.Uint64(data[32:]), o.Uint64(data[40:])
	m.QueueDepth, m.MaxFrags, m.MaxMsgSize = o.Uint16(data[48:]), o.Uint16(data[50:]), o.Uint32(data[52:])
	m.Contents, m.Payload = split(data, LustreO2IBMsgLen)
	return nil
}

// DecodeFromBytes decodes the reject structure, with its connection
// parameters when all 24 octets are there.
func (m *LustreO2IBRej) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = LustreO2IBRej{}
	if err := need("lustre o2ib rej", data, LustreO2IBRejMin); err != nil {
		df.SetTruncated()
		return err
	}
	o := LustreO2IBOrder(data)
	if o == nil {
		o = binary.LittleEndian
	}
	m.ByteOrder = o
	m.Magic, m.Version, m.Why = o.Uint32(data[0:]), o.Uint16(data[4:]), data[6]
	n := LustreO2IBRejMin
	if len(data) >= LustreO2IBRejLen {
		n, m.HasParams = LustreO2IBRejLen, true
		m.Incarnation = o.Uint64(data[8:])
		m.QueueDepth, m.MaxFrags, m.MaxMsgSize = o.Uint16(data[16:]), o.Uint16(data[18:]), o.Uint32(data[20:])
	}
	m.Contents, m.Payload = split(data, n)
	return nil
}

func lustreVersionProblem(magic uint32, version uint16) string {
	switch {
	case magic != LustreO2IBMagic:
		return fmt.Sprintf("magic 0x%08x is not 0x%08x", magic, LustreO2IBMagic)
	case version != lustreO2IBVersion1 && version != lustreO2IBVersion2:
		return fmt.Sprintf("version 0x%x is neither 0x11 nor 0x12", version)
	}
	return ""
}

// Problem: the magic, a known version, and a connection message type.
func (m *LustreO2IBMsg) Problem() string {
	if p := lustreVersionProblem(m.Magic, m.Version); p != "" {
		return p
	}
	if lustreTypeName(m.Type) == "" {
		return fmt.Sprintf("type 0x%02x is neither CONNREQ (0xc0) nor CONNACK (0xc1)", m.Type)
	}
	return ""
}

// Problem: the magic, a known version and a known reason.
func (m *LustreO2IBRej) Problem() string {
	if p := lustreVersionProblem(m.Magic, m.Version); p != "" {
		return p
	}
	if LustreO2IBRejectName(m.Why) == "" {
		return fmt.Sprintf("reject reason %d is not defined", m.Why)
	}
	return ""
}

// Fields lists the message's fields.
func (m *LustreO2IBMsg) Fields() []Field {
	f := make(fieldList, 0, 14)
	f.text("Byte Order", "byte_order", byteOrderName(m.ByteOrder))
	f.hex("Version", "version", 16, uint64(m.Version))
	f.hex("Type", "type", 8, uint64(m.Type))
	f.note(lustreTypeName(m.Type))
	f.dec("Credits", "credits", uint64(m.Credits))
	f.dec("Message Size", "nob", uint64(m.Nob))
	f.hex("Checksum", "checksum", 32, uint64(m.Checksum))
	f.text("Source NID", "src_nid", LustreNIDString(m.SrcNID))
	f.id64("Source Stamp", "src_stamp", m.SrcStamp)
	f.text("Destination NID", "dst_nid", LustreNIDString(m.DstNID))
	f.id64("Destination Stamp", "dst_stamp", m.DstStamp)
	f.dec("Queue Depth", "queue_depth", uint64(m.QueueDepth))
	f.dec("Max Fragments", "max_frags", uint64(m.MaxFrags))
	f.dec("Max Message Size", "max_msg_size", uint64(m.MaxMsgSize))
	return f
}

// Summary is "Lustre o2iblnd CONNREQ v0x12 credits=8 queue_depth=8 max_frags=256 max_msg_size=4096".
func (m *LustreO2IBMsg) Summary() string {
	t := lustreTypeName(m.Type)
	if t == "" {
		t = fmt.Sprintf("type 0x%02x", m.Type)
	}
	return fmt.Sprintf("Lustre o2iblnd %s v0x%x credits=%d queue_depth=%d max_frags=%d max_msg_size=%d",
		t, m.Version, m.Credits, m.QueueDepth, m.MaxFrags, m.MaxMsgSize)
}

// Fields lists the reject's fields; the reason carries its name.
func (m *LustreO2IBRej) Fields() []Field {
	f := make(fieldList, 0, 7)
	f.text("Byte Order", "byte_order", byteOrderName(m.ByteOrder))
	f.hex("Version", "version", 16, uint64(m.Version))
	f.dec("Reject Reason", "why", uint64(m.Why))
	f.note(LustreO2IBRejectName(m.Why))
	if m.HasParams {
		f.id64("Incarnation", "incarnation", m.Incarnation)
		f.dec("Queue Depth", "queue_depth", uint64(m.QueueDepth))
		f.dec("Max Fragments", "max_frags", uint64(m.MaxFrags))
		f.dec("Max Message Size", "max_msg_size", uint64(m.MaxMsgSize))
	}
	return f
}

// Summary is "Lustre o2iblnd reject why=7 (message queue size does not match)".
func (m *LustreO2IBRej) Summary() string {
	s := fmt.Sprintf("Lustre o2iblnd reject why=%d", m.Why)
	if n := LustreO2IBRejectName(m.Why); n != "" {
		s += " (" + n + ")"
	}
	return s
}

func orderOr(o binary.ByteOrder) binary.ByteOrder {
	if o == nil {
		return binary.LittleEndian
	}
	return o
}

// Encode writes the 56 octets into b in the message's byte order
// (little-endian when none is set), the magic first.
func (m *LustreO2IBMsg) Encode(b []byte) {
	o := orderOr(m.ByteOrder)
	o.PutUint32(b[0:], m.Magic)
	o.PutUint16(b[4:], m.Version)
	b[6], b[7] = m.Type, m.Credits
	o.PutUint32(b[8:], m.Nob)
	o.PutUint32(b[12:], m.Checksum)
	o.PutUint64(b[16:], m.SrcNID)
	o.PutUint64(b[24:], m.SrcStamp)
	o.PutUint64(b[32:], m.DstNID)
	o.PutUint64(b[40:], m.DstStamp)
	o.PutUint16(b[48:], m.QueueDepth)
	o.PutUint16(b[50:], m.MaxFrags)
	o.PutUint32(b[52:], m.MaxMsgSize)
}

// Encode writes the 24 octets (7 without parameters) into b.
func (m *LustreO2IBRej) Encode(b []byte) {
	o := orderOr(m.ByteOrder)
	o.PutUint32(b[0:], m.Magic)
	o.PutUint16(b[4:], m.Version)
	b[6] = m.Why
	if m.HasParams {
		b[7] = 0
		o.PutUint64(b[8:], m.Incarnation)
		o.PutUint16(b[16:], m.QueueDepth)
		o.PutUint16(b[18:], m.MaxFrags)
		o.PutUint32(b[20:], m.MaxMsgSize)
	}
}

func decodeLustreO2IBMsg(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&LustreO2IBMsg{}, data, p)
}

func decodeLustreO2IBRej(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&LustreO2IBRej{}, data, p)
}
