package layers

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// The SCSI RDMA Protocol's login (T10 SRP, SRP_LOGIN_REQ, SRP_LOGIN_RSP and
// SRP_LOGIN_REJ; Linux include/scsi/srp.h). Over the IB CM the information
// units are the private data of the REQ, REP and REJ; over rdma_cm (after
// the 36-octet IP CM header, where only 56 octets are left) the REQ carries
// a repacked login request without its reserved octets. All fields are
// big-endian.

// SRP information unit opcodes.
const (
	SRPLoginReqOp = 0x00
	SRPLoginRspOp = 0xc0
	SRPLoginRejOp = 0xc2
)

// SRP sizes.
const (
	SRPLoginReqLen     = 64 // over the IB CM
	SRPLoginReqRDMALen = 56 // over rdma_cm, after the IP CM header
	SRPLoginReqRDMAMin = 48 // the rdma_cm layout before SRP2's immediate data offset
	SRPLoginRspLen     = 52
	SRPLoginRejLen     = 32
	srpMinIULen        = 64 // the smallest SRP_CMD with its CDB
)

// SRP buffer formats (a bit mask, in requests and responses).
const (
	SRPBufFormatDirect   = 0x0002
	SRPBufFormatIndirect = 0x0004
)

// SRPLoginReqInfo holds what both layouts of SRP_LOGIN_REQ carry.
type SRPLoginReqInfo struct {
	Opcode          uint8    // SRP_LOGIN_REQ: 0x00
	Tag             uint64   // the initiator's tag for the login
	ReqITIULen      uint32   // REQUESTED MAXIMUM INITIATOR TO TARGET IU LENGTH
	ReqBufFmt       uint16   // REQUIRED BUFFER FORMATS: 0x0002 direct, 0x0004 indirect
	ReqFlags        uint8    // multi-channel action (bits 1-0), immediate data requested (0x80, SRP2)
	ImmDataOffset   uint16   // SRP2: where immediate data starts in SRP_CMD
	InitiatorPortID [16]byte // INITIATOR PORT IDENTIFIER
	TargetPortID    [16]byte // TARGET PORT IDENTIFIER
}

// SRPLoginReq is SRP_LOGIN_REQ as the private data of an IB CM REQ, 64
// octets.
//
//	octet  0  opcode (0x00)                 1  reserved (7)
//	       8  tag (8)
//	      16  requested max initiator-to-target IU length (4)   20 reserved (4)
//	      24  required buffer formats (2)   26 flags (1)  27 reserved (1)
//	      28  immediate data offset (2, SRP2)  30 reserved (2)
//	      32  initiator port identifier (16)
//	      48  target port identifier (16)
type SRPLoginReq struct {
	golayers.BaseLayer
	SRPLoginReqInfo
	reservedZero bool // octets 1 to 7 and 20 to 23 are zero
}

// SRPLoginReqRDMA is SRP_LOGIN_REQ as Linux packs it for rdma_cm (struct
// srp_login_req_rdma), 56 octets after the IP CM header.
//
//	octet  0  tag (8)
//	       8  required buffer formats (2)   10 flags (1)   11 opcode (0x00)
//	      12  requested max initiator-to-target IU length (4)
//	      16  initiator port identifier (16)
//	      32  target port identifier (16)
//	      48  immediate data offset (2)     50 reserved (6)
type SRPLoginReqRDMA struct {
	golayers.BaseLayer
	SRPLoginReqInfo
}

// SRPLoginRsp is SRP_LOGIN_RSP, the private data of the REP, 52 octets.
//
//	octet  0  opcode (0xc0)   1 reserved (3)   4 request limit delta (4)
//	       8  tag (8)
//	      16  max initiator-to-target IU length (4)
//	      20  max target-to-initiator IU length (4)
//	      24  supported buffer formats (2)   26 flags (1)   27 reserved (25)
type SRPLoginRsp struct {
	golayers.BaseLayer
	Opcode       uint8  // SRP_LOGIN_RSP: 0xc0
	ReqLimDelta  uint32 // REQUEST LIMIT DELTA: the initiator's first credits
	Tag          uint64 // the login request's tag
	MaxITIULen   uint32 // MAXIMUM INITIATOR TO TARGET IU LENGTH
	MaxTIIULen   uint32 // MAXIMUM TARGET TO INITIATOR IU LENGTH
	BufFmt       uint16 // SUPPORTED BUFFER FORMATS
	RspFlags     uint8  // multi-channel result (bits 1-0), immediate data supported (0x80)
	reservedZero bool   // octets 1 to 3 are zero
}

