package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
)

// The short CM messages built by hand (IBTA Vol 1 tables 107, 111, 112,
// 113), with distinctive values and reserved bits set.

// mraBody: Message MRAed 2 with reserved 010101 (0x95), Service Timeout 22
// with reserved 101 (0xb5), private data with RFC 8797 at offset 0. tshark
// 4.0 does not decode MRA.
var mraBody = octets(MADDataLen, seq(0x10),
	at(0, 0x1a, 0x2b, 0x3c, 0x4d),
	at(4, 0x5e, 0x6f, 0x70, 0x81),
	at(8, 0x95, 0xb5),
	at(10, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x07),
)

// rtuBody: Communication IDs, then a sequence as private data.
var rtuBody = octets(MADDataLen, seq(0x30),
	at(0, 0xc1, 0xd2, 0xe3, 0xf4),
	at(4, 0x05, 0x16, 0x27, 0x38),
)

// dreqBody: Remote QPN 0xc0ffee with its reserved octet 0x5a, private data
// with RFC 8797 at offset 0 (reserved 0x7f, R clear).
// Cross-checked with tshark 4.0.17 (spliced into a RoCEv2 frame): fields
// infiniband.cm.dreq.{localcommid,remotecommid,private} (tshark 4.0 has no
// field for the remote QPN).
var dreqBody = octets(MADDataLen, seq(0x50),
	at(0, 0x49, 0x5a, 0x6b, 0x7c),
	at(4, 0x8d, 0x9e, 0xaf, 0xb0),
	at(8, 0xc0, 0xff, 0xee, 0x5a),
	at(12, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0xfe, 0x00, 0x03),
)

// drepBody: Communication IDs, then a sequence as private data.
// Cross-checked with tshark 4.0.17 (spliced into a RoCEv2 frame): fields
// infiniband.cm.drsp.{localcommid,remotecommid,private}.
var drepBody = octets(MADDataLen, seq(0x60),
	at(0, 0xd1, 0xe2, 0xf3, 0x04),
	at(4, 0x15, 0x26, 0x37, 0x48),
)

func TestCMMraDecode(t *testing.T) {
	want := CMMra{cmBase: cmBaseOf(mraBody, 10, 222), LocalCommID: 0x1a2b3c4d, RemoteCommID: 0x5e6f7081,
		MessageMRAed: 2, ServiceTimeout: 22}
	got := &CMMra{ServiceTimeout: 1}
	if decodeOK(t, got, mraBody) {
		t.Error("SetTruncated called")
	}
	checkLayer(t, got, &want)
	if got.NextLayerType() != LayerTypeRPCRDMA {
		t.Errorf("next %v, want the RFC 8797 message", got.NextLayerType())
	}
	// Other bit patterns: 01 000000 and 00001 000.
	decodeOK(t, got, patch(mraBody, at(8, 0x40, 0x08)))
	if got.MessageMRAed != 1 || got.ServiceTimeout != 1 {
		t.Errorf("0x40 0x08: MRAed %d, timeout %d; want 1 and 1", got.MessageMRAed, got.ServiceTimeout)
	}
}

func TestCMRtuDecode(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want CMRtu
	}{
		// Cross-checked with tshark 4.0.17: infiniband.cm.rtu.{localcommid,remotecommid,private}.
		{"RoCEv2 RTU", rocev2RTU[86:318], CMRtu{LocalCommID: 0x0a000001, RemoteCommID: 0x0b000001}},
		{"by hand", rtuBody, CMRtu{LocalCommID: 0xc1d2e3f4, RemoteCommID: 0x05162738}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.cmBase = cmBaseOf(tt.data, 8, 224)
			got := &CMRtu{LocalCommID: 1}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, &want)
			if got.NextLayerType() != gopacket.LayerTypePayload {
				t.Errorf("next %v, want Payload", got.NextLayerType())
			}
		})
	}
}

func TestCMDreqDecode(t *testing.T) {
	want := CMDreq{cmBase: cmBaseOf(dreqBody, 12, 220), LocalCommID: 0x495a6b7c, RemoteCommID: 0x8d9eafb0,
		RemoteQPNEECN: 0xc0ffee}
	got := &CMDreq{}
	if decodeOK(t, got, dreqBody) {
		t.Error("SetTruncated called")
	}
	checkLayer(t, got, &want)
	if got.NextLayerType() != LayerTypeRPCRDMA {
		t.Errorf("next %v, want the RFC 8797 message", got.NextLayerType())
	}
}

func TestCMDrepDecode(t *testing.T) {
	want := CMDrep{cmBase: cmBaseOf(drepBody, 8, 224), LocalCommID: 0xd1e2f304, RemoteCommID: 0x15263748}
	got := &CMDrep{}
	if decodeOK(t, got, drepBody) {
		t.Error("SetTruncated called")
	}
	checkLayer(t, got, &want)
	if got.NextLayerType() != gopacket.LayerTypePayload {
		t.Errorf("next %v, want Payload", got.NextLayerType())
	}
}
