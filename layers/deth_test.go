package layers

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
)

// dethPacked is a DETH with distinctive octets: Q_Key 0x13579bdf, reserved
// 0xa5, SrcQP 0xfedcba, followed by 4 octets of payload.
var dethPacked = []byte{0x13, 0x57, 0x9b, 0xdf, 0xa5, 0xfe, 0xdc, 0xba, 0x01, 0x02, 0x03, 0x04}

func TestDETHDecode(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want *DETH
	}{
		// Cross-checked with tshark 4.0.17: infiniband.deth.{q_key,srcqp}.
		{"RoCEv2 REQ", rocev2REQ[54:318], &DETH{QKey: GSIQKey, SrcQP: 1}},
		{"IB REQ", ibREQ[20:284], &DETH{QKey: GSIQKey, SrcQP: 1}},
		{"packed", dethPacked, &DETH{QKey: 0x13579bdf, Reserved: 0xa5, SrcQP: 0xfedcba}},
		{"header only", dethPacked[:8], &DETH{QKey: 0x13579bdf, Reserved: 0xa5, SrcQP: 0xfedcba}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Contents = tt.data[:8]
			tt.want.Payload = tt.data[8:]
			got := &DETH{Reserved: 1}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, tt.want)
		})
	}
}

func TestDETHTooShort(t *testing.T) {
	for n := 0; n < DETHLen; n++ {
		var df feedback
		var d DETH
		wantTruncated(t, d.DecodeFromBytes(dethPacked[:n], &df), "deth", 8, n)
		if !df.truncated {
			t.Errorf("%d octets: SetTruncated not called", n)
		}
	}
}

func TestDETHNextLayer(t *testing.T) {
	tests := []struct {
		qkey, srcQP uint32
		want        gopacket.LayerType
	}{
		{GSIQKey, 1, LayerTypeMAD},
		{0, 0, LayerTypeMAD}, // QP0, the SMI
		{0x12345678, 1, LayerTypeMAD},
		{GSIQKey, 0x123, LayerTypeMAD}, // a redirected GSI
		{0x12345678, 2, gopacket.LayerTypePayload},
		{0x80010001, 0xfedcba, gopacket.LayerTypePayload},
	}
	for _, tt := range tests {
		d := DETH{QKey: tt.qkey, SrcQP: tt.srcQP}
		if got := d.NextLayerType(); got != tt.want {
			t.Errorf("Q_Key %#x, SrcQP %#x: next %v, want %v", tt.qkey, tt.srcQP, got, tt.want)
		}
	}
}

func TestDETHRoundTrip(t *testing.T) {
	for _, data := range [][]byte{rocev2REQ[54:318], dethPacked} {
		var d DETH
		decodeOK(t, &d, data)
		out := roundTrip(t, &d, d.Payload)
		if !bytes.Equal(out, data) {
			t.Errorf("serialized %x, want %x", out[:8], data[:8])
		}
		var again DETH
		decodeOK(t, &again, out)
		checkLayer(t, &again, &d)
	}
}
