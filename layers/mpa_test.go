package layers_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// A revision 2 MPA Request as an rdma_cm peer sends it: CRC wanted, the
// enhanced flag, PD_Length 12: IRD word 0x8010 (peer-to-peer, IRD 16), ORD
// word 0x4008 (zero-length RDMA READ, ORD 8), then the RFC 8797 message.
// Cross-checked with tshark 4.0.17 (iwarp_mpa.crc_flag 1, res 0x10, rev 2,
// pdlength 12, privatedata 80104008f6ab0e1801010303).
//
//	0000  4d 50 41 20 49 44 20 52  65 71 20 46 72 61 6d 65  MPA ID Req Frame
//	0010  50 02 00 0c 80 10 40 08  f6 ab 0e 18 01 01 03 03
var mpaReqV2 = []byte{
	0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65,
	0x50, 0x02, 0x00, 0x0c, 0x80, 0x10, 0x40, 0x08, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03,
}

func TestMPADecode(t *testing.T) {
	rep := append([]byte("MPA ID Rep Frame"), 0xa5, 0x01, 0x00, 0x03, 0xaa, 0xbb, 0xcc, 0xdd)
	cases := []struct {
		name  string
		in    []byte
		want  layers.MPAFrame
		trunc bool
	}{
		{"request v2", mpaReqV2, layers.MPAFrame{Key: layers.MPARequestKey, Request: true, CRC: true, Enhanced: true, Rev: 2,
			PDLength: 12, PrivateData: mpaReqV2[20:], HasIRDORD: true, PeerToPeer: true, IRD: 16, ZeroLengthRead: true, ORD: 8}, false},
		// M, R, reserved 0x5; PD_Length 3 of the 4 octets present: the 4th is not the frame's.
		{"reply v1 with every flag", rep, layers.MPAFrame{Key: layers.MPAReplyKey, Marker: true, Reject: true, ReservedFlags: 0x5,
			Rev: 1, PDLength: 3, PrivateData: rep[20:23]}, false},
		{"private data cut short", mpaReqV2[:26], layers.MPAFrame{Key: layers.MPARequestKey, Request: true, CRC: true, Enhanced: true,
			Rev: 2, PDLength: 12, PrivateData: mpaReqV2[20:26], HasIRDORD: true, PeerToPeer: true, IRD: 16, ZeroLengthRead: true, ORD: 8}, true},
		{"revision 2 without room for IRD/ORD", append(append([]byte(nil), mpaReqV2[:18]...), 0, 2, 0x80, 0x10),
			layers.MPAFrame{Key: layers.MPARequestKey, Request: true, CRC: true, Enhanced: true, Rev: 2, PDLength: 2,
				PrivateData: []byte{0x80, 0x10}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m layers.MPAFrame
			var df truncFeedback
			if err := m.DecodeFromBytes(tc.in, &df); err != nil {
				t.Fatal(err)
			}
			got := m
			got.BaseLayer = tc.want.BaseLayer
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if bool(df) != tc.trunc {
				t.Errorf("truncated = %v", df)
			}
			if m.HasIRDORD && (len(m.Contents) != 24 || !reflect.DeepEqual(m.Payload, tc.in[24:min(len(tc.in), 20+int(m.PDLength))])) {
				t.Errorf("contents %d, payload %x", len(m.Contents), m.Payload)
			}
		})
	}
}

type truncFeedback bool

func (f *truncFeedback) SetTruncated() { *f = true }

func TestMPADecodeErrors(t *testing.T) {
	var m layers.MPAFrame
	var te *layers.TruncatedError
	if err := m.DecodeFromBytes(mpaReqV2[:19], gopacket.NilDecodeFeedback); !errors.As(err, &te) || te.Need != 20 || te.Have != 19 {
		t.Errorf("short header: %v", err)
	}
	bad := append([]byte("MPA ID Rxq Frame"), 0, 1, 0, 0)
	if err := m.DecodeFromBytes(bad, gopacket.NilDecodeFeedback); err == nil || err.Error() != "mpa: not an MPA Request or Reply key" {
		t.Errorf("bad key: %v", err)
	}
}

func TestMPAKeyPrefix(t *testing.T) {
	for in, want := range map[string]bool{
		"": true, "M": true, "MPA ID Re": true, "MPA ID Req": true, "MPA ID Rep Frame": true, "MPA ID Req Frame plus": true,
		"MPA ID Rex": false, "GET / HTTP": false, "mpa": false, "MPA ID Req Framf": false,
	} {
		if got := layers.MPAKeyPrefix([]byte(in)); got != want {
			t.Errorf("%q: %v", in, got)
		}
	}
}

func TestMPAEncodeRoundTrip(t *testing.T) {
	var m layers.MPAFrame
	if err := m.DecodeFromBytes(mpaReqV2, gopacket.NilDecodeFeedback); err != nil {
		t.Fatal(err)
	}
	if got := m.Encode(); !reflect.DeepEqual(got, mpaReqV2) {
		t.Errorf("encode:\n got %x\nwant %x", got, mpaReqV2)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := m.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil || !reflect.DeepEqual(buf.Bytes(), mpaReqV2) {
		t.Errorf("serialize: %v %x", err, buf.Bytes())
	}
	if m.FrameLen() != 32 || m.NextLayerType() != layers.LayerTypeRPCRDMA {
		t.Errorf("frame length %d, next %v", m.FrameLen(), m.NextLayerType())
	}
}

func TestMPAAllocs(t *testing.T) {
	var m layers.MPAFrame
	if n := testing.AllocsPerRun(100, func() { _ = m.DecodeFromBytes(mpaReqV2, gopacket.NilDecodeFeedback) }); n != 0 {
		t.Errorf("%v allocations per decode", n)
	}
}

func FuzzDecodeMPA(f *testing.F) {
	f.Add(mpaReqV2)
	f.Add(append([]byte("MPA ID Rep Frame"), 0x20, 1, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m layers.MPAFrame
		if err := m.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil {
			return
		}
		if int(m.PDLength) != len(m.PrivateData) {
			return // a frame cut short does not round-trip
		}
		var m2 layers.MPAFrame
		if err := m2.DecodeFromBytes(m.Encode(), gopacket.NilDecodeFeedback); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		m.BaseLayer, m2.BaseLayer = m2.BaseLayer, m.BaseLayer
		m.Contents, m.Payload, m2.Contents, m2.Payload = nil, nil, nil, nil
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip:\n%+v\n%+v", m, m2)
		}
	})
}
