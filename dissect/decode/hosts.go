package decode

import (
	"encoding/binary"
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// What the data frames of an input say of how their connections were set
// up, so that a capture without CM can say what it saw instead of giving
// advice.
//
// Each data frame (not a CM MAD) is counted by its transport, the top
// three bits of its BTH opcode. Reliable Datagram's opcodes (0x40 to
// 0x5f) are counted as DC: no adapter implements RD, and Mellanox's
// Dynamically Connected transport sends with them (a DC access key
// where RD's DETH is). DC and UD never use CM.
//
// RC, UC and XRC traffic does need a setup. Without CM, applications
// exchange their QP numbers over TCP first ("out of band"): perftest on
// port 18515 by default (-p chooses another), many test programs on a
// port of their own. The decoder notes, per pair of hosts (IP addresses
// over RoCEv2, GIDs over RoCEv1), the first frame of their connected
// traffic, whether any CM MAD passed between them, and the TCP segments
// between them. Connected traffic whose two hosts exchanged no CM MAD
// counts as set up out of band when a TCP connection on port 18515 is in
// the input (at any time, between any hosts: perftest may reach its peer
// by another address than the RDMA one), or when a TCP connection on any
// port joined the same two hosts before their first connected frame.
// Connected traffic whose hosts cannot be told (native InfiniBand, more
// pairs than the table holds) counts only by port 18515.
//
// The table is a fixed array indexed by a hash of the pair: noting a frame
// costs a hash and a comparison or two, and allocates nothing.

// PerftestPort is perftest's default TCP port for its out-of-band
// exchange.
const PerftestPort = 18515

// hostSlots is the size of the host-pair table; maxProbe how many slots
// a pair may look at.
const (
	hostSlots = 128
	maxProbe  = 4
)

// hostPair is two addresses (IPv4-mapped for IPv4), the lower first.
type hostPair struct{ lo, hi [16]byte }

func pairOf(a, b *[16]byte) hostPair {
	// b < a, octet by octet: two comparisons of big-endian words rather
	// than a call of the runtime's (once per TCP segment).
	a0, b0 := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8])
	if b0 < a0 || b0 == a0 && binary.BigEndian.Uint64(b[8:]) < binary.BigEndian.Uint64(a[8:]) {
		return hostPair{*b, *a}
	}
	return hostPair{*a, *b}
}

