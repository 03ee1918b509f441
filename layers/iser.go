package layers

import (
	"fmt"
	"strings"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// ISERCMHeader is the iSER CM header of IBTA Vol 1, Annex A12 (Support for
// iSCSI Extensions for RDMA), 4 octets at the start of the consumer's
// private data of the REQ and the REP (Linux: struct iser_cm_hdr). The iSCSI
// target listens on TCP port 3260. Over iWARP the same octets follow the
// MPA revision 2 IRD/ORD words, after an iSCSI login in TCP streaming mode.
//
//	 0 1 2 3 4 5 6 7
//	+-+-+-----------+-----------------------------------------------+
//	|Z|S| reserved  |              Reserved (3 octets)              |
//	+-+-+-----------+-----------------------------------------------+
//
// Z (0x80): zero-based virtual addresses are not supported (in the REP: not
// used); S (0x40): Send With Invalidate is not supported (in the REP: the
// target will not use it). S is iSER's analogue of RFC 8797's R bit: with
// S clear in the initiator's REQ the target may answer a SCSI command with
// a Send With Invalidate of the command's STag.
type ISERCMHeader struct {
	golayers.BaseLayer
	Flags                          uint8 // the whole flags octet
	ZBVANotSupported               bool  // 0x80
	SendWithInvalidateNotSupported bool  // 0x40
	ReservedFlags                  uint8 // the low 6 bits of the flags octet
}

// iSER constants.
const (
	ISERCMHeaderLen = 4
	ISERPort        = 3260 // iSCSI
	ISERFlagZBVA    = 0x80 // zero-based virtual addresses not supported
	ISERFlagSendInv = 0x40 // Send With Invalidate not supported
)

func (h *ISERCMHeader) LayerType() gopacket.LayerType     { return LayerTypeISER }
func (h *ISERCMHeader) CanDecode() gopacket.LayerClass    { return LayerTypeISER }
func (h *ISERCMHeader) NextLayerType() gopacket.LayerType { return nextPayload(h.Payload) }

// DecodeFromBytes decodes the 4 octets of the header.
func (h *ISERCMHeader) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*h = ISERCMHeader{}
	if err := need("iser cm header", data, ISERCMHeaderLen); err != nil {
		df.SetTruncated()
		return err
	}
	h.Flags = data[0]
	h.ZBVANotSupported = data[0]&ISERFlagZBVA != 0
	h.SendWithInvalidateNotSupported = data[0]&ISERFlagSendInv != 0
	h.ReservedFlags = data[0] & 0x3f
	h.Contents, h.Payload = split(data, ISERCMHeaderLen)
	return nil
}

// Problem: every 4 octets are an iSER CM header; reserved bits are not
// judged (Annex A12 defines only the two flags).
func (h *ISERCMHeader) Problem() string { return "" }

// Fields lists the two flags.
func (h *ISERCMHeader) Fields() []Field {
	f := make(fieldList, 0, 2)
	f.flag("ZBVA Not Supported", "zbva_not_supported", h.ZBVANotSupported)
	f.flag("Send With Invalidate Not Supported", "send_with_invalidate_not_supported", h.SendWithInvalidateNotSupported)
	return f
}

// Summary is "iSER flags=0xc0 (no ZBVA, no Send With Invalidate)".
func (h *ISERCMHeader) Summary() string {
	var not []string
	if h.ZBVANotSupported {
		not = append(not, "no ZBVA")
	}
	if h.SendWithInvalidateNotSupported {
		not = append(not, "no Send With Invalidate")
	}
	s := fmt.Sprintf("iSER flags=0x%02x", h.Flags)
	if len(not) > 0 {
		s += " (" + strings.Join(not, ", ") + ")"
	}
	return s
}

// Encode writes the 4 octets into b.
func (h *ISERCMHeader) Encode(b []byte) {
	b[0] = h.ReservedFlags&0x3f | bit(h.ZBVANotSupported, ISERFlagZBVA) | bit(h.SendWithInvalidateNotSupported, ISERFlagSendInv)
	clear(b[1:ISERCMHeaderLen])
}

func decodeISER(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&ISERCMHeader{}, data, p)
}
