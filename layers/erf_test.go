package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// erfHeader is a 16-octet ERF header: timestamp 0x6955e10012345678
// (little-endian), the type octet, flags 0x04, RLen, LCtr 7, WLen.
func erfHeader(typ byte, rlen, wlen uint16) []byte {
	return []byte{0x78, 0x56, 0x34, 0x12, 0x00, 0xe1, 0x55, 0x69, typ, 0x04,
		byte(rlen >> 8), byte(rlen), 0x00, 0x07, byte(wlen >> 8), byte(wlen)}
}

// erfIB is an ERF record of type 21 (InfiniBand) holding ibREQ, as ibdump
// writes them: RLen rounded up to 8 (312) but the pcap record holds only
// 16 + 290 octets.
// Cross-checked with tshark 4.0.17 (link type 197): fields erf.ts, erf.types.type,
// erf.flags, erf.rlen, erf.lctr, erf.wlen, and the infiniband.lrh, bth, deth,
// mad and cm.req fields of ibREQ.
var erfIB = cat(erfHeader(21, 312, 290), ibREQ)

// erfIBExt has two extension headers (type octet 0x95: the extension bit
// and type 21; the first extension header has its "more" bit set).
var erfIBExt = cat(erfHeader(0x80|21, 328, 290),
	[]byte{0x83, 1, 2, 3, 4, 5, 6, 7}, []byte{0x04, 8, 9, 10, 11, 12, 13, 14}, ibREQ)

// erfEth is an ERF record of type 2 (Ethernet): 2 octets of offset and pad,
// then the frame.
var erfEth = cat(erfHeader(2, 344, 322), []byte{0x00, 0x00}, rocev2REQ)

func TestERFDecode(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		want     *ERF
		contents int
		next     gopacket.LayerType
	}{
		{"InfiniBand", erfIB, &ERF{Timestamp: 0x6955e10012345678, Type: ERFTypeInfiniBand, Flags: 4, RLen: 312,
			LCtr: 7, WLen: 290}, 16, LayerTypeLRH},
		{"InfiniBand, extension headers", erfIBExt, &ERF{Timestamp: 0x6955e10012345678, Type: ERFTypeInfiniBand,
			Flags: 4, RLen: 328, LCtr: 7, WLen: 290, ExtHeaders: 2}, 32, LayerTypeLRH},
		{"Ethernet", erfEth, &ERF{Timestamp: 0x6955e10012345678, Type: ERFTypeEthernet, Flags: 4, RLen: 344,
			LCtr: 7, WLen: 322}, 18, golayers.LayerTypeEthernet},
		{"Ethernet, extension header", cat(erfHeader(0x82, 352, 322), []byte{0x05, 0, 0, 0, 0, 0, 0, 1}, []byte{0, 0}, rocev2REQ),
			&ERF{Timestamp: 0x6955e10012345678, Type: ERFTypeEthernet, Flags: 4, RLen: 352, LCtr: 7, WLen: 322, ExtHeaders: 1},
			26, golayers.LayerTypeEthernet},
		{"Ethernet, no frame", cat(erfHeader(2, 24, 0), []byte{0, 0}), &ERF{Timestamp: 0x6955e10012345678,
			Type: ERFTypeEthernet, Flags: 4, RLen: 24, LCtr: 7}, 18, golayers.LayerTypeEthernet},
		{"other type", cat(erfHeader(10, 24, 8), make([]byte, 8)), &ERF{Timestamp: 0x6955e10012345678, Type: 10,
			Flags: 4, RLen: 24, LCtr: 7, WLen: 8}, 16, gopacket.LayerTypePayload},
		{"header only", erfIB[:16], &ERF{Timestamp: 0x6955e10012345678, Type: ERFTypeInfiniBand, Flags: 4, RLen: 312,
			LCtr: 7, WLen: 290}, 16, LayerTypeLRH},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Contents = tt.data[:tt.contents]
			tt.want.Payload = tt.data[tt.contents:]
			got := &ERF{ExtHeaders: 9}
			if decodeOK(t, got, tt.data) {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, tt.want)
			if got.NextLayerType() != tt.next {
				t.Errorf("next %v, want %v", got.NextLayerType(), tt.next)
			}
		})
	}
}

func TestERFTruncated(t *testing.T) {
	tests := []struct {
		name       string
		data       []byte
		layer      string
		need, have int
	}{
		{"empty", nil, "erf", 16, 0},
		{"15 octets", erfIB[:15], "erf", 16, 15},
		{"extension header missing", erfIBExt[:16], "erf extension header", 24, 16},
		{"extension header cut", erfIBExt[:23], "erf extension header", 24, 23},
		{"second extension header cut", erfIBExt[:31], "erf extension header", 32, 31},
		{"ever more extension headers", cat(erfHeader(0x95, 0, 0), []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, []byte{0x80}),
			"erf extension header", 32, 25},
		{"Ethernet without offset and pad", erfEth[:16], "erf ethernet", 18, 16},
		{"Ethernet with one octet of them", erfEth[:17], "erf ethernet", 18, 17},
	}
	for _, tt := range tests {
		var df feedback
		var e ERF
		err := e.DecodeFromBytes(tt.data, &df)
		t.Run(tt.name, func(t *testing.T) { wantTruncated(t, err, tt.layer, tt.need, tt.have) })
		if !df.truncated {
			t.Errorf("%s: SetTruncated not called", tt.name)
		}
	}
}
