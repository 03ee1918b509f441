package layers

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
)

// lrhPacked is ibREQ with an LRH whose packed octets hold distinctive values:
// VL 0xb, LVer 3 (0xb3); SL 9, reserved 2, LNH 2 (0x9a); DLID 0xc001;
// reserved 0x15 and PktLen 72 (0xa848); SLID 0x1234.
// Cross-checked with tshark 4.0.17 (link type 247 as USER0): fields
// infiniband.lrh.{vl,lver,sl,reserved2,lnh,dlid,reserved5,pktlen,slid}.
var lrhPacked = patch(ibREQ, at(0, 0xb3, 0x9a, 0xc0, 0x01, 0xa8, 0x48, 0x12, 0x34))

func TestLRHDecode(t *testing.T) {
	tests := []struct {
		name      string
		data      []byte
		want      *LRH
		truncated bool
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.lrh.{vl,lver,sl,lnh,dlid,pktlen,slid},
			// infiniband.variant.crc 0x4428 (the stored octets, big-endian).
			name: "IB REQ", data: ibREQ,
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 72, SLID: 7, VCRC: 0x2844, HasVCRC: true},
		},
		{
			// Cross-checked with tshark 4.0.17: as above, variant.crc 0xfa14.
			name: "IB REQ with GRH", data: ibGRHREQ,
			want: &LRH{LNH: LNHGRH, DLID: 12, PktLen: 82, SLID: 11, VCRC: 0x14fa, HasVCRC: true},
		},
		{
			name: "packed octets", data: lrhPacked,
			want: &LRH{VL: 0xb, LVer: 3, SL: 9, Reserved: 2, LNH: LNHBTH, DLID: 0xc001, Reserved5: 0x15,
				PktLen: 72, SLID: 0x1234, VCRC: 0x2844, HasVCRC: true},
		},
		{
			name: "no VCRC", data: ibREQ[:288],
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 72, SLID: 7},
		},
		{
			name: "one octet of VCRC", data: ibREQ[:289],
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 72, SLID: 7},
		},
		{
			name: "octets after the VCRC", data: cat(ibREQ, []byte{1, 2, 3}),
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 72, SLID: 7, VCRC: 0x2844, HasVCRC: true},
		},
		{
			name: "PktLen beyond the data", data: ibREQ[:200], truncated: true,
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 72, SLID: 7},
		},
		{
			name: "PktLen one word beyond the data", data: ibREQ[:287], truncated: true,
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 72, SLID: 7},
		},
		{
			name: "PktLen 11 bits, all ones", data: patch(ibREQ, at(4, 0x07, 0xff)), truncated: true,
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 0x7ff, SLID: 7},
		},
		{
			name: "PktLen shorter than the header", data: patch(ibREQ, at(4, 0x00, 0x01)),
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 1, SLID: 7},
		},
		{
			name: "PktLen 0", data: patch(ibREQ, at(4, 0x00, 0x00)),
			want: &LRH{LNH: LNHBTH, DLID: 8, SLID: 7},
		},
		{
			// PktLen 2: the header alone, then two octets taken as the VCRC.
			name: "PktLen covers the header only", data: cat(patch(ibREQ[:8], at(4, 0x00, 0x02)), []byte{0xcd, 0xab}),
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 2, SLID: 7, VCRC: 0xabcd, HasVCRC: true},
		},
		{
			name: "header only, PktLen beyond", data: ibREQ[:8], truncated: true,
			want: &LRH{LNH: LNHBTH, DLID: 8, PktLen: 72, SLID: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The payload ends where PktLen says, before the VCRC; when PktLen
			// is beyond the data or shorter than the LRH it is all the rest.
			end := int(tt.want.PktLen) * 4
			if end > len(tt.data) || end < LRHLen {
				end = len(tt.data)
			}
			tt.want.Contents = tt.data[:8]
			tt.want.Payload = tt.data[8:end]
			got := &LRH{VL: 0xf, HasVCRC: true, VCRC: 0xffff} // stale values must go
			truncated := decodeOK(t, got, tt.data)
			checkLayer(t, got, tt.want)
			if truncated != tt.truncated {
				t.Errorf("truncated = %v, want %v", truncated, tt.truncated)
			}
		})
	}
}

