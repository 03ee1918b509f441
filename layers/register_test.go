package layers

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

var (
	ltEthernet = golayers.LayerTypeEthernet
	ltIPv4     = golayers.LayerTypeIPv4
	ltIPv6     = golayers.LayerTypeIPv6
	ltUDP      = golayers.LayerTypeUDP
	ltPayload  = gopacket.LayerTypePayload
	linkIB     = golayers.LinkType(LinkTypeIB)
	linkERF    = golayers.LinkType(LinkTypeERF)
)

// spliced is rocev2RTU with another CM message in its MAD (AttributeID at
// frame offset 78, MAD data at 86). Its ICRC and UDP checksum no longer
// verify, which decoding must not care about.
func spliced(attr uint16, body []byte) []byte {
	return patch(rocev2RTU, at(78, byte(attr>>8), byte(attr)), part{86, body})
}

func layerTypes(p gopacket.Packet) []gopacket.LayerType {
	var lts []gopacket.LayerType
	for _, l := range p.Layers() {
		lts = append(lts, l.LayerType())
	}
	return lts
}

func typesString(lts []gopacket.LayerType) string {
	var s []string
	for _, lt := range lts {
		s = append(s, lt.String())
	}
	return strings.Join(s, ", ")
}

func TestNewPacketLayers(t *testing.T) {
	cmv2 := func(ls ...gopacket.LayerType) []gopacket.LayerType {
		return append([]gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD}, ls...)
	}
	reqTail := []gopacket.LayerType{LayerTypeCMReq, LayerTypeIPCM, LayerTypeRPCRDMA, ltPayload}
	rc := func(ls ...gopacket.LayerType) []gopacket.LayerType {
		return append([]gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH}, ls...)
	}
	tests := []struct {
		name  string
		data  []byte
		first gopacket.Decoder
		want  []gopacket.LayerType
	}{
		{"RoCEv2 REQ", rocev2REQ, ltEthernet, cmv2(reqTail...)},
		{"RoCEv2 REP", rocev2REP, ltEthernet, cmv2(LayerTypeCMRep, LayerTypeRPCRDMA, ltPayload)},
		{"RoCEv2 RTU", rocev2RTU, ltEthernet, cmv2(LayerTypeCMRtu, ltPayload)},
		{"RoCEv2 REJ", rocev2REJ, ltEthernet, cmv2(LayerTypeCMRej, LayerTypeRPCRDMA, ltPayload)},
		{"RoCEv2 IPv6 REQ", rocev2IPv6REQ, ltEthernet,
			append([]gopacket.LayerType{ltEthernet, ltIPv6, ltUDP, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD}, reqTail...)},
		{"RoCEv1 REQ", rocev1REQ, ltEthernet,
			append([]gopacket.LayerType{ltEthernet, LayerTypeGRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD}, reqTail...)},
		{"IB REQ, link type 247", ibREQ, linkIB,
			append([]gopacket.LayerType{LayerTypeLRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD}, reqTail...)},
		{"IB REQ with GRH, link type 247", ibGRHREQ, linkIB,
			append([]gopacket.LayerType{LayerTypeLRH, LayerTypeGRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD}, reqTail...)},
		{"ERF InfiniBand, link type 197", erfIB, linkERF,
			append([]gopacket.LayerType{LayerTypeERF, LayerTypeLRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD}, reqTail...)},
		{"ERF InfiniBand with extension headers", erfIBExt, linkERF,
			append([]gopacket.LayerType{LayerTypeERF, LayerTypeLRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD}, reqTail...)},
		{"ERF Ethernet, link type 197", erfEth, linkERF, append([]gopacket.LayerType{LayerTypeERF}, cmv2(reqTail...)...)},
		{"CNP", scapyCNP, ltEthernet, []gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH, ltPayload}},
		{"UC SEND over IPv6", scapyUCIPv6, ltEthernet, []gopacket.LayerType{ltEthernet, ltIPv6, ltUDP, LayerTypeBTH, ltPayload}},
		{"RoCEv1 RDMA WRITE", scapyRoCEv1Write, ltEthernet, []gopacket.LayerType{ltEthernet, LayerTypeGRH, LayerTypeBTH, LayerTypeRETH, ltPayload}},
		{"RDMA WRITE Only", rcWriteOnly, ltEthernet, rc(LayerTypeRETH, ltPayload)},
		{"RDMA WRITE Only with Immediate", rcWriteOnlyImm, ltEthernet, rc(LayerTypeRETH, LayerTypeImmDt, ltPayload)},
		{"RDMA READ Request", rcReadRequest, ltEthernet, rc(LayerTypeRETH)},
		{"READ Response Only", rcReadResponseOnly, ltEthernet, rc(LayerTypeAETH, ltPayload)},
		{"NAK", rcNAK, ltEthernet, rc(LayerTypeAETH)},
		{"SEND Only with Invalidate", rcSendOnlyInvalidate, ltEthernet, rc(LayerTypeIETH, ltPayload)},
		{"SEND Only with Immediate", rcSendOnlyImm, ltEthernet, rc(LayerTypeImmDt, ltPayload)},
		{"CmpSwap", rcCmpSwap, ltEthernet, rc(LayerTypeAtomicETH)},
		{"ATOMIC Acknowledge", rcAtomicAck, ltEthernet, rc(LayerTypeAETH, LayerTypeAtomicAckETH)},
		{"REQ by hand", spliced(AttrREQ, reqBody), ltEthernet, cmv2(LayerTypeCMReq, LayerTypeRPCRDMA, ltPayload)},
		{"MRA by hand", spliced(AttrMRA, mraBody), ltEthernet, cmv2(LayerTypeCMMra, LayerTypeRPCRDMA, ltPayload)},
		{"REJ by hand", spliced(AttrREJ, rejBody), ltEthernet, cmv2(LayerTypeCMRej, LayerTypeRPCRDMA, ltPayload)},
		{"REP by hand", spliced(AttrREP, repBody), ltEthernet, cmv2(LayerTypeCMRep, ltPayload)},
		{"RTU by hand", spliced(AttrRTU, rtuBody), ltEthernet, cmv2(LayerTypeCMRtu, ltPayload)},
		{"DREQ by hand", spliced(AttrDREQ, dreqBody), ltEthernet, cmv2(LayerTypeCMDreq, LayerTypeRPCRDMA, ltPayload)},
		{"DREP by hand", spliced(AttrDREP, drepBody), ltEthernet, cmv2(LayerTypeCMDrep, ltPayload)},
		{"SIDR_REQ by hand", spliced(AttrSIDRREQ, sidrReqBody), ltEthernet,
			cmv2(LayerTypeCMSidrReq, LayerTypeIPCM, LayerTypeRPCRDMA, ltPayload)},
		{"SIDR_REP by hand", spliced(AttrSIDRREP, sidrRepBody), ltEthernet, cmv2(LayerTypeCMSidrRep, ltPayload)},
		{"LAP by hand", spliced(AttrLAP, lapBody), ltEthernet, cmv2(LayerTypeCMLap, LayerTypeRPCRDMA, ltPayload)},
		{"APR by hand", spliced(AttrAPR, aprBody), ltEthernet, cmv2(LayerTypeCMApr, ltPayload)},
		{"ClassPortInfo", spliced(AttrClassPortInfo, aprBody), ltEthernet, cmv2(ltPayload)},
	}
	for _, tt := range tests {
		for _, opts := range []gopacket.DecodeOptions{gopacket.Default, gopacket.Lazy} {
			t.Run(fmt.Sprintf("%s lazy=%v", tt.name, opts.Lazy), func(t *testing.T) {
				p := gopacket.NewPacket(tt.data, tt.first, opts)
				got := layerTypes(p)
				if typesString(got) != typesString(tt.want) {
					t.Errorf("layers\n\t%s\nwant\n\t%s", typesString(got), typesString(tt.want))
				}
				if el := p.ErrorLayer(); el != nil {
					t.Errorf("error layer: %v", el.Error())
				}
				if p.Metadata().Truncated {
					t.Error("packet marked truncated")
				}
				if b, ok := p.Layer(LayerTypeBTH).(*BTH); ok && !b.HasICRC {
					t.Error("BTH without its ICRC")
				}
			})
		}
	}
}

