package layers

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// The ICRC is stored least-significant octet first; tshark and scapy show the
// four stored octets read big-endian. shown turns a CRC the functions return
// into what those tools display.
func shown(crc uint32) uint32 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], crc)
	return binary.BigEndian.Uint32(b[:])
}

// icrcCase locates the parts of a frame that an ICRC function takes.
type icrcCase struct {
	name  string
	frame []byte
	kind  string // "rocev2", "grh" or "lrh"
	l3    int    // IP header or GRH (rocev2, grh); LRH (lrh)
	l4    int    // UDP header (rocev2); BTH (grh, lrh)
	end   int    // where the ICRC starts
	shown uint32 // the ICRC as tshark or scapy shows it
}

func (c icrcCase) compute() uint32 {
	switch c.kind {
	case "rocev2":
		return ICRCRoCEv2(c.frame[c.l3:c.l4], c.frame[c.l4:c.l4+8], c.frame[c.l4+8:c.end])
	case "grh":
		return ICRCGRH(c.frame[c.l3:c.l4], c.frame[c.l4:c.end])
	case "lrh":
		return ICRCLRH(c.frame[c.l3:c.l4], c.frame[c.l4:c.end])
	}
	panic(c.kind)
}

// icrcCases are frames whose ICRC an independent party computed or showed:
// the scapy vectors (a ConnectX-4 Lx capture, RoCEv1 captures, and frames
// scapy's own ICRC code built) and the crafted CM frames, with the ICRC that
// tshark 4.0.17 displays for them (infiniband.invariant.crc).
var icrcCases = []icrcCase{
	{"scapy CNP ConnectX-4 Lx", scapyCNP, "rocev2", 14, 34, 70, 0x82fd002a},
	{"scapy UC IPv4, PadCnt 2", scapyUCIPv4, "rocev2", 14, 34, 74, 0x78f353f3},
	{"scapy UC IPv6, tclass and flow label set", scapyUCIPv6, "rocev2", 14, 54, 94, 0x3e5b743b},
	{"scapy RoCEv1 RDMA WRITE, tclass 2", scapyRoCEv1Write, "grh", 14, 54, 90, 0xe3d856bb},
	{"scapy RoCEv1 ACK", scapyRoCEv1Ack, "grh", 14, 54, 70, 0x25f0c038},
	{"RoCEv2 REQ", rocev2REQ, "rocev2", 14, 34, 318, 0xd25f5932},
	{"RoCEv2 REP", rocev2REP, "rocev2", 14, 34, 318, 0xfd014126},
	{"RoCEv2 RTU", rocev2RTU, "rocev2", 14, 34, 318, 0x9653ed8e},
	{"RoCEv2 REJ", rocev2REJ, "rocev2", 14, 34, 318, 0x1fc49770},
	{"RoCEv2 IPv6 REQ", rocev2IPv6REQ, "rocev2", 14, 54, 338, 0x1000f162},
	{"RoCEv1 REQ", rocev1REQ, "grh", 14, 54, 330, 0x84ea842b},
	{"IB REQ, LRH only", ibREQ, "lrh", 0, 8, 284, 0x90064818},
	{"IB REQ, LRH and GRH", ibGRHREQ, "grh", 8, 48, 324, 0x5d9733bb},
}

func TestICRC(t *testing.T) {
	for _, c := range icrcCases {
		t.Run(c.name, func(t *testing.T) {
			if stored := binary.BigEndian.Uint32(c.frame[c.end : c.end+4]); stored != c.shown {
				t.Fatalf("vector broken: the frame holds %08x, the oracle showed %08x", stored, c.shown)
			}
			got := c.compute()
			if shown(got) != c.shown {
				t.Errorf("ICRC %08x (shown as %08x), want shown %08x", got, shown(got), c.shown)
			}
			if ref := refICRC(c); ref != got {
				t.Errorf("ICRC %08x, bitwise reference %08x", got, ref)
			}
		})
	}
}

