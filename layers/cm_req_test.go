package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// cmBaseOf is the cmBase a CM message decoded from data has: the fixed part up
// to off, then the private data, at most size octets.
func cmBaseOf(data []byte, off, size int) cmBase {
	end := off + size
	if end > len(data) {
		end = len(data)
	}
	pd := data[off:end]
	return cmBase{BaseLayer: golayers.BaseLayer{Contents: data[:off], Payload: pd}, PrivateData: pd}
}

// reqBody is a REQ built by hand from IBTA Vol 1 table 106 (and the octet and
// bit positions of Linux's include/rdma/ibta_vol1_c12.h), every field
// non-zero and every packed octet with different bits, reserved bits set, so
// that a wrong offset, shift or mask shows. The private data starts with an
// RFC 8797 message (the Service ID is no IP CM one).
// Cross-checked with tshark 4.0.17 (spliced into a RoCEv2 frame): fields
// infiniband.cm.req, infiniband.cm.req.{serviceid,localcaguid,localqkey,localqpn,
// responderres,localeecn,initdepth,remoteeecn,remoteresptout,transpsvctype,
// e2eflowctrl,startpsn,localresptout,retrcount,pkey,pppmtu,rdcexist,rnrretrcount,
// maxcmretr,srq,ext_transport,prim_locallid,prim_remotelid,prim_localgid,
// prim_remotegid,prim_tfcclass,prim_hoplim,prim_sl,prim_subnetlocal,
// prim_localacktout,alt_locallid,alt_remotelid,alt_localgid,alt_remotegid,
// alt_tfcclass,alt_hoplim,alt_sl,alt_subnetlocal,alt_localacktout,private}.
// All agree except, as expected from tshark 4.0's quirks: the flow labels and
// packet rates (tshark shows 0x00543/0x14 and 0x00fed/0x3e where the octets
// hold 0x54321/25 and 0xfedcb/37, see oracles.md), and the primary GIDs, which
// tshark shows in a RoCEv2-over-IPv4 frame as IPv4 addresses made of their
// last four octets (254.3.0.1, 10.11.12.13: those octets agree).
var reqBody = octets(MADDataLen, seq(0x40),
	at(0, 0x0b, 0xad, 0xca, 0xfe),                          // Local Communication ID
	at(4, 0x01, 0x02, 0x03, 0x04),                          // reserved (vendor ID)
	at(8, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef),  // Service ID
	at(16, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10), // Local CA GUID
	at(24, 0x11, 0x11, 0x11, 0x11),                         // reserved
	at(28, 0x2b, 0x3c, 0x4d, 0x5e),                         // Local Q_Key
	at(32, 0xa1, 0xb2, 0xc3, 0xd4),                         // Local QPN, Responder Resources
	at(36, 0xe5, 0xf6, 0x07, 0x18),                         // Local EECN, Initiator Depth
	at(40, 0x29, 0x3a, 0x4b, 0xb5),                         // Remote EECN; 10110 10 1: timeout 22, type 2, E2E
	at(44, 0x5c, 0x6d, 0x7e, 0x6e),                         // Starting PSN; 01101 110: timeout 13, retry 6
	at(48, 0x8f, 0x9a, 0x5b, 0xa5),                         // P_Key; 0101 1 011: MTU 5, RDC, RNR 3; 1010 0 101: retries 10, no SRQ, ext 5
	// primary path
	at(52, 0x13, 0x57, 0x24, 0x68), // LIDs
	at(56, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x02, 0xc9, 0xff, 0xfe, 0x03, 0x00, 0x01), // local GID
	at(72, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d),       // remote GID
	at(88, 0x54, 0x32, 0x19, 0x99), // flow label 0x54321, reserved 100110, packet rate 25
	at(92, 0xb8, 0x41, 0x97, 0x75), // traffic class, hop limit; 1001 0 111: SL 9; 01110 101: ACK timeout 14
	// alternate path
	at(96, 0x97, 0x53, 0x86, 0x42),
	at(100, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0x01, 0, 0x02, 0, 0x03, 0, 0x04),
	at(116, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xaa, 0xbb, 0xbb),
	at(132, 0xfe, 0xdc, 0xb6, 0xa5), // flow label 0xfedcb, reserved 011010, packet rate 37
	at(136, 0x2c, 0x90, 0x6a, 0x8d), // 0110 1 010: SL 6, subnet local; 10001 1 01: ACK timeout 17, SAP
	// private data: RFC 8797, Version 1, reserved 1 and R, sizes 0xff and 0x00
	at(140, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x03, 0xff, 0x00),
)

