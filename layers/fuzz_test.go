package layers

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// The fuzz targets decode arbitrary octets with every layer. Properties: no
// panic; an error is a *TruncatedError and comes with SetTruncated; Contents
// and Payload lie inside the input; and for layers that serialize, decoding,
// serializing and decoding again gives the same value. Seed corpora are in
// testdata/fuzz/<FuzzName>/, taken from the test vectors.

// checkDecoded checks what any layer decode must give.
func checkDecoded(t *testing.T, l gopacket.DecodingLayer, data []byte, err error, truncated bool) bool {
	t.Helper()
	if err != nil {
		var te *TruncatedError
		if !errors.As(err, &te) {
			t.Fatalf("error %v (%T), want *TruncatedError", err, err)
		}
		if te.Have != len(data) || te.Layer == "" {
			t.Fatalf("TruncatedError %+v for %d octets", te, len(data))
		}
		if te.Need <= te.Have {
			t.Fatalf("TruncatedError needs %d but has %d", te.Need, te.Have)
		}
		if !truncated {
			t.Fatal("error without SetTruncated")
		}
		return false
	}
	gl := l.(gopacket.Layer)
	c, p := gl.LayerContents(), gl.LayerPayload()
	if !within(c, data) || !within(p, data) {
		t.Fatalf("contents (%d) or payload (%d) outside the %d input octets", len(c), len(p), len(data))
	}
	if len(c) > 0 && &c[0] != &data[0] {
		t.Fatal("contents do not start the input")
	}
	if len(c)+len(p) > len(data) {
		t.Fatalf("contents %d + payload %d > %d octets", len(c), len(p), len(data))
	}
	return true
}

// ours reports whether l is one of this package's layers.
func ours(l gopacket.Layer) bool {
	t := reflect.TypeOf(l)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == reflect.TypeOf(BTH{}).PkgPath()
}

// within reports whether s is a sub-slice of b (or empty).
func within(s, b []byte) bool {
	if len(s) == 0 {
		return true
	}
	if len(b) == 0 {
		return false
	}
	start := reflect.ValueOf(b).Pointer()
	p := reflect.ValueOf(s).Pointer()
	return p >= start && p+uintptr(len(s)) <= start+uintptr(len(b))
}

// fuzzHeader fuzzes a header layer whose SerializeTo writes every bit it
// decodes: the serialized header must equal the input's, and decoding the
// serialized header with the original rest must give the same value.
func fuzzHeader[T any, PT interface {
	*T
	gopacket.DecodingLayer
	gopacket.SerializableLayer
}](f *testing.F, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var l T
		var df feedback
		err := PT(&l).DecodeFromBytes(data, &df)
		if !checkDecoded(t, PT(&l), data, err, df.truncated) {
			return
		}
		n := len(any(PT(&l)).(gopacket.Layer).LayerContents())
		out := roundTrip(t, PT(&l), nil)
		if !bytes.Equal(out, data[:n]) {
			t.Fatalf("serialized header %x, input %x", out, data[:n])
		}
		var again T
		var df2 feedback
		if err := PT(&again).DecodeFromBytes(cat(out, data[n:]), &df2); err != nil {
			t.Fatalf("decoding the serialized header: %v", err)
		}
		if !reflect.DeepEqual(fixedFields(&again), fixedFields(&l)) || df2.truncated != df.truncated {
			t.Fatalf("round trip:\n%+v\n%+v", again, l)
		}
	})
}

// fixedFields is a layer's value without its BaseLayer (whose slices point into
// different buffers after a round trip).
func fixedFields(l any) map[string]any {
	v := reflect.ValueOf(l).Elem()
	m := map[string]any{}
	for i := 0; i < v.NumField(); i++ {
		switch name := v.Type().Field(i).Name; name {
		case "BaseLayer", "cmBase":
		default:
			m[name] = v.Field(i).Interface()
		}
	}
	return m
}