// TestLRHPayloadEnds pins the payload ends of the vectors, independently of
// the computation in TestLRHDecode.
func TestLRHPayloadEnds(t *testing.T) {
	for _, tt := range []struct {
		data []byte
		n    int
	}{{ibREQ, 280}, {ibGRHREQ, 320}, {ibREQ[:200], 192}, {patch(ibREQ, at(4, 0, 1)), 282}} {
		var l LRH
		decodeOK(t, &l, tt.data)
		if len(l.Payload) != tt.n || len(l.Contents) != 8 {
			t.Errorf("PktLen %d, %d octets: payload %d octets, contents %d; want %d and 8",
				l.PktLen, len(tt.data), len(l.Payload), len(l.Contents), tt.n)
		}
	}
}

func TestLRHTooShort(t *testing.T) {
	for n := 0; n < LRHLen; n++ {
		var df feedback
		l := LRH{PktLen: 5}
		err := l.DecodeFromBytes(ibREQ[:n], &df)
		wantTruncated(t, err, "lrh", 8, n)
		if !df.truncated {
			t.Errorf("%d octets: SetTruncated not called", n)
		}
	}
}

func TestLRHNextLayer(t *testing.T) {
	for lnh, want := range map[uint8]gopacket.LayerType{
		LNHRaw: gopacket.LayerTypePayload, LNHIPv6: gopacket.LayerTypePayload,
		LNHBTH: LayerTypeBTH, LNHGRH: LayerTypeGRH,
	} {
		l := LRH{LNH: lnh}
		if got := l.NextLayerType(); got != want {
			t.Errorf("LNH %d: next %v, want %v", lnh, got, want)
		}
	}
	var l LRH
	decodeOK(t, &l, ibREQ)
	if l.LayerType() != LayerTypeLRH || l.CanDecode() != LayerTypeLRH {
		t.Errorf("layer type %v, can decode %v", l.LayerType(), l.CanDecode())
	}
	f := l.LinkFlow()
	if f.EndpointType() != EndpointLID || f.Src().String() != "LID 7" || f.Dst().String() != "LID 8" {
		t.Errorf("link flow %v (%v), want LID 7 -> LID 8", f, f.EndpointType())
	}
}

func TestLRHRoundTrip(t *testing.T) {
	for _, data := range [][]byte{ibREQ, ibGRHREQ, lrhPacked, patch(ibREQ, at(0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))} {
		var l LRH
		decodeOK(t, &l, data)
		b := roundTrip(t, &l, l.Payload)
		if l.HasVCRC {
			b = append(b, data[len(b):len(b)+2]...)
		}
		if !bytes.Equal(b[:8], data[:8]) {
			t.Errorf("serialized header %x, want %x", b[:8], data[:8])
		}
		var again LRH
		decodeOK(t, &again, b)
		checkLayer(t, &again, &l)
	}
}

func TestLRHSerializeFixLengths(t *testing.T) {
	l := LRH{LNH: LNHBTH, DLID: 8, SLID: 7, PktLen: 1}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true}
	if err := gopacket.SerializeLayers(buf, opts, &l, gopacket.Payload(ibREQ[8:288])); err != nil {
		t.Fatal(err)
	}
	if l.PktLen != 72 || !bytes.Equal(buf.Bytes(), ibREQ[:288]) {
		t.Errorf("PktLen %d, octets differ from ibREQ: %v", l.PktLen, !bytes.Equal(buf.Bytes(), ibREQ[:288]))
	}
	// A payload that is no multiple of 4 rounds up.
	buf = gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, opts, &l, gopacket.Payload(make([]byte, 13))); err != nil {
		t.Fatal(err)
	}
	if l.PktLen != 6 {
		t.Errorf("PktLen %d for 8+13 octets, want 6", l.PktLen)
	}
}