// SRPLoginRej is SRP_LOGIN_REJ, the private data of the REJ, 32 octets.
//
//	octet  0  opcode (0xc2)   1 reserved (3)   4 reason (4)
//	       8  tag (8)        16 reserved (8)
//	      24  supported buffer formats (2)     26 reserved (6)
type SRPLoginRej struct {
	golayers.BaseLayer
	Opcode uint8  // SRP_LOGIN_REJ: 0xc2
	Reason uint32 // REASON
	Tag    uint64 // the login request's tag
	BufFmt uint16 // SUPPORTED BUFFER FORMATS
}

// SRPLoginRejReasonName names a login reject reason, or "".
func SRPLoginRejReasonName(r uint32) string { return srpLoginRejReasons[r] }

var srpLoginRejReasons = map[uint32]string{
	0x00010000: "unable to establish RDMA channel, no reason specified",
	0x00010001: "insufficient RDMA channel resources",
	0x00010002: "requested maximum initiator to target IU length too large",
	0x00010003: "unable to associate RDMA channel with I_T nexus",
	0x00010004: "one or more requested data buffer descriptor formats not supported",
	0x00010005: "multiple RDMA channels not supported",
	0x00010006: "channel limit reached for this initiator",
}

// srpBufFmtName names a buffer format mask: "direct, indirect".
func srpBufFmtName(v uint16) string {
	var s []string
	if v&SRPBufFormatDirect != 0 {
		s = append(s, "direct")
	}
	if v&SRPBufFormatIndirect != 0 {
		s = append(s, "indirect")
	}
	return strings.Join(s, ", ")
}

func (m *SRPLoginReq) LayerType() gopacket.LayerType         { return LayerTypeSRPLoginReq }
func (m *SRPLoginReq) CanDecode() gopacket.LayerClass        { return LayerTypeSRPLoginReq }
func (m *SRPLoginReq) NextLayerType() gopacket.LayerType     { return nextPayload(m.Payload) }
func (m *SRPLoginReqRDMA) LayerType() gopacket.LayerType     { return LayerTypeSRPLoginReqRDMA }
func (m *SRPLoginReqRDMA) CanDecode() gopacket.LayerClass    { return LayerTypeSRPLoginReqRDMA }
func (m *SRPLoginReqRDMA) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }
func (m *SRPLoginRsp) LayerType() gopacket.LayerType         { return LayerTypeSRPLoginRsp }
func (m *SRPLoginRsp) CanDecode() gopacket.LayerClass        { return LayerTypeSRPLoginRsp }
func (m *SRPLoginRsp) NextLayerType() gopacket.LayerType     { return nextPayload(m.Payload) }
func (m *SRPLoginRej) LayerType() gopacket.LayerType         { return LayerTypeSRPLoginRej }
func (m *SRPLoginRej) CanDecode() gopacket.LayerClass        { return LayerTypeSRPLoginRej }
func (m *SRPLoginRej) NextLayerType() gopacket.LayerType     { return nextPayload(m.Payload) }

// DecodeFromBytes decodes the IB CM layout.
func (m *SRPLoginReq) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = SRPLoginReq{}
	if err := need("srp login req", data, SRPLoginReqLen); err != nil {
		df.SetTruncated()
		return err
	}
	be := binary.BigEndian
	m.Opcode = data[0]
	m.Tag = be.Uint64(data[8:])
	m.ReqITIULen = be.Uint32(data[16:])
	m.ReqBufFmt = be.Uint16(data[24:])
	m.ReqFlags = data[26]
	m.ImmDataOffset = be.Uint16(data[28:])
	copy(m.InitiatorPortID[:], data[32:48])
	copy(m.TargetPortID[:], data[48:64])
	m.reservedZero = zero(data[1:8]) && zero(data[20:24])
	m.Contents, m.Payload = split(data, SRPLoginReqLen)
	return nil
}

