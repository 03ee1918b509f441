package record

import (
	"encoding/binary"
	"net/netip"
	"strconv"
)

// EndpointKind says what an Endpoint's address is, and so how it is shown.
type EndpointKind uint8

// Endpoint kinds. A GID is shown as an IPv6 address and is one here: a
// RoCEv1 GID and a RoCEv2 IPv6 address that read the same are the same
// endpoint.
const (
	NoAddress EndpointKind = iota // nothing decoded names it: shown "?"
	IPv4                          // Addr holds the IPv4-mapped form
	IPv6                          // an IPv6 address or a GID
	LID                           // native InfiniBand: the LID in the last two octets
	// Placeholder: --anonymize put a name in place of the address. Addr[0]
	// holds its PlaceholderClass and Addr[12:16] its number: "host1",
	// "gid2", with a port "host1:4420".
	Placeholder
)

// PlaceholderClass says what kind of address a placeholder stands for.
type PlaceholderClass uint8

// Placeholder classes.
const (
	HostPlaceholder PlaceholderClass = iota // an IP address, or a GID that holds one
	GIDPlaceholder                          // any other GID
	GUIDPlaceholder                         // a GUID (never an endpoint)
)

var placeholderPrefixes = [...]string{"host", "gid", "guid"}

// String is the prefix of the class's names: "host", "gid", "guid".
func (c PlaceholderClass) String() string {
	if int(c) < len(placeholderPrefixes) {
		return placeholderPrefixes[c]
	}
	return "addr"
}

// AppendPlaceholder appends the name of class and number n ("host1") to b.
func AppendPlaceholder(b []byte, c PlaceholderClass, n uint32) []byte {
	return strconv.AppendUint(append(b, c.String()...), uint64(n), 10)
}

// Endpoint is one end of a message, a connection or an RPC-over-RDMA
// message, as its frames carry it: an IP address (RoCEv2; iWARP with its
// TCP port), a GID (RoCEv1, InfiniBand with a GRH) or a LID (InfiniBand
// without one). It is a small comparable value: pairing, following and the
// data path key on it, and a string exists only when a renderer asks for
// one. The constructors keep the unused octets zero, so that two endpoints
// are equal exactly when they are shown alike.
type Endpoint struct {
	Addr    [16]byte
	Port    uint16 // iWARP: the TCP port, when HasPort
	Kind    EndpointKind
	HasPort bool
}

// IPEndpoint is the endpoint of an IP address of 4 or 16 octets, shown as
// RoCEv2 shows it: an IPv4-mapped IPv6 address as its IPv4 address. Any
// other length names nothing.
func IPEndpoint(ip []byte) Endpoint {
	switch len(ip) {
	case 4:
		return Endpoint{Addr: netip.AddrFrom4([4]byte(ip)).As16(), Kind: IPv4}
	case 16:
		a := netip.AddrFrom16([16]byte(ip))
		if a.Is4In6() {
			return Endpoint{Addr: a.As16(), Kind: IPv4}
		}
		return Endpoint{Addr: a.As16(), Kind: IPv6}
	}
	return Endpoint{}
}

// GIDEndpoint is the endpoint of a GID: always shown in its IPv6 form, an
// IPv4-mapped one as ::ffff:192.0.2.1.
func GIDEndpoint(gid [16]byte) Endpoint { return Endpoint{Addr: gid, Kind: IPv6} }

// LIDEndpoint is the endpoint of a LID.
func LIDEndpoint(lid uint16) Endpoint {
	e := Endpoint{Kind: LID}
	binary.BigEndian.PutUint16(e.Addr[14:], lid)
	return e
}

// TCPEndpoint is an iWARP endpoint: the address of a TCP segment (an IPv4
// one in the last four octets of addr unless v6) and its port. An
// IPv4-mapped IPv6 address keeps its IPv6 form.
func TCPEndpoint(addr [16]byte, v6 bool, port uint16) Endpoint {
	e := Endpoint{Port: port, HasPort: true, Kind: IPv6, Addr: addr}
	if !v6 {
		e.Kind, e.Addr = IPv4, netip.AddrFrom4([4]byte(addr[12:16])).As16()
	}
	return e
}

// WithPlaceholder is e with the name of class and number n in place of
// its address (--anonymize); a port stays.
func (e Endpoint) WithPlaceholder(c PlaceholderClass, n uint32) Endpoint {
	p := Endpoint{Kind: Placeholder, Port: e.Port, HasPort: e.HasPort}
	p.Addr[0] = byte(c)
	binary.BigEndian.PutUint32(p.Addr[12:], n)
	return p
}

// LIDOf is the LID of a LID endpoint.
func (e Endpoint) LIDOf() uint16 { return binary.BigEndian.Uint16(e.Addr[14:]) }

// IP is the endpoint's address as an IP address, IPv4-mapped ones
// unmapped; the zero Addr for a LID or no address.
func (e Endpoint) IP() netip.Addr {
	switch e.Kind {
	case IPv4, IPv6:
		return netip.AddrFrom16(e.Addr).Unmap()
	}
	return netip.Addr{}
}

// Host is the endpoint without its port: a reconnection from another TCP
// port comes from the same host.
func (e Endpoint) Host() Endpoint {
	e.Port, e.HasPort = 0, false
	return e
}

// String shows the endpoint as the records do: 192.0.2.1, 2001:db8::1,
// ::ffff:192.0.2.1 (a GID), "LID 4", 192.0.2.1:20049 and [2001:db8::1]:20049
// (iWARP), "host1" and "host1:20049" (--anonymize), "?" when nothing
// named it.
func (e Endpoint) String() string { return string(e.Append(nil)) }

// Append appends the endpoint as String shows it to b.
func (e Endpoint) Append(b []byte) []byte {
	var a netip.Addr
	switch e.Kind {
	case IPv4:
		a = netip.AddrFrom16(e.Addr).Unmap()
	case IPv6:
		a = netip.AddrFrom16(e.Addr)
	case LID:
		return strconv.AppendUint(append(b, "LID "...), uint64(e.LIDOf()), 10)
	case Placeholder:
		b = AppendPlaceholder(b, PlaceholderClass(e.Addr[0]), binary.BigEndian.Uint32(e.Addr[12:]))
		if e.HasPort {
			b = strconv.AppendUint(append(b, ':'), uint64(e.Port), 10)
		}
		return b
	default:
		return append(b, '?')
	}
	if e.HasPort {
		return netip.AddrPortFrom(a, e.Port).AppendTo(b)
	}
	return a.AppendTo(b)
}

// Len is the length of the endpoint as String shows it, worked out
// without making the string for an IPv4 address.
func (e Endpoint) Len() int {
	if e.Kind != IPv4 {
		var b [64]byte
		return len(e.Append(b[:0]))
	}
	n := 3 // the dots
	for _, o := range e.Addr[12:] {
		n += digits(uint64(o))
	}
	if e.HasPort {
		n += 1 + digits(uint64(e.Port))
	}
	return n
}

// digits is how many decimal digits v takes.
func digits(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}