func (p *hostPair) slot() int {
	w := func(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
	h := w(p.lo[:8])*0x9e3779b97f4a7c15 ^ w(p.lo[8:])*0xc2b2ae3d27d4eb4f ^
		w(p.hi[:8])*0x165667b19e3779f9 ^ w(p.hi[8:])*0x27d4eb2f165667c5
	return int(h >> 57) // 7 bits: hostSlots
}

// hostStat is what one pair of hosts exchanged.
type hostStat struct {
	used     bool
	hosts    hostPair
	cm       bool // a CM MAD passed between them
	rc       int  // their connected (RC, UC, XRC) data frames
	rcFirst  int  // the first of them
	tcp      bool // a TCP segment passed between them before rcFirst (or at all, while rc is 0)
	tcpPort  uint16
	perftest bool // a TCP segment between them on port 18515
}

// hostTable is the decoder's host pairs, and what could not be put in
// it.
type hostTable struct {
	slots [hostSlots]hostStat
	// cache are the entries of the last two pairs' frames (noteData).
	cache [2]hostCache
	next  int
	// untracked counts connected data frames whose hosts are not in the
	// table (native InfiniBand, or the table was full).
	untracked int
	// perftest: a TCP segment on port 18515 was seen.
	perftest bool
}

// find returns the pair's entry, making it if there is room, or nil.
func (t *hostTable) find(p *hostPair) *hostStat {
	s := p.slot()
	for i := 0; i < maxProbe; i++ {
		e := &t.slots[(s+i)%hostSlots]
		if !e.used {
			e.used, e.hosts = true, *p
			return e
		}
		if e.hosts == *p {
			return e
		}
	}
	return nil
}

// dataClass is the transport class of a data frame's BTH, as the decoder
// counts it.
type dataClass uint8

const (
	classNone      dataClass = iota // no opcode (cut short), CNP, reserved, a MAD other than CM
	classConnected                  // RC, UC, XRC: needs a setup
	classDC                         // the RD opcodes: Mellanox's DC
	classUD                         // UD other than MADs
)

// countData counts a data frame (not a CM MAD) whose BTH is at fi.bth by
// its transport, and notes whether it is connected traffic (fi.class).
func (d *Decoder) countData(fi *frameInfo, b []byte) {
	if len(b) <= fi.bth {
		return
	}
	op := b[fi.bth]
	switch op & 0xe0 {
	case layers.TransportRC:
		d.data.rc++
		fi.class = classConnected
	case layers.TransportUC:
		d.data.uc++
		fi.class = classConnected
	case layers.TransportXRC:
		d.data.xrc++
		fi.class = classConnected
	case layers.TransportRD:
		d.data.dc++
		fi.class = classDC
	case layers.TransportUD:
		// Management datagrams go to QP0 and QP1; the others are UD data
		// (IPoIB, applications).
		if len(b) >= fi.bth+8 && uint24(b[fi.bth+5:]) > 1 {
			d.data.ud++
			fi.class = classUD
		}
	}
}

// hostCache is an entry found by an IPv4 frame's two addresses as it has
// them, as one word.
type hostCache struct {
	v4 uint64
	e  *hostStat
}

// hostsOf is the two addresses of an Ethernet-borne InfiniBand-family
// frame (RoCEv2: IP; RoCEv1: GRH), false for native InfiniBand.
func hostsOf(b []byte, fi *frameInfo) (hostPair, bool) {
	var src, dst [16]byte
	switch {
	case fi.lrh >= 0:
		return hostPair{}, false
	case fi.grh >= 0:
		copy(src[:], b[fi.grh+8:fi.grh+24])
		copy(dst[:], b[fi.grh+24:fi.grh+40])
	case fi.ipv6:
		copy(src[:], b[fi.l3+8:fi.l3+24])
		copy(dst[:], b[fi.l3+24:fi.l3+40])
	default:
		src, dst = v4prefix, v4prefix
		copy(src[12:], b[fi.l3+12:fi.l3+16])
		copy(dst[12:], b[fi.l3+16:fi.l3+20])
	}
	return pairOf(&src, &dst), true
}

// noteData notes a connected data frame between its hosts.
func (d *Decoder) noteData(f int, b []byte, fi *frameInfo) {
	// Traffic comes in runs between the same hosts, both ways: the last
	// two pairs' entries are kept by the frame's addresses as it has them
	// (entries are never given back, so they stay theirs). IPv4 addresses
	// are compared as one word.
	t := &d.hosts
	var e *hostStat
	v4 := fi.lrh < 0 && fi.grh < 0 && !fi.ipv6
	var k uint64
	if v4 {
		k = binary.LittleEndian.Uint64(b[fi.l3+12:])
		for i := range t.cache {
			if c := &t.cache[i]; c.e != nil && c.v4 == k {
				e = c.e
				break
			}
		}
	}
	if e == nil {
		p, ok := hostsOf(b, fi)
		if ok {
			e = t.find(&p)
		}
		if e != nil && v4 {
			t.cache[t.next] = hostCache{v4: k, e: e}
			t.next = 1 - t.next
		}
	}
	if e == nil {
		d.hosts.untracked++
		return
	}
	if e.rc == 0 {
		e.rcFirst = f
	}
	e.rc++
}

// noteCM notes a CM MAD between its hosts.
func (d *Decoder) noteCM(b []byte, fi *frameInfo) {
	if p, ok := hostsOf(b, fi); ok {
		if e := d.hosts.find(&p); e != nil {
			e.cm = true
		}
	}
}

// noteTCP notes a TCP segment between its hosts: the server's port of the
// last connection before their connected traffic began (SYN's destination;
// without a SYN, the lower port), and whether any was on port 18515.
func (d *Decoder) noteTCP(s *reassembly.Segment) {
	fl := &s.Flow
	perftest := fl.SrcPort == PerftestPort || fl.DstPort == PerftestPort
	d.hosts.perftest = d.hosts.perftest || perftest
	src, dst := fl.Src, fl.Dst
	if !fl.V6 {
		src[10], src[11], dst[10], dst[11] = 0xff, 0xff, 0xff, 0xff
	}
	p := pairOf(&src, &dst)
	e := d.hosts.find(&p)
	if e == nil {
		return
	}
	e.perftest = e.perftest || perftest
	if e.rc > 0 {
		return // after their traffic began: only port 18515 counts
	}
	port := min(fl.SrcPort, fl.DstPort)
	switch {
	case s.SYN && !s.ACK:
		port = fl.DstPort
	case s.SYN:
		port = fl.SrcPort
	}
	e.tcp, e.tcpPort = true, port
}

// outOfBand is what the host table says at the end of the input: the
// connected data frames set up out of band, and the TCP ports of the
// exchanges that did it, in ascending order.
func (t *hostTable) outOfBand() (frames int, ports []uint16) {
	add := func(p uint16) {
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	for i := range t.slots {
		e := &t.slots[i]
		if !e.used || e.rc == 0 || e.cm {
			continue
		}
		switch {
		case e.perftest:
			frames += e.rc
			add(PerftestPort)
		case e.tcp:
			frames += e.rc
			add(e.tcpPort)
		case t.perftest:
			frames += e.rc
			add(PerftestPort)
		}
	}
	if t.perftest && t.untracked > 0 {
		frames += t.untracked
		add(PerftestPort)
	}
	slices.Sort(ports)
	return frames, ports
}

// Traffic is what the frames decoded so far held besides connection
// messages: InfiniBand-family packets that are not CM MADs, by carrier and
// by transport, the connected ones set up out of band, and the TCP
// segments looked at.
func (d *Decoder) Traffic() record.Traffic {
	oob, ports := d.hosts.outOfBand()
	return record.Traffic{RoCEv2: d.data.rocev2, RoCEv1: d.data.rocev1, InfiniBand: d.data.ib,
		RC: d.data.rc, UC: d.data.uc, XRC: d.data.xrc, DC: d.data.dc, UD: d.data.ud,
		OutOfBand: oob, OutOfBandPorts: ports,
		TCPSegments: d.asm.Stats().Segments}
}
