package craft

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Workload describes a reproducible mixed capture for performance runs: the
// bulk of a support bundle (RDMA data, TCP bulk, small UDP) with connection
// setups sprinkled in.
type Workload struct {
	Size     int64  // octets to write (approximately: the file stops after the frame that crosses it)
	Seed     uint64 // the same seed gives the same file
	CMEvery  int    // frames between CM exchanges (REQ, REP, RTU); default 2000
	MPAEvery int    // frames between iWARP connections (handshake, MPA Request, MPA Reply); default 5000
	// TCPFlows, when set, makes every bulk frame a TCP segment of one of
	// this many concurrent flows, in turn, captured mid-stream (no
	// handshake): a capture of busy TCP with the connection setups hidden in
	// it.
	TCPFlows int
	// TCPSegment is the payload of a bulk TCP segment; default 1448.
	TCPSegment int
}

// WorkloadCounts is what a workload holds, for checking a run found it all.
type WorkloadCounts struct {
	Frames     int
	Octets     int64
	RoCEData   int
	TCPBulk    int
	SmallUDP   int
	CMExchange int // REQ + REP + RTU each
	MPAConns   int // MPA_REQ + MPA_REP each
}

// Messages is the number of connection messages the dissector must report.
func (c WorkloadCounts) Messages() int { return 3*c.CMExchange + 2*c.MPAConns }

// Connections is the number of connection attempts (all established).
func (c WorkloadCounts) Connections() int { return c.CMExchange + c.MPAConns }

func (c WorkloadCounts) String() string {
	return fmt.Sprintf("frames %d, octets %d: RoCEv2 data %d, TCP bulk %d, small UDP %d; CM exchanges %d, iWARP connections %d; "+
		"expect %d messages (REQ %d, REP %d, RTU %d, MPA_REQ %d, MPA_REP %d) and %d established connections",
		c.Frames, c.Octets, c.RoCEData, c.TCPBulk, c.SmallUDP, c.CMExchange, c.MPAConns, c.Messages(),
		c.CMExchange, c.CMExchange, c.CMExchange, c.MPAConns, c.MPAConns, c.Connections())
}

// Write writes the workload as a pcap file. About 60 % of the frames are
// RoCEv2 RC data (UDP 4791, not QP1, about 1 KiB), 30 % TCP bulk (1448-octet
// segments) and 10 % small UDP.
func (wl Workload) Write(w io.Writer) (WorkloadCounts, error) {
	var c WorkloadCounts
	if wl.CMEvery <= 0 {
		wl.CMEvery = 2000
	}
	if wl.MPAEvery <= 0 {
		wl.MPAEvery = 5000
	}
	rng := rand.New(rand.NewPCG(wl.Seed, 0x5eed))
	out, err := newPcapOut(w, rng, 2000, 2000, &c.Frames, &c.Octets)
	if err != nil {
		return c, err
	}
	emit := out.emit
	emitAll := func(frames []Frame, err error) error {
		for _, f := range frames {
			if err != nil {
				break
			}
			err = emit(f.Data)
		}
		return err
	}
	tpl, err := newTemplates()
	if err != nil {
		return c, err
	}
	if wl.TCPFlows > 0 {
		if err := tpl.flows(wl.TCPFlows, wl.TCPSegment); err != nil {
			return c, err
		}
	}
	cmNext, mpaNext := wl.CMEvery/2, wl.MPAEvery/3
	for c.Octets < wl.Size {
		switch {
		case c.Frames >= cmNext && wl.TCPFlows == 0: // TCP only: no CM exchange
			cmNext += wl.CMEvery
			x := Exchange{Transport: RoCEv2, Index: c.CMExchange % 50, Attempt: c.CMExchange / 50, Start: out.t,
				Initiator: Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
				Responder: Peer{SendSize: 8192, ReceiveSize: 8192}}
			if err := emitAll(x.Frames()); err != nil {
				return c, err
			}
			c.CMExchange++
		case c.Frames >= mpaNext:
			mpaNext += wl.MPAEvery
			x := IWARPExchange{Rev: 2, Index: 60 + c.MPAConns%40, Attempt: c.MPAConns / 40, Start: out.t,
				Initiator: Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
				Responder: Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}}
			if err := emitAll(x.Frames()); err != nil {
				return c, err
			}
			c.MPAConns++
		case wl.TCPFlows > 0:
			if err := emit(tpl.nextFlow()); err != nil {
				return c, err
			}
			c.TCPBulk++
		default:
			var data []byte
			switch r := rng.IntN(10); {
			case r < 6:
				data = tpl.roce(rng)
				c.RoCEData++
			case r < 9:
				data = tpl.tcp(rng)
				c.TCPBulk++
			default:
				data = tpl.udp(rng)
				c.SmallUDP++
			}
			if err := emit(data); err != nil {
				return c, err
			}
		}
	}
	return c, out.flush()
}

