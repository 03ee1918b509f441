package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// DDP is a Direct Data Placement segment header (RFC 5041, section 4) with
// the RDMAP control field it carries (RFC 5040, section 4.2): the ULPDU of
// an MPA FPDU. A tagged segment (RDMA Write, RDMA Read Response) names the
// buffer by STag and Tagged Offset; an untagged one (Send, Read Request,
// Terminate) by queue, message sequence number and offset.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-------+---+---+---+-------+-------------------------------+
//	|T|L| Resrv | DV| RV|Rsv| Opcode|  tagged: Data Sink STag  ...  |
//	+-+-+-------+---+---+---+-------+-------------------------------+
//	  tagged:   Data Sink STag (4), Data Sink Tagged Offset (8)
//	  untagged: RsvdULP (4; the Invalidate STag of a Send with
//	            Invalidate), Queue Number (4), Message Sequence Number
//	            (4), Message Offset (4)
type DDP struct {
	golayers.BaseLayer
	Tagged   bool  // T
	Last     bool  // L: the last segment of its message
	Reserved uint8 // the 4 reserved bits of the DDP control field
	Version  uint8 // DV (2 bits): 1
	// The RDMAP control field.
	RDMAPVersion  uint8 // RV (2 bits): 1
	RDMAPReserved uint8 // 2 bits
	Opcode        uint8 // RDMAP opcode (4 bits)

	// Tagged
	STag         uint32
	TaggedOffset uint64
	// Untagged
	InvalidateSTag uint32 // RsvdULP: the STag a Send with Invalidate invalidates
	QN             uint32
	MSN            uint32
	MO             uint32
}

// DDP header sizes and fields.
const (
	DDPTaggedLen   = 14
	DDPUntaggedLen = 18
	DDPVersion     = 1
	RDMAPVersion   = 1
)

// RDMAP opcodes (RFC 5040, section 4.2).
const (
	RDMAPOpWrite            = 0
	RDMAPOpReadRequest      = 1
	RDMAPOpReadResponse     = 2
	RDMAPOpSend             = 3
	RDMAPOpSendInvalidate   = 4
	RDMAPOpSendSE           = 5
	RDMAPOpSendSEInvalidate = 6
	RDMAPOpTerminate        = 7
)

// Untagged queues (RFC 5040, section 5.1).
const (
	QNSend        = 0
	QNReadRequest = 1
	QNTerminate   = 2
)

var rdmapNames = [...]string{"RDMA_WRITE", "RDMA_READ_REQUEST", "RDMA_READ_RESPONSE", "SEND",
	"SEND_WITH_INVALIDATE", "SEND_WITH_SE", "SEND_WITH_SE_AND_INVALIDATE", "TERMINATE"}

// RDMAPOpcodeName names an RDMAP opcode as the JSON output spells it, or ""
// for one RFC 5040 does not define.
func RDMAPOpcodeName(op uint8) string {
	if int(op) < len(rdmapNames) {
		return rdmapNames[op]
	}
	return ""
}

// RDMAPInvalidates reports whether an RDMAP opcode is a Send with Invalidate.
func RDMAPInvalidates(op uint8) bool {
	return op == RDMAPOpSendInvalidate || op == RDMAPOpSendSEInvalidate
}

// HeaderLen is the DDP header's length for its T flag.
func (d *DDP) HeaderLen() int {
	if d.Tagged {
		return DDPTaggedLen
	}
	return DDPUntaggedLen
}

func (d *DDP) LayerType() gopacket.LayerType  { return LayerTypeDDP }
func (d *DDP) CanDecode() gopacket.LayerClass { return LayerTypeDDP }

