package capture

import (
	"fmt"
	"net/netip"

	golayers "github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Filter says which frames the kernel lets through to the dissector: the
// candidates for RDMA connection setup, and nothing else, so that a busy host
// does not drown the tool.
type Filter struct {
	// RoCEPorts are the UDP destination ports of RoCEv2 (4791 is added).
	RoCEPorts []uint16
	// TCPPorts, when set, keep only TCP segments from or to these ports.
	TCPPorts []uint16
	// Hosts, when set, keep only IP traffic from or to these addresses (and
	// RoCEv1 packets whose GIDs carry them).
	Hosts []netip.Addr
	// Loopback drops the outgoing copy of each frame: on a loopback
	// interface AF_PACKET sees every frame twice, going out and coming in.
	Loopback bool
}

// The frames let through:
//
//   - EtherType 0x8915 (RoCEv1);
//   - IPv4 or IPv6 UDP to a RoCEv2 port (not IPv4 non-first fragments);
//   - IPv4 or IPv6 TCP segments carrying payload, or SYN, FIN or RST (the
//     MPA frames, and where each direction starts and ends);
//
// on Ethernet untagged, with one 802.1Q/802.1ad tag, or with two (QinQ),
// and narrowed by TCPPorts and Hosts. Everything else is dropped in the
// kernel.
//
// The program finds the layer 3 header first (its offset in X, saved in
// M[0]; the EtherType in A), then runs one body for every link type and tag
// depth. The addresses of a packet are loaded once and compared with every
// host, so that each host costs a few instructions: the kernel turns each
// classic load into about ten eBPF instructions, and charges the program
// (8 octets an eBPF instruction) against net.core.optmem_max, 20480 on older
// kernels.

const (
	accept    = 262144 // octets kept of an accepted frame: the snap length
	maxFilter = 32     // ports, and hosts of each IP version, a filter may name
)

// Scratch memory cells.
const (
	memBase  = 0 // offset of the layer 3 header
	memType  = 1 // EtherType
	memTmp   = 2
	memAddr0 = 4 // M[4..7]: the 16-octet address being compared
)

// Program compiles the filter to classic BPF for an Ethernet link.
func (f *Filter) Program() ([]bpf.Instruction, error) {
	return f.ProgramFor(uint16(golayers.LinkTypeEthernet))
}

// Check says whether the filter names no more ports and hosts than it can
// hold.
func (f *Filter) Check() error {
	v4, v6 := f.hosts()
	if len(f.RoCEPorts) > maxFilter || len(f.TCPPorts) > maxFilter || len(v4) > maxFilter || len(v6) > maxFilter {
		return fmt.Errorf("at most %d --port, %d --roce-port, and %d IPv4 and %d IPv6 --host addresses can be filtered on",
			maxFilter, maxFilter, maxFilter, maxFilter)
	}
	return nil
}

// ProgramFor compiles the filter to classic BPF for frames of a link type
// (a LINKTYPE_* value): Ethernet, Linux cooked (SLL, SLL2), raw IP, or BSD
// loopback.
func (f *Filter) ProgramFor(link uint16) ([]bpf.Instruction, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	v4, v6 := f.hosts()
	a := &asm{}
	if f.Loopback {
		// Its own return: the kernel checks the scratch cells linearly,
		// and a later "drop" reached from before the cells are written
		// would make every cell after it unreadable.
		a.emit(bpf.LoadExtension{Num: bpf.ExtType})
		a.jeq(packetOutgoing, "", "incoming")
		a.emit(bpf.RetConstant{Val: 0})
		a.label("incoming")
	}
	switch lt := golayers.LinkType(link); lt {
	case golayers.LinkTypeEthernet:
		a.emit(bpf.LoadAbsolute{Off: 12, Size: 2})
		a.jeq(etherType(golayers.EthernetTypeDot1Q), "vlan", "")
		a.jeq(etherType(golayers.EthernetTypeQinQ), "vlan", "")
		a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 14})
		a.ja("l3")
		a.label("vlan")
		a.emit(bpf.LoadAbsolute{Off: 16, Size: 2})
		a.jeq(etherType(golayers.EthernetTypeDot1Q), "vlan2", "") // 802.1ad outer tag, 802.1Q inner tag (QinQ)
		a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 18})
		a.ja("l3")
		a.label("vlan2")
		a.emit(bpf.LoadAbsolute{Off: 20, Size: 2})
		a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 22})
	case golayers.LinkTypeLinuxSLL:
		a.emit(bpf.LoadAbsolute{Off: 14, Size: 2})
		a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 16})
	case golayers.LinkTypeLinuxSLL2:
		a.emit(bpf.LoadAbsolute{Off: 0, Size: 2})
		a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 20})
	case golayers.LinkTypeRaw, golayers.LinkTypeIPv4, golayers.LinkTypeIPv6, golayers.LinkTypeNull, golayers.LinkTypeLoop:
		// The IP header right away (after a 4-octet address family for
		// the BSD loopback types): its version says which.
		base := uint32(0)
		if lt == golayers.LinkTypeNull || lt == golayers.LinkTypeLoop {
			base = 4
		}
		a.emit(bpf.LoadAbsolute{Off: base, Size: 1})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf0})
		a.jeq(0x40, "raw4", "")
		a.jeq(0x60, "raw6", "")
		a.exits()
		a.label("raw4")
		a.emit(bpf.LoadConstant{Dst: bpf.RegA, Val: etherType(golayers.EthernetTypeIPv4)})
		a.ja("raw")
		a.label("raw6")
		a.emit(bpf.LoadConstant{Dst: bpf.RegA, Val: etherType(golayers.EthernetTypeIPv6)})
		a.label("raw")
		a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: base})
	default:
		return nil, fmt.Errorf("no candidate filter for link type %d", link)
	}
	a.label("l3")
	f.body(a, v4, v6)
	return a.resolve()
}

