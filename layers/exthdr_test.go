package layers

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

func base(payload []byte) golayers.BaseLayer { return golayers.BaseLayer{Payload: payload} }

// The extended transport headers, decoded from the RC vectors at offset 54
// (after the BTH) and compared whole.
func TestExtendedHeadersDecode(t *testing.T) {
	tests := []struct {
		name string
		l    gopacket.DecodingLayer
		data []byte
		want gopacket.DecodingLayer
		hdr  int // octets of the header
	}{
		{"RETH of RDMA WRITE Only", &RETH{}, rcWriteOnly[54:], &RETH{VA: 0x00007f0012345678, RKey: 0x1a2b3c4d, DMALength: 18}, RETHLen},
		{"RETH of RDMA WRITE Only with Immediate", &RETH{}, rcWriteOnlyImm[54:], &RETH{VA: 0x1122334455667788, RKey: 0x0badcafe, DMALength: 4}, RETHLen},
		{"RETH of READ Request", &RETH{}, rcReadRequest[54 : len(rcReadRequest)-4], &RETH{VA: 0x10000000, RKey: 0x42, DMALength: 4096}, RETHLen},
		{"ImmDt after a RETH", &ImmDt{}, rcWriteOnlyImm[70:], &ImmDt{Data: 0xdeadbeef}, ImmDtLen},
		{"ImmDt of SEND Only with Immediate", &ImmDt{}, rcSendOnlyImm[54:], &ImmDt{Data: 0x01020304}, ImmDtLen},
		{"AETH of READ Response Only", &AETH{}, rcReadResponseOnly[54:], &AETH{Syndrome: 0x1f, MSN: 0xabcdef}, AETHLen},
		{"AETH of a NAK", &AETH{}, rcNAK[54 : len(rcNAK)-4], &AETH{Syndrome: 0x62, MSN: 7}, AETHLen},
		{"AETH of READ Response First", &AETH{}, rcReadResponseFirst[54:], &AETH{Syndrome: 0x21, MSN: 10}, AETHLen},
		{"IETH", &IETH{}, rcSendOnlyInvalidate[54:], &IETH{RKey: 0x00010001}, IETHLen},
		{"AtomicETH", &AtomicETH{}, rcCmpSwap[54 : len(rcCmpSwap)-4], &AtomicETH{VA: 0x20000008, RKey: 0x55667788,
			SwapData: 0x0102030405060708, CmpData: 0x1112131415161718}, AtomicETHLen},
		{"AETH of ATOMIC Acknowledge", &AETH{}, rcAtomicAck[54:], &AETH{Syndrome: 0, MSN: 9}, AETHLen},
		{"AtomicAckETH", &AtomicAckETH{}, rcAtomicAck[58 : len(rcAtomicAck)-4], &AtomicAckETH{OrigData: 0xa1a2a3a4a5a6a7a8}, AtomicAckETHLen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if truncated := decodeOK(t, tt.l, tt.data); truncated {
				t.Error("SetTruncated called")
			}
			setBase(tt.want, tt.data[:tt.hdr], tt.data[tt.hdr:])
			checkLayer(t, tt.l, tt.want)
		})
	}
}

// setBase fills in the Contents and Payload a decode should give.
func setBase(l gopacket.DecodingLayer, contents, payload []byte) {
	switch h := l.(type) {
	case *RETH:
		h.Contents, h.Payload = contents, payload
	case *AETH:
		h.Contents, h.Payload = contents, payload
	case *IETH:
		h.Contents, h.Payload = contents, payload
	case *ImmDt:
		h.Contents, h.Payload = contents, payload
	case *AtomicETH:
		h.Contents, h.Payload = contents, payload
	case *AtomicAckETH:
		h.Contents, h.Payload = contents, payload
	}
}

func TestExtendedHeadersTooShort(t *testing.T) {
	for _, c := range []struct {
		l     gopacket.DecodingLayer
		name  string
		size  int
		frame []byte
	}{
		{&RETH{}, "reth", RETHLen, rcWriteOnly}, {&AETH{}, "aeth", AETHLen, rcNAK}, {&IETH{}, "ieth", IETHLen, rcSendOnlyInvalidate},
		{&ImmDt{}, "immdt", ImmDtLen, rcSendOnlyImm}, {&AtomicETH{}, "atomiceth", AtomicETHLen, rcCmpSwap},
		{&AtomicAckETH{}, "atomicacketh", AtomicAckETHLen, rcAtomicAck[4:]},
	} {
		for n := 0; n < c.size; n++ {
			var df feedback
			wantTruncated(t, c.l.DecodeFromBytes(c.frame[54:54+n], &df), c.name, c.size, n)
			if !df.truncated {
				t.Errorf("%s, %d octets: SetTruncated not called", c.name, n)
			}
		}
	}
}

