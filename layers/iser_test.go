package layers

import "testing"

var (
	// Linux's iSER initiator (iser_route_handler): ZBVA not supported, and
	// Send With Invalidate not supported when the device lacks it.
	iserREQ = hexOctets("c000 0000")
	// Linux's iSER target (isert_rdma_accept) when it uses remote invalidation.
	iserREP = hexOctets("8000 0000")
)

func TestISERDecode(t *testing.T) {
	h := func(flags uint8, data []byte) *ISERCMHeader {
		m := &ISERCMHeader{Flags: flags, ZBVANotSupported: flags&0x80 != 0, SendWithInvalidateNotSupported: flags&0x40 != 0,
			ReservedFlags: flags & 0x3f}
		m.Contents, m.Payload = data[:4], data[4:]
		return m
	}
	all := hexOctets("0000 0000 1111")
	odd := hexOctets("6f01 0203")
	runULPCases(t, []ulpCase{
		{name: "initiator, neither", data: iserREQ, want: h(0xc0, iserREQ),
			summary: "iSER flags=0xc0 (no ZBVA, no Send With Invalidate)",
			fields:  map[string]string{"zbva_not_supported": "true", "send_with_invalidate_not_supported": "true"}},
		{name: "target uses Send With Invalidate", data: iserREP, want: h(0x80, iserREP), summary: "iSER flags=0x80 (no ZBVA)",
			fields: map[string]string{"zbva_not_supported": "true", "send_with_invalidate_not_supported": "false"}},
		{name: "everything supported, more data after", data: all, want: h(0, all), summary: "iSER flags=0x00"},
		// Reserved bits and octets are not judged.
		{name: "reserved bits set", data: odd, want: h(0x6f, odd), summary: "iSER flags=0x6f (no Send With Invalidate)"},
	})
}