// DecodeFromBytes decodes the rdma_cm layout; the immediate data offset
// only when its octets are there.
func (m *SRPLoginReqRDMA) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = SRPLoginReqRDMA{}
	if err := need("srp login req (rdma_cm)", data, SRPLoginReqRDMAMin); err != nil {
		df.SetTruncated()
		return err
	}
	be := binary.BigEndian
	m.Tag = be.Uint64(data[0:])
	m.ReqBufFmt = be.Uint16(data[8:])
	m.ReqFlags = data[10]
	m.Opcode = data[11]
	m.ReqITIULen = be.Uint32(data[12:])
	copy(m.InitiatorPortID[:], data[16:32])
	copy(m.TargetPortID[:], data[32:48])
	if len(data) >= 50 {
		m.ImmDataOffset = be.Uint16(data[48:])
	}
	m.Contents, m.Payload = split(data, SRPLoginReqRDMALen)
	return nil
}

// DecodeFromBytes decodes SRP_LOGIN_RSP.
func (m *SRPLoginRsp) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = SRPLoginRsp{}
	if err := need("srp login rsp", data, 27); err != nil {
		df.SetTruncated()
		return err
	}
	be := binary.BigEndian
	m.Opcode = data[0]
	m.ReqLimDelta = be.Uint32(data[4:])
	m.Tag = be.Uint64(data[8:])
	m.MaxITIULen, m.MaxTIIULen = be.Uint32(data[16:]), be.Uint32(data[20:])
	m.BufFmt = be.Uint16(data[24:])
	m.RspFlags = data[26]
	m.reservedZero = zero(data[1:4])
	m.Contents, m.Payload = split(data, SRPLoginRspLen)
	return nil
}

// DecodeFromBytes decodes SRP_LOGIN_REJ.
func (m *SRPLoginRej) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = SRPLoginRej{}
	if err := need("srp login rej", data, 26); err != nil {
		df.SetTruncated()
		return err
	}
	be := binary.BigEndian
	m.Opcode = data[0]
	m.Reason = be.Uint32(data[4:])
	m.Tag = be.Uint64(data[8:])
	m.BufFmt = be.Uint16(data[24:])
	m.Contents, m.Payload = split(data, SRPLoginRejLen)
	return nil
}

// problem judges a login request's fields.
func (m *SRPLoginReqInfo) problem() string {
	switch {
	case m.Opcode != SRPLoginReqOp:
		return fmt.Sprintf("opcode 0x%02x is not SRP_LOGIN_REQ (0x00)", m.Opcode)
	case m.ReqBufFmt == 0 || m.ReqBufFmt&^(SRPBufFormatDirect|SRPBufFormatIndirect) != 0:
		return fmt.Sprintf("required buffer formats 0x%04x are neither direct (0x0002) nor indirect (0x0004)", m.ReqBufFmt)
	case m.ReqITIULen < srpMinIULen:
		return fmt.Sprintf("requested maximum initiator to target IU length %d is under %d", m.ReqITIULen, srpMinIULen)
	}
	return ""
}

// plausible: a login request as initiators send it (IU lengths up to 1 MiB).
func (m *SRPLoginReqInfo) plausible() bool { return m.problem() == "" && m.ReqITIULen <= 1<<20 }

// Problem judges the opcode, buffer formats and IU length.
func (m *SRPLoginReq) Problem() string { return m.problem() }

// Plausible reports whether the octets look like a login request without
// any other evidence: its fields fit and its reserved octets are zero.
func (m *SRPLoginReq) Plausible() bool { return m.plausible() && m.reservedZero }

// Problem judges the opcode, buffer formats and IU length.
func (m *SRPLoginReqRDMA) Problem() string { return m.problem() }

// Plausible reports whether the octets look like a login request.
func (m *SRPLoginReqRDMA) Plausible() bool { return m.plausible() }

