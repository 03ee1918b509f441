package layers

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// grhPacked is rocev1REQ with a GRH whose first word and hop limit hold
// distinctive values: IPVer 6, TClass 0xa5 (across the nibble boundary),
// FlowLabel 0x9b3c1 (0x6a59b3c1), HopLmt 0x7e.
// Cross-checked with tshark 4.0.17: fields
// infiniband.grh.{ipver,tclass,flowlabel,paylen,nxthdr,hoplmt,sgid,dgid}.
var grhPacked = patch(rocev1REQ, at(14, 0x6a, 0x59, 0xb3, 0xc1), at(21, 0x7e))

func TestGRHDecode(t *testing.T) {
	sgidV1 := [16]byte{10: 0xff, 11: 0xff, 12: 0x0f, 15: 0x02} // ::ffff:15.0.0.2
	tests := []struct {
		name      string
		data      []byte
		want      *GRH
		payload   [2]int // payload bounds in data
		truncated bool
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.grh.{ipver,tclass,flowlabel,
			// paylen,nxthdr,hoplmt,sgid,dgid}.
			name: "RoCEv1 REQ", data: rocev1REQ[14:], payload: [2]int{40, 320},
			want: &GRH{IPVer: 6, PayLen: 280, NxtHdr: NxtHdrIBA, HopLmt: 64,
				SGID: mapped(192, 0, 2, 5), DGID: mapped(192, 0, 2, 6)},
		},
		{
			// Cross-checked with tshark 4.0.17: as above. The VCRC after the
			// ICRC is not part of the payload.
			name: "IB REQ after the LRH", data: ibGRHREQ[8:], payload: [2]int{40, 320},
			want: &GRH{IPVer: 6, PayLen: 280, NxtHdr: NxtHdrIBA, HopLmt: 64,
				SGID: docIPv6(0xb), DGID: docIPv6(0xc)},
		},
		{
			name: "packed first word", data: grhPacked[14:], payload: [2]int{40, 320},
			want: &GRH{IPVer: 6, TClass: 0xa5, FlowLabel: 0x9b3c1, PayLen: 280, NxtHdr: NxtHdrIBA, HopLmt: 0x7e,
				SGID: mapped(192, 0, 2, 5), DGID: mapped(192, 0, 2, 6)},
		},
		{
			// scapy: ipver 6, tclass 2, flowlabel 0, paylen 40.
			name: "captured RoCEv1 RDMA WRITE", data: scapyRoCEv1Write[14:], payload: [2]int{40, 80},
			want: &GRH{IPVer: 6, TClass: 2, PayLen: 40, NxtHdr: NxtHdrIBA, HopLmt: 64, SGID: sgidV1, DGID: sgidV1},
		},
		{
			name: "Ethernet trailer after the packet", data: cat(rocev1REQ[14:], []byte{0xde, 0xad, 0xbe, 0xef}),
			payload: [2]int{40, 320},
			want: &GRH{IPVer: 6, PayLen: 280, NxtHdr: NxtHdrIBA, HopLmt: 64,
				SGID: mapped(192, 0, 2, 5), DGID: mapped(192, 0, 2, 6)},
		},
		{
			name: "PayLen beyond the data", data: rocev1REQ[14:200], payload: [2]int{40, 186}, truncated: true,
			want: &GRH{IPVer: 6, PayLen: 280, NxtHdr: NxtHdrIBA, HopLmt: 64,
				SGID: mapped(192, 0, 2, 5), DGID: mapped(192, 0, 2, 6)},
		},
		{
			name: "PayLen one octet beyond", data: rocev1REQ[14:333], payload: [2]int{40, 319}, truncated: true,
			want: &GRH{IPVer: 6, PayLen: 280, NxtHdr: NxtHdrIBA, HopLmt: 64,
				SGID: mapped(192, 0, 2, 5), DGID: mapped(192, 0, 2, 6)},
		},
		{
			name: "header only, PayLen 0", data: patch(rocev1REQ[14:54], at(4, 0, 0)), payload: [2]int{40, 40},
			want: &GRH{IPVer: 6, NxtHdr: NxtHdrIBA, HopLmt: 64,
				SGID: mapped(192, 0, 2, 5), DGID: mapped(192, 0, 2, 6)},
		},
		{
			name: "PayLen 0xffff", data: patch(rocev1REQ[14:], at(4, 0xff, 0xff)), payload: [2]int{40, 320}, truncated: true,
			want: &GRH{IPVer: 6, PayLen: 0xffff, NxtHdr: NxtHdrIBA, HopLmt: 64,
				SGID: mapped(192, 0, 2, 5), DGID: mapped(192, 0, 2, 6)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Contents = tt.data[:40]
			tt.want.Payload = tt.data[tt.payload[0]:tt.payload[1]]
			got := &GRH{TClass: 0xff, FlowLabel: 1}
			truncated := decodeOK(t, got, tt.data)
			checkLayer(t, got, tt.want)
			if truncated != tt.truncated {
				t.Errorf("truncated = %v, want %v", truncated, tt.truncated)
			}
		})
	}
}

