package layers

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// FPDU is an MPA Framed Protocol Data Unit (RFC 5044, section 4): what each
// direction of an iWARP connection carries after its MPA Request or Reply,
// one DDP segment (the ULPDU) in each. The markers that MPA may insert into
// the TCP stream every 512 octets are not part of it: decode an FPDU from
// octets with the markers removed.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------------------------------+-------------------------------+
//	|          ULPDU_Length         |                               |
//	+-------------------------------+                               +
//	~                    ULPDU (a DDP segment)                      ~
//	+                               +-------------------------------+
//	|                               |     PAD (0-3 octets)          |
//	+-------------------------------+-------------------------------+
//	|                   CRC (CRC32c, or zero)                       |
//	+---------------------------------------------------------------+
//
// The pad makes ULPDU_Length, the ULPDU and the pad a multiple of 4
// octets. The CRC covers those; it is zero when neither MPA frame asked for
// CRC. It is read and written least-significant octet first: that is what
// Linux sends (the CRC32c of RFC 3385 as computed over the octets) and
// what tshark's check accepts.
type FPDU struct {
	golayers.BaseLayer
	ULPDULength uint16 // ULPDU_Length: octets of the ULPDU
	PadLength   int    // octets of pad
	CRC         uint32 // the CRC field as a number (see above)
	HasCRC      bool   // the CRC field is present in the data
}

// FPDU sizes.
const (
	FPDUHeaderLen = 2 // ULPDU_Length
	FPDUCRCLen    = 4
	// MarkerInterval is the spacing of MPA markers in the TCP stream.
	MarkerInterval = 512
	MarkerLen      = 4
)

// castagnoli is the CRC32c table (RFC 3385).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FPDUCRC computes the CRC of an FPDU's octets before its CRC field
// (ULPDU_Length, the ULPDU and the pad), as the FPDU stores it.
func FPDUCRC(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateFPDUCRC goes on with a CRC32c over more octets: start from 0 and
// feed the octets in order.
func UpdateFPDUCRC(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// FPDULen is the whole FPDU's length for a ULPDU_Length.
func FPDULen(ulpduLen int) int {
	n := FPDUHeaderLen + ulpduLen
	return n + FPDUPad(ulpduLen) + FPDUCRCLen
}

// FPDUPad is the pad after a ULPDU of n octets.
func FPDUPad(n int) int { return (4 - (FPDUHeaderLen+n)%4) % 4 }

func (f *FPDU) LayerType() gopacket.LayerType  { return LayerTypeFPDU }
func (f *FPDU) CanDecode() gopacket.LayerClass { return LayerTypeFPDU }

// NextLayerType is the DDP segment the ULPDU holds.
func (f *FPDU) NextLayerType() gopacket.LayerType {
	if len(f.Payload) == 0 {
		return gopacket.LayerTypeZero
	}
	return LayerTypeDDP
}

// DecodeFromBytes decodes one FPDU from the start of data, whose later
// octets (the next FPDUs) are left alone. A ULPDU cut short is decoded as
// far as it goes.
func (f *FPDU) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*f = FPDU{}
	if err := need("fpdu", data, FPDUHeaderLen); err != nil {
		df.SetTruncated()
		return err
	}
	f.ULPDULength = binary.BigEndian.Uint16(data[0:2])
	n := int(f.ULPDULength)
	f.PadLength = FPDUPad(n)
	end := FPDUHeaderLen + n
	f.Contents = data[:FPDUHeaderLen]
	if len(data) < end {
		df.SetTruncated()
		f.Payload = data[FPDUHeaderLen:]
		return nil
	}
	f.Payload = data[FPDUHeaderLen:end]
	if crcAt := end + f.PadLength; len(data) >= crcAt+FPDUCRCLen {
		f.CRC = binary.LittleEndian.Uint32(data[crcAt:])
		f.HasCRC = true
	} else {
		df.SetTruncated()
	}
	return nil
}

// SerializeTo writes the FPDU around its payload (the DDP segment): the
// length in front, pad and CRC behind. With opts.ComputeChecksums the CRC is
// computed, else CRC is written as set.
func (f *FPDU) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	payload := b.Bytes()
	if opts.FixLengths {
		f.ULPDULength = uint16(len(payload))
		f.PadLength = FPDUPad(len(payload))
	}
	h, err := b.PrependBytes(FPDUHeaderLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint16(h, f.ULPDULength)
	t, err := b.AppendBytes(f.PadLength + FPDUCRCLen)
	if err != nil {
		return err
	}
	clear(t)
	if opts.ComputeChecksums {
		all := b.Bytes()
		f.CRC = FPDUCRC(all[:len(all)-FPDUCRCLen])
	}
	binary.LittleEndian.PutUint32(t[f.PadLength:], f.CRC)
	return nil
}

// Fields lists the FPDU's fields; the keys follow tshark's iwarp_mpa.*.
func (f *FPDU) Fields() []Field {
	l := make(fieldList, 0, 4)
	l.dec("ULPDU Length", "ulpdu_length", uint64(f.ULPDULength))
	l.dec("Pad", "pad", uint64(f.PadLength))
	if f.HasCRC {
		l.hex("CRC", "crc", 32, uint64(f.CRC))
	}
	return l
}

func decodeFPDU(data []byte, p gopacket.PacketBuilder) error {
	f := &FPDU{}
	if err := f.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(f)
	return p.NextDecoder(f.NextLayerType())
}
