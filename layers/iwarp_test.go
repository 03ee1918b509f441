package layers_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// An FPDU carrying a Send with Invalidate: ULPDU_Length 22 (the 18-octet
// untagged header and 4 octets of message), no pad (2 + 22 = 24), and the
// CRC32c of the 24 octets, stored least-significant octet first.
//
//	0000  00 16 41 44 12 34 56 78  00 00 00 00 00 00 00 07   ULPDU_Length 22; DDP: T=0 L=1 DV=1; RV=1 opcode 4;
//	0010  00 00 00 00 de ad be ef  a1 b2 c3 d4               Invalidate STag 0x12345678, QN 0, MSN 7, MO 0; "deadbeef"; CRC
var fpduSendInv = func() []byte {
	b := []byte{0x00, 0x16, 0x41, 0x44, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef}
	c := layers.FPDUCRC(b)
	return append(b, byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
}()

// An FPDU carrying an RDMA Read Request: ULPDU_Length 46 (18 + 28), no
// pad, CRC field zero (CRC not in use).
//
//	0000  00 2e 41 41 00 00 00 00  00 00 00 01 00 00 00 02   untagged, L; RV=1 opcode 1; QN 1, MSN 2, MO 0
//	0010  00 00 00 00 0a 0b 0c 0d  00 00 00 00 00 10 00 00   Data Sink STag 0x0a0b0c0d, TO 0x100000
//	0020  00 00 10 00 0e 0f 10 11  00 00 7f 00 00 00 20 00   Size 4096, Data Source STag 0x0e0f1011, TO 0x7f0000002000
//	0030  00 00 00 00                                        CRC
var fpduReadReq = []byte{
	0x00, 0x2e, 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2,
	0, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 0, 0, 0x10, 0, 0,
	0, 0, 0x10, 0, 0x0e, 0x0f, 0x10, 0x11, 0, 0, 0x7f, 0, 0, 0, 0x20, 0,
	0, 0, 0, 0,
}

// A tagged RDMA Write segment of 3 octets: ULPDU_Length 17, pad 1.
var fpduWrite = []byte{
	0x00, 0x11, 0x81, 0x40, 0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 0, 0, 0, 0x01, 0x00,
	'x', 'y', 'z', 0x00, 0, 0, 0, 0,
}

// A Terminate: DDP layer, untagged buffer error, DDP message too long
// (layer 1, type 2, code 0x05), with the DDP header copied (D).
var terminate = []byte{0x12, 0x05, 0x40, 0x00, 0x41, 0x43}

func TestFPDUDecode(t *testing.T) {
	cases := []struct {
		name  string
		in    []byte
		want  layers.FPDU
		ulpdu int
		trunc bool
	}{
		{"send with invalidate", fpduSendInv, layers.FPDU{ULPDULength: 22, CRC: layers.FPDUCRC(fpduSendInv[:24]), HasCRC: true}, 22, false},
		{"read request", fpduReadReq, layers.FPDU{ULPDULength: 46, HasCRC: true}, 46, false},
		{"write with pad", fpduWrite, layers.FPDU{ULPDULength: 17, PadLength: 1, HasCRC: true}, 17, false},
		{"cut inside the ULPDU", fpduReadReq[:20], layers.FPDU{ULPDULength: 46}, 18, true},
		{"cut before the CRC", fpduWrite[:21], layers.FPDU{ULPDULength: 17, PadLength: 1}, 17, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f layers.FPDU
			var df truncFeedback
			if err := f.DecodeFromBytes(tc.in, &df); err != nil {
				t.Fatal(err)
			}
			got := f
			got.BaseLayer = tc.want.BaseLayer
			if !reflect.DeepEqual(got, tc.want) || len(f.Payload) != tc.ulpdu || bool(df) != tc.trunc {
				t.Errorf("got %+v (%d octets of ULPDU, truncated %v)\nwant %+v", got, len(f.Payload), df, tc.want)
			}
		})
	}
	var f layers.FPDU
	var te *layers.TruncatedError
	if err := f.DecodeFromBytes([]byte{0}, gopacket.NilDecodeFeedback); !errors.As(err, &te) || te.Need != 2 {
		t.Errorf("one octet: %v", err)
	}
	if layers.FPDULen(22) != 28 || layers.FPDULen(17) != 24 || layers.FPDUPad(46) != 0 || layers.FPDUPad(3) != 3 {
		t.Error("FPDU lengths")
	}
}

