package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// decodeCase is one layer with an input it decodes without error.
type decodeCase struct {
	name string
	l    gopacket.DecodingLayer
	data []byte
}

func decodeCases() []decodeCase {
	cs := []decodeCase{
		{"LRH", &LRH{}, ibREQ},
		{"GRH", &GRH{}, rocev1REQ[14:]},
		{"BTH", &BTH{}, rocev2REQ[42:]},
		{"DETH", &DETH{}, rocev2REQ[54:318]},
		{"MAD", &MAD{}, rocev2REQ[62:318]},
		{"IPCM", &IPCMHeader{}, rocev2REQ[226:318]},
		{"RPCRDMA", &RPCRDMAPrivateData{}, rocev2REQ[262:318]},
		{"ERF", &ERF{}, erfIBExt},
		{"FPDU", &FPDU{}, []byte{0, 4, 0x41, 0x43, 1, 2, 0, 0, 0, 0, 0, 0}},
		{"DDP", &DDP{}, []byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 9}},
		{"RDMAPReadRequest", &RDMAPReadRequest{}, make([]byte, RDMAPReadRequestLen)},
		{"RDMAPTerminate", &RDMAPTerminate{}, []byte{0x12, 0x05, 0x40, 0x00}},
		{"RETH", &RETH{}, rcWriteOnly[54:]},
		{"AETH", &AETH{}, rcReadResponseOnly[54:]},
		{"IETH", &IETH{}, rcSendOnlyInvalidate[54:]},
		{"ImmDt", &ImmDt{}, rcSendOnlyImm[54:]},
		{"AtomicETH", &AtomicETH{}, rcCmpSwap[54:]},
		{"AtomicAckETH", &AtomicAckETH{}, rcAtomicAck[58:]},
		{"RPCRDMAHeader", &RPCRDMAHeader{}, rpcWriteCall},
	}
	for _, c := range cmCases {
		cs = append(cs, decodeCase{"CM" + c.name, NewCMMessage(c.attr), c.body})
	}
	return cs
}