// TestNewPacketRoles checks which layers gopacket takes as link, network and
// transport layer, and that the layers hold what their own tests decode.
func TestNewPacketRoles(t *testing.T) {
	p := gopacket.NewPacket(ibGRHREQ, linkIB, gopacket.Default)
	if _, ok := p.LinkLayer().(*LRH); !ok {
		t.Errorf("IB link layer %T, want *LRH", p.LinkLayer())
	}
	if _, ok := p.NetworkLayer().(*GRH); !ok {
		t.Errorf("IB network layer %T, want *GRH", p.NetworkLayer())
	}
	if _, ok := p.TransportLayer().(*BTH); !ok {
		t.Errorf("IB transport layer %T, want *BTH", p.TransportLayer())
	}
	if lrh := p.Layer(LayerTypeLRH).(*LRH); !lrh.HasVCRC || lrh.VCRC != 0x14fa {
		t.Errorf("LRH VCRC %#04x (%v)", lrh.VCRC, lrh.HasVCRC)
	}
	req := p.Layer(LayerTypeCMReq).(*CMReq)
	if req.LocalCommID != 0x0a000006 || !bytes.Equal(req.PrivateData, ibGRHREQ[232:324]) {
		t.Errorf("REQ Local Comm ID %#x, private data %d octets", req.LocalCommID, len(req.PrivateData))
	}
	rpc := p.Layer(LayerTypeRPCRDMA).(*RPCRDMAPrivateData)
	if !bytes.Equal(rpc.Contents, ibGRHREQ[268:276]) {
		t.Errorf("RFC 8797 message at %x, want %x", rpc.Contents, ibGRHREQ[268:276])
	}

	p = gopacket.NewPacket(rocev2REQ, ltEthernet, gopacket.Default)
	if _, ok := p.NetworkLayer().(*golayers.IPv4); !ok {
		t.Errorf("RoCEv2 network layer %T, want IPv4", p.NetworkLayer())
	}
	if _, ok := p.TransportLayer().(*golayers.UDP); !ok {
		t.Errorf("RoCEv2 transport layer %T, want UDP", p.TransportLayer())
	}
	if b := p.Layer(LayerTypeBTH).(*BTH); b.ICRC != 0x32595fd2 || len(b.Payload) != 264 {
		t.Errorf("BTH ICRC %08x, payload %d octets", b.ICRC, len(b.Payload))
	}
	p = gopacket.NewPacket(rocev1REQ, ltEthernet, gopacket.Default)
	if _, ok := p.NetworkLayer().(*GRH); !ok {
		t.Errorf("RoCEv1 network layer %T, want *GRH", p.NetworkLayer())
	}
}