func TestDDPDecode(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want layers.DDP
		rest int
	}{
		{"send with invalidate", fpduSendInv[2:24], layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpSendInvalidate,
			InvalidateSTag: 0x12345678, MSN: 7}, 4},
		{"read request", fpduReadReq[2:48], layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpReadRequest,
			QN: 1, MSN: 2}, 28},
		{"tagged write, not last", fpduWrite[2:19], layers.DDP{Tagged: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite,
			STag: 0xaabbccdd, TaggedOffset: 0x100}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d layers.DDP
			if err := d.DecodeFromBytes(tc.in, gopacket.NilDecodeFeedback); err != nil {
				t.Fatal(err)
			}
			got := d
			got.BaseLayer = tc.want.BaseLayer
			if !reflect.DeepEqual(got, tc.want) || len(d.Payload) != tc.rest {
				t.Errorf("got %+v (%d octets after)\nwant %+v", got, len(d.Payload), tc.want)
			}
			// Encode gives the octets back.
			b := make([]byte, d.HeaderLen())
			d.Encode(b)
			if string(b) != string(tc.in[:d.HeaderLen()]) {
				t.Errorf("encoded %x, want %x", b, tc.in[:d.HeaderLen()])
			}
		})
	}
	var d layers.DDP
	if err := d.DecodeFromBytes(fpduSendInv[2:12], gopacket.NilDecodeFeedback); err == nil {
		t.Error("an untagged header cut short decodes")
	}
}

func TestRDMAPDecode(t *testing.T) {
	var r layers.RDMAPReadRequest
	if err := r.DecodeFromBytes(fpduReadReq[20:48], gopacket.NilDecodeFeedback); err != nil {
		t.Fatal(err)
	}
	want := layers.RDMAPReadRequest{SinkSTag: 0x0a0b0c0d, SinkTO: 0x100000, Size: 4096, SourceSTag: 0x0e0f1011, SourceTO: 0x7f0000002000}
	r.BaseLayer = want.BaseLayer
	if !reflect.DeepEqual(r, want) {
		t.Errorf("read request %+v", r)
	}
	var tm layers.RDMAPTerminate
	if err := tm.DecodeFromBytes(terminate, gopacket.NilDecodeFeedback); err != nil {
		t.Fatal(err)
	}
	if tm.Layer != 1 || tm.EType != 2 || tm.ErrorCode != 5 || tm.M || !tm.D || tm.R || len(tm.Payload) != 2 {
		t.Errorf("terminate %+v", tm)
	}
	if got, want := tm.TermDescription(), "DDP, untagged buffer error: DDP message too long for the available buffer (layer 1, type 2, code 0x05)"; got != want {
		t.Errorf("description %q", got)
	}
	for _, c := range []struct {
		l, e, c uint8
		want    string
	}{
		{0, 1, 0x00, "remote protection error: invalid STag"},
		{0, 0, 0x37, "local catastrophic error"},
		{2, 0, 0x02, "MPA: CRC error"},
		{1, 3, 0x00, ""},
	} {
		if got := layers.TermErrorName(c.l, c.e, c.c); got != c.want {
			t.Errorf("%d/%d/%d: %q", c.l, c.e, c.c, got)
		}
	}
}

// The whole FPDU decodes through gopacket's registry, layer after layer.
func TestFPDUPacket(t *testing.T) {
	p := gopacket.NewPacket(fpduReadReq, layers.LayerTypeFPDU, gopacket.Default)
	if p.ErrorLayer() != nil {
		t.Fatal(p.ErrorLayer().Error())
	}
	rr, ok := p.Layer(layers.LayerTypeRDMAPReadRequest).(*layers.RDMAPReadRequest)
	if !ok || rr.Size != 4096 || p.Layer(layers.LayerTypeDDP) == nil {
		t.Fatalf("layers %v", p.Layers())
	}
}

// Serializing a DDP segment in an FPDU computes the pad and the CRC.
func TestFPDUSerialize(t *testing.T) {
	buf := gopacket.NewSerializeBuffer()
	ddp := &layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpSendInvalidate, InvalidateSTag: 0x12345678, MSN: 7}
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.FPDU{}, ddp, gopacket.Payload{0xde, 0xad, 0xbe, 0xef})
	if err != nil {
		t.Fatal(err)
	}
	if got := buf.Bytes(); string(got) != string(fpduSendInv) {
		t.Errorf("serialized\n %x\nwant\n %x", got, fpduSendInv)
	}
}
