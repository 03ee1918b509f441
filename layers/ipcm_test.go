package layers

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
)

func TestIPCMDecode(t *testing.T) {
	tests := []struct {
		name string
		data []byte // the REQ's private data
		want *IPCMHeader
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.req.ip_cm.{majv,minv,ipv,
			// sport,sip4,dip4,private} (private: the 56 octets after the header).
			name: "RoCEv2 IPv4 REQ", data: rocev2REQ[226:318],
			want: &IPCMHeader{IPVersion: 4, SrcPort: 0xc001, SrcAddr: ipv4Pad(192, 0, 2, 1), DstAddr: ipv4Pad(192, 0, 2, 2)},
		},
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.req.ip_cm.{majv,minv,ipv,
			// sport,sip6,dip6,private}.
			name: "RoCEv2 IPv6 REQ", data: rocev2IPv6REQ[246:338],
			want: &IPCMHeader{IPVersion: 6, SrcPort: 0xc009, SrcAddr: docIPv6(9), DstAddr: docIPv6(10)},
		},
		{
			name: "IB REQ", data: ibREQ[192:284],
			want: &IPCMHeader{IPVersion: 4, SrcPort: 0xc007, SrcAddr: ipv4Pad(192, 0, 2, 7), DstAddr: ipv4Pad(192, 0, 2, 8)},
		},
		{
			name: "SIDR_REQ by hand", data: sidrReqBody[16:],
			want: &IPCMHeader{IPVersion: 6, SrcPort: 0xd431, SrcAddr: docIPv6(0x1a), DstAddr: docIPv6(0x2b)},
		},
		{
			// Version 1.2, IP version 4 with reserved nibble 0xa.
			name: "packed first octets", data: patch(rocev2REQ[226:318], at(0, 0x12, 0x4a)),
			want: &IPCMHeader{Version: 0x12, IPVersion: 4, Reserved: 0xa, SrcPort: 0xc001,
				SrcAddr: ipv4Pad(192, 0, 2, 1), DstAddr: ipv4Pad(192, 0, 2, 2)},
		},
		{
			name: "header only", data: rocev2REQ[226:262],
			want: &IPCMHeader{IPVersion: 4, SrcPort: 0xc001, SrcAddr: ipv4Pad(192, 0, 2, 1), DstAddr: ipv4Pad(192, 0, 2, 2)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Contents = tt.data[:36]
			tt.want.Payload = tt.data[36:]
			got := &IPCMHeader{Reserved: 3}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, tt.want)
		})
	}
}

func TestIPCMTooShort(t *testing.T) {
	for n := 0; n < IPCMHeaderLen; n++ {
		var df feedback
		var h IPCMHeader
		wantTruncated(t, h.DecodeFromBytes(rocev2REQ[226:226+n], &df), "ip cm header", 36, n)
		if !df.truncated {
			t.Errorf("%d octets: SetTruncated not called", n)
		}
	}
}

