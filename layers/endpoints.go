package layers

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
)

// EndpointLID is an InfiniBand Local Identifier (2 octets, big-endian) as a
// gopacket endpoint, so an LRH can act as a link layer.
var EndpointLID = gopacket.RegisterEndpointType(1500, gopacket.EndpointTypeMetadata{
	Name: "LID",
	Formatter: func(b []byte) string {
		if len(b) != 2 {
			return fmt.Sprintf("%x", b)
		}
		return fmt.Sprintf("LID %d", binary.BigEndian.Uint16(b))
	},
})

// EndpointQP is an InfiniBand queue pair number (3 octets, big-endian).
var EndpointQP = gopacket.RegisterEndpointType(1501, gopacket.EndpointTypeMetadata{
	Name: "QP",
	Formatter: func(b []byte) string {
		if len(b) != 3 {
			return fmt.Sprintf("QP %x", b)
		}
		return fmt.Sprintf("QP 0x%06x", uint24(b))
	},
})
