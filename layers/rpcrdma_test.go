package layers

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
)

// rfc8797 is an RFC 8797 message: Version v, octet 5, sizes.
func rfc8797(v, flags, send, recv byte) []byte {
	return []byte{0xf6, 0xab, 0x0e, 0x18, v, flags, send, recv}
}

func TestRPCRDMADecode(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want *RPCRDMAPrivateData
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.req.ip_cm.private starts
			// f6ab0e1801010303.
			name: "RoCEv2 REQ, after the IP CM header", data: rocev2REQ[262:318],
			want: &RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1, RemoteInvalidate: true,
				SendSizeEncoded: 3, ReceiveSizeEncoded: 3},
		},
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.rep.private starts f6ab0e180100070f.
			name: "RoCEv2 REP", data: rocev2REP[122:318],
			want: &RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1,
				SendSizeEncoded: 7, ReceiveSizeEncoded: 15},
		},
		{
			// Cross-checked with tshark 4.0.17: infiniband.cm.rej.private starts f6ab0e180101011f.
			name: "RoCEv2 REJ", data: rocev2REJ[170:318],
			want: &RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1, RemoteInvalidate: true,
				SendSizeEncoded: 1, ReceiveSizeEncoded: 31},
		},
		{
			name: "reserved bits and R", data: rfc8797(1, 0xab, 0x05, 0xfa),
			want: &RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1, Reserved: 0x55,
				RemoteInvalidate: true, SendSizeEncoded: 5, ReceiveSizeEncoded: 0xfa},
		},
		{
			name: "reserved bits without R", data: rfc8797(1, 0xfe, 0xff, 0x00),
			want: &RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1, Reserved: 0x7f,
				SendSizeEncoded: 0xff},
		},
		{
			// DecodeFromBytes takes any 8 octets; SearchRPCRDMA judges them.
			name: "other identifier, Version 2", data: []byte{1, 2, 3, 4, 2, 1, 9, 8, 7},
			want: &RPCRDMAPrivateData{FormatIdentifier: 0x01020304, Version: 2, RemoteInvalidate: true,
				SendSizeEncoded: 9, ReceiveSizeEncoded: 8},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Contents = tt.data[:8]
			tt.want.Payload = tt.data[8:]
			got := &RPCRDMAPrivateData{Reserved: 1}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, tt.want)
		})
	}
}

func TestRPCRDMATooShort(t *testing.T) {
	for n := 0; n < RPCRDMALen; n++ {
		var df feedback
		var m RPCRDMAPrivateData
		wantTruncated(t, m.DecodeFromBytes(rfc8797(1, 1, 3, 3)[:n], &df), "rpc-over-rdma private data", 8, n)
		if !df.truncated {
			t.Errorf("%d octets: SetTruncated not called", n)
		}
	}
}

func TestInlineSize(t *testing.T) {
	for _, tt := range []struct {
		v    uint8
		size int
	}{{0x00, 1024}, {0x01, 2048}, {0x03, 4096}, {0x07, 8192}, {0x0f, 16384}, {0x7f, 131072}, {0xfe, 261120}, {0xff, 262144}} {
		if got := DecodeInlineSize(tt.v); got != tt.size {
			t.Errorf("DecodeInlineSize(%#02x) = %d, want %d", tt.v, got, tt.size)
		}
		if got, err := EncodeInlineSize(tt.size); err != nil || got != tt.v {
			t.Errorf("EncodeInlineSize(%d) = %#02x, %v; want %#02x", tt.size, got, err, tt.v)
		}
	}
	for v := 0; v < 256; v++ {
		if got, err := EncodeInlineSize(DecodeInlineSize(uint8(v))); err != nil || got != uint8(v) {
			t.Errorf("encode(decode(%#02x)) = %#02x, %v", v, got, err)
		}
	}
	for _, bad := range []int{0, -1024, 1, 1023, 1025, 4095, 4097, 262143, 262145, 263168, 1 << 20} {
		if got, err := EncodeInlineSize(bad); err == nil {
			t.Errorf("EncodeInlineSize(%d) = %#02x, want an error", bad, got)
		}
	}
	m := RPCRDMAPrivateData{SendSizeEncoded: 0x00, ReceiveSizeEncoded: 0xff}
	if m.SendSize() != 1024 || m.ReceiveSize() != 262144 {
		t.Errorf("SendSize %d, ReceiveSize %d", m.SendSize(), m.ReceiveSize())
	}
}

