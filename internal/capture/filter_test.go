package capture

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	golayers "github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
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
	// Many hosts, the one that matters among them: the program compares
	// each address with every host, and hosts that share the first words
	// of an address must not stop the comparison.
	var many []netip.Addr
	for i := 0; i < maxFilter-1; i++ {
		many = append(many, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}))
	}
	for i := 0; i < maxFilter/2-1; i++ {
		many = append(many, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: 0x7f, 15: byte(i)}), // as a6's first three words
			netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 8: byte(i + 1), 15: 1})) // as a6's first two words
	}
	cases = append(cases,
		struct {
			name   string
			filter Filter
			pass   []string
		}{"many hosts", Filter{Hosts: append(append([]netip.Addr{}, many...), b.IP, a6.IP)}, []string{"rocev2", "rocev2 ipv6",
			"rocev2 tagged", "rocev2 qinq", "rocev1", "rocev1 tagged", "tcp payload", "tcp payload v6", "tcp tagged", "tcp syn",
			"tcp fin", "tcp rst v6", "tcp other port"}},
		struct {
			name   string
			filter Filter
			pass   []string
		}{"many other hosts", Filter{Hosts: many}, nil},
		struct {
			name   string
			filter Filter
			pass   []string
		}{"many ports", Filter{Hosts: []netip.Addr{b.IP, b6.IP}, TCPPorts: append(ports(1000, maxFilter-1), 20049),
			RoCEPorts: ports(5000, maxFilter)}, []string{"rocev2", "rocev2 ipv6", "rocev2 tagged", "rocev2 qinq", "rocev1", "rocev1 tagged",
			"tcp payload", "tcp payload v6", "tcp tagged", "tcp syn", "tcp fin", "tcp rst v6"}},
	)
	// The same frames on the other link types: raw IP, Linux cooked
	// (v1 and v2), BSD loopback; only the untagged ones, and RoCEv1 only
	// where there is an EtherType.
	links := []struct {
		link  golayers.LinkType
		frame func(f []byte) []byte
	}{
		{golayers.LinkTypeEthernet, func(f []byte) []byte { return f }},
		{golayers.LinkTypeRaw, func(f []byte) []byte { return f[14:] }},
		{golayers.LinkTypeLinuxSLL, func(f []byte) []byte {
			return append(append([]byte{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0}, f[12:14]...), f[14:]...)
		}},
		{golayers.LinkTypeLinuxSLL2, func(f []byte) []byte {
			return append(append(append([]byte{}, f[12:14]...), 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0), f[14:]...)
		}},
		{golayers.LinkTypeNull, func(f []byte) []byte { return append([]byte{2, 0, 0, 0}, f[14:]...) }},
	}
	for _, tc := range cases {
		for _, l := range links {
			t.Run(fmt.Sprintf("%s/link %d", tc.name, l.link), func(t *testing.T) {
				prog, err := tc.filter.ProgramFor(uint16(l.link))
				if err != nil {
					t.Fatal(err)
				}
				if err := attachable(prog); err != nil {
					t.Fatalf("the kernel refuses the program: %v", err)
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
					ethertype := golayers.EthernetType(f[12])<<8 | golayers.EthernetType(f[13])
					tagged := ethertype == golayers.EthernetTypeDot1Q || ethertype == golayers.EthernetTypeQinQ
					ip := ethertype == golayers.EthernetTypeIPv4 || ethertype == golayers.EthernetTypeIPv6
					cooked := l.link == golayers.LinkTypeLinuxSLL || l.link == golayers.LinkTypeLinuxSLL2
					if l.link != golayers.LinkTypeEthernet && (tagged || (!cooked && !ip)) {
						continue
					}
					n, err := vm.Run(l.frame(f))
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
}

func ports(from, n int) []uint16 {
	var out []uint16
	for i := 0; i < n; i++ {
		out = append(out, uint16(from+i))
	}
	return out
}

// attachable asks the kernel to check the program, attaching it to a UDP
// socket (no privilege needed) where the kernel is Linux; nil elsewhere.
func attachable(prog []bpf.Instruction) error {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	return checkInKernel(raw)
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
	if len(lo) != len(plain)+3 {
		t.Fatalf("%d instructions, want %d", len(lo), len(plain)+3)
	}
	if ext, ok := lo[0].(bpf.LoadExtension); !ok || ext.Num != bpf.ExtType {
		t.Errorf("first instruction %v", lo[0])
	}
	if j, ok := lo[1].(bpf.JumpIf); !ok || j.Val != packetOutgoing || j.Cond != bpf.JumpEqual || j.SkipTrue != 0 || j.SkipFalse != 1 {
		t.Errorf("second instruction %v", lo[1])
	}
	if r, ok := lo[2].(bpf.RetConstant); !ok || r.Val != 0 {
		t.Errorf("third instruction %v", lo[2])
	}
	// With every host and port: the kernel takes it (its scratch-cell
	// check once refused a loopback program).
	if prog, err := maxFilterSet().ProgramFor(uint16(golayers.LinkTypeEthernet)); err != nil {
		t.Fatal(err)
	} else if err := attachable(append(lo[:3:3], prog...)); err != nil {
		t.Errorf("the kernel refuses the loopback program: %v", err)
	}
	for _, f := range []*Filter{{Loopback: true}, func() *Filter { f := maxFilterSet(); f.Loopback = true; return f }()} {
		prog, err := f.Program()
		if err != nil {
			t.Fatal(err)
		}
		if err := attachable(prog); err != nil {
			t.Errorf("the kernel refuses the loopback program: %v", err)
		}
	}
}

// maxFilterSet names as many ports and hosts as a filter may.
func maxFilterSet() *Filter {
	f := &Filter{TCPPorts: ports(20000, maxFilter), RoCEPorts: ports(5000, maxFilter)}
	for i := 0; i < maxFilter; i++ {
		f.Hosts = append(f.Hosts, netip.AddrFrom4([4]byte{10, byte(i), 0, 1}),
			netip.AddrFrom16([16]byte{0xfe, 0x80 + byte(i), 0x0d, 0xb8, 4: byte(i), 9: 7, 15: byte(i)}))
	}
	return f
}

// TestFilterLimits: at most 32 ports of each kind and 32 hosts of each IP
// version; the largest filter stays far below the kernel's limits: 4096
// classic instructions, and net.core.optmem_max, against which the kernel
// charges the program after turning it into eBPF (20480 octets on older
// kernels, 8 octets an eBPF instruction). Each host costs a few
// instructions (it once cost 126).
func TestFilterLimits(t *testing.T) {
	if _, err := (&Filter{TCPPorts: ports(1000, maxFilter+1)}).Program(); err == nil {
		t.Error("too many ports accepted")
	}
	big := maxFilterSet()
	if _, err := (&Filter{Hosts: append(big.Hosts, netip.MustParseAddr("10.99.0.1"))}).Program(); err == nil {
		t.Error("33 IPv4 hosts accepted")
	}
	for _, link := range []golayers.LinkType{golayers.LinkTypeEthernet, golayers.LinkTypeRaw, golayers.LinkTypeLinuxSLL} {
		f := *big
		f.Loopback = link == golayers.LinkTypeEthernet
		prog, err := f.ProgramFor(uint16(link))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bpf.Assemble(prog); err != nil {
			t.Fatal(err)
		}
		est := ebpfEstimate(prog)
		t.Logf("link %d: %d classic instructions, at most %d eBPF (%d octets)", link, len(prog), est, 8*est)
		if len(prog) > 1200 {
			t.Errorf("link %d: %d instructions", link, len(prog))
		}
		// bpf_prog_size: a header of under 256 octets, then the
		// instructions; the socket's other option memory is small.
		if size := 256 + 8*est; size > 20480-2048 {
			t.Errorf("link %d: about %d octets as eBPF, too close to optmem_max 20480", link, size)
		}
		if err := attachable(prog); err != nil {
			t.Errorf("link %d: the kernel refuses the program: %v", link, err)
		}
	}
	// Each host adds a few instructions.
	one, _ := (&Filter{Hosts: big.Hosts[:2]}).Program()
	two, _ := (&Filter{Hosts: big.Hosts[:4]}).Program()
	if d := len(two) - len(one); d > 30 {
		t.Errorf("an IPv4 and an IPv6 host cost %d instructions", d)
	}
}

// ebpfEstimate bounds the eBPF instructions the kernel makes of a classic
// program (net/core/filter.c, bpf_convert_filter): a packet load becomes a
// fast path and a helper call (at most 16), a conditional jump one, one more
// for a constant with the top bit set (moved to a register first) and one
// more for a jump with two targets, a return two, anything else one; plus a
// prologue.
func ebpfEstimate(prog []bpf.Instruction) int {
	n := 16
	for _, ins := range prog {
		switch i := ins.(type) {
		case bpf.LoadAbsolute, bpf.LoadIndirect, bpf.LoadMemShift:
			n += 16
		case bpf.JumpIf:
			n++
			if int32(i.Val) < 0 {
				n++
			}
			if i.SkipTrue != 0 && i.SkipFalse != 0 {
				n++
			}
		case bpf.JumpIfX:
			n += 2
		case bpf.RetA, bpf.RetConstant, bpf.LoadExtension:
			n += 2
		default:
			n++
		}
	}
	return n
}
