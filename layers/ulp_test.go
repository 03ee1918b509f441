package layers

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
)

// The upper layers' private data layers share these tests: each protocol's
// file lists its cases (a hex vector, the layer it decodes to, what Problem
// and Summary say), and every case is decoded, compared field by field,
// checked for allocations and encoded back.

// hexOctets reads hex written with spaces and line breaks.
func hexOctets(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// ulpCase is one decode of an upper layer's private data.
type ulpCase struct {
	name    string
	data    []byte
	want    ULPPrivateData // decoded, with Contents and Payload
	problem string         // what Problem says
	summary string         // what Summary says
	fields  map[string]string
}

// encoder is a layer that writes itself back.
type encoder interface {
	ULPPrivateData
	Encode([]byte)
}

func runULPCases(t *testing.T, cases []ulpCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := reflect.New(reflect.TypeOf(tc.want).Elem()).Interface().(ULPPrivateData)
			if decodeOK(t, got, tc.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, tc.want)
			if p := got.Problem(); p != tc.problem {
				t.Errorf("Problem() = %q, want %q", p, tc.problem)
			}
			if s := got.Summary(); s != tc.summary {
				t.Errorf("Summary() = %q, want %q", s, tc.summary)
			}
			keys := map[string]bool{}
			for _, f := range got.Fields() {
				if f.Key == "" || f.Name == "" || keys[f.Key] || f.Key == "protocol" || f.Key == "offset" || strings.HasSuffix(f.Key, "_name") {
					t.Errorf("field %+v: empty, repeated or reserved key", f)
				}
				keys[f.Key] = true
				if want, ok := tc.fields[f.Key]; ok && f.Text() != want {
					t.Errorf("field %s = %q, want %q", f.Key, f.Text(), want)
				}
				delete(tc.fields, f.Key)
			}
			for k := range tc.fields {
				t.Errorf("no field %s", k)
			}
			if allocs := testing.AllocsPerRun(100, func() { _ = got.DecodeFromBytes(tc.data, gopacket.NilDecodeFeedback) }); allocs != 0 {
				t.Errorf("DecodeFromBytes: %v allocations, want 0", allocs)
			}
			// Encoding writes the fields back: decoding what it wrote gives
			// the same fields.
			if e, ok := got.(encoder); ok {
				b := make([]byte, len(tc.data)+64)
				e.Encode(b)
				again := reflect.New(reflect.TypeOf(tc.want).Elem()).Interface().(ULPPrivateData)
				if err := again.DecodeFromBytes(b[:len(got.LayerContents())], gopacket.NilDecodeFeedback); err != nil {
					t.Fatalf("decoding what Encode wrote: %v", err)
				}
				if !reflect.DeepEqual(again.Fields(), got.Fields()) {
					t.Errorf("Encode round trip:\n got %v\nwant %v", again.Fields(), got.Fields())
				}
			}
		})
	}
}

// shortCase: a layer and the fewest octets it decodes.
type shortCase struct {
	layer ULPPrivateData
	name  string
	min   int
}

func TestULPTooShort(t *testing.T) {
	for _, c := range []shortCase{
		{&NVMeRDMACMReq{}, "nvme-rdma cm req", NVMeRDMAReqMinLen},
		{&NVMeRDMACMRep{}, "nvme-rdma cm rep", NVMeRDMARepMinLen},
		{&NVMeRDMACMRej{}, "nvme-rdma cm rej", NVMeRDMARejLen},
		{&ISERCMHeader{}, "iser cm header", ISERCMHeaderLen},
		{&SRPLoginReq{}, "srp login req", SRPLoginReqLen},
		{&SRPLoginReqRDMA{}, "srp login req (rdma_cm)", SRPLoginReqRDMAMin},
		{&SRPLoginRsp{}, "srp login rsp", 27},
		{&SRPLoginRej{}, "srp login rej", 26},
		{&RDSConnect{}, "rds connect", RDSConnectLen},
		{&RDSConnectIPv6{}, "rds6 connect", RDS6ConnectLen},
		{&RSocketConnData{}, "rsocket conn data", RSocketConnDataLen},
		{&LustreO2IBMsg{}, "lustre o2ib msg", LustreO2IBMsgLen},
		{&LustreO2IBRej{}, "lustre o2ib rej", LustreO2IBRejMin},
		{&SDPHello{}, "sdp hello", SDPHelloLen},
		{&SDPHelloAck{}, "sdp helloack", SDPHelloAckLen},
		{&IPoIBCMData{}, "ipoib cm data", IPoIBCMDataLen},
	} {
		data := octets(c.min, seq(1))
		for n := 0; n < c.min; n++ {
			var df feedback
			wantTruncated(t, c.layer.DecodeFromBytes(data[:n], &df), c.name, c.min, n)
			if !df.truncated {
				t.Errorf("%s, %d octets: SetTruncated not called", c.name, n)
			}
		}
		if err := c.layer.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			t.Errorf("%s, %d octets: %v", c.name, c.min, err)
		}
	}
}

