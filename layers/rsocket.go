package layers

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// RSocketConnData is the connection data of librdmacm's rsockets (struct
// rs_conn_data in librdmacm/rsocket.c), version 1, 40 octets, in the REQ
// after the IP CM header and at the start of the REP. Its multi-octet fields
// are big-endian (rsocket converts them with htobe16/32/64).
//
//	octet  0  version (1)          1  flags: 0x01 the host is big-endian,
//	                                  0x02 iomap
//	       2  credits (2): receive queue size, the peer's first send credits
//	       4  reserved (3)         7  target iomap size (scaled)
//	       8  target SGL: address (8), rkey (4), length (4: 2 entries)
//	      24  data buffer: address (8), rkey (4), length (4: half the receive buffer)
type RSocketConnData struct {
	golayers.BaseLayer
	Version         uint8
	Flags           uint8
	Credits         uint16
	TargetIOMapSize uint8 // scaled: values over 128 are (v & 0x7f) << 8
	TargetSGLAddr   uint64
	TargetSGLKey    uint32
	TargetSGLLength uint32
	DataBufAddr     uint64
	DataBufKey      uint32
	DataBufLength   uint32
}

// rsockets constants.
const (
	RSocketConnDataLen = 40
	RSocketVersion     = 1
	RSocketFlagNet     = 0x01 // the sender is a big-endian host
	RSocketFlagIOMap   = 0x02
	rsocketSGLSize     = 2 // RS_SGL_SIZE: entries of the target SGL
)

func (m *RSocketConnData) LayerType() gopacket.LayerType     { return LayerTypeRSocket }
func (m *RSocketConnData) CanDecode() gopacket.LayerClass    { return LayerTypeRSocket }
func (m *RSocketConnData) NextLayerType() gopacket.LayerType { return nextPayload(m.Payload) }

// DecodeFromBytes decodes the 40 octets.
func (m *RSocketConnData) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*m = RSocketConnData{}
	if err := need("rsocket conn data", data, RSocketConnDataLen); err != nil {
		df.SetTruncated()
		return err
	}
	be := binary.BigEndian
	m.Version, m.Flags = data[0], data[1]
	m.Credits = be.Uint16(data[2:])
	m.TargetIOMapSize = data[7]
	m.TargetSGLAddr, m.TargetSGLKey, m.TargetSGLLength = be.Uint64(data[8:]), be.Uint32(data[16:]), be.Uint32(data[20:])
	m.DataBufAddr, m.DataBufKey, m.DataBufLength = be.Uint64(data[24:]), be.Uint32(data[32:]), be.Uint32(data[36:])
	m.Contents, m.Payload = split(data, RSocketConnDataLen)
	return nil
}

// RSocketScaleToValue undoes rsocket's 8-bit scaling of the iomap size.
func RSocketScaleToValue(v uint8) int {
	if v <= 0x80 {
		return int(v)
	}
	return int(v&0x7f) << 8
}

// Problem: version 1, only the two defined flags, a target SGL of 2
// entries.
func (m *RSocketConnData) Problem() string {
	switch {
	case m.Version != RSocketVersion:
		return fmt.Sprintf("version %d is not 1", m.Version)
	case m.Flags&^(RSocketFlagNet|RSocketFlagIOMap) != 0:
		return fmt.Sprintf("flags 0x%02x include undefined bits", m.Flags)
	case m.TargetSGLLength != rsocketSGLSize:
		return fmt.Sprintf("target SGL length %d is not %d", m.TargetSGLLength, rsocketSGLSize)
	}
	return ""
}

// Plausible reports whether the octets are rsocket connection data: the
// layout fits and the peer offers credits and a receive buffer.
func (m *RSocketConnData) Plausible() bool {
	return m.Problem() == "" && m.Credits != 0 && m.DataBufLength != 0
}

// Fields lists the fields.
func (m *RSocketConnData) Fields() []Field {
	f := make(fieldList, 0, 10)
	f.dec("Version", "version", uint64(m.Version))
	f.hex("Flags", "flags", 8, uint64(m.Flags))
	switch {
	case m.Flags&RSocketFlagNet != 0 && m.Flags&RSocketFlagIOMap != 0:
		f.note("big-endian host, iomap")
	case m.Flags&RSocketFlagNet != 0:
		f.note("big-endian host")
	case m.Flags&RSocketFlagIOMap != 0:
		f.note("iomap")
	}
	f.dec("Credits", "credits", uint64(m.Credits))
	f.dec("Target IOMap Size", "target_iomap_size", uint64(RSocketScaleToValue(m.TargetIOMapSize)))
	f.id64("Target SGL Address", "target_sgl_addr", m.TargetSGLAddr)
	f.hex("Target SGL Key", "target_sgl_key", 32, uint64(m.TargetSGLKey))
	f.dec("Target SGL Length", "target_sgl_length", uint64(m.TargetSGLLength))
	f.id64("Data Buffer Address", "data_buf_addr", m.DataBufAddr)
	f.hex("Data Buffer Key", "data_buf_key", 32, uint64(m.DataBufKey))
	f.dec("Data Buffer Length", "data_buf_length", uint64(m.DataBufLength))
	return f
}

// Summary is "rsockets v1 credits=384 data_buf_length=65536".
func (m *RSocketConnData) Summary() string {
	return fmt.Sprintf("rsockets v%d credits=%d data_buf_length=%d", m.Version, m.Credits, m.DataBufLength)
}

// Encode writes the 40 octets into b.
func (m *RSocketConnData) Encode(b []byte) {
	clear(b[:RSocketConnDataLen])
	be := binary.BigEndian
	b[0], b[1] = m.Version, m.Flags
	be.PutUint16(b[2:], m.Credits)
	b[7] = m.TargetIOMapSize
	be.PutUint64(b[8:], m.TargetSGLAddr)
	be.PutUint32(b[16:], m.TargetSGLKey)
	be.PutUint32(b[20:], m.TargetSGLLength)
	be.PutUint64(b[24:], m.DataBufAddr)
	be.PutUint32(b[32:], m.DataBufKey)
	be.PutUint32(b[36:], m.DataBufLength)
}

func decodeRSocket(data []byte, p gopacket.PacketBuilder) error {
	return decodeULP(&RSocketConnData{}, data, p)
}