// TestICRCVariantFields checks that changing a variant field (one that a
// switch or router may rewrite) leaves the ICRC alone, and that changing an
// invariant field changes it.
func TestICRCVariantFields(t *testing.T) {
	type change struct {
		name    string
		c       icrcCase
		off     int // frame offset to change
		xor     byte
		variant bool
	}
	named := func(name string) icrcCase {
		for _, c := range icrcCases {
			if c.name == name {
				return c
			}
		}
		panic(name)
	}
	v2, v6, v1 := named("RoCEv2 REQ"), named("RoCEv2 IPv6 REQ"), named("RoCEv1 REQ")
	ib, ibg := named("IB REQ, LRH only"), named("IB REQ, LRH and GRH")
	changes := []change{
		{"IPv4 TOS", v2, 15, 0xff, true},
		{"IPv4 TTL", v2, 22, 0x3c, true},
		{"IPv4 header checksum", v2, 24, 0x11, true},
		{"IPv4 header checksum, low octet", v2, 25, 0x80, true},
		{"UDP checksum", v2, 40, 0x5a, true},
		{"UDP checksum, low octet", v2, 41, 0x01, true},
		{"BTH FECN, BECN and reserved", v2, 46, 0xff, true},
		{"IPv4 identification", v2, 18, 0x01, false},
		{"IPv4 source address", v2, 29, 0x01, false},
		{"UDP source port", v2, 35, 0x01, false},
		{"BTH P_Key", v2, 44, 0x01, false},
		{"BTH DestQP", v2, 49, 0x01, false},
		{"last octet before the ICRC", v2, 317, 0x01, false},
		{"IPv6 traffic class (high nibble)", v6, 14, 0x0f, true},
		{"IPv6 traffic class and flow label", v6, 15, 0xff, true},
		{"IPv6 flow label", v6, 16, 0xff, true},
		{"IPv6 flow label, low octet", v6, 17, 0xff, true},
		{"IPv6 hop limit", v6, 21, 0xff, true},
		{"IPv6 version", v6, 14, 0x10, false},
		{"IPv6 payload length", v6, 19, 0x01, false},
		{"IPv6 next header", v6, 20, 0x01, false},
		{"GRH traffic class", v1, 14, 0x0f, true},
		{"GRH flow label", v1, 16, 0xff, true},
		{"GRH hop limit", v1, 21, 0xff, true},
		{"GRH next header", v1, 20, 0x01, false},
		{"GRH SGID", v1, 30, 0x01, false},
		{"LRH VL", ib, 0, 0xf0, true},
		{"LRH LVer", ib, 0, 0x01, false},
		{"LRH SL", ib, 1, 0x10, false},
		{"LRH DLID", ib, 3, 0x01, false},
		{"LRH PktLen", ib, 5, 0x01, false},
		{"BTH reserved octet, native IB", ib, 12, 0xff, true},
		{"LRH before a GRH", ibg, 0, 0xff, true},
		{"LRH before a GRH, SLID", ibg, 7, 0xff, true},
		{"GRH after an LRH, hop limit", ibg, 15, 0xff, true},
		{"GRH after an LRH, DGID", ibg, 47, 0x01, false},
	}
	for _, ch := range changes {
		t.Run(ch.name, func(t *testing.T) {
			c := ch.c
			c.frame = append([]byte(nil), c.frame...)
			before := c.compute()
			c.frame[ch.off] ^= ch.xor
			after := c.compute()
			if ch.variant && after != before {
				t.Errorf("ICRC changed from %08x to %08x: the field must be masked", before, after)
			}
			if !ch.variant && after == before {
				t.Errorf("ICRC stayed %08x: the field must be covered", before)
			}
		})
	}
}

// TestICRCShortInput checks that the ICRC functions take headers shorter than
// usual without panicking (a fuzzed or cut frame).
func TestICRCShortInput(t *testing.T) {
	for n := 0; n <= 60; n++ {
		b := rocev2REQ[14 : 14+n]
		ICRCRoCEv2(b, b, b)
		ICRCGRH(b, b)
		ICRCLRH(b, b)
		VCRC(b)
	}
	ICRCRoCEv2(rocev2REQ, nil, nil) // an IP header longer than any real one
	ICRCGRH(nil, nil)
}