// Problem judges the opcode, buffer formats and IU lengths.
func (m *SRPLoginRsp) Problem() string {
	switch {
	case m.Opcode != SRPLoginRspOp:
		return fmt.Sprintf("opcode 0x%02x is not SRP_LOGIN_RSP (0xc0)", m.Opcode)
	case m.BufFmt&^(SRPBufFormatDirect|SRPBufFormatIndirect) != 0:
		return fmt.Sprintf("supported buffer formats 0x%04x include undefined bits", m.BufFmt)
	case m.MaxITIULen < srpMinIULen:
		return fmt.Sprintf("maximum initiator to target IU length %d is under %d", m.MaxITIULen, srpMinIULen)
	}
	return ""
}

// Plausible reports whether the octets look like a login response.
func (m *SRPLoginRsp) Plausible() bool {
	return m.Problem() == "" && m.reservedZero && m.MaxITIULen <= 1<<20 && m.MaxTIIULen <= 1<<20
}

// Problem judges the opcode and the reason.
func (m *SRPLoginRej) Problem() string {
	switch {
	case m.Opcode != SRPLoginRejOp:
		return fmt.Sprintf("opcode 0x%02x is not SRP_LOGIN_REJ (0xc2)", m.Opcode)
	case SRPLoginRejReasonName(m.Reason) == "":
		return fmt.Sprintf("reason 0x%08x is not defined", m.Reason)
	}
	return ""
}

// Plausible reports whether the octets look like a login reject.
func (m *SRPLoginRej) Plausible() bool { return m.Problem() == "" }

func (m *SRPLoginReqInfo) fields() []Field {
	f := make(fieldList, 0, 8)
	f.hex("Opcode", "opcode", 8, uint64(m.Opcode))
	if m.Opcode == SRPLoginReqOp {
		f.note("SRP_LOGIN_REQ")
	}
	f.id64("Tag", "tag", m.Tag)
	f.dec("Requested Max Initiator to Target IU Length", "max_it_iu_len", uint64(m.ReqITIULen))
	f.hex("Required Buffer Formats", "buf_fmt", 16, uint64(m.ReqBufFmt))
	f.note(srpBufFmtName(m.ReqBufFmt))
	f.hex("Flags", "flags", 8, uint64(m.ReqFlags))
	f.dec("Immediate Data Offset", "imm_data_offset", uint64(m.ImmDataOffset))
	f.blob("Initiator Port Identifier", "initiator_port_id", m.InitiatorPortID[:])
	f.blob("Target Port Identifier", "target_port_id", m.TargetPortID[:])
	return f
}

func (m *SRPLoginReqInfo) summary() string {
	return fmt.Sprintf("SRP_LOGIN_REQ tag=0x%x max_it_iu_len=%d buf_fmt=0x%04x", m.Tag, m.ReqITIULen, m.ReqBufFmt)
}

// Fields lists the request's fields.
func (m *SRPLoginReq) Fields() []Field { return m.fields() }

// Summary is "SRP_LOGIN_REQ tag=0x1 max_it_iu_len=8260 buf_fmt=0x0006".
func (m *SRPLoginReq) Summary() string { return m.summary() }

// Fields lists the request's fields.
func (m *SRPLoginReqRDMA) Fields() []Field { return m.fields() }

// Summary is "SRP_LOGIN_REQ tag=0x1 max_it_iu_len=8260 buf_fmt=0x0006".
func (m *SRPLoginReqRDMA) Summary() string { return m.summary() }

// Fields lists the response's fields.
func (m *SRPLoginRsp) Fields() []Field {
	f := make(fieldList, 0, 8)
	f.hex("Opcode", "opcode", 8, uint64(m.Opcode))
	if m.Opcode == SRPLoginRspOp {
		f.note("SRP_LOGIN_RSP")
	}
	f.dec("Request Limit Delta", "req_lim_delta", uint64(m.ReqLimDelta))
	f.id64("Tag", "tag", m.Tag)
	f.dec("Max Initiator to Target IU Length", "max_it_iu_len", uint64(m.MaxITIULen))
	f.dec("Max Target to Initiator IU Length", "max_ti_iu_len", uint64(m.MaxTIIULen))
	f.hex("Supported Buffer Formats", "buf_fmt", 16, uint64(m.BufFmt))
	f.note(srpBufFmtName(m.BufFmt))
	f.hex("Flags", "flags", 8, uint64(m.RspFlags))
	return f
}