func FuzzDecodeLRH(f *testing.F) {
	fuzzHeader[LRH](f, ibREQ, ibGRHREQ, lrhPacked, ibREQ[:200], patch(ibREQ[:20], at(4, 0, 1)))
}

func FuzzDecodeGRH(f *testing.F) {
	fuzzHeader[GRH](f, rocev1REQ[14:], ibGRHREQ[8:], grhPacked[14:], scapyRoCEv1Write[14:], rocev1REQ[14:60])
}

func FuzzDecodeBTH(f *testing.F) {
	for _, s := range [][]byte{rocev2REQ[42:], bthPackedA[42:], bthPackedB[42:], scapyRoCEv1Write[54:], scapyCNP[42:], rocev2REQ[42:57]} {
		f.Add(s, false)
	}
	f.Add(rocev2REQ[42:200], true)
	f.Fuzz(func(t *testing.T, data []byte, noICRC bool) {
		l := BTH{NoICRC: noICRC}
		var df feedback
		err := l.DecodeFromBytes(data, &df)
		if !checkDecoded(t, &l, data, err, df.truncated) {
			return
		}
		if l.NoICRC != noICRC || (noICRC && l.HasICRC) {
			t.Fatalf("NoICRC %v given, decoded NoICRC %v HasICRC %v", noICRC, l.NoICRC, l.HasICRC)
		}
		if l.HasICRC {
			// The ICRC is the last 4 octets; the pad is before it.
			end := len(data) - ICRCLen
			if l.ICRC != uint32(data[end])|uint32(data[end+1])<<8|uint32(data[end+2])<<16|uint32(data[end+3])<<24 {
				t.Fatalf("ICRC %08x, last octets %x", l.ICRC, data[end:])
			}
			if n := BTHLen + len(l.Payload); n != end && n != end-int(l.PadCnt) {
				t.Fatalf("payload ends at %d; ICRC at %d, pad %d", n, end, l.PadCnt)
			}
		} else if BTHLen+len(l.Payload) != len(data) {
			t.Fatalf("no ICRC, but payload ends at %d of %d", BTHLen+len(l.Payload), len(data))
		}
		out := roundTrip(t, &l, nil)
		if !bytes.Equal(out, data[:BTHLen]) {
			t.Fatalf("serialized header %x, input %x", out, data[:BTHLen])
		}
		again := BTH{NoICRC: noICRC}
		if err := again.DecodeFromBytes(cat(out, data[BTHLen:]), gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fixedFields(&again), fixedFields(&l)) {
			t.Fatalf("round trip:\n%+v\n%+v", again, l)
		}
	})
}

func FuzzDecodeDETH(f *testing.F) {
	fuzzHeader[DETH](f, rocev2REQ[54:318], dethPacked, dethPacked[:7])
}

func FuzzDecodeMAD(f *testing.F) {
	fuzzHeader[MAD](f, rocev2REQ[62:318], madPacked, rocev2REQ[62:], rocev2REQ[62:80])
}

func FuzzDecodeIPCM(f *testing.F) {
	fuzzHeader[IPCMHeader](f, rocev2REQ[226:318], rocev2IPv6REQ[246:338], sidrReqBody[16:], rocev2REQ[226:240])
}

func FuzzDecodeRPCRDMA(f *testing.F) {
	fuzzHeader[RPCRDMAPrivateData](f, rocev2REQ[262:318], rfc8797(1, 0xab, 5, 0xfa), rfc8797(2, 0, 0, 0)[:7])
}

func FuzzDecodeERF(f *testing.F) {
	for _, s := range [][]byte{erfIB, erfIBExt, erfEth, erfIBExt[:31], erfEth[:17]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e ERF
		var df feedback
		err := e.DecodeFromBytes(data, &df)
		if !checkDecoded(t, &e, data, err, df.truncated) {
			return
		}
		if want := ERFHeaderLen + 8*e.ExtHeaders; len(e.Contents) != want && len(e.Contents) != want+2 {
			t.Fatalf("contents %d octets with %d extension headers", len(e.Contents), e.ExtHeaders)
		}
		if len(e.Contents)+len(e.Payload) != len(data) {
			t.Fatalf("contents %d + payload %d != %d", len(e.Contents), len(e.Payload), len(data))
		}
	})
}