// templates are pre-built frames that the workload patches (PSN, sequence
// numbers, ports) instead of serializing every frame anew.
type templates struct {
	roceFrame []byte
	tcpFrames [][]byte // one per bulk flow
	tcpSeq    []uint32
	udpFrame  []byte
	psn       uint32
	// TCPFlows
	flowFrame []byte
	flowSeq   []uint32
	flowNext  int
}

func newTemplates() (*templates, error) {
	tp := &templates{}
	a, b := Endpoints(100, false)
	// RoCEv2 RC RDMA WRITE Only to QP 0x000123 with 1024 octets (plus RETH).
	bth := &layers.BTH{OpCode: 0x0a, PKey: 0xffff, DestQP: 0x000123, AckReq: true}
	c := &CM{Transport: RoCEv2, Src: a, Dst: b}
	payload := make([]byte, 16+1024) // RETH and data
	for i := range payload {
		payload[i] = byte(i)
	}
	f, _, err := c.build([]gopacket.SerializableLayer{bth, gopacket.Payload(payload)})
	if err != nil {
		return nil, err
	}
	tp.roceFrame = f
	for i := 0; i < 4; i++ {
		src, dst := Endpoints(110+i, false)
		dst.Port = 5001
		seg := TCP{Src: src, Dst: dst, Seq: 1, Ack: 1, ACK: true, Payload: make([]byte, 1448)}
		f, err := seg.Frame()
		if err != nil {
			return nil, err
		}
		tp.tcpFrames = append(tp.tcpFrames, f)
		tp.tcpSeq = append(tp.tcpSeq, 1)
	}
	// A small UDP datagram (a DNS query's size) to port 53.
	eth := &golayers.Ethernet{SrcMAC: a.MAC, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 0x35}, EthernetType: golayers.EthernetTypeIPv4}
	ip := &golayers.IPv4{Version: 4, TTL: 64, Protocol: golayers.IPProtocolUDP, SrcIP: a.IP.AsSlice(),
		DstIP: netip.MustParseAddr("198.51.100.53").AsSlice()}
	udp := &golayers.UDP{SrcPort: 40000, DstPort: 53}
	_ = udp.SetNetworkLayerForChecksum(ip)
	if tp.udpFrame, err = serialize(gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		[]gopacket.SerializableLayer{eth, ip, udp, gopacket.Payload(make([]byte, 60))}); err != nil {
		return nil, err
	}
	return tp, nil
}

func (tp *templates) roce(rng *rand.Rand) []byte {
	tp.psn = (tp.psn + 1) & 0xffffff
	putUint24(tp.roceFrame[42+9:], tp.psn)
	return tp.roceFrame
}

func (tp *templates) tcp(rng *rand.Rand) []byte {
	i := rng.IntN(len(tp.tcpFrames))
	f := tp.tcpFrames[i]
	binary.BigEndian.PutUint32(f[14+20+4:], tp.tcpSeq[i])
	tp.tcpSeq[i] += 1448
	return f
}

// flows prepares n concurrent bulk flows with segments of size octets:
// 10.x.y.z:port to 198.51.100.80:5001, each with its own sequence numbers.
func (tp *templates) flows(n, size int) error {
	if size <= 0 {
		size = 1448
	}
	src, dst := Endpoints(120, false)
	dst.IP, dst.Port = netip.MustParseAddr("198.51.100.80"), 5001
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i % 251)
	}
	seg := TCP{Src: src, Dst: dst, Seq: 1, Ack: 1, ACK: true, Payload: payload}
	f, err := seg.Frame()
	if err != nil {
		return err
	}
	tp.flowFrame, tp.flowSeq = f, make([]uint32, n)
	for i := range tp.flowSeq {
		tp.flowSeq[i] = uint32(i) * 0x9e3779b1
	}
	return nil
}

// nextFlow is the next segment of the next flow in turn.
func (tp *templates) nextFlow() []byte {
	i := tp.flowNext
	tp.flowNext = (tp.flowNext + 1) % len(tp.flowSeq)
	f := tp.flowFrame
	binary.BigEndian.PutUint32(f[14+12:], 0x0a000000|uint32(i/50000)<<8)
	binary.BigEndian.PutUint16(f[14+20:], uint16(1024+i%50000))
	binary.BigEndian.PutUint32(f[14+20+4:], tp.flowSeq[i])
	tp.flowSeq[i] += uint32(len(f) - 14 - 20 - 20)
	return f
}

func (tp *templates) udp(rng *rand.Rand) []byte {
	binary.BigEndian.PutUint16(tp.udpFrame[14+20:], uint16(40000+rng.IntN(20000)))
	return tp.udpFrame
}

func putUint24(b []byte, v uint32) {
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}