// TestULPLayerTypes: each layer says its own type, registered under its
// name, and gopacket.NewPacket decodes it.
func TestULPLayerTypes(t *testing.T) {
	for _, c := range []struct {
		l    ULPPrivateData
		t    gopacket.LayerType
		data []byte
	}{
		{&NVMeRDMACMReq{}, LayerTypeNVMeRDMAReq, nvmeREQReal},
		{&NVMeRDMACMRep{}, LayerTypeNVMeRDMARep, nvmeREPReal},
		{&NVMeRDMACMRej{}, LayerTypeNVMeRDMARej, nvmeREJ},
		{&ISERCMHeader{}, LayerTypeISER, iserREQ},
		{&SRPLoginReq{}, LayerTypeSRPLoginReq, srpLoginReqIB},
		{&SRPLoginReqRDMA{}, LayerTypeSRPLoginReqRDMA, srpLoginReqRDMA},
		{&SRPLoginRsp{}, LayerTypeSRPLoginRsp, srpLoginRsp},
		{&SRPLoginRej{}, LayerTypeSRPLoginRej, srpLoginRej},
		{&RDSConnect{}, LayerTypeRDS, rdsREQ4},
		{&RDSConnectIPv6{}, LayerTypeRDS6, rdsREQ6},
		{&RSocketConnData{}, LayerTypeRSocket, rsocketREQ},
		{&LustreO2IBMsg{}, LayerTypeLustreO2IBMsg, lustreConnReqLE},
		{&LustreO2IBRej{}, LayerTypeLustreO2IBRej, lustreRejLE},
		{&SDPHello{}, LayerTypeSDPHello, sdpHello},
		{&SDPHelloAck{}, LayerTypeSDPHelloAck, sdpHelloAck},
		{&IPoIBCMData{}, LayerTypeIPoIBCM, ipoibREQReal},
	} {
		if c.l.LayerType() != c.t || c.l.CanDecode() != c.t {
			t.Errorf("%T: layer type %v, can decode %v, want %v", c.l, c.l.LayerType(), c.l.CanDecode(), c.t)
		}
		p := gopacket.NewPacket(c.data, c.t, gopacket.Default)
		if l := p.Layer(c.t); l == nil || p.ErrorLayer() != nil {
			t.Errorf("%v: NewPacket gives %v (error %v)", c.t, p.Layers(), p.ErrorLayer())
		}
	}
}

// FuzzDecodeULP decodes arbitrary octets with every upper layer's layer:
// no panic, the usual error and slice properties, and what Encode writes
// decodes to the same fields.
func FuzzDecodeULP(f *testing.F) {
	for _, s := range [][]byte{nvmeREQReal, nvmeREPReal, nvmeREJ, iserREQ, srpLoginReqIB, srpLoginReqRDMA, srpLoginRsp,
		srpLoginRej, rdsREQ4, rdsREQ6, rsocketREQ, lustreConnReqLE, lustreConnAckBE, lustreRejLE, sdpHello, sdpHelloAck,
		ipoibREQReal, nvmeREJ[:3]} {
		for k := range byte(16) {
			f.Add(k, s)
		}
	}
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		ls := []ULPPrivateData{&NVMeRDMACMReq{}, &NVMeRDMACMRep{}, &NVMeRDMACMRej{}, &ISERCMHeader{}, &SRPLoginReq{},
			&SRPLoginReqRDMA{}, &SRPLoginRsp{}, &SRPLoginRej{}, &RDSConnect{}, &RDSConnectIPv6{}, &RSocketConnData{},
			&LustreO2IBMsg{}, &LustreO2IBRej{}, &SDPHello{}, &SDPHelloAck{}, &IPoIBCMData{}}
		l := ls[int(kind)%len(ls)]
		var df feedback
		err := l.DecodeFromBytes(data, &df)
		if !checkDecoded(t, l, data, err, df.truncated) {
			return
		}
		_, _, _ = l.Problem(), l.Summary(), l.Fields()
		e, ok := l.(encoder)
		if !ok {
			return
		}
		b := make([]byte, len(data)+64)
		e.Encode(b)
		again := reflect.New(reflect.TypeOf(l).Elem()).Interface().(ULPPrivateData)
		if err := again.DecodeFromBytes(b[:len(l.LayerContents())], gopacket.NilDecodeFeedback); err != nil {
			t.Fatalf("decoding what Encode wrote: %v", err)
		}
		if !reflect.DeepEqual(again.Fields(), l.Fields()) {
			t.Fatalf("round trip:\n%v\n%v", again.Fields(), l.Fields())
		}
	})
}