var reqBodyWant = CMReq{
	LocalCommID: 0x0badcafe, ServiceID: 0x0123456789abcdef, LocalCAGUID: 0xfedcba9876543210,
	LocalQKey: 0x2b3c4d5e, LocalQPN: 0xa1b2c3, ResponderResources: 0xd4, LocalEECN: 0xe5f607, InitiatorDepth: 0x18,
	RemoteEECN: 0x293a4b, RemoteCMResponseTimeout: 22, TransportServiceType: 2, EndToEndFlowControl: true,
	StartingPSN: 0x5c6d7e, LocalCMResponseTimeout: 13, RetryCount: 6, PartitionKey: 0x8f9a,
	PathPacketPayloadMTU: 5, RDCExists: true, RNRRetryCount: 3, MaxCMRetries: 10, SRQ: false, ExtendedTransportType: 5,
	Primary: CMPath{LocalPortLID: 0x1357, RemotePortLID: 0x2468,
		LocalPortGID:  [16]byte{0xfe, 0x80, 8: 0x02, 0x02, 0xc9, 0xff, 0xfe, 0x03, 0x00, 0x01},
		RemotePortGID: [16]byte{0x20, 0x01, 0x0d, 0xb8, 12: 0x0a, 0x0b, 0x0c, 0x0d},
		FlowLabel:     0x54321, PacketRate: 25, TrafficClass: 0xb8, HopLimit: 0x41, SL: 9, SubnetLocal: false,
		LocalACKTimeout: 14},
	Alternate: CMPath{LocalPortLID: 0x9753, RemotePortLID: 0x8642,
		LocalPortGID:  [16]byte{0x20, 0x01, 0x0d, 0xb8, 9: 0x01, 11: 0x02, 13: 0x03, 15: 0x04},
		RemotePortGID: [16]byte{0xfe, 0x80, 12: 0xaa, 0xaa, 0xbb, 0xbb},
		FlowLabel:     0xfedcb, PacketRate: 37, TrafficClass: 0x2c, HopLimit: 0x90, SL: 6, SubnetLocal: true,
		LocalACKTimeout: 17},
	SAPSupported: true,
}

// craftedReq is the REQ craft builds for exchange index n (internal/craft's
// Exchange), from lidA to lidB, with the given GIDs.
func craftedReq(localID uint32, n uint32, lidA, lidB uint16, gidA, gidB [16]byte) CMReq {
	return CMReq{
		LocalCommID: localID, ServiceID: 0x0000000001064e51, LocalCAGUID: 0x0002c90300000001 + uint64(n),
		LocalQPN: 0x100 + n, ResponderResources: 16, InitiatorDepth: 16, RemoteCMResponseTimeout: 20,
		StartingPSN: 0x1000 + n, LocalCMResponseTimeout: 20, RetryCount: 7, PartitionKey: 0xffff,
		PathPacketPayloadMTU: 3, RNRRetryCount: 7, MaxCMRetries: 15,
		Primary: CMPath{LocalPortLID: lidA, RemotePortLID: lidB, LocalPortGID: gidA, RemotePortGID: gidB,
			PacketRate: 3, HopLimit: 64, SubnetLocal: true, LocalACKTimeout: 18},
	}
}

func TestCMReqDecode(t *testing.T) {
	tests := []struct {
		name string
		data []byte // the MAD data
		want CMReq
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.req, infiniband.cm.req.{serviceid,
			// localcaguid,localqkey,localqpn,responderres,initdepth,remoteresptout,
			// transpsvctype,startpsn,localresptout,retrcount,pkey,pppmtu,rnrretrcount,
			// maxcmretr,srq,prim_locallid,prim_remotelid,prim_localgid,prim_remotegid,
			// prim_hoplim,prim_sl,prim_subnetlocal,prim_localacktout}. tshark shows the
			// primary packet rate as 0; octet 91 holds 3 (a tshark 4.0 quirk).
			name: "RoCEv2 REQ", data: rocev2REQ[86:318],
			want: craftedReq(0x0a000001, 0, 1, 2, mapped(192, 0, 2, 1), mapped(192, 0, 2, 2)),
		},
		{
			name: "RoCEv1 REQ", data: rocev1REQ[98:330], // cross-checked as the RoCEv2 REQ
			want: craftedReq(0x0a000003, 2, 5, 6, mapped(192, 0, 2, 5), mapped(192, 0, 2, 6)),
		},
		{
			name: "IB REQ", data: ibREQ[52:284], // cross-checked as the RoCEv2 REQ
			want: craftedReq(0x0a000004, 3, 7, 8, mapped(192, 0, 2, 7), mapped(192, 0, 2, 8)),
		},
		{
			name: "IB REQ with GRH", data: ibGRHREQ[92:324], // cross-checked as the RoCEv2 REQ
			want: craftedReq(0x0a000006, 3, 7, 8, mapped(192, 0, 2, 7), mapped(192, 0, 2, 8)),
		},
		{
			name: "RoCEv2 IPv6 REQ", data: rocev2IPv6REQ[106:338], // cross-checked as the RoCEv2 REQ
			want: craftedReq(0x0a000005, 4, 9, 10, docIPv6(9), docIPv6(10)),
		},
		{name: "by hand", data: reqBody, want: reqBodyWant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.cmBase = cmBaseOf(tt.data, 140, 92)
			got := &CMReq{LocalCommID: 1, SAPSupported: true}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, &want)
		})
	}
}

func TestCMReqNextLayer(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want gopacket.LayerType
	}{
		{"IP CM Service ID", rocev2REQ[86:318], LayerTypeIPCM},
		{"RFC 8797 at offset 0", reqBody, LayerTypeRPCRDMA},
		{"RFC 8797 Version 2 at offset 0", patch(reqBody, at(144, 0x02)), gopacket.LayerTypePayload},
		{"other private data", patch(reqBody, at(140, 0x00)), gopacket.LayerTypePayload},
		{"IP CM Service ID, no private data", rocev2REQ[86:226], gopacket.LayerTypeZero},
		{"no private data", reqBody[:140], gopacket.LayerTypeZero},
		// An IP CM Service ID whose prefix differs by one bit is not one.
		{"almost an IP CM Service ID", patch(rocev2REQ[86:318], at(11, 0x03)), gopacket.LayerTypePayload},
	}
	for _, tt := range tests {
		var m CMReq
		decodeOK(t, &m, tt.data)
		if got := m.NextLayerType(); got != tt.want {
			t.Errorf("%s: next %v, want %v", tt.name, got, tt.want)
		}
	}
}