// Each header written back gives the octets it was decoded from.
func TestExtendedHeadersRoundTrip(t *testing.T) {
	for _, c := range []struct {
		l interface {
			gopacket.DecodingLayer
			gopacket.SerializableLayer
		}
		data []byte
	}{
		{&RETH{}, rcWriteOnly[54:]}, {&AETH{}, rcReadResponseOnly[54:]}, {&IETH{}, rcSendOnlyInvalidate[54:]},
		{&ImmDt{}, rcSendOnlyImm[54:]}, {&AtomicETH{}, rcCmpSwap[54:]}, {&AtomicAckETH{}, rcAtomicAck[58:]},
	} {
		decodeOK(t, c.l, c.data)
		out := roundTrip(t, c.l, c.l.LayerPayload())
		if !bytes.Equal(out, c.data) {
			t.Errorf("%T: serialized %x, want %x", c.l, out, c.data)
		}
	}
}

// BTH.NextLayerType chooses the first extended header by opcode, and each
// header the next (the linked BTH tells RETH and AETH what follows them);
// UD keeps its DETH, the other transports their payload.
func TestExtendedHeaderChains(t *testing.T) {
	pl, zero := gopacket.LayerTypePayload, gopacket.LayerTypeZero
	for _, c := range []struct {
		op      uint8
		payload bool
		want    []gopacket.LayerType
	}{
		{OpSendFirst, true, []gopacket.LayerType{pl}},
		{OpSendOnly, true, []gopacket.LayerType{pl}},
		{OpSendLastImm, true, []gopacket.LayerType{LayerTypeImmDt, pl}},
		{OpSendOnlyInvalidate, true, []gopacket.LayerType{LayerTypeIETH, pl}},
		{OpSendLastInvalidate, false, []gopacket.LayerType{LayerTypeIETH, zero}},
		{OpWriteFirst, true, []gopacket.LayerType{LayerTypeRETH, pl}},
		{OpWriteMiddle, true, []gopacket.LayerType{pl}},
		{OpWriteLastImm, true, []gopacket.LayerType{LayerTypeImmDt, pl}},
		{OpWriteOnlyImm, true, []gopacket.LayerType{LayerTypeRETH, LayerTypeImmDt, pl}},
		{OpReadRequest, false, []gopacket.LayerType{LayerTypeRETH, zero}},
		{OpReadResponseMiddle, true, []gopacket.LayerType{pl}},
		{OpReadResponseLast, true, []gopacket.LayerType{LayerTypeAETH, pl}},
		{OpAcknowledge, false, []gopacket.LayerType{LayerTypeAETH, zero}},
		{OpAtomicAcknowledge, false, []gopacket.LayerType{LayerTypeAETH, LayerTypeAtomicAckETH, zero}},
		{OpFetchAdd, false, []gopacket.LayerType{LayerTypeAtomicETH, zero}},
		{TransportUC | OpWriteOnlyImm, true, []gopacket.LayerType{LayerTypeRETH, LayerTypeImmDt, pl}},
		{TransportUC | OpReadRequest, true, []gopacket.LayerType{pl}}, // UC has no READ
		{TransportRD | OpSendOnly, true, []gopacket.LayerType{pl}},    // RDETH, DETH: not decoded
		{OpUDSendOnly, true, []gopacket.LayerType{LayerTypeDETH}},
		{0x81, true, []gopacket.LayerType{pl}}, // CNP
	} {
		b := &BTH{OpCode: c.op}
		got := []gopacket.LayerType{b.NextLayerType()}
		payload := []byte(nil)
		if c.payload {
			payload = []byte{1}
		}
		for i := 0; i < 3 && isExt(got[len(got)-1]); i++ {
			var next gopacket.LayerType
			switch got[len(got)-1] {
			case LayerTypeRETH:
				next = (&RETH{BTH: b, BaseLayer: base(payload)}).NextLayerType()
			case LayerTypeAETH:
				next = (&AETH{BTH: b, BaseLayer: base(payload)}).NextLayerType()
			case LayerTypeIETH:
				next = (&IETH{BaseLayer: base(payload)}).NextLayerType()
			case LayerTypeImmDt:
				next = (&ImmDt{BaseLayer: base(payload)}).NextLayerType()
			case LayerTypeAtomicETH:
				next = (&AtomicETH{BaseLayer: base(payload)}).NextLayerType()
			case LayerTypeAtomicAckETH:
				next = (&AtomicAckETH{BaseLayer: base(payload)}).NextLayerType()
			}
			got = append(got, next)
		}
		if typesString(got) != typesString(c.want) {
			t.Errorf("opcode %#02x: %s, want %s", c.op, typesString(got), typesString(c.want))
		}
	}
	// Without a linked BTH, RETH and AETH take the common case: payload.
	if n := (&RETH{BaseLayer: base([]byte{1})}).NextLayerType(); n != pl {
		t.Errorf("unlinked RETH: next %v", n)
	}
	if n := (&AETH{}).NextLayerType(); n != zero {
		t.Errorf("unlinked AETH without payload: next %v", n)
	}
}