func TestIPCMProblem(t *testing.T) {
	v4 := rocev2REQ[226:262]
	v6 := rocev2IPv6REQ[246:282]
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"IPv4", v4, ""},
		{"IPv6", v6, ""},
		{"IPv4, reserved nibble set", patch(v4, at(1, 0x4f)), ""},
		{"version 1.0", patch(v4, at(0, 0x10)), "version is not 0.0"},
		{"version 0.1", patch(v4, at(0, 0x01)), "version is not 0.0"},
		{"version 1.0 and IP version 5: the version first", patch(v4, at(0, 0x10, 0x50)), "version is not 0.0"},
		{"IP version 0", patch(v4, at(1, 0x00)), "IP version is neither 4 nor 6"},
		{"IP version 5", patch(v4, at(1, 0x50)), "IP version is neither 4 nor 6"},
		{"IP version 15", patch(v4, at(1, 0xf4)), "IP version is neither 4 nor 6"},
		{"IPv4, source padding", patch(v4, at(4, 0x01)), "IPv4 address with nonzero padding"},
		{"IPv4, source padding, last octet", patch(v4, at(15, 0x80)), "IPv4 address with nonzero padding"},
		{"IPv4, mapped source", patch(v4, at(14, 0xff, 0xff)), "IPv4 address with nonzero padding"},
		{"IPv4, destination padding", patch(v4, at(20, 0x01)), "IPv4 address with nonzero padding"},
		{"IPv4, destination padding, last octet", patch(v4, at(31, 0x01)), "IPv4 address with nonzero padding"},
		{"IPv6 addresses are all address", patch(v6, at(4, 0xff), at(31, 0xff)), ""},
		{"IPv6 addresses in an IPv4 header", patch(v6, at(1, 0x40)), "IPv4 address with nonzero padding"},
	}
	for _, tt := range tests {
		var h IPCMHeader
		decodeOK(t, &h, tt.data)
		if got := h.Problem(); got != tt.want {
			t.Errorf("%s: Problem() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestIPCMAddrs(t *testing.T) {
	var h IPCMHeader
	decodeOK(t, &h, rocev2REQ[226:318])
	if h.Src() != netip.MustParseAddr("192.0.2.1") || h.Dst() != netip.MustParseAddr("192.0.2.2") {
		t.Errorf("IPv4: %v -> %v", h.Src(), h.Dst())
	}
	for _, f := range h.Fields() {
		if (f.Key == "src" || f.Key == "dst") && (f.Kind != Addr || len(f.Bytes) != 4) {
			t.Errorf("IPv4 field %s: kind %d, %d octets", f.Key, f.Kind, len(f.Bytes))
		}
		if f.Key == "src" && f.Text() != "192.0.2.1" {
			t.Errorf("src shown as %q", f.Text())
		}
	}
	decodeOK(t, &h, rocev2IPv6REQ[246:338])
	if h.Src() != netip.MustParseAddr("2001:db8::9") || h.Dst() != netip.MustParseAddr("2001:db8::a") {
		t.Errorf("IPv6: %v -> %v", h.Src(), h.Dst())
	}
	// An unknown IP version is shown as IPv6: all 16 octets.
	decodeOK(t, &h, patch(rocev2REQ[226:318], at(1, 0x50)))
	if !h.Src().Is6() || h.Src().As16() != ipv4Pad(192, 0, 2, 1) {
		t.Errorf("IP version 5: source %v", h.Src())
	}
}

func TestIPCMNextLayer(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want gopacket.LayerType
	}{
		{"RFC 8797 after the header", rocev2REQ[226:318], LayerTypeRPCRDMA},
		{"other consumer data", patch(rocev2REQ[226:318], at(36, 0x00)), gopacket.LayerTypePayload},
		{"RFC 8797 Version 2", patch(rocev2REQ[226:318], at(40, 0x02)), gopacket.LayerTypePayload},
		{"RFC 8797 cut short", rocev2REQ[226:269], gopacket.LayerTypePayload},
		{"header only", rocev2REQ[226:262], gopacket.LayerTypeZero},
	}
	for _, tt := range tests {
		var h IPCMHeader
		decodeOK(t, &h, tt.data)
		if got := h.NextLayerType(); got != tt.want {
			t.Errorf("%s: next %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIPCMServiceID(t *testing.T) {
	tests := []struct {
		sid       uint64
		ipcm      bool
		ps        uint8
		port      uint16
		spaceName string
	}{
		{0x0000000001064e51, true, PortSpaceTCP, 20049, "TCP"},
		{0x0000000001113039, true, PortSpaceUDP, 12345, "UDP"},
		{0x00000000013f0001, true, PortSpaceIB, 1, "IB"},
		{0x000000000102ffff, true, PortSpaceIPoIB, 0xffff, "IPoIB"},
		{0x0000000001990000, true, 0x99, 0, ""},
		{0x0000000002064e51, false, PortSpaceTCP, 20049, "TCP"},
		{0x0000000101064e51, false, PortSpaceTCP, 20049, "TCP"},
		{0x8000000001064e51, false, PortSpaceTCP, 20049, "TCP"},
		{0x0000000000064e51, false, PortSpaceTCP, 20049, "TCP"},
		{0x0123456789abcdef, false, 0xab, 0xcdef, ""},
	}
	for _, tt := range tests {
		if got := IsIPCMServiceID(tt.sid); got != tt.ipcm {
			t.Errorf("IsIPCMServiceID(%#016x) = %v", tt.sid, got)
		}
		if ps, port := IPCMPortSpace(tt.sid), IPCMPort(tt.sid); ps != tt.ps || port != tt.port {
			t.Errorf("%#016x: port space %#x, port %d; want %#x, %d", tt.sid, ps, port, tt.ps, tt.port)
		}
		if got := PortSpaceName(IPCMPortSpace(tt.sid)); got != tt.spaceName {
			t.Errorf("PortSpaceName(%#x) = %q, want %q", IPCMPortSpace(tt.sid), got, tt.spaceName)
		}
	}
}

func TestIPCMRoundTrip(t *testing.T) {
	for _, data := range [][]byte{rocev2REQ[226:318], rocev2IPv6REQ[246:338], patch(rocev2REQ[226:318], at(0, 0x12, 0x4a))} {
		var h IPCMHeader
		decodeOK(t, &h, data)
		out := roundTrip(t, &h, h.Payload)
		if !bytes.Equal(out, data) {
			t.Errorf("serialized %x, want %x", out[:36], data[:36])
		}
		var again IPCMHeader
		decodeOK(t, &again, out)
		checkLayer(t, &again, &h)
	}
}
