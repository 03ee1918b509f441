package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
)

// sidrReqBody is a SIDR_REQ built by hand (IBTA Vol 1 table 119): Request ID,
// P_Key 0x7fa5 with reserved 0x3c3c, an IP CM Service ID (UDP port space,
// port 12345), and private data starting with an IPv6 IP CM header (source
// port 0xd431) followed by an RFC 8797 message at offset 36. tshark 4.0 does
// not decode SIDR messages.
var sidrReqBody = octets(MADDataLen, seq(0x70),
	at(0, 0x24, 0x68, 0xac, 0xe0),
	at(4, 0x7f, 0xa5, 0x3c, 0x3c),
	at(8, 0x00, 0x00, 0x00, 0x00, 0x01, 0x11, 0x30, 0x39),
	at(16, 0x00, 0x60, 0xd4, 0x31),
	at(20, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x1a),
	at(36, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x2b),
	at(52, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x07, 0x07),
)

// sidrRepBody is a SIDR_REP built by hand (IBTA Vol 1 table 120, offsets as
// in Linux's ibta_vol1_c12.h: QPN 8, Service ID 12, Q_Key 20, additional
// information 24, private data 96): Status 3, additional information length
// 0x21, reserved 0x9999, QPN 0xabcdef with reserved octet 0x77.
var sidrRepBody = octets(MADDataLen, seq(0x90),
	at(0, 0x13, 0x57, 0x9b, 0xdf),
	at(4, 0x03, 0x21, 0x99, 0x99),
	at(8, 0xab, 0xcd, 0xef, 0x77),
	at(12, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88),
	at(20, 0x2a, 0x4b, 0x6c, 0x8d),
)

func TestCMSidrReqDecode(t *testing.T) {
	want := CMSidrReq{cmBase: cmBaseOf(sidrReqBody, 16, 216), RequestID: 0x2468ace0, PartitionKey: 0x7fa5,
		ServiceID: 0x0000000001113039}
	got := &CMSidrReq{PartitionKey: 1}
	if decodeOK(t, got, sidrReqBody) {
		t.Error("SetTruncated called")
	}
	checkLayer(t, got, &want)
	if got.NextLayerType() != LayerTypeIPCM {
		t.Errorf("next %v, want the IP CM header", got.NextLayerType())
	}
	if ps, port := IPCMPortSpace(got.ServiceID), IPCMPort(got.ServiceID); ps != PortSpaceUDP || port != 12345 {
		t.Errorf("port space %#x, port %d; want UDP, 12345", ps, port)
	}
	// Without the IP CM prefix the private data is plain payload.
	decodeOK(t, got, patch(sidrReqBody, at(12, 0x02)))
	if got.NextLayerType() != gopacket.LayerTypePayload {
		t.Errorf("other Service ID: next %v, want Payload", got.NextLayerType())
	}
}

func TestCMSidrRepDecode(t *testing.T) {
	want := CMSidrRep{cmBase: cmBaseOf(sidrRepBody, 96, 136), RequestID: 0x13579bdf, Status: 3, AddInfoLength: 0x21,
		QPN: 0xabcdef, ServiceID: 0x1122334455667788, QKey: 0x2a4b6c8d, AdditionalInfo: [72]byte(sidrRepBody[24:96])}
	got := &CMSidrRep{}
	if decodeOK(t, got, sidrRepBody) {
		t.Error("SetTruncated called")
	}
	checkLayer(t, got, &want)
	if got.NextLayerType() != gopacket.LayerTypePayload {
		t.Errorf("next %v, want Payload", got.NextLayerType())
	}
	for _, f := range got.Fields() {
		if f.Key == "additional_info" && len(f.Bytes) != 0x21 {
			t.Errorf("additional information field: %d octets, want 33", len(f.Bytes))
		}
	}
}