// hosts splits the hosts by IP version, without repeats.
func (f *Filter) hosts() (v4, v6 []netip.Addr) {
	seen := map[netip.Addr]bool{}
	for _, h := range f.Hosts {
		h = h.Unmap()
		if seen[h] {
			continue
		}
		seen[h] = true
		if h.Is4() {
			v4 = append(v4, h)
		} else {
			v6 = append(v6, h)
		}
	}
	return v4, v6
}

// packetOutgoing is PACKET_OUTGOING, the skb->pkt_type of a frame the host
// sends.
const packetOutgoing = 4

// body dispatches on the EtherType in A; X is the offset of the layer 3
// header.
func (f *Filter) body(a *asm, v4, v6 []netip.Addr) {
	hosts := len(v4)+len(v6) > 0
	a.emit(bpf.StoreScratch{Src: bpf.RegX, N: memBase})
	if hosts {
		a.emit(bpf.StoreScratch{Src: bpf.RegA, N: memType})
	}
	a.jeqFar(etherType(golayers.EthernetTypeIPv4), "ip4")
	a.jeqFar(etherType(golayers.EthernetTypeIPv6), "a16")
	a.jeqFar(layers.EtherTypeRoCEv1, "roce1")
	a.exits()

	// RoCEv1 and IPv6: the GRH's GIDs and the IPv6 addresses are at the
	// same offsets; GIDs carry IPv4 addresses in their mapped form.
	a.label("roce1")
	if !hosts {
		a.emit(bpf.RetConstant{Val: accept})
	}
	a.label("a16")
	if hosts {
		f.hostCheck16(a, v4, v6)
		a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memType})
		a.jeq(layers.EtherTypeRoCEv1, "accept", "")
	}
	// IPv6 (with the UDP or TCP header right after it)
	a.emit(bpf.LoadIndirect{Off: 6, Size: 1})
	a.jeq(uint32(golayers.IPProtocolUDP), "udp6", "")
	a.jeq(uint32(golayers.IPProtocolTCP), "tcp6", "")
	a.exits()
	a.label("udp6")
	a.emit(bpf.LoadIndirect{Off: 42, Size: 2})
	f.rocePorts(a)
	a.label("tcp6")
	f.tcp(a, "tcp6", false)

	// IPv4
	a.label("ip4")
	if hosts {
		f.hostCheck4(a, v4)
	}
	a.emit(bpf.LoadIndirect{Off: 6, Size: 2})
	a.jset(0x1fff, "drop", "") // a non-first fragment has no UDP or TCP header
	a.emit(bpf.LoadIndirect{Off: 9, Size: 1})
	a.jeq(uint32(golayers.IPProtocolUDP), "udp4", "")
	a.jeq(uint32(golayers.IPProtocolTCP), "tcp4", "")
	a.exits()
	a.label("udp4")
	transport4(a)
	a.emit(bpf.LoadIndirect{Off: 2, Size: 2})
	f.rocePorts(a)
	a.label("tcp4")
	transport4(a)
	f.tcp(a, "tcp4", true)
}