func TestIsRPCRDMAAt(t *testing.T) {
	pd := cat([]byte{0xaa, 0xbb}, rfc8797(1, 0, 3, 3), rfc8797(2, 0, 3, 3), rfc8797(1, 0, 3, 3)[:7])
	for _, tt := range []struct {
		off  int
		want bool
	}{{2, true}, {0, false}, {1, false}, {3, false}, {10, false}, {18, false}, {-1, false}, {len(pd), false}, {1 << 30, false}} {
		if got := IsRPCRDMAAt(pd, tt.off); got != tt.want {
			t.Errorf("IsRPCRDMAAt(pd, %d) = %v, want %v", tt.off, got, tt.want)
		}
	}
	if IsRPCRDMAAt(nil, 0) {
		t.Error("IsRPCRDMAAt(nil, 0)")
	}
}

func TestSearchRPCRDMA(t *testing.T) {
	id := []byte{0xf6, 0xab, 0x0e, 0x18}
	v1 := rfc8797(1, 1, 3, 7)
	v1msg := RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1, RemoteInvalidate: true,
		SendSizeEncoded: 3, ReceiveSizeEncoded: 7}
	m := func(off int, complete bool, ver uint8, hasVer bool) RPCRDMAMatch {
		return RPCRDMAMatch{Offset: off, Complete: complete, Version: ver, HasVer: hasVer}
	}
	many := bytes.Repeat(v1, 10) // ten messages back to back
	tests := []struct {
		name        string
		pd          []byte
		found       bool
		offset      int
		msg         RPCRDMAPrivateData
		occurrences int
		matches     []RPCRDMAMatch
	}{
		{name: "empty", pd: nil},
		{name: "no identifier", pd: make([]byte, 92)},
		{name: "at 0", pd: cat(v1, make([]byte, 84)), found: true, msg: v1msg, occurrences: 1,
			matches: []RPCRDMAMatch{m(0, true, 1, true)}},
		{name: "exactly the message", pd: v1, found: true, msg: v1msg, occurrences: 1,
			matches: []RPCRDMAMatch{m(0, true, 1, true)}},
		{name: "at 36, after an IP CM header", pd: rocev2REQ[226:318], found: true, offset: 36, occurrences: 1,
			msg:     RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1, RemoteInvalidate: true, SendSizeEncoded: 3, ReceiveSizeEncoded: 3},
			matches: []RPCRDMAMatch{m(36, true, 1, true)}},
		{name: "at the last possible offset", pd: cat(make([]byte, 84), v1), found: true, offset: 84, msg: v1msg,
			occurrences: 1, matches: []RPCRDMAMatch{m(84, true, 1, true)}},
		{name: "one octet too late", pd: cat(make([]byte, 85), v1)[:92], occurrences: 1,
			matches: []RPCRDMAMatch{m(85, false, 1, true)}},
		{name: "identifier and version only", pd: cat(make([]byte, 87), v1[:5]), occurrences: 1,
			matches: []RPCRDMAMatch{m(87, false, 1, true)}},
		{name: "identifier at the very end", pd: cat(make([]byte, 88), id), occurrences: 1,
			matches: []RPCRDMAMatch{m(88, false, 0, false)}},
		{name: "three octets of the identifier", pd: cat(make([]byte, 89), id[:3])},
		{name: "Version 2 first, Version 1 later", pd: cat(rfc8797(2, 0, 0, 0), make([]byte, 20), v1),
			found: true, offset: 28, msg: v1msg, occurrences: 2,
			matches: []RPCRDMAMatch{m(0, true, 2, true), m(28, true, 1, true)}},
		{name: "Version 0 first", pd: cat(rfc8797(0, 1, 0xff, 0xff), v1), found: true, offset: 8, msg: v1msg,
			occurrences: 2, matches: []RPCRDMAMatch{m(0, true, 0, true), m(8, true, 1, true)}},
		{name: "Version 1 first, Version 2 later: the first", pd: cat(v1, rfc8797(2, 0, 0, 0)), found: true,
			msg: v1msg, occurrences: 2, matches: []RPCRDMAMatch{m(0, true, 1, true), m(8, true, 2, true)}},
		{name: "two Version 1: the first", pd: cat([]byte{9}, v1, rfc8797(1, 0, 0x1f, 0x1f)), found: true, offset: 1,
			msg: v1msg, occurrences: 2, matches: []RPCRDMAMatch{m(1, true, 1, true), m(9, true, 1, true)}},
		// Adjacent identifiers: the first one's Version octet is the second
		// one's first octet (0xf6), so only the second is usable.
		{name: "adjacent identifiers", pd: cat(id, v1), found: true, offset: 4, msg: v1msg, occurrences: 2,
			matches: []RPCRDMAMatch{m(0, true, 0xf6, true), m(4, true, 1, true)}},
		// The identifier cannot overlap itself: a near-overlap is no match.
		{name: "near overlap", pd: []byte{0xf6, 0xab, 0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x00, 0x00}, found: true,
			offset: 2, msg: RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1}, occurrences: 1,
			matches: []RPCRDMAMatch{m(2, true, 1, true)}},
		{name: "ten messages: all counted, 8 recorded", pd: many, found: true, msg: v1msg, occurrences: 10,
			matches: []RPCRDMAMatch{m(0, true, 1, true), m(8, true, 1, true), m(16, true, 1, true), m(24, true, 1, true),
				m(32, true, 1, true), m(40, true, 1, true), m(48, true, 1, true), m(56, true, 1, true)}},
		{name: "nine unusable, then one usable beyond the record", pd: cat(bytes.Repeat(rfc8797(2, 0, 0, 0), 9), v1),
			found: true, offset: 72, msg: v1msg, occurrences: 10,
			matches: []RPCRDMAMatch{m(0, true, 2, true), m(8, true, 2, true), m(16, true, 2, true), m(24, true, 2, true),
				m(32, true, 2, true), m(40, true, 2, true), m(48, true, 2, true), m(56, true, 2, true)}},
		{name: "identifier runs: 23 back to back", pd: bytes.Repeat(id, 23), occurrences: 23,
			matches: []RPCRDMAMatch{m(0, true, 0xf6, true), m(4, true, 0xf6, true), m(8, true, 0xf6, true),
				m(12, true, 0xf6, true), m(16, true, 0xf6, true), m(20, true, 0xf6, true), m(24, true, 0xf6, true),
				m(28, true, 0xf6, true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SearchRPCRDMA(tt.pd)
			if s.Found != tt.found || s.Offset != tt.offset || s.Occurrences != tt.occurrences {
				t.Errorf("found %v at %d, %d occurrences; want %v at %d, %d", s.Found, s.Offset, s.Occurrences,
					tt.found, tt.offset, tt.occurrences)
			}
			checkLayer(t, &s.Message, &tt.msg)
			rec := s.Recorded()
			if len(rec) != len(tt.matches) || s.NMatches != len(tt.matches) {
				t.Fatalf("%d recorded (NMatches %d), want %d: %+v", len(rec), s.NMatches, len(tt.matches), rec)
			}
			for i := range rec {
				if rec[i] != tt.matches[i] {
					t.Errorf("match %d: %+v, want %+v", i, rec[i], tt.matches[i])
				}
				if want := tt.matches[i].Complete && tt.matches[i].Version == 1; rec[i].Usable() != want {
					t.Errorf("match %d: Usable %v", i, rec[i].Usable())
				}
			}
			// What the search found, IsRPCRDMAAt confirms.
			if s.Found && !IsRPCRDMAAt(tt.pd, s.Offset) {
				t.Errorf("IsRPCRDMAAt(pd, %d) = false", s.Offset)
			}
		})
	}
}

