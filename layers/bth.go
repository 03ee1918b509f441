package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// BTH is the InfiniBand Base Transport Header (IBTA Vol 1, 9.2), the first
// transport header of every IBA packet, in RoCEv2 the UDP payload. The packet
// after it ends with the 4-octet Invariant CRC, which the BTH layer splits off.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------+-+-+---+-------+-------------------------------+
//	|    OpCode     |S|M|Pad| TVer  |             P_Key             |
//	+-+-+-----------+-+-+---+-------+-------------------------------+
//	|F|B|   resv6   |                    DestQP                     |
//	+-+-+-----------+-----------------------------------------------+
//	|A|    resv7    |                      PSN                      |
//	+-+-------------+-----------------------------------------------+
type BTH struct {
	golayers.BaseLayer
	OpCode    uint8  // operation code; the top 3 bits name the transport
	SE        bool   // Solicited Event
	M         bool   // MigReq
	PadCnt    uint8  // pad octets before the ICRC (2 bits)
	TVer      uint8  // Transport Header Version (4 bits)
	PKey      uint16 // Partition Key
	FECN      bool   // RoCEv2: Forward ECN (bit 7 of the reserved octet)
	BECN      bool   // RoCEv2: Backward ECN (bit 6 of the reserved octet)
	Reserved6 uint8  // the other 6 bits of that octet
	DestQP    uint32 // Destination QP (24 bits)
	AckReq    bool   // Acknowledge Request
	Reserved7 uint8  // 7 reserved bits
	PSN       uint32 // Packet Sequence Number (24 bits)

	// ICRC is the Invariant CRC at the end of the packet, as a number (it is
	// stored least-significant octet first), present when HasICRC is set.
	ICRC    uint32
	HasICRC bool

	// NoICRC is a setting, kept across decodes: the data handed to the BTH
	// does not end with an ICRC (the capture cut the packet short), so no
	// trailer is split off.
	NoICRC bool
}

// Sizes of the BTH and the ICRC.
const (
	BTHLen  = 12
	ICRCLen = 4
)

// Transports named by the top 3 bits of OpCode.
const (
	TransportRC  = 0x00
	TransportUC  = 0x20
	TransportRD  = 0x40
	TransportUD  = 0x60
	TransportCNP = 0x80
	TransportXRC = 0xa0
)

// Opcodes this package treats specially.
const (
	OpUDSendOnly    = 0x64
	OpUDSendOnlyImm = 0x65
)

func (b *BTH) LayerType() gopacket.LayerType  { return LayerTypeBTH }
func (b *BTH) CanDecode() gopacket.LayerClass { return LayerTypeBTH }

