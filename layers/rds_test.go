package layers

import (
	"net/netip"
	"testing"
)

// RDS vectors as Linux's rds_ib_cm_fill_conn_param lays them out (tshark
// 4.0 decodes no RDS private data).
var (
	//	00  source 192.0.2.1, destination 192.0.2.2
	//	08  protocol 4.1, minor mask 0x0003, type of service 0, reserved, fragment size 0
	//	10  ack sequence 0, credit 0 (no flow control)
	rdsREQ4 = hexOctets(`
		c0 00 02 01 c0 00 02 02  04 01 00 03 00 00 00 00
		00 00 00 00 00 00 00 00  00 00 00 00`)
	// The IPv6 layout, 2001:db8::1 → 2001:db8::2, protocol 4.1, credit 128
	// and ack sequence 0x1234.
	rdsREQ6 = hexOctets(`
		20 01 0d b8 00 00 00 00  00 00 00 00 00 00 00 01
		20 01 0d b8 00 00 00 00  00 00 00 00 00 00 00 02
		04 01 00 03 00 00 00 00  00 00 00 00 00 00 12 34
		00 00 00 80`)
	// The REP of the IPv4 connection: the responder's address first, 3.1
	// with an Oracle UEK fragment size.
	rdsREP4 = hexOctets(`
		c0 00 02 02 c0 00 02 01  03 01 00 03 00 00 20 00
		00 00 00 00 00 00 00 07  00 00 00 10`)
)

func TestRDSDecode(t *testing.T) {
	a1, a2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	b1, b2 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	v4 := &RDSConnect{SrcAddr: a1, DstAddr: a2, ProtocolMajor: 4, ProtocolMinor: 1, MinorMask: 3}
	v4.Contents, v4.Payload = rdsREQ4, rdsREQ4[28:]
	rep := &RDSConnect{SrcAddr: a2, DstAddr: a1, ProtocolMajor: 3, ProtocolMinor: 1, MinorMask: 3, FragSize: 8192, AckSeq: 7, Credit: 16}
	rep.Contents, rep.Payload = rdsREP4, rdsREP4[28:]
	v6 := &RDSConnectIPv6{RDSConnect{IPv6: true, SrcAddr: b1, DstAddr: b2, ProtocolMajor: 4, ProtocolMinor: 1, MinorMask: 3,
		AckSeq: 0x1234, Credit: 128}}
	v6.Contents, v6.Payload = rdsREQ6, rdsREQ6[52:]
	five := patch(rdsREQ4, at(8, 5))
	bad := &RDSConnect{SrcAddr: a1, DstAddr: a2, ProtocolMajor: 5, ProtocolMinor: 1, MinorMask: 3}
	bad.Contents, bad.Payload = five, five[28:]
	runULPCases(t, []ulpCase{
		{name: "IPv4 REQ", data: rdsREQ4, want: v4, summary: "RDS 4.1 credit=0",
			fields: map[string]string{"src": "192.0.2.1", "dst": "192.0.2.2", "protocol_major": "4", "protocol_minor": "1",
				"protocol_minor_mask": "0x0003", "credit": "0", "ack_seq": "0x0000000000000000"}},
		{name: "IPv4 REP", data: rdsREP4, want: rep, summary: "RDS 3.1 credit=16 frag_size=8192"},
		{name: "IPv6 REQ", data: rdsREQ6, want: v6, summary: "RDS 4.1 credit=128",
			fields: map[string]string{"src": "2001:db8::1", "dst": "2001:db8::2", "ack_seq": "0x0000000000001234"}},
		{name: "major version 5", data: five, want: bad, problem: "protocol major version 5 is neither 3 nor 4", summary: "RDS 5.1 credit=0"},
	})
	var m RDSConnect
	decodeOK(t, &m, rdsREQ4)
	mapped := netip.AddrFrom16(a1.As16())
	for _, tc := range []struct {
		src, dst netip.Addr
		want     bool
	}{{a1, a2, true}, {mapped, netip.AddrFrom16(a2.As16()), true}, {a2, a1, false}, {netip.Addr{}, a2, false}} {
		if m.Repeats(tc.src, tc.dst) != tc.want {
			t.Errorf("Repeats(%v, %v) = %v", tc.src, tc.dst, !tc.want)
		}
	}
}