func TestRPCRDMANextLayer(t *testing.T) {
	var m RPCRDMAPrivateData
	if m.LayerType() != LayerTypeRPCRDMA || m.CanDecode() != LayerTypeRPCRDMA {
		t.Errorf("layer type %v, can decode %v", m.LayerType(), m.CanDecode())
	}
	// The private data after the message (zero fill, or the consumer's
	// data) is payload: gopacket decodes whatever NextLayerType names when
	// the payload is not empty, and LayerTypeZero decodes as an error
	// ("Layer type not currently supported").
	decodeOK(t, &m, rocev2REQ[262:318])
	if len(m.Payload) != 48 {
		t.Fatalf("payload %d octets, want 48", len(m.Payload))
	}
	if got := m.NextLayerType(); got != gopacket.LayerTypePayload {
		t.Errorf("with 48 octets after the message: next %v, want Payload", got)
	}
}

func TestRPCRDMARoundTrip(t *testing.T) {
	for _, data := range [][]byte{rocev2REQ[262:318], rfc8797(1, 0xab, 0x05, 0xfa), rfc8797(1, 0xfe, 0xff, 0)} {
		var m RPCRDMAPrivateData
		decodeOK(t, &m, data)
		out := roundTrip(t, &m, m.Payload)
		if !bytes.Equal(out, data) {
			t.Errorf("serialized %x, want %x", out[:8], data[:8])
		}
		var again RPCRDMAPrivateData
		decodeOK(t, &again, out)
		checkLayer(t, &again, &m)
	}
	// Encode writes what decode reads.
	m := RPCRDMAPrivateData{FormatIdentifier: RPCRDMAFormatID, Version: 1, Reserved: 0x2a, RemoteInvalidate: true,
		SendSizeEncoded: 0x10, ReceiveSizeEncoded: 0x20}
	b := make([]byte, 8)
	m.Encode(b)
	if !bytes.Equal(b, rfc8797(1, 0x55, 0x10, 0x20)) {
		t.Errorf("Encode: %x", b)
	}
}
