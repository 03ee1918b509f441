package layers

import (
	"net/netip"
	"testing"
)

var (
	// An SDP Hello as Linux's SDP sends it (SDP_MAJV_MINV 0x22): BSDH MID
	// 0x00, 4 buffers, length 92; version 2.2, IPv4, Send With Invalidate
	// supported, 4 adverts, desired remote 65536, local 32768, port 5002,
	// 192.0.2.1 → 192.0.2.2. tshark 4.0 decodes no Hello: it needs the
	// connection its REP sets up.
	sdpHello = hexOctets(`
		00 00 00 04 00 00 00 5c  00 00 00 00 00 00 00 00
		22 41 00 04 00 01 00 00  00 00 80 00 13 8a 00 00
		00 00 00 00 00 00 00 00  00 00 00 00 c0 00 02 01
		00 00 00 00 00 00 00 00  00 00 00 00 c0 00 02 02
		00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00  00 00 00 00`)
	// The HelloAck: MID 0x01, 8 buffers, length 16; version 2.2, actual
	// receive size 32768. tshark 4.0.17 decodes its BSDH: infiniband_sdp.bsdh.
	// mid 0x01, bufs 8, len 16.
	sdpHelloAck = hexOctets(`
		01 00 00 08 00 00 00 10  00 00 00 00 00 00 00 00
		22 40 00 00 00 00 80 00`)
)

func TestSDPDecode(t *testing.T) {
	h := &SDPHello{SDPBSDH: SDPBSDH{Bufs: 4, Len: 92}, MajorVersion: 2, MinorVersion: 2, IPVersion: 4, Capabilities: 1,
		MaxAdverts: 4, DesRemRcvSz: 65536, LocalRcvSz: 32768, LocalPort: 5002,
		SrcAddr: netip.MustParseAddr("192.0.2.1"), DstAddr: netip.MustParseAddr("192.0.2.2"),
		rawSrc: ipv4Pad(192, 0, 2, 1), rawDst: ipv4Pad(192, 0, 2, 2)}
	h.Contents, h.Payload = sdpHello[:64], sdpHello[64:]
	ack := &SDPHelloAck{SDPBSDH: SDPBSDH{MID: 1, Bufs: 8, Len: 16}, MajorVersion: 2, MinorVersion: 2, IPVersion: 4, ActRcvSz: 32768}
	ack.Contents, ack.Payload = sdpHelloAck, sdpHelloAck[24:]
	v3 := patch(sdpHello, at(16, 0x32))
	bad := *h
	bad.MajorVersion = 3
	bad.Contents, bad.Payload = v3[:64], v3[64:]
	runULPCases(t, []ulpCase{
		{name: "Hello", data: sdpHello, want: h, summary: "SDP Hello v2.2 local_rcv_sz=32768 des_rem_rcv_sz=65536 port=5002",
			fields: map[string]string{"mid": "0x00", "bufs": "4", "len": "92", "major_version": "2", "ip_version": "4",
				"capabilities": "0x1", "max_adverts": "4", "local_port": "5002", "src": "192.0.2.1", "dst": "192.0.2.2"}},
		{name: "HelloAck", data: sdpHelloAck, want: ack, summary: "SDP HelloAck v2.2 act_rcv_sz=32768",
			fields: map[string]string{"mid": "0x01", "bufs": "8", "len": "16", "act_rcv_sz": "32768"}},
		{name: "Hello of version 3", data: v3, want: &bad, problem: "major version 3 is not 2",
			summary: "SDP Hello v3.2 local_rcv_sz=32768 des_rem_rcv_sz=65536 port=5002"},
	})
	if !IsSDPServiceID(0x000000000001138a) || IsSDPServiceID(0x000000000106138a) {
		t.Error("SDP Service IDs")
	}
}
