package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
)

// repBody is a REP built by hand from IBTA Vol 1 table 110 (octet and bit
// positions as in Linux's ibta_vol1_c12.h): distinctive non-zero fields,
// reserved bits and the vendor ID octets set, private data without an RFC
// 8797 message.
// Cross-checked with tshark 4.0.17 (spliced into a RoCEv2 frame): fields
// infiniband.cm.rep, infiniband.cm.rep.{remotecommid,localqkey,localqpn,localeecn,
// startpsn,respres,initdepth,tgtackdelay,failoveracc,e2eflowctrl,rnrretrcount,
// srq,localcaguid,private}.
var repBody = octets(MADDataLen, seq(0x80),
	at(0, 0x3c, 0x4d, 0x5e, 0x6f),                          // Local Communication ID
	at(4, 0x0b, 0xad, 0xca, 0xfe),                          // Remote Communication ID
	at(8, 0x7a, 0x8b, 0x9c, 0xad),                          // Local Q_Key
	at(12, 0xbe, 0xcf, 0xd0, 0xe1),                         // Local QPN, vendor ID (high)
	at(16, 0xf2, 0x03, 0x14, 0x25),                         // Local EECN, vendor ID (middle)
	at(20, 0x36, 0x47, 0x58, 0x69),                         // Starting PSN, vendor ID (low)
	at(24, 0x7a, 0x8b, 0xcc, 0xb6),                         // RespRes, InitDepth; 11001 10 0: delay 25, failover 2; 101 1 0110: RNR 5, SRQ
	at(28, 0x9c, 0xad, 0xbe, 0xcf, 0xd0, 0xe1, 0xf2, 0x03), // Local CA GUID
)

func TestCMRepDecode(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want CMRep
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.rep, infiniband.cm.rep.{
			// remotecommid,localqkey,localqpn,localeecn,startpsn,respres,initdepth,
			// tgtackdelay,failoveracc,e2eflowctrl,rnrretrcount,srq,localcaguid,private}.
			name: "RoCEv2 REP", data: rocev2REP[86:318],
			want: CMRep{LocalCommID: 0x0b000001, RemoteCommID: 0x0a000001, LocalQPN: 0x200, StartingPSN: 0x2000,
				ResponderResources: 16, InitiatorDepth: 16, TargetACKDelay: 15, RNRRetryCount: 7,
				LocalCAGUID: 0x0002c90300000101},
		},
		{
			name: "by hand", data: repBody,
			want: CMRep{LocalCommID: 0x3c4d5e6f, RemoteCommID: 0x0badcafe, LocalQKey: 0x7a8b9cad, LocalQPN: 0xbecfd0,
				LocalEECN: 0xf20314, StartingPSN: 0x364758, ResponderResources: 0x7a, InitiatorDepth: 0x8b,
				TargetACKDelay: 25, FailoverAccepted: 2, EndToEndFlowControl: false, RNRRetryCount: 5, SRQ: true,
				LocalCAGUID: 0x9cadbecfd0e1f203},
		},
		{
			name: "by hand, other bits", data: patch(repBody, at(26, 0x33, 0x49)), // 00110 01 1; 010 0 1001
			want: CMRep{LocalCommID: 0x3c4d5e6f, RemoteCommID: 0x0badcafe, LocalQKey: 0x7a8b9cad, LocalQPN: 0xbecfd0,
				LocalEECN: 0xf20314, StartingPSN: 0x364758, ResponderResources: 0x7a, InitiatorDepth: 0x8b,
				TargetACKDelay: 6, FailoverAccepted: 1, EndToEndFlowControl: true, RNRRetryCount: 2, SRQ: false,
				LocalCAGUID: 0x9cadbecfd0e1f203},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.cmBase = cmBaseOf(tt.data, 36, 196)
			got := &CMRep{SRQ: true}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, &want)
		})
	}
	var m CMRep
	decodeOK(t, &m, rocev2REP[86:318])
	if m.NextLayerType() != LayerTypeRPCRDMA {
		t.Errorf("REP with RFC 8797 at 0: next %v", m.NextLayerType())
	}
	decodeOK(t, &m, repBody)
	if m.NextLayerType() != gopacket.LayerTypePayload {
		t.Errorf("REP without RFC 8797: next %v", m.NextLayerType())
	}
}
