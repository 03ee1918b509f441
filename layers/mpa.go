package layers

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// MPAFrame is an MPA Request or Reply frame (RFC 5044, section 7.1; enhanced
// connection establishment, RFC 6581): the first octets of each direction of
// an iWARP TCP connection, before any FPDU.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|        Key: "MPA ID Req Frame" or "MPA ID Rep Frame" (16)     |
//	+-+-+-+-+-------+---------------+-------------------------------+
//	|M|C|R|E|  Res  |      Rev      |           PD_Length           |
//	+-+-+-+-+-------+---------------+-------------------------------+
//	|          Private Data (PD_Length octets; revision 2: IRD/ORD first)
//	+---------------------------------------------------------------+
//
// With revision 2 the private data starts with two 16-bit words:
//
//	IRD word: Peer-to-peer (bit 15), zero-length SEND (bit 14), IRD (bits 13-0)
//	ORD word: zero-length RDMA WRITE (bit 15), zero-length RDMA READ (bit 14), ORD (bits 13-0)
type MPAFrame struct {
	golayers.BaseLayer
	Key           [16]byte // the key as sent
	Request       bool     // the key is the Request key (else the Reply key)
	Marker        bool     // M: markers wanted
	CRC           bool     // C: CRC wanted
	Reject        bool     // R: the Reply rejects the connection
	Enhanced      bool     // 0x10: enhanced connection establishment (revision 2)
	ReservedFlags uint8    // the 4 remaining flag bits
	Rev           uint8    // revision: 1 (RFC 5044) or 2 (RFC 6581)
	PDLength      uint16   // PD_Length: private data octets that follow

	// PrivateData is the private data present: PD_Length octets, or fewer
	// when the data handed in was shorter.
	PrivateData []byte

	// The revision 2 IRD/ORD words, decoded when Rev is 2 and the private
	// data holds them (HasIRDORD).
	HasIRDORD       bool
	PeerToPeer      bool
	ZeroLengthSend  bool
	IRD             uint16
	ZeroLengthWrite bool
	ZeroLengthRead  bool
	ORD             uint16
}

// MPA keys, sizes and flags.
const (
	MPAHeaderLen    = 20  // key, flags, revision, PD_Length
	MPAIRDORDLen    = 4   // the revision 2 IRD and ORD words
	MPAMaxPDLength  = 512 // RFC 5044: private data is at most 512 octets
	MPAFlagMarker   = 0x80
	MPAFlagCRC      = 0x40
	MPAFlagReject   = 0x20
	MPAFlagEnhanced = 0x10
)

// MPARequestKey and MPAReplyKey start the two directions of an MPA
// connection.
var (
	MPARequestKey = [16]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e'}
	MPAReplyKey   = [16]byte{'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e'}
)

// MPAKeyStem is what the Request and Reply keys share: octets that start
// with it may be an MPA frame.
const MPAKeyStem = "MPA ID Re"

// MPAKeyPrefix reports whether b could be the start of an MPA key: it
// matches the first len(b) octets (at most 16) of the Request or Reply key.
func MPAKeyPrefix(b []byte) bool {
	n := min(len(b), 16)
	return string(b[:n]) == string(MPARequestKey[:n]) || string(b[:n]) == string(MPAReplyKey[:n])
}

// FrameLen is the length of the whole MPA frame on the wire.
func (m *MPAFrame) FrameLen() int { return MPAHeaderLen + int(m.PDLength) }

func (m *MPAFrame) LayerType() gopacket.LayerType  { return LayerTypeMPA }
func (m *MPAFrame) CanDecode() gopacket.LayerClass { return LayerTypeMPA }

