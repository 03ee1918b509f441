package layers

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
)

// madPacked is a MAD header with distinctive octets, then 232 octets of data:
// BaseVersion 1, MgmtClass 0x07, ClassVersion 2, Method 0x83 (R bit set),
// Status 0x1234, ClassSpecific 0x5678, TransactionID 0x0102030405060708,
// AttributeID 0x0015, Reserved 0xabcd, AttributeModifier 0x89abcdef.
var madPacked = octets(256, seq(0x33),
	at(0, 0x01, 0x07, 0x02, 0x83),
	at(4, 0x12, 0x34, 0x56, 0x78),
	at(8, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08),
	at(16, 0x00, 0x15, 0xab, 0xcd),
	at(20, 0x89, 0xab, 0xcd, 0xef),
)

func TestMADDecode(t *testing.T) {
	cm := func(tid uint64, attr uint16) *MAD {
		return &MAD{BaseVersion: 1, MgmtClass: MgmtClassCM, ClassVersion: 2, Method: MethodSend, TransactionID: tid, AttributeID: attr}
	}
	tests := []struct {
		name    string
		data    []byte
		want    *MAD
		payload [2]int
	}{
		// Cross-checked with tshark 4.0.17: infiniband.mad.{baseversion,mgmtclass,
		// classversion,method,status,classspecific,transactionid,attributeid,
		// attributemodifier}.
		{"RoCEv2 REQ", rocev2REQ[62:318], cm(0x100000000, AttrREQ), [2]int{24, 256}},
		{"RoCEv2 REP", rocev2REP[62:318], cm(0x100000000, AttrREP), [2]int{24, 256}},
		{"RoCEv2 RTU", rocev2RTU[62:318], cm(0x100000000, AttrRTU), [2]int{24, 256}},
		{"RoCEv2 REJ", rocev2REJ[62:318], cm(0x100000100, AttrREJ), [2]int{24, 256}},
		{"RoCEv1 REQ", rocev1REQ[74:330], cm(0x100000200, AttrREQ), [2]int{24, 256}},
		{"IB REQ", ibREQ[28:284], cm(0x100000300, AttrREQ), [2]int{24, 256}},
		{"IB REQ with GRH", ibGRHREQ[68:324], cm(0x100000500, AttrREQ), [2]int{24, 256}},
		{"RoCEv2 IPv6 REQ", rocev2IPv6REQ[82:338], cm(0x100000400, AttrREQ), [2]int{24, 256}},
		{"packed", madPacked, &MAD{BaseVersion: 1, MgmtClass: MgmtClassCM, ClassVersion: 2, Method: 0x83,
			Status: 0x1234, ClassSpecific: 0x5678, TransactionID: 0x0102030405060708, AttributeID: AttrDREQ,
			Reserved: 0xabcd, AttributeModifier: 0x89abcdef}, [2]int{24, 256}},
		// The ICRC after the MAD is not its data: the payload stops at 256.
		{"longer than 256 octets", rocev2REQ[62:], cm(0x100000000, AttrREQ), [2]int{24, 256}},
		{"much longer", cat(madPacked, make([]byte, 1000)), &MAD{BaseVersion: 1, MgmtClass: MgmtClassCM, ClassVersion: 2,
			Method: 0x83, Status: 0x1234, ClassSpecific: 0x5678, TransactionID: 0x0102030405060708, AttributeID: AttrDREQ,
			Reserved: 0xabcd, AttributeModifier: 0x89abcdef}, [2]int{24, 256}},
		{"shorter than 256 octets", rocev2REQ[62:200], cm(0x100000000, AttrREQ), [2]int{24, 138}},
		{"header only", rocev2REQ[62:86], cm(0x100000000, AttrREQ), [2]int{24, 24}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Contents = tt.data[:24]
			tt.want.Payload = tt.data[tt.payload[0]:tt.payload[1]]
			got := &MAD{Reserved: 7}
			decodeOK(t, got, tt.data)
			checkLayer(t, got, tt.want)
			if len(got.Payload) > MADDataLen {
				t.Errorf("payload %d octets, more than %d", len(got.Payload), MADDataLen)
			}
		})
	}
}

func TestMADTooShort(t *testing.T) {
	for n := 0; n < MADHeaderLen; n++ {
		var df feedback
		var m MAD
		wantTruncated(t, m.DecodeFromBytes(madPacked[:n], &df), "mad", 24, n)
		if !df.truncated {
			t.Errorf("%d octets: SetTruncated not called", n)
		}
	}
}

func TestMADNextLayer(t *testing.T) {
	want := map[uint16]gopacket.LayerType{
		AttrREQ: LayerTypeCMReq, AttrMRA: LayerTypeCMMra, AttrREJ: LayerTypeCMRej, AttrREP: LayerTypeCMRep,
		AttrRTU: LayerTypeCMRtu, AttrDREQ: LayerTypeCMDreq, AttrDREP: LayerTypeCMDrep,
		AttrSIDRREQ: LayerTypeCMSidrReq, AttrSIDRREP: LayerTypeCMSidrRep, AttrLAP: LayerTypeCMLap, AttrAPR: LayerTypeCMApr,
		AttrClassPortInfo: gopacket.LayerTypePayload, 0x000f: gopacket.LayerTypePayload,
		0x001b: gopacket.LayerTypePayload, 0x1010: gopacket.LayerTypePayload, 0xffff: gopacket.LayerTypePayload,
	}
	for attr, lt := range want {
		m := MAD{MgmtClass: MgmtClassCM, AttributeID: attr}
		if got := m.NextLayerType(); got != lt {
			t.Errorf("CM attribute %#04x: next %v, want %v", attr, got, lt)
		}
	}
	for _, class := range []uint8{MgmtClassSubnLID, MgmtClassSubnDR, MgmtClassSA, MgmtClassPerf, 0x87} {
		m := MAD{MgmtClass: class, AttributeID: AttrREQ}
		if got := m.NextLayerType(); got != gopacket.LayerTypePayload {
			t.Errorf("class %#02x, attribute 0x0010: next %v, want Payload", class, got)
		}
	}
}

func TestMADRoundTrip(t *testing.T) {
	for _, data := range [][]byte{rocev2REQ[62:318], madPacked} {
		var m MAD
		decodeOK(t, &m, data)
		out := roundTrip(t, &m, m.Payload)
		if !bytes.Equal(out, data) {
			t.Errorf("serialized %x, want %x", out[:24], data[:24])
		}
		var again MAD
		decodeOK(t, &again, out)
		checkLayer(t, &again, &m)
	}
}
