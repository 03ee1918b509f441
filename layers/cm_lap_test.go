package layers

import "testing"

// lapBody is a LAP built by hand from IBTA Vol 1 table 115 (octet and bit
// positions as in Linux's ibta_vol1_c12.h): reserved octets 8 and 16 set,
// Remote QPN 0x123456 with Remote CM Response Timeout 26 and reserved 011
// (0xd3), alternate LIDs and GIDs, flow label 0xabcde with reserved 1001 and
// traffic class 0x5a (0xabcde95a), hop limit 0xc8, reserved 10 and packet
// rate 43 (0xab), SL 11 with subnet local and reserved 010 (0xba), ACK
// timeout 19 with reserved 101 (0x9d); RFC 8797 at offset 0 of the private
// data. tshark 4.0 does not decode LAP.
var lapBody = octets(MADDataLen, seq(0xa0),
	at(0, 0x31, 0x42, 0x53, 0x64),
	at(4, 0x75, 0x86, 0x97, 0xa8),
	at(8, 0xde, 0xad, 0xbe, 0xef),
	at(12, 0x12, 0x34, 0x56, 0xd3),
	at(16, 0xca, 0xfe, 0xba, 0xbe),
	at(20, 0x1a, 0x2b, 0x3c, 0x4d),
	at(24, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0x02, 0, 0x03, 0, 0x04),
	at(40, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80),
	at(56, 0xab, 0xcd, 0xe9, 0x5a),
	at(60, 0xc8, 0xab, 0xba, 0x9d),
	at(64, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x0f, 0x0f),
)

func TestCMLapDecode(t *testing.T) {
	want := CMLap{cmBase: cmBaseOf(lapBody, 64, 168), LocalCommID: 0x31425364, RemoteCommID: 0x758697a8,
		RemoteQPNEECN: 0x123456, RemoteCMResponseTimeout: 26, AltLocalPortLID: 0x1a2b, AltRemotePortLID: 0x3c4d,
		AltLocalPortGID:  [16]byte{0xfe, 0x80, 9: 0x01, 11: 0x02, 13: 0x03, 15: 0x04},
		AltRemotePortGID: [16]byte{0x20, 0x01, 0x0d, 0xb8, 8: 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80},
		AltFlowLabel:     0xabcde, AltTrafficClass: 0x5a, AltHopLimit: 0xc8, AltPacketRate: 43, AltSL: 11,
		AltSubnetLocal: true, AltLocalACKTimeout: 19}
	got := &CMLap{AltSL: 1}
	if decodeOK(t, got, lapBody) {
		t.Error("SetTruncated called")
	}
	checkLayer(t, got, &want)
	if got.NextLayerType() != LayerTypeRPCRDMA {
		t.Errorf("next %v, want the RFC 8797 message", got.NextLayerType())
	}
	// Other bit patterns: subnet local clear, SL 4 (0x47); timeout 1 (0x0f).
	decodeOK(t, got, patch(lapBody, at(15, 0x0f), at(62, 0x47)))
	if got.RemoteCMResponseTimeout != 1 || got.AltSL != 4 || got.AltSubnetLocal {
		t.Errorf("timeout %d, SL %d, subnet local %v; want 1, 4, false", got.RemoteCMResponseTimeout, got.AltSL, got.AltSubnetLocal)
	}
}