func isExt(t gopacket.LayerType) bool {
	switch t {
	case LayerTypeRETH, LayerTypeAETH, LayerTypeIETH, LayerTypeImmDt, LayerTypeAtomicETH, LayerTypeAtomicAckETH:
		return true
	}
	return false
}

// The extended headers' layer type constants are the numbers registered.
func TestExtendedHeaderLayerTypes(t *testing.T) {
	for _, c := range [][2]gopacket.LayerType{{ltRETH, LayerTypeRETH}, {ltAETH, LayerTypeAETH}, {ltIETH, LayerTypeIETH},
		{ltImmDt, LayerTypeImmDt}, {ltAtomicETH, LayerTypeAtomicETH}, {ltAtomicAckETH, LayerTypeAtomicAckETH}, {ltBTH, LayerTypeBTH}} {
		if c[0] != c[1] {
			t.Errorf("constant %d, registered %v (%d)", c[0], c[1], c[1])
		}
	}
	for op := 0; op < 256; op++ {
		rc := IsRC(uint8(op))
		want := op <= 0x14 || op == 0x16 || op == 0x17
		if rc != want {
			t.Errorf("IsRC(%#02x) = %v", op, rc)
		}
	}
}

func TestSyndromeName(t *testing.T) {
	for s, want := range map[uint8]string{
		0x1f: "ACK, credit count 31", 0x00: "ACK, credit count 0", 0x21: "RNR NAK, timer 1", 0x60: "NAK: PSN sequence error",
		0x61: "NAK: invalid request", 0x62: "NAK: remote access error", 0x63: "NAK: remote operational error",
		0x64: "NAK: invalid RD request", 0x65: "NAK, code 5", 0x40: "reserved",
	} {
		if got := SyndromeName(s); got != want {
			t.Errorf("SyndromeName(%#02x) = %q, want %q", s, got, want)
		}
	}
	a := AETH{Syndrome: 0x62}
	if a.Kind() != SyndromeNAK || a.Value() != 2 {
		t.Errorf("kind %d value %d", a.Kind(), a.Value())
	}
}

// Every OpCode, of every transport: the reserved RC operations 0x18 to
// 0x1f (past the table) and the UC ones past RDMA WRITE Only with
// Immediate have no extended headers, and none panics (a fuzzed LRH once
// carried RC OpCode 0x1c).
func TestExtendedHeadersEveryOpCode(t *testing.T) {
	for op := 0; op < 256; op++ {
		hs := ExtendedHeaders(uint8(op))
		code := uint8(op) & operationMask
		reserved := code == opReserved || code > rcLastOpcode || uint8(op)&transportMask == TransportUC && code > ucLastOpcode
		if reserved && hs != nil {
			t.Errorf("OpCode 0x%02x: %v", op, hs)
		}
	}
	if hs := ExtendedHeaders(TransportRC | OpWriteOnlyImm); len(hs) != 2 || hs[0] != ltRETH || hs[1] != ltImmDt {
		t.Errorf("RDMA WRITE Only with Immediate: %v", hs)
	}
}
