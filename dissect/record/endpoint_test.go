package record

import (
	"net/netip"
	"testing"
)

// Endpoints show as the records always showed their addresses, their Len
// is that of the text, and two endpoints are equal exactly when they show
// alike.
func TestEndpoint(t *testing.T) {
	v6 := netip.MustParseAddr("2001:db8::1").As16()
	mapped := netip.MustParseAddr("::ffff:192.0.2.1").As16()
	var v4in16 [16]byte
	copy(v4in16[12:], []byte{192, 0, 2, 1})
	cases := []struct {
		e    Endpoint
		text string
		ip   string
	}{
		{IPEndpoint([]byte{192, 0, 2, 1}), "192.0.2.1", "192.0.2.1"},
		{IPEndpoint(mapped[:]), "192.0.2.1", "192.0.2.1"}, // RoCEv2 shows a mapped IPv6 address as IPv4
		{IPEndpoint(v6[:]), "2001:db8::1", "2001:db8::1"},
		{IPEndpoint([]byte{1, 2, 3}), "?", "invalid IP"},
		{GIDEndpoint(mapped), "::ffff:192.0.2.1", "192.0.2.1"}, // a GID keeps its IPv6 form
		{GIDEndpoint(v6), "2001:db8::1", "2001:db8::1"},
		{LIDEndpoint(7), "LID 7", "invalid IP"},
		{LIDEndpoint(65535), "LID 65535", "invalid IP"},
		{TCPEndpoint(v4in16, false, 20049), "192.0.2.1:20049", "192.0.2.1"},
		{TCPEndpoint(v6, true, 49153), "[2001:db8::1]:49153", "2001:db8::1"},
		{TCPEndpoint(mapped, true, 1), "[::ffff:192.0.2.1]:1", "192.0.2.1"},
		{Endpoint{}, "?", "invalid IP"},
		{IPEndpoint([]byte{192, 0, 2, 1}).WithPlaceholder(HostPlaceholder, 1), "host1", "invalid IP"},
		{GIDEndpoint(v6).WithPlaceholder(GIDPlaceholder, 12), "gid12", "invalid IP"},
		{TCPEndpoint(v6, true, 4420).WithPlaceholder(HostPlaceholder, 3), "host3:4420", "invalid IP"},
	}
	for _, c := range cases {
		if got := c.e.String(); got != c.text {
			t.Errorf("%+v: %q, want %q", c.e, got, c.text)
		}
		if got := c.e.Len(); got != len(c.text) {
			t.Errorf("%s: Len %d", c.text, got)
		}
		if got := c.e.IP().String(); got != c.ip {
			t.Errorf("%s: IP %s, want %s", c.text, got, c.ip)
		}
	}
	for i, a := range cases {
		for j, b := range cases {
			if (a.e == b.e) != (a.text == b.text) {
				t.Errorf("%d %q and %d %q: equal %v", i, a.text, j, b.text, a.e == b.e)
			}
		}
	}
	if h := TCPEndpoint(v6, true, 49153).Host(); h != GIDEndpoint(v6) || h.String() != "2001:db8::1" {
		t.Errorf("host %s", h)
	}
	if h := TCPEndpoint(v4in16, false, 20049).Host(); h != IPEndpoint([]byte{192, 0, 2, 1}) {
		t.Errorf("host %s", h)
	}
}