func TestDecodeAllocs(t *testing.T) {
	for _, c := range decodeCases() {
		allocs := testing.AllocsPerRun(200, func() {
			if err := c.l.DecodeFromBytes(c.data, gopacket.NilDecodeFeedback); err != nil {
				panic(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s.DecodeFromBytes: %v allocations, want 0", c.name, allocs)
		}
	}
}

// newParser is a DecodingLayerParser for every layer of a RoCEv2, RoCEv1 or
// native InfiniBand CM frame.
func newParser(first gopacket.LayerType) (*gopacket.DecodingLayerParser, *BTH) {
	var (
		eth  golayers.Ethernet
		ip4  golayers.IPv4
		ip6  golayers.IPv6
		u    golayers.UDP
		lrh  LRH
		grh  GRH
		bth  BTH
		deth DETH
		mad  MAD
		ipcm IPCMHeader
		rpc  RPCRDMAPrivateData
	)
	ls := []gopacket.DecodingLayer{&eth, &ip4, &ip6, &u, &lrh, &grh, &bth, &deth, &mad, &ipcm, &rpc}
	for _, c := range cmCases {
		ls = append(ls, NewCMMessage(c.attr))
	}
	p := gopacket.NewDecodingLayerParser(first, ls...)
	p.IgnoreUnsupported = true
	return p, &bth
}

func TestDecodingLayerParser(t *testing.T) {
	tests := []struct {
		name  string
		first gopacket.LayerType
		data  []byte
		want  []gopacket.LayerType
	}{
		{"RoCEv2 REQ", ltEthernet, rocev2REQ, []gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH, LayerTypeDETH,
			LayerTypeMAD, LayerTypeCMReq, LayerTypeIPCM, LayerTypeRPCRDMA}},
		{"RoCEv2 REP", ltEthernet, rocev2REP, []gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH, LayerTypeDETH,
			LayerTypeMAD, LayerTypeCMRep, LayerTypeRPCRDMA}},
		{"RoCEv2 IPv6 REQ", ltEthernet, rocev2IPv6REQ, []gopacket.LayerType{ltEthernet, ltIPv6, ltUDP, LayerTypeBTH,
			LayerTypeDETH, LayerTypeMAD, LayerTypeCMReq, LayerTypeIPCM, LayerTypeRPCRDMA}},
		{"RoCEv1 REQ", ltEthernet, rocev1REQ, []gopacket.LayerType{ltEthernet, LayerTypeGRH, LayerTypeBTH, LayerTypeDETH,
			LayerTypeMAD, LayerTypeCMReq, LayerTypeIPCM, LayerTypeRPCRDMA}},
		{"IB REQ with GRH", LayerTypeLRH, ibGRHREQ, []gopacket.LayerType{LayerTypeLRH, LayerTypeGRH, LayerTypeBTH,
			LayerTypeDETH, LayerTypeMAD, LayerTypeCMReq, LayerTypeIPCM, LayerTypeRPCRDMA}},
		{"LAP by hand", ltEthernet, spliced(AttrLAP, lapBody), []gopacket.LayerType{ltEthernet, ltIPv4, ltUDP, LayerTypeBTH,
			LayerTypeDETH, LayerTypeMAD, LayerTypeCMLap, LayerTypeRPCRDMA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newParser(tt.first)
			decoded := make([]gopacket.LayerType, 0, 16)
			if err := p.DecodeLayers(tt.data, &decoded); err != nil {
				t.Fatal(err)
			}
			if typesString(decoded) != typesString(tt.want) {
				t.Errorf("decoded\n\t%s\nwant\n\t%s", typesString(decoded), typesString(tt.want))
			}
			if p.Truncated {
				t.Error("truncated")
			}
			allocs := testing.AllocsPerRun(200, func() {
				if err := p.DecodeLayers(tt.data, &decoded); err != nil {
					panic(err)
				}
			})
			if allocs != 0 {
				t.Errorf("DecodeLayers: %v allocations, want 0", allocs)
			}
		})
	}
}

func TestSearchRPCRDMAAllocs(t *testing.T) {
	pd := rocev2REQ[226:318]
	many := cat(make([]byte, 100), pd, pd, pd, pd)
	for _, b := range [][]byte{pd, many, nil} {
		var s RPCRDMASearch
		allocs := testing.AllocsPerRun(200, func() { s = SearchRPCRDMA(b) })
		if allocs != 0 {
			t.Errorf("SearchRPCRDMA (%d octets): %v allocations, want 0", len(b), allocs)
		}
		_ = s
	}
}

func BenchmarkDecodeLRH(b *testing.B)       { benchDecode(b, &LRH{}, ibREQ) }
func BenchmarkDecodeGRH(b *testing.B)       { benchDecode(b, &GRH{}, rocev1REQ[14:]) }
func BenchmarkDecodeBTH(b *testing.B)       { benchDecode(b, &BTH{}, rocev2REQ[42:]) }
func BenchmarkDecodeDETH(b *testing.B)      { benchDecode(b, &DETH{}, rocev2REQ[54:318]) }
func BenchmarkDecodeMAD(b *testing.B)       { benchDecode(b, &MAD{}, rocev2REQ[62:318]) }
func BenchmarkDecodeCMReq(b *testing.B)     { benchDecode(b, &CMReq{}, rocev2REQ[86:318]) }
func BenchmarkDecodeCMMra(b *testing.B)     { benchDecode(b, &CMMra{}, mraBody) }
func BenchmarkDecodeCMRej(b *testing.B)     { benchDecode(b, &CMRej{}, rocev2REJ[86:318]) }
func BenchmarkDecodeCMRep(b *testing.B)     { benchDecode(b, &CMRep{}, rocev2REP[86:318]) }
func BenchmarkDecodeCMRtu(b *testing.B)     { benchDecode(b, &CMRtu{}, rocev2RTU[86:318]) }
func BenchmarkDecodeCMDreq(b *testing.B)    { benchDecode(b, &CMDreq{}, dreqBody) }
func BenchmarkDecodeCMDrep(b *testing.B)    { benchDecode(b, &CMDrep{}, drepBody) }
func BenchmarkDecodeCMSidrReq(b *testing.B) { benchDecode(b, &CMSidrReq{}, sidrReqBody) }
func BenchmarkDecodeCMSidrRep(b *testing.B) { benchDecode(b, &CMSidrRep{}, sidrRepBody) }
func BenchmarkDecodeCMLap(b *testing.B)     { benchDecode(b, &CMLap{}, lapBody) }
func BenchmarkDecodeCMApr(b *testing.B)     { benchDecode(b, &CMApr{}, aprBody) }
func BenchmarkDecodeIPCM(b *testing.B)      { benchDecode(b, &IPCMHeader{}, rocev2REQ[226:318]) }
func BenchmarkDecodeRPCRDMA(b *testing.B)   { benchDecode(b, &RPCRDMAPrivateData{}, rocev2REQ[262:318]) }
func BenchmarkDecodeERF(b *testing.B)       { benchDecode(b, &ERF{}, erfIBExt) }

func benchDecode(b *testing.B, l gopacket.DecodingLayer, data []byte) {
	b.ReportAllocs()
	if err := l.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(l.(gopacket.Layer).LayerContents()))) // the octets it parses
	b.ResetTimer()
	for b.Loop() {
		if err := l.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRoCEv2Frame decodes a whole RoCEv2 CM REQ with a
// DecodingLayerParser.
func BenchmarkDecodeRoCEv2Frame(b *testing.B) {
	p, _ := newParser(ltEthernet)
	decoded := make([]gopacket.LayerType, 0, 16)
	b.ReportAllocs()
	b.SetBytes(int64(len(rocev2REQ)))
	for b.Loop() {
		if err := p.DecodeLayers(rocev2REQ, &decoded); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewPacket decodes the same frame with gopacket.NewPacket, for
// comparison (it allocates every layer).
func BenchmarkNewPacket(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(rocev2REQ)))
	for b.Loop() {
		gopacket.NewPacket(rocev2REQ, ltEthernet, gopacket.NoCopy)
	}
}

func BenchmarkSearchRPCRDMA(b *testing.B) {
	for _, bb := range []struct {
		name string
		pd   []byte
	}{
		{"REQ private data", rocev2REQ[226:318]},
		{"REP private data", rocev2REP[122:318]},
		{"no identifier", make([]byte, 196)},
		{"ten occurrences", cat(make([]byte, 36), bytes8(10))},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bb.pd)))
			for b.Loop() {
				SearchRPCRDMA(bb.pd)
			}
		})
	}
}

