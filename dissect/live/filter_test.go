package live

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestFilter runs the compiled filter in x/net/bpf's virtual machine over
// crafted frames: every candidate passes, everything else is dropped, and
// --port and --host narrow it.
func TestFilter(t *testing.T) {
	a, b := craft.Endpoints(0, false)
	a6, b6 := craft.Endpoints(0, true)
	b.Port, b6.Port = 20049, 20049
	rep := &layers.CMRep{LocalCommID: 2, RemoteCommID: 1}
	cm := func(c craft.CM) []byte {
		c.Msg = rep
		f, _, err := c.Frame()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tcp := func(src, dst craft.Endpoint, flags string, payload []byte) []byte {
		tc := craft.TCP{Src: src, Dst: dst, Seq: 1, ACK: true, Payload: payload}
		switch flags {
		case "syn":
			tc.SYN, tc.ACK = true, false
		case "fin":
			tc.FIN = true
		case "rst":
			tc.RST = true
		}
		f, err := tc.Frame()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tagged := func(f []byte) []byte {
		out := append(append([]byte(nil), f[:12]...), 0x81, 0x00, 0x00, 0x64)
		return append(out, f[12:]...)
	}
	qinq := func(f []byte) []byte {
		out := append(append([]byte(nil), f[:12]...), 0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x00, 0x64)
		return append(out, f[12:]...)
	}
	udp := func(dport uint16) []byte {
		f := cm(craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b, DstPort: dport})
		return f
	}
	fragment := func(f []byte) []byte {
		g := append([]byte(nil), f...)
		g[20], g[21] = 0x00, 0x10 // fragment offset 16 (octets 128), not the first
		return g
	}
	arp := append(append(net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, a.MAC...), 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1)
	arp = append(arp, make([]byte, 20)...)
	roce1 := cm(craft.CM{Transport: craft.RoCEv1, Src: a, Dst: b})
	payload := []byte("MPA ID Req Frame")

	frames := map[string][]byte{
		"rocev2":           cm(craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b}),
		"rocev2 ipv6":      cm(craft.CM{Transport: craft.RoCEv2, Src: a6, Dst: b6}),
		"rocev2 tagged":    tagged(cm(craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b})),
		"rocev2 qinq":      qinq(cm(craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b})),
		"tcp ack qinq":     qinq(tcp(a, b, "", nil)),
		"rocev2 port 4792": udp(4792),
		"rocev2 fragment":  fragment(cm(craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b})),
		"rocev1":           roce1,
		"rocev1 tagged":    tagged(roce1),
		"tcp payload":      tcp(a, b, "", payload),
		"tcp payload v6":   tcp(a6, b6, "", payload),
		"tcp tagged":       tagged(tcp(a, b, "", payload)),
		"tcp ack":          tcp(a, b, "", nil),
		"tcp ack v6":       tcp(a6, b6, "", nil),
		"tcp syn":          tcp(a, b, "syn", nil),
		"tcp fin":          tcp(a, b, "fin", nil),
		"tcp rst v6":       tcp(a6, b6, "rst", nil),
		"tcp other port":   tcp(a, craft.Endpoint{IP: b.IP, MAC: b.MAC, Port: 22}, "", payload),
		"arp":              arp,
	}
	cases := []struct {
		name   string
		filter Filter
		pass   []string
	}{
		{"default", Filter{}, []string{"rocev2", "rocev2 ipv6", "rocev2 tagged", "rocev2 qinq", "rocev1", "rocev1 tagged", "tcp payload",
			"tcp payload v6", "tcp tagged", "tcp syn", "tcp fin", "tcp rst v6", "tcp other port"}},
		{"extra RoCE port", Filter{RoCEPorts: []uint16{4792}}, []string{"rocev2", "rocev2 ipv6", "rocev2 tagged", "rocev2 qinq",
			"rocev2 port 4792", "rocev1", "rocev1 tagged", "tcp payload", "tcp payload v6", "tcp tagged", "tcp syn", "tcp fin",
			"tcp rst v6", "tcp other port"}},
		{"TCP port", Filter{TCPPorts: []uint16{20049}}, []string{"rocev2", "rocev2 ipv6", "rocev2 tagged", "rocev2 qinq", "rocev1",
			"rocev1 tagged", "tcp payload", "tcp payload v6", "tcp tagged", "tcp syn", "tcp fin", "tcp rst v6"}},
		{"IPv4 host", Filter{Hosts: []netip.Addr{b.IP}}, []string{"rocev2", "rocev2 tagged", "rocev2 qinq", "rocev1", "rocev1 tagged",
			"tcp payload", "tcp tagged", "tcp syn", "tcp fin", "tcp other port"}},
		{"IPv6 host", Filter{Hosts: []netip.Addr{a6.IP}}, []string{"rocev2 ipv6", "tcp payload v6", "tcp rst v6"}},
		{"other host", Filter{Hosts: []netip.Addr{netip.MustParseAddr("198.51.100.7")}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := tc.filter.Program()
			if err != nil {
				t.Fatal(err)
			}
			vm, err := bpf.NewVM(prog)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, n := range tc.pass {
				want[n] = true
			}
			for name, f := range frames {
				n, err := vm.Run(f)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got := n > 0; got != want[name] {
					t.Errorf("%s: passed %v, want %v", name, got, want[name])
				}
				if n > 0 && n != accept {
					t.Errorf("%s: keeps %d octets", name, n)
				}
			}
		})
	}
}

// TestFilterLoopback: on loopback the program starts by dropping outgoing
// copies (skb->pkt_type PACKET_OUTGOING), which the kernel evaluates; the rest
// is the same program.
func TestFilterLoopback(t *testing.T) {
	plain, _ := (&Filter{}).Program()
	lo, err := (&Filter{Loopback: true}).Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(lo) != len(plain)+2 {
		t.Fatalf("%d instructions, want %d", len(lo), len(plain)+2)
	}
	if ext, ok := lo[0].(bpf.LoadExtension); !ok || ext.Num != bpf.ExtType {
		t.Errorf("first instruction %v", lo[0])
	}
	if j, ok := lo[1].(bpf.JumpIf); !ok || j.Val != packetOutgoing || j.Cond != bpf.JumpEqual {
		t.Errorf("second instruction %v", lo[1])
	}
	if _, err := bpf.Assemble(lo); err != nil {
		t.Error(err)
	}
}

func TestFilterLimits(t *testing.T) {
	var many []uint16
	for i := 0; i < maxFilter+1; i++ {
		many = append(many, uint16(1000+i))
	}
	if _, err := (&Filter{TCPPorts: many}).Program(); err == nil {
		t.Error("too many ports accepted")
	}
	// The largest filter allowed still assembles (jumps within 255).
	var hosts []netip.Addr
	for i := 0; i < 8; i++ {
		hosts = append(hosts, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}))
	}
	if prog, err := (&Filter{Hosts: hosts, TCPPorts: many[:8]}).Program(); err != nil {
		t.Errorf("8 hosts and 8 ports: %v", err)
	} else if _, err := bpf.Assemble(prog); err != nil {
		t.Error(err)
	}
}
