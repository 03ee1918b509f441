package layers

import "testing"

// rejBody is a REJ built by hand from IBTA Vol 1 table 108: Message REJected
// 1 with reserved bits 110011 (0x73), Reject Info Length 36 with its reserved
// bit set (0x49), Reason 30, ARI a sequence, private data with an RFC 8797
// message at offset 0.
// Cross-checked with tshark 4.0.17 (spliced into a RoCEv2 frame): fields
// infiniband.cm.rej.{localcommid,remotecommid,msgrej,rejinfolen,reason,ari,private}.
var rejBody = octets(MADDataLen, seq(0x20),
	at(0, 0x5a, 0x6b, 0x7c, 0x8d),
	at(4, 0x9e, 0xaf, 0xb0, 0xc1),
	at(8, 0x73, 0x49, 0x00, 0x1e),
	at(84, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x1f, 0x3f),
)

func TestCMRejDecode(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want CMRej
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.rej.{localcommid,
			// remotecommid,msgrej,rejinfolen,reason,ari,private}.
			name: "RoCEv2 consumer reject", data: rocev2REJ[86:318],
			want: CMRej{LocalCommID: 0x0b000002, RemoteCommID: 0x0a000002, Reason: RejReasonConsumerReject},
		},
		{
			name: "by hand", data: rejBody,
			want: CMRej{LocalCommID: 0x5a6b7c8d, RemoteCommID: 0x9eafb0c1, MessageRejected: 1, RejectInfoLength: 36,
				Reason: 30, ARI: [72]byte(rejBody[12:84])},
		},
		{
			name: "message rejected 2, info length 127", data: patch(rejBody, at(8, 0x80, 0xfe)),
			want: CMRej{LocalCommID: 0x5a6b7c8d, RemoteCommID: 0x9eafb0c1, MessageRejected: 2, RejectInfoLength: 127,
				Reason: 30, ARI: [72]byte(rejBody[12:84])},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.cmBase = cmBaseOf(tt.data, 84, 148)
			got := &CMRej{Reason: 1}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, &want)
			if got.NextLayerType() != LayerTypeRPCRDMA {
				t.Errorf("next %v, want the RFC 8797 message", got.NextLayerType())
			}
		})
	}
}

func TestRejectReasonName(t *testing.T) {
	for r, want := range map[uint16]string{
		0: "", 1: "No QP available", 4: "Timeout", 8: "Invalid Service ID", 10: "Stale connection",
		28: "Consumer reject", 30: "Duplicate Local Comm ID", 33: "Invalid Alternate Flow Label",
		34: "", 35: "Vendor option not supported", 36: "", 0xffff: "",
	} {
		if got := RejectReasonName(r); got != want {
			t.Errorf("RejectReasonName(%d) = %q, want %q", r, got, want)
		}
	}
}

func TestCMRejFieldsARI(t *testing.T) {
	var m CMRej
	decodeOK(t, &m, rejBody)
	var ari Field
	for _, f := range m.Fields() {
		if f.Key == "ari" {
			ari = f
		}
	}
	if len(ari.Bytes) != 36 || ari.Bytes[0] != rejBody[12] || ari.Bytes[35] != rejBody[47] {
		t.Errorf("ARI field %x, want the first 36 octets of %x", ari.Bytes, rejBody[12:84])
	}
	decodeOK(t, &m, patch(rejBody, at(9, 0xfe))) // info length 127: capped at 72
	for _, f := range m.Fields() {
		if f.Key == "ari" && len(f.Bytes) != 72 {
			t.Errorf("ARI field with length 127: %d octets, want 72", len(f.Bytes))
		}
	}
}
