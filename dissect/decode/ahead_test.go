package decode

import (
	"encoding/binary"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// The direction read from a frame shown ahead is the one parseTCP reads
// from it when it comes, for the frames Ahead looks into; the others are
// not looked into (a hint for them would go to a slot of nothing).
func TestAheadFlow(t *testing.T) {
	tcpFrame := func(v6 bool) []byte {
		src, dst := craft.Endpoints(7, v6)
		seg := craft.TCP{Src: src, Dst: dst, Seq: 100, ACK: true, Payload: make([]byte, 64)}
		b, err := seg.Frame()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v4 := tcpFrame(false)
	// IPv4 options (two NOPs and an end of list, padded to four octets):
	// the segment sits four octets further on.
	withOptions := append(append(append([]byte(nil), v4[:34]...), 1, 1, 0, 0), v4[34:]...)
	withOptions[14] = 0x46
	binary.BigEndian.PutUint16(withOptions[16:], binary.BigEndian.Uint16(v4[16:])+4)
	vlan, fragment, udp := notPlainTCP(v4)
	for _, c := range []struct {
		name string
		link uint16
		b    []byte
		want bool
	}{
		{"IPv4 TCP", linkEthernet, v4, true},
		{"IPv4 options", linkEthernet, withOptions, true},
		{"IPv6 TCP", linkEthernet, tcpFrame(true), false},
		{"VLAN", linkEthernet, vlan, false},
		{"fragment", linkEthernet, fragment, false},
		{"UDP", linkEthernet, udp, false},
		{"cut before the ports", linkEthernet, v4[:35], false},
		{"raw IP", linkRaw, v4[14:], false},
		{"nothing", linkEthernet, nil, false},
	} {
		got, ok := aheadFlow(c.link, c.b)
		if ok != c.want {
			t.Errorf("%s: looked into %v, want %v", c.name, ok, c.want)
			continue
		}
		if !ok {
			continue
		}
		d := New("t", Config{})
		fi := d.classify(c.link, c.b)
		var seg reassembly.Segment
		if fi.kind != kindTCP || !parseTCP(c.b, &fi, &seg) {
			t.Fatalf("%s: not a TCP segment to the decoder", c.name)
		}
		if got != seg.Flow {
			t.Errorf("%s: ahead %+v, parsed %+v", c.name, got, seg.Flow)
		}
	}
}

// Looking ahead changes nothing the decoder finds: the same frames, shown
// ahead rightly, wrongly or not at all, give the same flow table.
func TestAheadChangesNothing(t *testing.T) {
	run := func(show func(bf *bulkFlows) []byte) reassembly.Stats {
		bf := newBulkFlows(t, 50000, 400)
		d := New("t", Config{})
		for range 150000 {
			d.Decode(bf.nextFrame())
			if show != nil {
				d.Ahead(linkEthernet, show(bf))
			}
		}
		if show != nil && !d.LooksAhead() {
			t.Fatal("50 000 directions: not looking ahead")
		}
		return d.TCPStats()
	}
	want := run(nil)
	for name, show := range map[string]func(*bulkFlows) []byte{
		"right": func(bf *bulkFlows) []byte { return bf.peek(2) },
		"wrong": func(bf *bulkFlows) []byte { return bf.peek(7) },
		"cut":   func(bf *bulkFlows) []byte { return bf.peek(2)[:30] },
	} {
		if got := run(show); got != want {
			t.Errorf("shown %s: %+v, want %+v", name, got, want)
		}
	}
}

// notPlainTCP makes, of a plain Ethernet IPv4 TCP frame, three that the
// looks ahead (plainTCP) do not look into: with a VLAN tag, a first
// fragment, and a UDP datagram.
func notPlainTCP(v4 []byte) (vlan, fragment, udp []byte) {
	vlan = append(append(append([]byte(nil), v4[:12]...), 0x81, 0x00, 0x00, 0x05), v4[12:]...)
	fragment = append([]byte(nil), v4...)
	binary.BigEndian.PutUint16(fragment[20:], 0x2000) // more fragments
	udp = append([]byte(nil), v4...)
	udp[23] = 17
	return vlan, fragment, udp
}