// NextLayerType is the RFC 8797 message when it sits where the revision
// puts it (0, or 4 after the IRD/ORD words); otherwise nothing.
func (m *MPAFrame) NextLayerType() gopacket.LayerType {
	if IsRPCRDMAAt(m.Payload, 0) {
		return LayerTypeRPCRDMA
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes an MPA frame from the first octets of a TCP
// stream. The key must be one of the two MPA keys.
func (m *MPAFrame) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = MPAFrame{}
	if err := need("mpa", data, MPAHeaderLen); err != nil {
		df.SetTruncated()
		return err
	}
	copy(m.Key[:], data[:16])
	switch m.Key {
	case MPARequestKey:
		m.Request = true
	case MPAReplyKey:
	default:
		return errNotMPA
	}
	f := data[16]
	m.Marker = f&MPAFlagMarker != 0
	m.CRC = f&MPAFlagCRC != 0
	m.Reject = f&MPAFlagReject != 0
	m.Enhanced = f&MPAFlagEnhanced != 0
	m.ReservedFlags = f & 0x0f
	m.Rev = data[17]
	m.PDLength = binary.BigEndian.Uint16(data[18:20])
	pd := data[MPAHeaderLen:]
	if len(pd) > int(m.PDLength) {
		pd = pd[:m.PDLength]
	} else if len(pd) < int(m.PDLength) {
		df.SetTruncated()
	}
	m.PrivateData = pd
	m.Contents = data[:MPAHeaderLen]
	m.Payload = pd
	if m.Rev == 2 && len(pd) >= MPAIRDORDLen && m.PDLength >= MPAIRDORDLen {
		ird := binary.BigEndian.Uint16(pd[0:2])
		ord := binary.BigEndian.Uint16(pd[2:4])
		m.HasIRDORD = true
		m.PeerToPeer = ird&0x8000 != 0
		m.ZeroLengthSend = ird&0x4000 != 0
		m.IRD = ird & 0x3fff
		m.ZeroLengthWrite = ord&0x8000 != 0
		m.ZeroLengthRead = ord&0x4000 != 0
		m.ORD = ord & 0x3fff
		m.Contents = data[:MPAHeaderLen+MPAIRDORDLen]
		m.Payload = pd[MPAIRDORDLen:]
	}
	return nil
}

var errNotMPA = &notMPAError{}

type notMPAError struct{}

func (*notMPAError) Error() string { return "mpa: not an MPA Request or Reply key" }

// Flags is the flags octet.
func (m *MPAFrame) Flags() uint8 {
	return bit(m.Marker, MPAFlagMarker) | bit(m.CRC, MPAFlagCRC) | bit(m.Reject, MPAFlagReject) |
		bit(m.Enhanced, MPAFlagEnhanced) | m.ReservedFlags&0x0f
}

// Encode returns the frame's octets. The private data is written as given,
// except that with revision 2 and HasIRDORD its first 4 octets are replaced
// by the IRD/ORD words; PD_Length is written as set.
func (m *MPAFrame) Encode() []byte {
	b := make([]byte, MPAHeaderLen, MPAHeaderLen+len(m.PrivateData))
	if m.Request {
		copy(b, MPARequestKey[:])
	} else {
		copy(b, MPAReplyKey[:])
	}
	b[16] = m.Flags()
	b[17] = m.Rev
	binary.BigEndian.PutUint16(b[18:20], m.PDLength)
	b = append(b, m.PrivateData...)
	if m.HasIRDORD && len(b) >= MPAHeaderLen+MPAIRDORDLen {
		binary.BigEndian.PutUint16(b[20:22], uint16(bit(m.PeerToPeer, 0x80))<<8|uint16(bit(m.ZeroLengthSend, 0x40))<<8|m.IRD&0x3fff)
		binary.BigEndian.PutUint16(b[22:24], uint16(bit(m.ZeroLengthWrite, 0x80))<<8|uint16(bit(m.ZeroLengthRead, 0x40))<<8|m.ORD&0x3fff)
	}
	return b
}

// SerializeTo writes the frame in front of any payload.
func (m *MPAFrame) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	enc := m.Encode()
	d, err := b.PrependBytes(len(enc))
	if err != nil {
		return err
	}
	copy(d, enc)
	return nil
}

// Fields lists the frame's fields; the keys are those of the JSON "mpa"
// object.
func (m *MPAFrame) Fields() []Field {
	f := make(fieldList, 0, 14)
	f = append(f, Field{Name: "Key", Key: "key", Kind: Text, Bytes: append([]byte(nil), m.Key[:]...)})
	f.flag("Marker (M)", "marker", m.Marker)
	f.flag("CRC (C)", "crc", m.CRC)
	f.flag("Reject (R)", "reject", m.Reject)
	f.flag("Enhanced", "enhanced", m.Enhanced)
	f.hex("Reserved", "reserved", 4, uint64(m.ReservedFlags))
	f.dec("Revision", "rev", uint64(m.Rev))
	f.dec("PD_Length", "pd_length", uint64(m.PDLength))
	if m.HasIRDORD {
		f.dec("IRD", "ird", uint64(m.IRD))
		f.dec("ORD", "ord", uint64(m.ORD))
		f.flag("Peer-to-peer", "peer_to_peer", m.PeerToPeer)
		f.flag("Zero-length SEND", "zero_length_send", m.ZeroLengthSend)
		f.flag("Zero-length RDMA WRITE", "zero_length_write", m.ZeroLengthWrite)
		f.flag("Zero-length RDMA READ", "zero_length_read", m.ZeroLengthRead)
	}
	return f
}

func decodeMPA(data []byte, p gopacket.PacketBuilder) error {
	m := &MPAFrame{}
	if err := m.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(m)
	return p.NextDecoder(m.NextLayerType())
}

// MPAFields lists the fields of an MPA frame's first octets, as far as
// they arrived: what arrived of the key, then the flags (octet 16), Rev
// (17), PD_Length (18-19) and revision 2's IRD and ORD words. Twenty-four
// octets are all it reads.
func MPAFields(b []byte) []Field {
	var m MPAFrame
	switch n := len(b); {
	case n >= MPAHeaderLen:
		_ = m.DecodeFromBytes(b, gopacket.NilDecodeFeedback) // the key was checked; a short header leaves zeros
		return m.Fields()
	case n <= len(m.Key):
		// The frame ends inside its key: the octets of it that arrived.
		return []Field{{Name: "Key", Key: "key", Kind: Text, Bytes: append([]byte(nil), b...)}}
	default:
		// It ends inside its header: the flags, then Rev, are shown;
		// PD_Length never arrived.
		var hdr [MPAHeaderLen]byte
		copy(hdr[:], b)
		_ = m.DecodeFromBytes(hdr[:], gopacket.NilDecodeFeedback)
		fields := m.Fields()
		if n == 17 {
			return fields[:6] // through the reserved flag bits
		}
		return fields[:7] // through Rev
	}
}

// MPAFieldsLen is how many of an MPA frame's first octets MPAFields reads.
const MPAFieldsLen = MPAHeaderLen + MPAIRDORDLen