// Summary is "SRP_LOGIN_RSP req_lim_delta=64 max_it_iu_len=8260 max_ti_iu_len=8260".
func (m *SRPLoginRsp) Summary() string {
	return fmt.Sprintf("SRP_LOGIN_RSP req_lim_delta=%d max_it_iu_len=%d max_ti_iu_len=%d", m.ReqLimDelta, m.MaxITIULen, m.MaxTIIULen)
}

// Fields lists the reject's fields; the reason carries its name.
func (m *SRPLoginRej) Fields() []Field {
	f := make(fieldList, 0, 4)
	f.hex("Opcode", "opcode", 8, uint64(m.Opcode))
	if m.Opcode == SRPLoginRejOp {
		f.note("SRP_LOGIN_REJ")
	}
	f.hex("Reason", "reason", 32, uint64(m.Reason))
	f.note(SRPLoginRejReasonName(m.Reason))
	f.id64("Tag", "tag", m.Tag)
	f.hex("Supported Buffer Formats", "buf_fmt", 16, uint64(m.BufFmt))
	f.note(srpBufFmtName(m.BufFmt))
	return f
}

// Summary is "SRP_LOGIN_REJ reason=0x00010001 (insufficient RDMA channel resources)".
func (m *SRPLoginRej) Summary() string {
	s := fmt.Sprintf("SRP_LOGIN_REJ reason=0x%08x", m.Reason)
	if n := SRPLoginRejReasonName(m.Reason); n != "" {
		s += " (" + n + ")"
	}
	return s
}

// Encode writes the 64 octets of the IB CM layout into b.
func (m *SRPLoginReq) Encode(b []byte) {
	clear(b[:SRPLoginReqLen])
	be := binary.BigEndian
	b[0] = m.Opcode
	be.PutUint64(b[8:], m.Tag)
	be.PutUint32(b[16:], m.ReqITIULen)
	be.PutUint16(b[24:], m.ReqBufFmt)
	b[26] = m.ReqFlags
	be.PutUint16(b[28:], m.ImmDataOffset)
	copy(b[32:48], m.InitiatorPortID[:])
	copy(b[48:64], m.TargetPortID[:])
}

// Encode writes the 56 octets of the rdma_cm layout into b.
func (m *SRPLoginReqRDMA) Encode(b []byte) {
	clear(b[:SRPLoginReqRDMALen])
	be := binary.BigEndian
	be.PutUint64(b[0:], m.Tag)
	be.PutUint16(b[8:], m.ReqBufFmt)
	b[10] = m.ReqFlags
	b[11] = m.Opcode
	be.PutUint32(b[12:], m.ReqITIULen)
	copy(b[16:32], m.InitiatorPortID[:])
	copy(b[32:48], m.TargetPortID[:])
	be.PutUint16(b[48:], m.ImmDataOffset)
}

// Encode writes the 52 octets into b.
func (m *SRPLoginRsp) Encode(b []byte) {
	clear(b[:SRPLoginRspLen])
	be := binary.BigEndian
	b[0] = m.Opcode
	be.PutUint32(b[4:], m.ReqLimDelta)
	be.PutUint64(b[8:], m.Tag)
	be.PutUint32(b[16:], m.MaxITIULen)
	be.PutUint32(b[20:], m.MaxTIIULen)
	be.PutUint16(b[24:], m.BufFmt)
	b[26] = m.RspFlags
}

// Encode writes the 32 octets into b.
func (m *SRPLoginRej) Encode(b []byte) {
	clear(b[:SRPLoginRejLen])
	be := binary.BigEndian
	b[0] = m.Opcode
	be.PutUint32(b[4:], m.Reason)
	be.PutUint64(b[8:], m.Tag)
	be.PutUint16(b[24:], m.BufFmt)
}

func decodeSRPLoginReq(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&SRPLoginReq{}, data, p)
}

func decodeSRPLoginReqRDMA(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&SRPLoginReqRDMA{}, data, p)
}

func decodeSRPLoginRsp(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&SRPLoginRsp{}, data, p)
}

func decodeSRPLoginRej(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&SRPLoginRej{}, data, p)
}