// transport4 sets X to the offset of the header after IPv4's: X + 4*IHL.
func transport4(a *asm) {
	a.emit(bpf.LoadIndirect{Off: 0, Size: 1})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x0f})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
	a.emit(bpf.ALUOpX{Op: bpf.ALUOpAdd})
	a.emit(bpf.TAX{})
}

// rocePorts accepts when A is a RoCEv2 port.
func (f *Filter) rocePorts(a *asm) {
	seen := map[uint16]bool{layers.RoCEv2Port: true}
	a.jeq(layers.RoCEv2Port, "accept", "")
	for _, p := range f.RoCEPorts {
		if !seen[p] {
			seen[p] = true
			a.jeq(uint32(p), "accept", "")
		}
	}
	a.exits()
}

// tcp accepts a segment with payload, SYN, FIN or RST. For IPv4, X is the
// offset of the TCP header; for IPv6, of the IPv6 header, the TCP header
// following its fixed 40 octets.
func (f *Filter) tcp(a *asm, l string, v4 bool) {
	off := uint32(40)
	if v4 {
		off = 0
	}
	load := func(o uint32, size int) { a.emit(bpf.LoadIndirect{Off: off + o, Size: size}) }
	if len(f.TCPPorts) > 0 {
		load(0, 2)
		for _, p := range f.TCPPorts {
			a.jeq(uint32(p), l+"_port", "")
		}
		load(2, 2)
		for _, p := range f.TCPPorts {
			a.jeq(uint32(p), l+"_port", "")
		}
		a.exits()
		a.label(l + "_port")
	}
	load(13, 1)
	a.jset(0x07, "accept", "") // FIN, SYN or RST
	if v4 {
		// payload = IP total length - IP header - TCP header: accept when
		// base + total length > X + TCP header.
		load(12, 1)
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
		a.emit(bpf.ALUOpX{Op: bpf.ALUOpAdd})
		a.emit(bpf.StoreScratch{Src: bpf.RegA, N: memTmp})
		a.emit(bpf.LoadScratch{Dst: bpf.RegX, N: memBase})
		a.emit(bpf.LoadIndirect{Off: 2, Size: 2}) // total length
		a.emit(bpf.ALUOpX{Op: bpf.ALUOpAdd})
		a.emit(bpf.LoadScratch{Dst: bpf.RegX, N: memTmp})
	} else {
		// payload length > TCP header
		a.emit(bpf.LoadIndirect{Off: 4, Size: 2})
		a.emit(bpf.StoreScratch{Src: bpf.RegA, N: memTmp})
		load(12, 1)
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
		a.emit(bpf.TAX{})
		a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memTmp})
	}
	a.emit(bpf.JumpIfX{Cond: bpf.JumpGreaterThan, SkipTrue: 1}) // to "accept" (exits puts it second)
	a.exits()
}

// hostCheck4 drops an IPv4 packet (header at X) unless its source or
// destination address is one of the hosts.
func (f *Filter) hostCheck4(a *asm, v4 []netip.Addr) {
	for _, at := range []uint32{12, 16} {
		if len(v4) == 0 {
			break
		}
		a.emit(bpf.LoadIndirect{Off: at, Size: 4})
		for _, h := range v4 {
			b := h.As4()
			a.jeq(be32(b[:]), "ip4_host", "")
		}
	}
	a.exits()
	a.label("ip4_host")
}

