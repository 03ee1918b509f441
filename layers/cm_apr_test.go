package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
)

// aprBody is an APR built by hand from IBTA Vol 1 table 116: additional
// information length 0x11, AP status 5, reserved 0xa5a5, a sequence as
// additional information and private data. tshark 4.0 does not decode APR.
var aprBody = octets(MADDataLen, seq(0xb0),
	at(0, 0xe1, 0xd2, 0xc3, 0xb4),
	at(4, 0xa5, 0x96, 0x87, 0x78),
	at(8, 0x11, 0x05, 0xa5, 0xa5),
)

func TestCMAprDecode(t *testing.T) {
	want := CMApr{cmBase: cmBaseOf(aprBody, 84, 148), LocalCommID: 0xe1d2c3b4, RemoteCommID: 0xa5968778,
		AddInfoLength: 0x11, APStatus: 5, AdditionalInfo: [72]byte(aprBody[12:84])}
	got := &CMApr{APStatus: 1}
	if decodeOK(t, got, aprBody) {
		t.Error("SetTruncated called")
	}
	checkLayer(t, got, &want)
	if got.NextLayerType() != gopacket.LayerTypePayload {
		t.Errorf("next %v, want Payload", got.NextLayerType())
	}
	for _, f := range got.Fields() {
		if f.Key == "additional_info" && len(f.Bytes) != 0x11 {
			t.Errorf("additional information field: %d octets, want 17", len(f.Bytes))
		}
	}
}
