package live

import (
	"fmt"
	"net/netip"

	"golang.org/x/net/bpf"
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

// The frames let through, for an Ethernet link:
//
//   - EtherType 0x8915 (RoCEv1);
//   - IPv4 or IPv6 UDP to a RoCEv2 port (not IPv4 non-first fragments);
//   - IPv4 or IPv6 TCP segments carrying payload, or SYN, FIN or RST (the
//     MPA frames, and where each direction starts and ends);
//
// untagged, with one 802.1Q/802.1ad tag, or with two (QinQ), and narrowed
// by TCPPorts and Hosts. Everything else is dropped in the kernel.

const (
	accept    = 262144 // octets kept of an accepted frame: the snap length
	maxFilter = 32     // ports or hosts a filter may name
)

// Program compiles the filter to classic BPF for an Ethernet link.
func (f *Filter) Program() ([]bpf.Instruction, error) {
	if len(f.RoCEPorts) > maxFilter || len(f.TCPPorts) > maxFilter || len(f.Hosts) > maxFilter {
		return nil, fmt.Errorf("at most %d ports and %d hosts can be filtered on", maxFilter, maxFilter)
	}
	a := &asm{}
	if f.Loopback {
		a.emit(bpf.LoadExtension{Num: bpf.ExtType})
		a.jeq(packetOutgoing, "drop", "")
	}
	a.emit(bpf.LoadAbsolute{Off: 12, Size: 2})
	a.jeqFar(0x8100, "vlan")
	a.jeqFar(0x88a8, "vlan")
	f.ethertype(a, 14)
	a.label("vlan")
	a.emit(bpf.LoadAbsolute{Off: 16, Size: 2})
	a.jeqFar(0x8100, "vlan2") // 802.1ad outer tag, 802.1Q inner tag (QinQ)
	f.ethertype(a, 18)
	a.label("vlan2")
	a.emit(bpf.LoadAbsolute{Off: 20, Size: 2})
	f.ethertype(a, 22)
	return a.resolve()
}

// packetOutgoing is PACKET_OUTGOING, the skb->pkt_type of a frame the host
// sends.
const packetOutgoing = 4

// ethertype dispatches on the EtherType in A; the layer 3 header is at base.
func (f *Filter) ethertype(a *asm, base uint32) {
	s := fmt.Sprint(base)
	a.jeqFar(0x8915, "roce1_"+s)
	a.jeqFar(0x0800, "ip4_"+s)
	a.jeqFar(0x86dd, "ip6_"+s)
	a.exits()

	// RoCEv1: the GRH's GIDs are IPv6 addresses, or IPv4-mapped.
	a.label("roce1_" + s)
	f.hostCheck(a, "roce1_"+s, base+8, base+24, true)
	a.emit(bpf.RetConstant{Val: accept})

	// IPv4
	a.label("ip4_" + s)
	f.hostCheck(a, "ip4_"+s, base+12, base+16, false)
	a.emit(bpf.LoadAbsolute{Off: base + 6, Size: 2})
	a.jset(0x1fff, "drop", "") // a non-first fragment has no UDP or TCP header
	a.emit(bpf.LoadMemShift{Off: base})
	a.emit(bpf.LoadAbsolute{Off: base + 9, Size: 1})
	a.jeq(17, "udp4_"+s, "")
	a.jeq(6, "tcp4_"+s, "")
	a.exits()
	a.label("udp4_" + s)
	a.emit(bpf.LoadIndirect{Off: base + 2, Size: 2})
	f.rocePorts(a)
	a.label("tcp4_" + s)
	f.tcp(a, "tcp4_"+s, base, true)

	// IPv6 (with the UDP or TCP header right after it)
	a.label("ip6_" + s)
	f.hostCheck(a, "ip6_"+s, base+8, base+24, true)
	a.emit(bpf.LoadAbsolute{Off: base + 6, Size: 1})
	a.jeq(17, "udp6_"+s, "")
	a.jeq(6, "tcp6_"+s, "")
	a.exits()
	a.label("udp6_" + s)
	a.emit(bpf.LoadAbsolute{Off: base + 42, Size: 2})
	f.rocePorts(a)
	a.label("tcp6_" + s)
	f.tcp(a, "tcp6_"+s, base, false)
}

// rocePorts accepts when A is a RoCEv2 port.
func (f *Filter) rocePorts(a *asm) {
	a.jeq(4791, "accept", "")
	for _, p := range f.RoCEPorts {
		a.jeq(uint32(p), "accept", "")
	}
	a.exits()
}

// tcp accepts a segment with payload, SYN, FIN or RST. For IPv4, X holds the
// IP header length; the TCP header follows it. For IPv6 it follows the fixed
// 40-octet header.
func (f *Filter) tcp(a *asm, l string, base uint32, v4 bool) {
	load := func(off uint32, size int) {
		if v4 {
			a.emit(bpf.LoadIndirect{Off: base + off, Size: size})
		} else {
			a.emit(bpf.LoadAbsolute{Off: base + 40 + off, Size: size})
		}
	}
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
	// payload = IP length - headers
	load(12, 1)
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
	if v4 {
		a.emit(bpf.ALUOpX{Op: bpf.ALUOpAdd}) // + IP header length
		a.emit(bpf.TAX{})
		a.emit(bpf.LoadAbsolute{Off: base + 2, Size: 2}) // total length
	} else {
		a.emit(bpf.TAX{})
		a.emit(bpf.LoadAbsolute{Off: base + 4, Size: 2}) // payload length
	}
	a.emit(bpf.JumpIfX{Cond: bpf.JumpGreaterThan, SkipTrue: 1}) // to "accept" (exits puts it second)
	a.exits()
}

// hostCheck drops the packet unless its source (at src) or destination (at
// dst) address is one of the hosts. With v6, the addresses are 16 octets
// (IPv6 or GIDs, IPv4 hosts in their mapped form); else 4.
func (f *Filter) hostCheck(a *asm, l string, src, dst uint32, v6 bool) {
	if len(f.Hosts) == 0 {
		return
	}
	for i, h := range f.Hosts {
		for j, at := range []uint32{src, dst} {
			next := fmt.Sprintf("%s_h%d_%d", l, i, j)
			if !v6 {
				if !h.Is4() {
					continue
				}
				b := h.As4()
				a.emit(bpf.LoadAbsolute{Off: at, Size: 4})
				a.jeq(be32(b[:]), "", next)
				a.ja(l + "_host")
				a.label(next)
				continue
			}
			b := h.As16() // IPv4 hosts as ::ffff:a.b.c.d, as RoCE GIDs carry them
			for w := uint32(0); w < 4; w++ {
				a.emit(bpf.LoadAbsolute{Off: at + 4*w, Size: 4})
				a.jeq(be32(b[4*w:]), "", next)
			}
			a.ja(l + "_host")
			a.label(next)
		}
	}
	a.exits()
	a.label(l + "_host")
}

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
