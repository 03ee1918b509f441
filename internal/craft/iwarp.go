package craft

import (
	"fmt"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TCP describes one TCP segment in one Ethernet frame.
type TCP struct {
	Src, Dst                Endpoint
	Seq, Ack                uint32
	SYN, ACK, FIN, RST, PSH bool
	// ZeroWindow advertises a receive window of 0 (else 65535).
	ZeroWindow bool
	Payload    []byte
}

// Frame builds the segment's frame, with correct IP and TCP checksums.
func (t *TCP) Frame() ([]byte, error) {
	c := &CM{Src: t.Src, Dst: t.Dst}
	eth, ip, ipl := c.ipHeaders()
	tcp := &golayers.TCP{SrcPort: golayers.TCPPort(t.Src.Port), DstPort: golayers.TCPPort(t.Dst.Port), Seq: t.Seq, Ack: t.Ack,
		SYN: t.SYN, ACK: t.ACK, FIN: t.FIN, RST: t.RST, PSH: t.PSH, Window: 65535}
	if t.ZeroWindow {
		tcp.Window = 0
	}
	switch v := ip.(type) {
	case *golayers.IPv4:
		v.Protocol = golayers.IPProtocolTCP
	case *golayers.IPv6:
		v.NextHeader = golayers.IPProtocolTCP
	}
	if err := tcp.SetNetworkLayerForChecksum(ipl); err != nil {
		return nil, err
	}
	return serialize(gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		[]gopacket.SerializableLayer{eth, ip, tcp, gopacket.Payload(t.Payload)})
}

// MPA describes an MPA Request or Reply frame.
type MPA struct {
	Request     bool
	Rev         uint8 // 1 or 2
	Marker, CRC bool
	Reject      bool
	Enhanced    bool   // the 0x10 flag; craft sets it for revision 2 unless NoEnhanced
	NoEnhanced  bool   // revision 2 without the flag
	Reserved    uint8  // reserved flag bits
	IRD, ORD    uint16 // revision 2 IRD/ORD words
	PeerToPeer  bool
	ZeroSend    bool
	ZeroWrite   bool
	ZeroRead    bool
	Data        []byte // the consumer's private data (after IRD/ORD for revision 2)
	PDLength    int    // override PD_Length (0: the real length; -1: 0)
}

// Bytes returns the frame.
func (m *MPA) Bytes() []byte {
	f := layers.MPAFrame{Request: m.Request, Marker: m.Marker, CRC: m.CRC, Reject: m.Reject, Rev: m.Rev,
		Enhanced: m.Enhanced || (m.Rev == 2 && !m.NoEnhanced), ReservedFlags: m.Reserved}
	pd := m.Data
	if m.Rev == 2 {
		f.HasIRDORD = true
		f.IRD, f.ORD = m.IRD, m.ORD
		f.PeerToPeer, f.ZeroLengthSend, f.ZeroLengthWrite, f.ZeroLengthRead = m.PeerToPeer, m.ZeroSend, m.ZeroWrite, m.ZeroRead
		pd = append(make([]byte, layers.MPAIRDORDLen), pd...)
	}
	f.PrivateData = pd
	f.PDLength = uint16(len(pd))
	switch {
	case m.PDLength > 0:
		f.PDLength = uint16(m.PDLength)
	case m.PDLength < 0:
		f.PDLength = 0
	}
	return f.Encode()
}

// IWARPExchange describes an iWARP connection setup: the TCP handshake, the
// MPA Request, the MPA Reply.
type IWARPExchange struct {
	IPv6      bool
	Rev       uint8 // 1 or 2
	Initiator Peer
	Responder Peer
	Reject    bool  // the Reply rejects the connection (and still carries the responder's data)
	SplitAt   []int // offsets in the Request where a new TCP segment starts
	Start     time.Time
	Index     int    // distinguishes several exchanges in one file
	Attempt   int    // a later connection between the same hosts: a new source port
	Port      uint16 // the responder's TCP port; 0: 20049 (NFS/RDMA)

	// The MPA frames' flags: both set C unless NoCRC; M as asked.
	NoCRC                              bool
	InitiatorMarkers, ResponderMarkers bool // M in the Request, in the Reply
	// IRD and ORD of revision 2 (both 16 when zero).
	RequestIRD, RequestORD, ReplyIRD, ReplyORD uint16

	// Traffic is what follows the Reply, in order (see IWARPMessage).
	Traffic []IWARPMessage
	// TCPSegment cuts each run of messages from one side into segments of
	// this many octets (several FPDUs in one, or one FPDU in several); 0
	// sends each FPDU in a segment of its own.
	TCPSegment int
	// Retransmit sends these data segments (counted from 0 after the
	// Reply) a second time, right after the first.
	Retransmit []int
	// Reorder sends these data segments after the one that follows them.
	Reorder []int
	// Drop leaves these data segments (counted as for Retransmit) out of
	// the capture: the peer received them, the capture lost them, so the
	// closing segments (Close) acknowledge them all the same.
	Drop []int
	// Close ends the connection after its traffic: the initiator's FIN, the
	// responder's FIN, the initiator's last ACK, each acknowledging all the
	// other side sent.
	Close bool
	// ZeroWindow: after each of these data segments (counted as for
	// Retransmit) its receiver sends an ACK advertising a zero window, then
	// one that opens it again.
	ZeroWindow []int
	// Reset ends the connection after its traffic with the initiator's RST
	// (instead of Close).
	Reset bool

	// StreamingRequest and StreamingReply are sent in TCP streaming mode
	// before the MPA Request and Reply: iSER's iSCSI login.
	StreamingRequest, StreamingReply []byte
}

// Frames builds the exchange: SYN, SYN-ACK, ACK, the Request (in one or
// more segments), the Reply.
func (x *IWARPExchange) Frames() ([]Frame, error) {
	if x.Rev != 1 && x.Rev != 2 {
		return nil, fmt.Errorf("craft: MPA revision %d (want 1 or 2)", x.Rev)
	}
	a, b := Endpoints(x.Index, x.IPv6)
	a.Port += uint16(x.Attempt) * 1000
	b.Port = x.Port
	if b.Port == 0 {
		b.Port = 20049
	}
	start := startOr(x.Start)
	ini, res, err := messages(x.Initiator, x.Responder)
	if err != nil {
		return nil, err
	}
	req := (&MPA{Request: true, Rev: x.Rev, CRC: !x.NoCRC, Marker: x.InitiatorMarkers, IRD: or16(x.RequestIRD, 16), ORD: or16(x.RequestORD, 16),
		PeerToPeer: true, ZeroRead: true, Data: ini}).Bytes()
	rep := (&MPA{Rev: x.Rev, CRC: !x.NoCRC, Marker: x.ResponderMarkers, Reject: x.Reject, IRD: or16(x.ReplyIRD, 16), ORD: or16(x.ReplyORD, 16),
		PeerToPeer: true, ZeroRead: true, Data: res}).Bytes()

	ca, cb := uint32(1000+x.Index*100000+x.Attempt*7777), uint32(5000000+x.Index*100000+x.Attempt*7777)
	// Initial sequence numbers advance with time (a 4 µs clock, RFC 6528), so
	// a later connection on the same ports starts elsewhere.
	clock := uint32(start.Sub(DefaultStart) / (4 * time.Microsecond))
	ca, cb = ca+clock, cb+clock
	segs := []TCP{
		{Src: a, Dst: b, Seq: ca, SYN: true},
		{Src: b, Dst: a, Seq: cb, Ack: ca + 1, SYN: true, ACK: true},
		{Src: a, Dst: b, Seq: ca + 1, Ack: cb + 1, ACK: true},
	}
	// Streaming mode first: the MPA frames start after these octets.
	sa, sb := uint32(len(x.StreamingRequest)), uint32(len(x.StreamingReply))
	if sa > 0 {
		segs = append(segs, TCP{Src: a, Dst: b, Seq: ca + 1, Ack: cb + 1, ACK: true, PSH: true, Payload: x.StreamingRequest})
	}
	if sb > 0 {
		segs = append(segs, TCP{Src: b, Dst: a, Seq: cb + 1, Ack: ca + 1 + sa, ACK: true, PSH: true, Payload: x.StreamingReply})
	}
	ca, cb = ca+sa, cb+sb
	cuts := append(append([]int{0}, x.SplitAt...), len(req))
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		if lo >= hi || hi > len(req) {
			return nil, fmt.Errorf("split offsets must grow, each from 1 to %d: the MPA Request is %d octets", len(req)-1, len(req))
		}
		segs = append(segs, TCP{Src: a, Dst: b, Seq: ca + 1 + uint32(lo), Ack: cb + 1, ACK: true, PSH: true, Payload: req[lo:hi]})
	}
	segs = append(segs, TCP{Src: b, Dst: a, Seq: cb + 1, Ack: ca + 1 + uint32(len(req)), ACK: true, PSH: true, Payload: rep})
	data, err := x.traffic([2]Endpoint{a, b}, [2]uint32{ca + 1 + uint32(len(req)), cb + 1 + uint32(len(rep))})
	if err != nil {
		return nil, err
	}
	end := [2]uint32{ca + 1 + uint32(len(req)), cb + 1 + uint32(len(rep))}
	for i := range data {
		side := 0
		if data[i].Src.IP == b.IP && data[i].Src.Port == b.Port {
			side = 1
		}
		if e := data[i].Seq + uint32(len(data[i].Payload)); int32(e-end[side]) > 0 {
			end[side] = e
		}
		if !slices.Contains(x.Drop, i) {
			segs = append(segs, data[i])
		}
		if slices.Contains(x.ZeroWindow, i) {
			d := &data[i]
			ack := d.Seq + uint32(len(d.Payload))
			segs = append(segs, TCP{Src: d.Dst, Dst: d.Src, Seq: end[1-side], Ack: ack, ACK: true, ZeroWindow: true},
				TCP{Src: d.Dst, Dst: d.Src, Seq: end[1-side], Ack: ack, ACK: true})
		}
	}
	switch {
	case x.Reset:
		segs = append(segs, TCP{Src: a, Dst: b, Seq: end[0], Ack: end[1], ACK: true, RST: true})
	case x.Close:
		segs = append(segs,
			TCP{Src: a, Dst: b, Seq: end[0], Ack: end[1], ACK: true, FIN: true},
			TCP{Src: b, Dst: a, Seq: end[1], Ack: end[0] + 1, ACK: true, FIN: true},
			TCP{Src: a, Dst: b, Seq: end[0] + 1, Ack: end[1] + 1, ACK: true})
	}
	var out []Frame
	for i := range segs {
		data, err := segs[i].Frame()
		if err != nil {
			return nil, err
		}
		out = append(out, Frame{Data: data, Time: start.Add(time.Duration(i) * time.Millisecond), LinkType: LinkEthernet})
	}
	return out, nil
}