func TestGRHTooShort(t *testing.T) {
	for n := 0; n < GRHLen; n++ {
		var df feedback
		var g GRH
		wantTruncated(t, g.DecodeFromBytes(rocev1REQ[14:14+n], &df), "grh", 40, n)
		if !df.truncated {
			t.Errorf("%d octets: SetTruncated not called", n)
		}
	}
}

func TestGRHNextLayer(t *testing.T) {
	var g GRH
	decodeOK(t, &g, rocev1REQ[14:])
	if g.NextLayerType() != LayerTypeBTH {
		t.Errorf("NxtHdr 0x1b: next %v, want BTH", g.NextLayerType())
	}
	decodeOK(t, &g, patch(rocev1REQ[14:], at(6, 0x11)))
	if g.NextLayerType() != gopacket.LayerTypePayload {
		t.Errorf("NxtHdr 0x11: next %v, want Payload", g.NextLayerType())
	}
	decodeOK(t, &g, rocev1REQ[14:])
	f := g.NetworkFlow()
	sgid, dgid := mapped(192, 0, 2, 5), mapped(192, 0, 2, 6)
	if f.EndpointType() != golayers.EndpointIPv6 || !bytes.Equal(f.Src().Raw(), sgid[:]) || !bytes.Equal(f.Dst().Raw(), dgid[:]) {
		t.Errorf("network flow %v (%x -> %x), want the GIDs", f, f.Src().Raw(), f.Dst().Raw())
	}
	if g.LayerType() != LayerTypeGRH || g.CanDecode() != LayerTypeGRH {
		t.Errorf("layer type %v, can decode %v", g.LayerType(), g.CanDecode())
	}
}

func TestGRHRoundTrip(t *testing.T) {
	for _, data := range [][]byte{rocev1REQ[14:], ibGRHREQ[8:328], grhPacked[14:], scapyRoCEv1Write[14:]} {
		var g GRH
		decodeOK(t, &g, data)
		b := roundTrip(t, &g, g.Payload)
		if !bytes.Equal(b, data[:len(b)]) {
			t.Errorf("serialized %x\nwant %x", b[:40], data[:40])
		}
		var again GRH
		decodeOK(t, &again, b)
		checkLayer(t, &again, &g)
	}
	// FixLengths sets PayLen to the payload's length.
	g := GRH{IPVer: 6, NxtHdr: NxtHdrIBA, PayLen: 1}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, &g, gopacket.Payload(make([]byte, 280))); err != nil {
		t.Fatal(err)
	}
	if g.PayLen != 280 || buf.Bytes()[4] != 0x01 || buf.Bytes()[5] != 0x18 {
		t.Errorf("FixLengths: PayLen %d, octets %x", g.PayLen, buf.Bytes()[4:6])
	}
}