// hostCheck16 drops a packet with 16-octet addresses at X+8 (source) and
// X+24 (destination), IPv6 addresses or GIDs, unless one is a host: an IPv6
// host, or an IPv4 host in its mapped form (::ffff:a.b.c.d), as RoCE GIDs
// carry them. Each address is loaded once into M[4..7].
func (f *Filter) hostCheck16(a *asm, v4, v6 []netip.Addr) {
	for i, at := range []uint32{8, 24} {
		p := fmt.Sprintf("a16_%d", i)
		for w := uint32(0); w < 4; w++ {
			a.emit(bpf.LoadIndirect{Off: at + 4*w, Size: 4})
			a.emit(bpf.StoreScratch{Src: bpf.RegA, N: memAddr0 + int(w)})
		}
		if len(v4) > 0 {
			a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memAddr0})
			a.jeq(0, "", p+"_v6")
			a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memAddr0 + 1})
			a.jeq(0, "", p+"_v6")
			a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memAddr0 + 2})
			a.jeq(0xffff, "", p+"_v6")
			a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memAddr0 + 3})
			for _, h := range v4 {
				b := h.As4()
				a.jeq(be32(b[:]), p+"_mapped", "")
			}
			a.ja(p + "_next") // no IPv6 host is IPv4-mapped
			a.label(p + "_mapped")
			a.ja("a16_host")
		}
		a.label(p + "_v6")
		if len(v6) > 0 {
			// A holds the first word while the hosts' first words differ.
			a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memAddr0})
			for j, h := range v6 {
				b := h.As16()
				h := fmt.Sprintf("%s_h%d", p, j)
				a.jeq(be32(b[0:]), "", h)
				for w := 1; w < 4; w++ {
					a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memAddr0 + w})
					a.jeq(be32(b[4*w:]), "", h+"_reload")
				}
				a.ja("a16_host")
				a.label(h + "_reload")
				a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: memAddr0})
				a.label(h)
			}
		}
		a.label(p + "_next")
	}
	a.exits()
	a.label("a16_host")
}

// etherType is an EtherType as the filter compares it.
func etherType(t golayers.EthernetType) uint32 { return uint32(t) }

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// asm assembles classic BPF with symbolic jump targets. A label may be
// placed several times: a jump goes to its next placement, so that "drop"
// and "accept" returns can be repeated along the program and every jump stays
// within the 255 instructions classic BPF allows.
type asm struct {
	ins    []bpf.Instruction
	jumps  []jump
	labels map[string][]int
}

type jump struct {
	at     int
	jt, jf string // "" means the next instruction
	always bool
}

func (a *asm) emit(i bpf.Instruction) { a.ins = append(a.ins, i) }

func (a *asm) label(l string) {
	if a.labels == nil {
		a.labels = map[string][]int{}
	}
	a.labels[l] = append(a.labels[l], len(a.ins))
}

// exits ends a block: it drops what falls through, and places the "drop" and
// "accept" returns the jumps before it reach.
func (a *asm) exits() {
	a.label("drop")
	a.emit(bpf.RetConstant{Val: 0})
	a.label("accept")
	a.emit(bpf.RetConstant{Val: accept})
}

func (a *asm) jeq(k uint32, jt, jf string) {
	a.jumps = append(a.jumps, jump{at: len(a.ins), jt: jt, jf: jf})
	a.emit(bpf.JumpIf{Cond: bpf.JumpEqual, Val: k})
}

// jeqFar jumps to a label that may lie more than 255 instructions ahead,
// through an unconditional jump (whose offset has 32 bits).
func (a *asm) jeqFar(k uint32, l string) {
	a.emit(bpf.JumpIf{Cond: bpf.JumpEqual, Val: k, SkipTrue: 0, SkipFalse: 1})
	a.ja(l)
}

func (a *asm) jset(k uint32, jt, jf string) {
	a.jumps = append(a.jumps, jump{at: len(a.ins), jt: jt, jf: jf})
	a.emit(bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: k})
}

func (a *asm) ja(l string) {
	a.jumps = append(a.jumps, jump{at: len(a.ins), jt: l, always: true})
	a.emit(bpf.Jump{})
}

// resolve turns the labels into relative skips.
func (a *asm) resolve() ([]bpf.Instruction, error) {
	skip := func(from int, l string) (int, error) {
		if l == "" {
			return 0, nil
		}
		for _, to := range a.labels[l] {
			if to > from {
				return to - from - 1, nil
			}
		}
		return 0, fmt.Errorf("bpf: no label %q after instruction %d", l, from)
	}
	for _, j := range a.jumps {
		t, err := skip(j.at, j.jt)
		if err != nil {
			return nil, err
		}
		if j.always {
			a.ins[j.at] = bpf.Jump{Skip: uint32(t)}
			continue
		}
		f, err := skip(j.at, j.jf)
		if err != nil {
			return nil, err
		}
		if t > 255 || f > 255 {
			return nil, fmt.Errorf("bpf: filter too long (a jump of %d instructions)", max(t, f))
		}
		ji := a.ins[j.at].(bpf.JumpIf)
		ji.SkipTrue, ji.SkipFalse = uint8(t), uint8(f)
		a.ins[j.at] = ji
	}
	return a.ins, nil
}