// fuzzCM fuzzes one CM message: decode; serialize (always the 232-octet MAD
// data, private data zero-filled or cut); decode again: the same fixed
// fields, and the private data zero-filled to its size.
func fuzzCM(f *testing.F, attr uint16, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewCMMessage(attr)
		var df feedback
		err := m.DecodeFromBytes(data, &df)
		if !checkDecoded(t, m, data, err, df.truncated) {
			return
		}
		off, size := m.PrivateDataOffset(), m.PrivateDataSize()
		pd := m.PrivateDataBytes()
		contents := m.(gopacket.Layer).LayerContents()
		if len(contents) != off || len(pd) > size || !bytes.Equal(pd, m.LayerPayload()) {
			t.Fatalf("contents %d octets (fixed part %d), private data %d (size %d)", len(contents), off, len(pd), size)
		}
		if df.truncated != (len(pd) < size) {
			t.Fatalf("private data %d of %d octets, truncated %v", len(pd), size, df.truncated)
		}
		_ = m.NextLayerType()
		out := roundTrip(t, m, nil)
		if len(out) != MADDataLen {
			t.Fatalf("serialized %d octets", len(out))
		}
		again := NewCMMessage(attr)
		if err := again.DecodeFromBytes(out, gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fixedFields(again), fixedFields(m)) {
			t.Fatalf("round trip:\n%+v\n%+v", again, m)
		}
		if want := cat(pd, make([]byte, size-len(pd))); !bytes.Equal(again.PrivateDataBytes(), want) {
			t.Fatalf("private data after the round trip %x, want %x", again.PrivateDataBytes(), want)
		}
		// Serializing the decoded-again message gives the same octets.
		if out2 := roundTrip(t, again, nil); !bytes.Equal(out2, out) {
			t.Fatalf("second serialization differs:\n%x\n%x", out2, out)
		}
	})
}

func FuzzDecodeCMReq(f *testing.F) {
	fuzzCM(f, AttrREQ, reqBody, rocev2REQ[86:318], rocev2IPv6REQ[106:338], reqBody[:150])
}
func FuzzDecodeCMMra(f *testing.F) { fuzzCM(f, AttrMRA, mraBody, mraBody[:12]) }
func FuzzDecodeCMRej(f *testing.F) { fuzzCM(f, AttrREJ, rejBody, rocev2REJ[86:318], rejBody[:90]) }
func FuzzDecodeCMRep(f *testing.F) { fuzzCM(f, AttrREP, repBody, rocev2REP[86:318], repBody[:40]) }
func FuzzDecodeCMRtu(f *testing.F) { fuzzCM(f, AttrRTU, rtuBody, rocev2RTU[86:318], rtuBody[:9]) }
func FuzzDecodeCMDreq(f *testing.F) {
	fuzzCM(f, AttrDREQ, dreqBody, dreqBody[:20])
}
func FuzzDecodeCMDrep(f *testing.F) { fuzzCM(f, AttrDREP, drepBody, drepBody[:8]) }
func FuzzDecodeCMSidrReq(f *testing.F) {
	fuzzCM(f, AttrSIDRREQ, sidrReqBody, sidrReqBody[:60])
}
func FuzzDecodeCMSidrRep(f *testing.F) {
	fuzzCM(f, AttrSIDRREP, sidrRepBody, sidrRepBody[:100])
}
func FuzzDecodeCMLap(f *testing.F) { fuzzCM(f, AttrLAP, lapBody, lapBody[:70]) }
func FuzzDecodeCMApr(f *testing.F) { fuzzCM(f, AttrAPR, aprBody, aprBody[:90]) }

