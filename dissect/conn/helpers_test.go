package conn

import (
	"net/netip"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// ep is the endpoint a test names: an IP address, an address and port, or
// any other word as a LID of its own.
func ep(s string) record.Endpoint {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return record.TCPEndpoint(ap.Addr().As16(), ap.Addr().Is6(), ap.Port())
	}
	if a, err := netip.ParseAddr(s); err == nil {
		b := a.As16()
		return record.IPEndpoint(b[:])
	}
	lid := uint16(0)
	for _, c := range []byte(s) {
		lid = lid*31 + uint16(c)
	}
	return record.LIDEndpoint(lid)
}

// handed are the records the events hand on.
func handed(evs []Event) []*record.Connection {
	var out []*record.Connection
	for _, e := range evs {
		if e.Kind == HandedOn {
			out = append(out, e.Conn)
		}
	}
	return out
}
