package layers

import (
	"encoding/binary"
	"net/netip"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// IPCMHeader is the 36-octet header that rdma_cm puts at the start of the
// private data of a REQ (and SIDR_REQ) whose Service ID carries the IP CM
// prefix (IBTA Vol 1, Annex A11, "RDMA IP CM Service"). The consumer's private
// data follows it.
//
//	octet  0  Version (major:4 minor:4) | IP Version:4 reserved:4 | Source Port (2)
//	       4  Source IP Address (16)          IPv4: 12 zero octets, then the address
//	      20  Destination IP Address (16)
type IPCMHeader struct {
	golayers.BaseLayer
	Version   uint8    // major version in the high nibble, minor in the low; 0x00
	IPVersion uint8    // IP Version (high nibble of octet 1): 4 or 6
	Reserved  uint8    // low nibble of octet 1
	SrcPort   uint16   // Source Port: the active side's port
	SrcAddr   [16]byte // Source IP Address
	DstAddr   [16]byte // Destination IP Address
}

// IPCMHeaderLen is the size of the IP CM header.
const IPCMHeaderLen = 36

// IP CM Service IDs: 0x0000000001, then the port space, then the port.
const (
	ipcmServicePrefix = 0x0000000001
	PortSpaceIPoIB    = 0x02
	PortSpaceTCP      = 0x06
	PortSpaceUDP      = 0x11
	PortSpaceIB       = 0x3f
)

// NFSRDMAPort is the well-known port of NFS over RPC-over-RDMA (RFC 8267
// section 6.3; RFC 8166 section 5 on binding RPC-over-RDMA to a port). On
// InfiniBand and RoCE it appears as the port of an IP CM Service ID in the
// TCP port space.
const NFSRDMAPort = 20049

// IsIPCMServiceID reports whether a Service ID carries the IP CM prefix.
func IsIPCMServiceID(sid uint64) bool { return sid>>24 == ipcmServicePrefix }

// IPCMPortSpace and IPCMPort split an IP CM Service ID.
func IPCMPortSpace(sid uint64) uint8 { return uint8(sid >> 16) }
func IPCMPort(sid uint64) uint16     { return uint16(sid) }

// PortSpaceName names an IP CM port space ("TCP", "UDP", "IB", "IPoIB") or "".
func PortSpaceName(ps uint8) string { return portSpaceNames[ps] }

var portSpaceNames = map[uint8]string{
	PortSpaceTCP:   "TCP",
	PortSpaceUDP:   "UDP",
	PortSpaceIB:    "IB",
	PortSpaceIPoIB: "IPoIB",
}

func (h *IPCMHeader) LayerType() gopacket.LayerType  { return LayerTypeIPCM }
func (h *IPCMHeader) CanDecode() gopacket.LayerClass { return LayerTypeIPCM }

// NextLayerType is the RFC 8797 message when it starts the consumer's data.
func (h *IPCMHeader) NextLayerType() gopacket.LayerType {
	if IsRPCRDMAAt(h.Payload, 0) {
		return LayerTypeRPCRDMA
	}
	if len(h.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes the IP CM header at the start of the private data.
func (h *IPCMHeader) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	*h = IPCMHeader{}
	if err := need("ip cm header", data, IPCMHeaderLen); err != nil {
		df.SetTruncated()
		return err
	}
	h.Version = data[0]
	h.IPVersion = data[1] >> 4
	h.Reserved = data[1] & 0x0f
	h.SrcPort = binary.BigEndian.Uint16(data[2:4])
	copy(h.SrcAddr[:], data[4:20])
	copy(h.DstAddr[:], data[20:36])
	h.Contents = data[:IPCMHeaderLen]
	h.Payload = data[IPCMHeaderLen:]
	return nil
}

// SerializeTo writes the IP CM header.
func (h *IPCMHeader) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := b.PrependBytes(IPCMHeaderLen)
	if err != nil {
		return err
	}
	h.Encode(d)
	return nil
}

// Src and Dst are the header's addresses: IPv4 for IP Version 4 (the last
// four octets), IPv6 otherwise.
func (h *IPCMHeader) Src() netip.Addr { return h.addr(&h.SrcAddr) }
func (h *IPCMHeader) Dst() netip.Addr { return h.addr(&h.DstAddr) }

func (h *IPCMHeader) addr(a *[16]byte) netip.Addr {
	if h.IPVersion == 4 {
		return netip.AddrFrom4([4]byte(a[12:16]))
	}
	return netip.AddrFrom16(*a)
}

// Problem says what is malformed about the header, or "" when nothing is:
// a version other than 0.0, an IP version other than 4 or 6, or an IPv4
// address whose 12 leading octets are not zero.
func (h *IPCMHeader) Problem() string {
	switch {
	case h.Version != 0:
		return "version is not 0.0"
	case h.IPVersion != 4 && h.IPVersion != 6:
		return "IP version is neither 4 nor 6"
	case h.IPVersion == 4 && (!zero(h.SrcAddr[:12]) || !zero(h.DstAddr[:12])):
		return "IPv4 address with nonzero padding"
	}
	return ""
}

func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Fields lists the header's fields for display.
func (h *IPCMHeader) Fields() []Field {
	f := make(fieldList, 0, 6)
	f.hex("Version", "version", 8, uint64(h.Version))
	f.dec("IP Version", "ip_version", uint64(h.IPVersion))
	f.dec("Source Port", "src_port", uint64(h.SrcPort))
	src, dst := h.Src(), h.Dst()
	f = append(f, Field{Name: "Source Address", Key: "src", Kind: Addr, Bytes: src.AsSlice()})
	f = append(f, Field{Name: "Destination Address", Key: "dst", Kind: Addr, Bytes: dst.AsSlice()})
	return f
}

func decodeIPCM(data []byte, p gopacket.PacketBuilder) error {
	h := &IPCMHeader{}
	if err := h.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(h)
	return p.NextDecoder(h.NextLayerType())
}

// Encode writes the 36 octets into b, which must hold at least 36.
func (h *IPCMHeader) Encode(d []byte) {
	d[0] = h.Version
	d[1] = h.IPVersion<<4 | h.Reserved&0x0f
	binary.BigEndian.PutUint16(d[2:4], h.SrcPort)
	copy(d[4:20], h.SrcAddr[:])
	copy(d[20:36], h.DstAddr[:])
}
