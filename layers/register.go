package layers

import (
	golayers "github.com/gopacket/gopacket/layers"
)

// Where RDMA traffic is found.
const (
	RoCEv2Port      = 4791   // UDP destination port of RoCEv2
	EtherTypeRoCEv1 = 0x8915 // EtherType of RoCEv1
	LinkTypeIB      = 247    // LINKTYPE_INFINIBAND, libpcap's RDMA sniffer
	LinkTypeERF     = 197    // LINKTYPE_ERF

	EtherTypeQinQ9100 = 0x9100 // legacy (pre-802.1ad) QinQ tag
	EtherTypeQinQ9200 = 0x9200 // legacy QinQ tag
)

// decodedLinks are the link types whose frames can carry what the
// dissector decodes: RoCE, native InfiniBand (also in ERF records), and TCP
// for iWARP. Frames of any other link type are passed over.
var decodedLinks = [...]golayers.LinkType{golayers.LinkTypeNull, golayers.LinkTypeEthernet, golayers.LinkTypeRaw,
	golayers.LinkTypeLoop, golayers.LinkTypeLinuxSLL, LinkTypeERF, golayers.LinkTypeIPv4, golayers.LinkTypeIPv6, LinkTypeIB,
	golayers.LinkTypeLinuxSLL2}

// SupportedLink reports whether frames of a link type can carry what the
// dissector decodes.
func SupportedLink(lt uint16) bool {
	for _, l := range decodedLinks {
		if uint16(l) == lt {
			return true
		}
	}
	return false
}

func init() {
	golayers.RegisterUDPPortLayerType(RoCEv2Port, LayerTypeBTH)
	golayers.EthernetTypeMetadata[EtherTypeRoCEv1] = golayers.EnumMetadata{
		DecodeWith: LayerTypeGRH, Name: "RoCE", LayerType: LayerTypeGRH,
	}
	// The legacy QinQ TPIDs, still seen on older switches: a tag like
	// 802.1Q's, as the fast filter takes them.
	for _, tpid := range []golayers.EthernetType{EtherTypeQinQ9100, EtherTypeQinQ9200} {
		golayers.EthernetTypeMetadata[tpid] = golayers.EthernetTypeMetadata[golayers.EthernetTypeDot1Q]
	}
	golayers.LinkTypeMetadata[LinkTypeIB] = golayers.EnumMetadata{DecodeWith: LayerTypeLRH, Name: "InfiniBand"}
	golayers.LinkTypeMetadata[LinkTypeERF] = golayers.EnumMetadata{DecodeWith: LayerTypeERF, Name: "ERF"}
}

// RegisterRoCEPort makes gopacket decode UDP datagrams to another port as
// RoCEv2. Call it before decoding starts: gopacket's port table is not safe
// for concurrent change.
func RegisterRoCEPort(port uint16) {
	golayers.RegisterUDPPortLayerType(golayers.UDPPort(port), LayerTypeBTH)
}
