package record

import "github.com/rdmacm-pd/rdmacm-pd/layers"

// Encapsulation is one tunnel a message's frame travelled in, outermost
// first in Message.Tunnel: its type as the JSON output names it ("vxlan",
// "vxlan-gpe", "geneve", "gre", "erspan", "mpls", "ip-in-ip"), a name for
// people ("VXLAN", "ERSPAN type II", ...), its fields (the outer endpoints
// where an IP header carries it, then its own: VNI, ERSPAN session, GRE
// key...), an MPLS label stack, and the VLAN tags of the Ethernet frame it
// carries.
type Encapsulation struct {
	Type   string
	Name   string
	Fields []layers.Field
	Labels []MPLSLabel // MPLS: the label stack, top first
	VLANs  []uint16    // the VLAN IDs of the carried Ethernet frame's 802.1Q and 802.1ad tags, outer first
}

// MPLSLabel is one MPLS label stack entry (RFC 3032; TC as RFC 5462 names
// the former EXP bits).
type MPLSLabel struct {
	Label uint32
	TC    uint8
	TTL   uint8
}