// TestNewPacketOtherPort checks RegisterRoCEPort: a RoCEv2 frame sent to
// another UDP port decodes once the port is registered.
func TestNewPacketOtherPort(t *testing.T) {
	frame := patch(rocev2RTU, at(36, 0x12, 0xb8)) // destination port 4792
	if p := gopacket.NewPacket(frame, ltEthernet, gopacket.Default); p.Layer(LayerTypeBTH) != nil {
		t.Fatal("port 4792 decoded as RoCEv2 before registration")
	}
	RegisterRoCEPort(4792)
	defer golayers.RegisterUDPPortLayerType(4792, gopacket.LayerTypePayload)
	if p := gopacket.NewPacket(frame, ltEthernet, gopacket.Default); p.Layer(LayerTypeCMRtu) == nil {
		t.Errorf("port 4792 after registration: %s", typesString(layerTypes(p)))
	}
}

// TestNewPacketTruncated decodes frames cut short by a snap length: the
// layers in front of the BTH say so, and the BTH must then not take the last
// four octets for an ICRC.
func TestNewPacketTruncated(t *testing.T) {
	tests := []struct {
		name  string
		data  []byte
		first gopacket.Decoder
		pd    []byte // the REQ private data that must be decoded
		want  []gopacket.LayerType
	}{
		{
			name: "RoCEv2, cut inside the consumer data", data: rocev2REQ[:300], first: ltEthernet, pd: rocev2REQ[226:300],
			want: []gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD, LayerTypeCMReq,
				LayerTypeIPCM, LayerTypeRPCRDMA, ltPayload},
		},
		{
			// The private data ends right after the RFC 8797 message: an
			// ICRC wrongly split off would take half of it.
			name: "RoCEv2, cut right after the RFC 8797 message", data: rocev2REQ[:270], first: ltEthernet,
			pd: rocev2REQ[226:270],
			want: []gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD, LayerTypeCMReq,
				LayerTypeIPCM, LayerTypeRPCRDMA},
		},
		{
			name: "RoCEv2 IPv6, cut right after the RFC 8797 message", data: rocev2IPv6REQ[:290], first: ltEthernet,
			pd: rocev2IPv6REQ[246:290],
			want: []gopacket.LayerType{ltEthernet, ltIPv6, ltUDP, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD, LayerTypeCMReq,
				LayerTypeIPCM, LayerTypeRPCRDMA},
		},
		{
			name: "RoCEv1, cut right after the RFC 8797 message", data: rocev1REQ[:282], first: ltEthernet,
			pd: rocev1REQ[238:282],
			want: []gopacket.LayerType{ltEthernet, LayerTypeGRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD, LayerTypeCMReq,
				LayerTypeIPCM, LayerTypeRPCRDMA},
		},
		{
			name: "IB, cut right after the RFC 8797 message", data: ibREQ[:236], first: linkIB, pd: ibREQ[192:236],
			want: []gopacket.LayerType{LayerTypeLRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD, LayerTypeCMReq,
				LayerTypeIPCM, LayerTypeRPCRDMA},
		},
		{
			name: "IB with GRH, cut right after the RFC 8797 message", data: ibGRHREQ[:276], first: linkIB,
			pd: ibGRHREQ[232:276],
			want: []gopacket.LayerType{LayerTypeLRH, LayerTypeGRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD,
				LayerTypeCMReq, LayerTypeIPCM, LayerTypeRPCRDMA},
		},
		{
			name: "ERF InfiniBand, cut right after the RFC 8797 message", data: erfIB[:252], first: linkERF,
			pd: ibREQ[192:236],
			want: []gopacket.LayerType{LayerTypeERF, LayerTypeLRH, LayerTypeBTH, LayerTypeDETH, LayerTypeMAD,
				LayerTypeCMReq, LayerTypeIPCM, LayerTypeRPCRDMA},
		},
	}
	for _, tt := range tests {
		for _, opts := range []gopacket.DecodeOptions{gopacket.Default, gopacket.Lazy} {
			t.Run(fmt.Sprintf("%s lazy=%v", tt.name, opts.Lazy), func(t *testing.T) {
				p := gopacket.NewPacket(tt.data, tt.first, opts)
				got := layerTypes(p)
				if typesString(got) != typesString(tt.want) {
					t.Errorf("layers\n\t%s\nwant\n\t%s", typesString(got), typesString(tt.want))
				}
				if !p.Metadata().Truncated {
					t.Error("packet not marked truncated")
				}
				b, _ := p.Layer(LayerTypeBTH).(*BTH)
				if b == nil || b.HasICRC || !b.NoICRC {
					t.Fatalf("BTH %+v: an ICRC was split off a cut frame", b)
				}
				req, _ := p.Layer(LayerTypeCMReq).(*CMReq)
				if req == nil || !bytes.Equal(req.PrivateData, tt.pd) {
					t.Errorf("REQ private data %x\nwant %x", req.PrivateData, tt.pd)
				}
				if s := SearchRPCRDMA(req.PrivateData); !s.Found || s.Offset != 36 {
					t.Errorf("RFC 8797 search: found %v at %d", s.Found, s.Offset)
				}
			})
		}
	}
}
