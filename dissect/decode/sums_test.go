package decode

import (
	"encoding/binary"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// FPDUSums sums each whole FPDU at the start of a TCP segment's payload,
// one after the other, and each sum is the CRC field the sender put after
// the octets it names (craft computes it apart, as RFC 5044 says); what
// it does not look into gets none.
func TestFPDUSums(t *testing.T) {
	write := func(i int) craft.FPDUUnit {
		return craft.FPDUUnit{DDP: layers.DDP{Tagged: true, Opcode: layers.RDMAPOpWrite, STag: 9, TaggedOffset: uint64(i * 100), Last: true},
			Payload: make([]byte, 100+i*13)}
	}
	fpdus := func(n int) ([]byte, []int) {
		var units []craft.FPDUUnit
		for i := range n {
			units = append(units, write(i))
		}
		return craft.FPDUStream(units, false, true)
	}
	frame := func(v6 bool, payload []byte) []byte {
		src, dst := craft.Endpoints(3, v6)
		seg := craft.TCP{Src: src, Dst: dst, Seq: 1, ACK: true, Payload: payload}
		b, err := seg.Frame()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one, _ := fpdus(1)
	two, _ := fpdus(2)
	three, starts := fpdus(3)
	cut := three[:starts[2]+10]                     // two whole, the third cut short
	short := append([]byte(nil), one...)            // a ULPDU_Length no DDP header fits in
	binary.BigEndian.PutUint16(short, 4)            // (the framer loses framing there)
	v4 := frame(false, two)                         // the segment's payload starts at 54
	padded := append(frame(false, one), 0, 0, 0, 0) // Ethernet padding after the IP datagram
	vlan, fragment, udp := notPlainTCP(v4)
	for _, c := range []struct {
		name  string
		link  uint16
		b     []byte
		fpdus int
	}{
		{"IPv4, one FPDU", linkEthernet, frame(false, one), 1},
		{"IPv4, two", linkEthernet, v4, 2},
		{"IPv6, three", linkEthernet, frame(true, three), 3},
		{"two and a cut one", linkEthernet, frame(false, cut), 2},
		{"Ethernet padding", linkEthernet, padded, 1},
		{"ULPDU_Length too short", linkEthernet, frame(false, short), 0},
		{"captured short of the IP length", linkEthernet, v4[:len(v4)-1], 0},
		{"VLAN", linkEthernet, vlan, 0},
		{"IPv4 fragment", linkEthernet, fragment, 0},
		{"UDP", linkEthernet, udp, 0},
		{"not Ethernet", 113, v4, 0},
		{"no payload", linkEthernet, frame(false, nil), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := FPDUSums(c.link, c.b, []capture.Sum{{At: -1}})
			if got[0].At != -1 {
				t.Fatal("the sums given were overwritten")
			}
			got = got[1:]
			if len(got) != c.fpdus {
				t.Fatalf("%d sums, want %d: %+v", len(got), c.fpdus, got)
			}
			for i, s := range got {
				end := int(s.At + s.N)
				if field := binary.LittleEndian.Uint32(c.b[end:]); s.Value != field {
					t.Errorf("sum %d (octets %d to %d) is %#x, the CRC field %#x", i, s.At, end, s.Value, field)
				}
				// The first from the payload's start on (after 14 octets of
				// Ethernet, 20 of IPv4 or 40 of IPv6, 20 of TCP), each next
				// one right after the CRC field of the one before.
				at := int32(54)
				if c.b[12] == 0x86 {
					at = 74
				}
				if i > 0 {
					at = got[i-1].At + got[i-1].N + layers.FPDUCRCLen
				}
				if s.At != at {
					t.Errorf("sum %d at %d, want %d", i, s.At, at)
				}
			}
		})
	}
}

// FuzzFPDUSums: whatever the frame, the sums lie in it and each is the
// CRC of the octets it names.
func FuzzFPDUSums(f *testing.F) {
	one, _ := craft.FPDUStream([]craft.FPDUUnit{{DDP: layers.DDP{Opcode: layers.RDMAPOpSend, Last: true}, Payload: make([]byte, 40)}}, false, true)
	src, dst := craft.Endpoints(3, false)
	seg := craft.TCP{Src: src, Dst: dst, Seq: 1, ACK: true, Payload: append(one, one...)}
	b, _ := seg.Frame()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, s := range FPDUSums(linkEthernet, b, nil) {
			if s.At < 0 || s.N < 0 || int(s.At+s.N) > len(b) {
				t.Fatalf("%+v outside %d octets", s, len(b))
			}
			if v := layers.UpdateFPDUCRC(0, b[s.At:s.At+s.N]); v != s.Value {
				t.Fatalf("%+v: the octets' CRC is %#x", s, v)
			}
		}
	})
}