func FuzzSearchRPCRDMA(f *testing.F) {
	for _, s := range [][]byte{rocev2REQ[226:318], rocev2REP[122:318], bytes8(10), cat(rfc8797(2, 0, 0, 0), rfc8797(1, 1, 3, 7)),
		cat(make([]byte, 85), rfc8797(1, 0, 0, 0))[:92], {0xf6, 0xab, 0x0e, 0x18}} {
		f.Add(s)
	}
	id := []byte{0xf6, 0xab, 0x0e, 0x18}
	f.Fuzz(func(t *testing.T, pd []byte) {
		s := SearchRPCRDMA(pd)
		// A brute-force search over every offset.
		var offs []int
		first := -1
		for i := 0; i+4 <= len(pd); i++ {
			if bytes.Equal(pd[i:i+4], id) {
				offs = append(offs, i)
				if first < 0 && IsRPCRDMAAt(pd, i) {
					first = i
				}
			}
		}
		if s.Occurrences != len(offs) {
			t.Fatalf("%d occurrences, brute force %d", s.Occurrences, len(offs))
		}
		if s.NMatches != min(len(offs), MaxRecordedMatches) {
			t.Fatalf("%d recorded of %d", s.NMatches, len(offs))
		}
		for i, m := range s.Recorded() {
			o := offs[i]
			want := RPCRDMAMatch{Offset: o, Complete: o+8 <= len(pd)}
			if o+4 < len(pd) {
				want.Version, want.HasVer = pd[o+4], true
			}
			if m != want {
				t.Fatalf("match %d: %+v, want %+v", i, m, want)
			}
		}
		if s.Found != (first >= 0) || (s.Found && s.Offset != first) {
			t.Fatalf("found %v at %d, brute force %d", s.Found, s.Offset, first)
		}
		if s.Found {
			var m RPCRDMAPrivateData
			if err := m.DecodeFromBytes(pd[first:], gopacket.NilDecodeFeedback); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fixedFields(&s.Message), fixedFields(&m)) {
				t.Fatalf("message %+v, want %+v", s.Message, m)
			}
		}
	})
}

// FuzzNewPacket decodes arbitrary octets with gopacket.NewPacket from
// Ethernet, link type 247 and link type 197, without gopacket's panic
// recovery, and checks the layers of this package in the result.
func FuzzNewPacket(f *testing.F) {
	for _, s := range [][]byte{rocev2REQ, rocev2REP, rocev2REJ, rocev2IPv6REQ, rocev1REQ, ibREQ, ibGRHREQ, erfIB,
		erfIBExt, erfEth, scapyCNP, rocev2REQ[:270], ibREQ[:236], spliced(AttrSIDRREQ, sidrReqBody), spliced(AttrLAP, lapBody),
		rcWriteOnlyImm, rcAtomicAck, rcSendOnlyInvalidate, rcReadRequest[:60]} {
		f.Add(s)
	}
	opts := gopacket.DecodeOptions{SkipDecodeRecovery: true, NoCopy: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, first := range []gopacket.Decoder{golayers.LayerTypeEthernet, linkIB, linkERF} {
			p := gopacket.NewPacket(data, first, opts)
			for _, l := range p.Layers() {
				// Only this package's layers promise sub-slices of the
				// input: gopacket's own APSP, for one, builds its
				// LayerContents afresh (UDP port 1000).
				if ours(l) && (!within(l.LayerContents(), data) || !within(l.LayerPayload(), data)) {
					t.Fatalf("%v: contents or payload outside the input", l.LayerType())
				}
				// A layer after the BTH may find the packet truncated too
				// (a CM message shorter than its fixed part): only what
				// the layers in front of the BTH said counts.
				if b, ok := l.(*BTH); ok && b.HasICRC && truncatedBefore(data, first) {
					t.Fatal("an ICRC was split off a packet the layers in front of the BTH found truncated")
				}
				if f, ok := l.(interface{ Fields() []Field }); ok {
					for _, x := range f.Fields() {
						_ = x.Text()
					}
				}
			}
		}
	})
}