// NextLayerType is DETH for the UD SEND opcodes, the first extended
// transport header of the RC and UC opcodes that have one (see
// ExtendedHeaders); the other headers (RD's RDETH and DETH) are not decoded
// and stay payload, as does the data of a SEND.
func (b *BTH) NextLayerType() gopacket.LayerType {
	switch b.OpCode {
	case OpUDSendOnly, OpUDSendOnlyImm:
		return LayerTypeDETH
	}
	if hs := ExtendedHeaders(b.OpCode); len(hs) > 0 {
		return hs[0]
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes the BTH, splits off the ICRC (unless NoICRC is set)
// and the pad octets, and leaves the rest as payload.
func (b *BTH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	noICRC := b.NoICRC
	*b = BTH{NoICRC: noICRC}
	if err := need("bth", data, BTHLen); err != nil {
		df.SetTruncated()
		return err
	}
	b.OpCode = data[0]
	b.SE = data[1]&0x80 != 0
	b.M = data[1]&0x40 != 0
	b.PadCnt = data[1] >> 4 & 0x03
	b.TVer = data[1] & 0x0f
	b.PKey = binary.BigEndian.Uint16(data[2:4])
	b.FECN = data[4]&0x80 != 0
	b.BECN = data[4]&0x40 != 0
	b.Reserved6 = data[4] & 0x3f
	b.DestQP = uint24(data[5:8])
	b.AckReq = data[8]&0x80 != 0
	b.Reserved7 = data[8] & 0x7f
	b.PSN = uint24(data[9:12])
	b.Contents = data[:BTHLen]
	end := len(data)
	if !noICRC && end >= BTHLen+ICRCLen {
		end -= ICRCLen
		b.ICRC = binary.LittleEndian.Uint32(data[end:])
		b.HasICRC = true
		if end-int(b.PadCnt) >= BTHLen {
			end -= int(b.PadCnt)
		}
	}
	b.Payload = data[BTHLen:end]
	return nil
}

// SerializeTo writes the BTH. The ICRC is not written: it covers the headers
// in front of the BTH, so whoever builds the whole packet appends it.
func (b *BTH) SerializeTo(sb gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := sb.PrependBytes(BTHLen)
	if err != nil {
		return err
	}
	h[0] = b.OpCode
	h[1] = bit(b.SE, 0x80) | bit(b.M, 0x40) | (b.PadCnt&0x03)<<4 | b.TVer&0x0f
	binary.BigEndian.PutUint16(h[2:4], b.PKey)
	h[4] = bit(b.FECN, 0x80) | bit(b.BECN, 0x40) | b.Reserved6&0x3f
	putUint24(h[5:8], b.DestQP)
	h[8] = bit(b.AckReq, 0x80) | b.Reserved7&0x7f
	putUint24(h[9:12], b.PSN)
	return nil
}

// Fields lists the BTH's fields for display.
func (b *BTH) Fields() []Field {
	f := make(fieldList, 0, 12)
	f.hex("OpCode", "opcode", 8, uint64(b.OpCode))
	f.note(OpCodeName(b.OpCode))
	f.flag("Solicited Event", "se", b.SE)
	f.flag("MigReq", "mig_req", b.M)
	f.dec("Pad Count", "pad_cnt", uint64(b.PadCnt))
	f.dec("Transport Header Version", "tver", uint64(b.TVer))
	f.hex("Partition Key", "p_key", 16, uint64(b.PKey))
	f.flag("FECN", "fecn", b.FECN)
	f.flag("BECN", "becn", b.BECN)
	f.hex("Destination QP", "dest_qp", 24, uint64(b.DestQP))
	f.flag("Acknowledge Request", "ack_req", b.AckReq)
	f.dec("Packet Sequence Number", "psn", uint64(b.PSN))
	return f
}

func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	b := &BTH{}
	// A capture cut short by its snap length has no ICRC at its end; the
	// layers in front of the BTH have said so through SetTruncated.
	if pk, ok := p.(gopacket.Packet); ok && pk.Metadata().Truncated {
		b.NoICRC = true
	}
	if err := b.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(b)
	p.SetTransportLayer(b)
	return p.NextDecoder(b.NextLayerType())
}

// TransportFlow is the flow from nowhere to the destination QP: the BTH names
// only the receiving queue pair.
func (b *BTH) TransportFlow() gopacket.Flow {
	var dst [3]byte
	putUint24(dst[:], b.DestQP)
	return gopacket.NewFlow(EndpointQP, nil, dst[:])
}

// OpCodeName names an opcode as IBTA Vol 1 table 38 does, or "" when the
// opcode is not defined for its transport (or not one this package names).
func OpCodeName(op uint8) string {
	if op == 0x81 {
		return "CNP"
	}
	low := op & 0x1f
	name, ok := opNames[low]
	t := opTransports[op>>5]
	if !ok || t.ops&(1<<low) == 0 {
		return ""
	}
	return t.prefix + " " + name
}

// opTransports is, for each transport (the opcode's top three bits), the
// prefix of its opcode names and which of the operations in opNames it has:
// bit n stands for operation n. The transports 0x80 to 0xe0 have none.
var opTransports = [8]struct {
	prefix string
	ops    uint32
}{
	TransportRC >> 5: {"RC", ^uint32(0)},        // every operation
	TransportUC >> 5: {"UC", 1<<0x0c - 1},       // SEND and RDMA WRITE (0x00-0x0b)
	TransportRD >> 5: {"RD", 1<<0x15 - 1},       // RC's, without SEND with Invalidate (0x00-0x14)
	TransportUD >> 5: {"UD", 1<<0x04 | 1<<0x05}, // SEND Only, with or without immediate data
}

var opNames = map[uint8]string{
	0x00: "SEND First", 0x01: "SEND Middle", 0x02: "SEND Last", 0x03: "SEND Last with Immediate",
	0x04: "SEND Only", 0x05: "SEND Only with Immediate", 0x06: "RDMA WRITE First",
	0x07: "RDMA WRITE Middle", 0x08: "RDMA WRITE Last", 0x09: "RDMA WRITE Last with Immediate",
	0x0a: "RDMA WRITE Only", 0x0b: "RDMA WRITE Only with Immediate", 0x0c: "RDMA READ Request",
	0x0d: "RDMA READ Response First", 0x0e: "RDMA READ Response Middle",
	0x0f: "RDMA READ Response Last", 0x10: "RDMA READ Response Only", 0x11: "Acknowledge",
	0x12: "ATOMIC Acknowledge", 0x13: "CmpSwap", 0x14: "FetchAdd",
	0x16: "SEND Last with Invalidate", 0x17: "SEND Only with Invalidate",
}

func uint24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

func putUint24(b []byte, v uint32) {
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}

func bit(v bool, mask uint8) uint8 {
	if v {
		return mask
	}
	return 0
}
