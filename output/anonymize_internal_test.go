package output

import (
	"net/netip"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestAnonymizerNames: each address gets a name the first time it is
// seen, numbered by class in that order, and the same name ever after;
// an IPv4 address and the GID that holds it are one host; unset addresses
// keep their form.
func TestAnonymizerNames(t *testing.T) {
	a := newAnonymizer()
	ip := func(s string) [16]byte { return netip.MustParseAddr(s).As16() }
	name := func(addr [16]byte, class record.PlaceholderClass) string {
		p, ok := a.name(addr, class)
		if !ok {
			return "(kept)"
		}
		return p.String()
	}
	for _, c := range []struct {
		addr  [16]byte
		class record.PlaceholderClass
		want  string
	}{
		{ip("192.0.2.1"), record.HostPlaceholder, "host1"},
		{ip("fe80::2:c903:1:1"), record.GIDPlaceholder, "gid1"},
		{ip("2001:db8::1"), record.HostPlaceholder, "host2"},
		{ip("192.0.2.1"), record.HostPlaceholder, "host1"},
		{ip("::ffff:192.0.2.1"), record.GIDPlaceholder, "host1"}, // the same 16 octets as 192.0.2.1
		{ip("::ffff:192.0.2.9"), record.GIDPlaceholder, "host3"}, // an IPv4-mapped GID is a host
		{ip("2001:db8::1"), record.GIDPlaceholder, "host2"},      // first seen as an IP address
		{ip("fe80::2:c903:1:1"), record.HostPlaceholder, "gid1"}, // first seen as a GID
		{ip("fe80::2:c903:1:2"), record.GIDPlaceholder, "gid2"},
		{ip("::"), record.GIDPlaceholder, "(kept)"},
		{ip("0.0.0.0"), record.HostPlaceholder, "(kept)"},
	} {
		if got := name(c.addr, c.class); got != c.want {
			t.Errorf("%s: %s, want %s", netip.AddrFrom16(c.addr), got, c.want)
		}
	}
	for _, c := range []struct {
		guid uint64
		want string
	}{{0x0002c90300000001, "guid1"}, {0x0002c90300000101, "guid2"}, {0x0002c90300000001, "guid1"}, {0, ""}} {
		if got, _ := a.guid(c.guid); got != c.want {
			t.Errorf("GUID %#x: %q, want %q", c.guid, got, c.want)
		}
	}

	// Endpoints: the port stays; a LID is no address to hide.
	var raw rawAddrs
	e := record.TCPEndpoint(ip("192.0.2.1"), false, 20049)
	if got := a.endpoint(e, false, &raw).String(); got != "host1:20049" {
		t.Errorf("endpoint %s", got)
	}
	if got := a.endpoint(record.GIDEndpoint(ip("fe80::2:c903:1:2")), true, &raw).String(); got != "gid2" {
		t.Errorf("GID endpoint %s", got)
	}
	if got := a.endpoint(record.LIDEndpoint(7), true, &raw).String(); got != "LID 7" {
		t.Errorf("LID endpoint %s", got)
	}

	// Free text: every form of an IP address, nothing else.
	for in, want := range map[string]string{
		"rdmacm-pd dissect -Y 'addr == 192.0.2.1 or addr == 2001:db8::1' x.pcap": "rdmacm-pd dissect -Y 'addr == host1 or addr == host2' x.pcap",
		"src == 192.0.2.1:20049":                "src == host1:20049",
		"addr == ::ffff:192.0.2.1":              "addr == host1",
		"--host 198.51.100.7":                   "--host host4",
		"capture-192.0.2.9.pcap":                "capture-host3.pcap",
		"RFC 8166, sections 4.2, 4.3 and 4.5.2": "RFC 8166, sections 4.2, 4.3 and 4.5.2",
		"00:00:00.002030 frame 12: 0x0001ffff":  "00:00:00.002030 frame 12: 0x0001ffff",
		"addr == ::":                            "addr == ::",
	} {
		if got := a.text(in); got != want {
			t.Errorf("text %q: %q, want %q", in, got, want)
		}
	}
	var none *anonymizer
	if got := none.text("192.0.2.1"); got != "192.0.2.1" {
		t.Errorf("a nil anonymizer changed text: %q", got)
	}
}

// TestAnonymizerFields: fields whose kind or key says they hold an
// address are named; their octets are zeroed in the blobs.
func TestAnonymizerFields(t *testing.T) {
	a := newAnonymizer()
	v4 := []byte{192, 0, 2, 1}
	gid := netip.MustParseAddr("fe80::2:c903:1:1").As16()
	fs := []layers.Field{
		{Name: "Source Address", Key: "src", Kind: layers.Addr, Bytes: v4},
		{Name: "Source GID", Key: "sgid", Kind: layers.GID, Bytes: gid[:]},
		{Name: "Local CA GUID", Key: "local_ca_guid", Kind: layers.ID64, Value: 0x0002c90300000001},
		{Name: "Transaction ID", Key: "transaction_id", Kind: layers.ID64, Value: 0x0002c90300000001},
		{Name: "Source NID", Key: "src_nid", Kind: layers.Text, Bytes: []byte("192.0.2.1@o2ib")},
		{Name: "Initiator Port Identifier", Key: "initiator_port_id", Kind: layers.Blob,
			Bytes: []byte{8: 0x00, 9: 0x02, 10: 0xc9, 11: 0x03, 15: 0x02}},
		{Name: "Platform Specific Subheader", Key: "platform", Kind: layers.Blob, Bytes: []byte{0xff, 192, 0, 2, 1, 0xee}},
		{Name: "Additional Information", Key: "additional_info", Kind: layers.Blob, Bytes: []byte{1, 2, 3}},
	}
	var raw rawAddrs
	got := a.fields(fs, true, &raw)
	a.blobs(got, raw, 0, true)
	want := []string{"host1", "gid1", "guid1", "0x0002c90300000001", "host1@o2ib", "0:guid2", "ff00000000ee", "000000"}
	for i, f := range got {
		if f.Text() != want[i] {
			t.Errorf("%s: %q, want %q", f.Name, f.Text(), want[i])
		}
	}
	if fs[0].Kind != layers.Addr || fs[6].Bytes[1] != 192 {
		t.Errorf("the fields given were changed")
	}
	pd := []byte{0, 0x40, 0xc0, 0x01, 192, 0, 2, 1, 0xf6, 0xab, 0x0e, 0x18, 1, 0x02, 0, 0xc0}
	zeroed, ok := raw.zero(pd)
	// The IPv4 address, and the same in a little-endian NID.
	if !ok || string(zeroed) != string([]byte{0, 0x40, 0xc0, 0x01, 0, 0, 0, 0, 0xf6, 0xab, 0x0e, 0x18, 0, 0, 0, 0}) {
		t.Errorf("zeroed %x", zeroed)
	}
	if pd[4] != 192 {
		t.Errorf("the private data given was changed")
	}
	if _, ok := raw.zero([]byte{1, 2, 3}); ok {
		t.Errorf("zeroed octets that hold no address")
	}
}