// NextLayerType is the RDMAP header that follows for a Read Request or a
// Terminate; the rest is payload.
func (d *DDP) NextLayerType() gopacket.LayerType {
	switch {
	case len(d.Payload) == 0:
		return gopacket.LayerTypeZero
	case !d.Tagged && d.Opcode == RDMAPOpReadRequest:
		return LayerTypeRDMAPReadRequest
	case !d.Tagged && d.Opcode == RDMAPOpTerminate:
		return LayerTypeRDMAPTerminate
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes a DDP segment header.
func (d *DDP) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*d = DDP{}
	if err := need("ddp", data, 2); err != nil {
		df.SetTruncated()
		return err
	}
	d.Tagged = data[0]&0x80 != 0
	d.Last = data[0]&0x40 != 0
	d.Reserved = data[0] >> 2 & 0x0f
	d.Version = data[0] & 0x03
	d.RDMAPVersion = data[1] >> 6
	d.RDMAPReserved = data[1] >> 4 & 0x03
	d.Opcode = data[1] & 0x0f
	n := d.HeaderLen()
	if err := need("ddp", data, n); err != nil {
		df.SetTruncated()
		return err
	}
	if d.Tagged {
		d.STag = binary.BigEndian.Uint32(data[2:6])
		d.TaggedOffset = binary.BigEndian.Uint64(data[6:14])
	} else {
		d.InvalidateSTag = binary.BigEndian.Uint32(data[2:6])
		d.QN = binary.BigEndian.Uint32(data[6:10])
		d.MSN = binary.BigEndian.Uint32(data[10:14])
		d.MO = binary.BigEndian.Uint32(data[14:18])
	}
	d.Contents = data[:n]
	d.Payload = data[n:]
	return nil
}

// Encode writes the header into b, which must hold HeaderLen octets.
func (d *DDP) Encode(b []byte) {
	b[0] = bit(d.Tagged, 0x80) | bit(d.Last, 0x40) | (d.Reserved&0x0f)<<2 | d.Version&0x03
	b[1] = d.RDMAPVersion<<6 | (d.RDMAPReserved&0x03)<<4 | d.Opcode&0x0f
	if d.Tagged {
		binary.BigEndian.PutUint32(b[2:6], d.STag)
		binary.BigEndian.PutUint64(b[6:14], d.TaggedOffset)
		return
	}
	binary.BigEndian.PutUint32(b[2:6], d.InvalidateSTag)
	binary.BigEndian.PutUint32(b[6:10], d.QN)
	binary.BigEndian.PutUint32(b[10:14], d.MSN)
	binary.BigEndian.PutUint32(b[14:18], d.MO)
}

// SerializeTo writes the header in front of its payload.
func (d *DDP) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(d.HeaderLen())
	if err != nil {
		return err
	}
	d.Encode(h)
	return nil
}

// Fields lists the DDP and RDMAP fields; the keys follow tshark's
// iwarp_ddp.* and iwarp_rdma.*.
func (d *DDP) Fields() []Field {
	f := make(fieldList, 0, 12)
	f.flag("Tagged", "tagged_flag", d.Tagged)
	f.flag("Last", "last_flag", d.Last)
	f.dec("DDP Version", "dv", uint64(d.Version))
	f.dec("RDMAP Version", "rv", uint64(d.RDMAPVersion))
	f.dec("RDMAP Opcode", "opcode", uint64(d.Opcode))
	f.note(RDMAPOpcodeName(d.Opcode))
	if d.Tagged {
		f.hex("Data Sink STag", "stag", 32, uint64(d.STag))
		f.id64("Data Sink Tagged Offset", "tagged_offset", d.TaggedOffset)
		return f
	}
	if RDMAPInvalidates(d.Opcode) {
		f.hex("Invalidate STag", "inval_stag", 32, uint64(d.InvalidateSTag))
	}
	f.dec("Queue Number", "qn", uint64(d.QN))
	f.dec("Message Sequence Number", "msn", uint64(d.MSN))
	f.dec("Message Offset", "mo", uint64(d.MO))
	return f
}

func decodeDDP(data []byte, p gopacket.PacketBuilder) error {
	d := &DDP{}
	if err := d.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(d)
	return p.NextDecoder(d.NextLayerType())
}