// truncatedBefore decodes data with the layers that can stand in front of a
// BTH and reports whether any of them found it truncated.
func truncatedBefore(data []byte, first gopacket.Decoder) bool {
	var (
		eth  golayers.Ethernet
		vlan golayers.Dot1Q
		ip4  golayers.IPv4
		ip6  golayers.IPv6
		u    golayers.UDP
		erf  ERF
		lrh  LRH
		grh  GRH
	)
	var lt gopacket.LayerType
	switch first {
	case golayers.LayerTypeEthernet:
		lt = golayers.LayerTypeEthernet
	case linkIB:
		lt = LayerTypeLRH
	case linkERF:
		lt = LayerTypeERF
	}
	p := gopacket.NewDecodingLayerParser(lt, &eth, &vlan, &ip4, &ip6, &u, &erf, &lrh, &grh)
	p.IgnoreUnsupported = true
	var decoded []gopacket.LayerType
	_ = p.DecodeLayers(data, &decoded)
	return p.Truncated
}

func FuzzDecodeRETH(f *testing.F) {
	fuzzHeader[RETH](f, rcWriteOnly[54:], rcReadRequest[54:70], rcWriteOnly[54:60])
}

func FuzzDecodeAETH(f *testing.F) {
	fuzzHeader[AETH](f, rcReadResponseOnly[54:], rcNAK[54:58], rcNAK[54:56])
}

func FuzzDecodeIETH(f *testing.F) {
	fuzzHeader[IETH](f, rcSendOnlyInvalidate[54:], rcSendOnlyInvalidate[54:57])
}

func FuzzDecodeImmDt(f *testing.F) { fuzzHeader[ImmDt](f, rcSendOnlyImm[54:], rcWriteOnlyImm[70:72]) }

func FuzzDecodeAtomicETH(f *testing.F) { fuzzHeader[AtomicETH](f, rcCmpSwap[54:82], rcCmpSwap[54:70]) }

func FuzzDecodeAtomicAckETH(f *testing.F) {
	fuzzHeader[AtomicAckETH](f, rcAtomicAck[58:66], rcAtomicAck[58:62])
}

// FuzzDecodeRPCRDMAHeader: any octets decode without panic, to a header
// inside the input or a TruncatedError or XDRBoolError; a header that kept
// every segment serializes back to the octets it was decoded from.
func FuzzDecodeRPCRDMAHeader(f *testing.F) {
	for _, s := range [][]byte{rpcNullCall, rpcReadCall, rpcWriteCall, rpcNoMsg, rpcErrVers, rpcErrChunk, rpcMsgP,
		rpcReadCall[:50], patch(rpcNullCall, at(19, 7)), append(append([]byte(nil), rpcNoMsg[:28]...), 0xff, 0xff, 0xff, 0xff)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var h RPCRDMAHeader
		var df feedback
		err := h.DecodeFromBytes(data, &df)
		var xe *XDRBoolError
		if errors.As(err, &xe) {
			if xe.Value <= 1 || xe.Offset+4 > len(data) || df.truncated {
				t.Fatalf("XDRBoolError %+v for %d octets (truncated %v)", xe, len(data), df.truncated)
			}
			return
		}
		if !checkDecoded(t, &h, data, err, df.truncated) || h.NotKept > 0 {
			return
		}
		if h.Segments() > MaxRPCRDMASegments || len(h.WriteList) > MaxRPCRDMAWriteChunks {
			t.Fatalf("kept %d segments, %d write chunks", h.Segments(), len(h.WriteList))
		}
		if out := roundTrip(t, &h, nil); !bytes.Equal(out, h.Contents) {
			t.Fatalf("serialized %x, decoded from %x", out, h.Contents)
		}
	})
}