// bytes8 is n RFC 8797 messages back to back.
func bytes8(n int) []byte {
	var b []byte
	for range n {
		b = append(b, rfc8797(1, 1, 3, 3)...)
	}
	return b
}

func BenchmarkICRC(b *testing.B) {
	b.Run("RoCEv2", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(318 - 14))
		for b.Loop() {
			ICRCRoCEv2(rocev2REQ[14:34], rocev2REQ[34:42], rocev2REQ[42:318])
		}
	})
	b.Run("GRH", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(330 - 14))
		for b.Loop() {
			ICRCGRH(rocev1REQ[14:54], rocev1REQ[54:330])
		}
	})
	b.Run("LRH", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(284)
		for b.Loop() {
			ICRCLRH(ibREQ[:8], ibREQ[8:284])
		}
	})
}

func BenchmarkVCRC(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(288)
	for b.Loop() {
		VCRC(ibREQ[:288])
	}
}

// BenchmarkFPDUCRC is the CRC32c of FPDUs of a bulk iWARP capture's size
// (1340 octets): "cached" checks one FPDU over and over, as from the
// processor's cache; "stream" checks FPDUs one after another through 512
// MiB, as a check of every FPDU of a large capture reads them from memory.
// Their ratio is the floor that memory puts under checking a capture's CRCs
// on one core (docs/performance.md).
func BenchmarkFPDUCRC(b *testing.B) {
	const fpdu = 1340
	b.Run("cached", func(b *testing.B) {
		buf := make([]byte, fpdu)
		b.ReportAllocs()
		b.SetBytes(fpdu)
		for b.Loop() {
			FPDUCRC(buf)
		}
	})
	b.Run("stream", func(b *testing.B) {
		buf := make([]byte, 512<<20)
		for i := range buf {
			buf[i] = byte(i)
		}
		b.ReportAllocs()
		b.SetBytes(fpdu)
		off := 0
		for b.Loop() {
			if off+fpdu > len(buf) {
				off = 0
			}
			FPDUCRC(buf[off : off+fpdu])
			off += fpdu
		}
	})
}