func TestVCRC(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		end   int    // where the VCRC starts
		shown uint16 // tshark's infiniband.variant.crc: the stored octets read big-endian
	}{
		{"IB REQ, LRH only", ibREQ, 288, 0x4428},
		{"IB REQ, LRH and GRH", ibGRHREQ, 328, 0xfa14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if stored := binary.BigEndian.Uint16(tt.frame[tt.end:]); stored != tt.shown {
				t.Fatalf("vector broken: the frame holds %04x, tshark showed %04x", stored, tt.shown)
			}
			got := VCRC(tt.frame[:tt.end])
			if want := binary.LittleEndian.Uint16(tt.frame[tt.end:]); got != want {
				t.Errorf("VCRC %04x, want %04x (stored least-significant octet first)", got, want)
			}
			if ref := refVCRC(tt.frame[:tt.end]); ref != got {
				t.Errorf("VCRC %04x, bitwise reference %04x", got, ref)
			}
		})
	}
	// A VL change alters the VCRC (it covers the variant fields too).
	f := append([]byte(nil), ibREQ[:288]...)
	before := VCRC(f)
	f[0] ^= 0xf0
	if VCRC(f) == before {
		t.Error("VCRC does not cover the LRH VL")
	}
	// Known values of the CRC parameters on short inputs, from the bitwise
	// reference: the empty input gives init ^ final xor = 0.
	if got := VCRC(nil); got != 0 {
		t.Errorf("VCRC(empty) = %04x, want 0", got)
	}
}

// refICRC computes an ICRC bit by bit, from the rules in protocols.md, with
// none of crc.go: a CRC-32 (reflected 0xedb88320, init and final xor all
// ones) over 8 octets of ones (or the LRH with VL ones), the masked network
// header, the UDP header with checksum ones, the BTH with octet 4 ones and
// the rest.
func refICRC(c icrcCase) uint32 {
	var pre []byte
	f := c.frame
	switch c.kind {
	case "rocev2":
		ip := append([]byte(nil), f[c.l3:c.l4]...)
		if ip[0]>>4 == 4 {
			ip[1], ip[8], ip[10], ip[11] = 0xff, 0xff, 0xff, 0xff
		} else {
			ip[0] |= 0x0f
			ip[1], ip[2], ip[3], ip[7] = 0xff, 0xff, 0xff, 0xff
		}
		udpHdr := append([]byte(nil), f[c.l4:c.l4+8]...)
		udpHdr[6], udpHdr[7] = 0xff, 0xff
		pre = cat(octets(8, func(int) byte { return 0xff }), ip, udpHdr)
		c.l4 += 8
	case "grh":
		g := append([]byte(nil), f[c.l3:c.l4]...)
		g[0] |= 0x0f
		g[1], g[2], g[3], g[7] = 0xff, 0xff, 0xff, 0xff
		pre = cat(octets(8, func(int) byte { return 0xff }), g)
	case "lrh":
		l := append([]byte(nil), f[c.l3:c.l4]...)
		l[0] |= 0xf0
		pre = l
	}
	bth := append([]byte(nil), f[c.l4:c.end]...)
	bth[4] = 0xff
	crc := ^uint32(0)
	for _, b := range cat(pre, bth) {
		crc ^= uint32(b)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xedb88320
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// refVCRC computes the VCRC bit by bit, most-significant-bit-first with the
// polynomial 0x100b on bit-reversed octets, then reflects the result: the
// same CRC reached another way than crc.go's reflected table.
func refVCRC(p []byte) uint16 {
	crc := uint16(0xffff)
	for _, b := range p {
		crc ^= uint16(rev8(b)) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x100b
			} else {
				crc <<= 1
			}
		}
	}
	return ^rev16(crc)
}

func rev8(b byte) byte {
	var r byte
	for i := range 8 {
		if b&(1<<i) != 0 {
			r |= 0x80 >> i
		}
	}
	return r
}

func rev16(v uint16) uint16 { return uint16(rev8(byte(v)))<<8 | uint16(rev8(byte(v>>8))) }

// TestICRCMaskedOctetFF: a first octet that the mask turns into 0xff (LRH
// VL nibble, IPv6 traffic class) must not overflow the octet table
// (a regression found by FuzzDissectFile).
func TestICRCMaskedOctetFF(t *testing.T) {
	lrh := []byte{0xff, 0x02, 0, 1, 0, 10, 0, 2}
	ib := make([]byte, 16)
	want := crc32.Update(0, crc32.IEEETable, append(append([]byte{}, lrh...), append([]byte{ib[0], ib[1], ib[2], ib[3], 0xff}, ib[5:]...)...))
	if got := ICRCLRH(lrh, ib); got != want {
		t.Errorf("LRH: %08x, want %08x", got, want)
	}
	grh := make([]byte, 40)
	grh[0] = 0x6f
	_ = ICRCGRH(grh, ib) // 0x6f | 0x0f = 0x6f... and 0xff:
	grh[0] = 0xff
	_ = ICRCGRH(grh, ib)
}
