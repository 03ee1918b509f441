package craft

import (
	"fmt"
	"slices"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// RoCEv2 traffic set up without CM: what perftest (without -R) and many
// test programs send. Connected traffic (RC, UC) needs the peers' QP
// numbers, which they exchange over TCP first ("out of band"): perftest on
// port 18515 by default. DC and UD traffic never uses CM.

// The kinds of traffic NoCM builds.
const (
	NoCMRC = "rc" // RC SEND Only and their Acknowledges
	NoCMUC = "uc" // UC SEND Only
	NoCMUD = "ud" // UD SEND Only to a QP other than QP0 and QP1
	// NoCMDC is Mellanox's Dynamically Connected transport as a capture
	// shows it: the Reliable Datagram opcodes (RDMA WRITE Only, and
	// Acknowledge from the target), their RD headers' place taken by 20
	// octets ending in the DC access key.
	NoCMDC = "dc"
)

// NoCMKinds lists the kinds NoCM builds.
var NoCMKinds = []string{NoCMRC, NoCMUC, NoCMUD, NoCMDC}

// PerftestPort is perftest's default TCP port for its out-of-band
// exchange.
const PerftestPort = 18515

// NoCM describes RoCEv2 traffic without CM between the endpoints of
// exchange Index (Endpoints: 192.0.2.1 and 192.0.2.2 for 0, or their IPv6
// forms).
type NoCM struct {
	Kind  string
	Index int
	// Port is the TCP port of an out-of-band exchange before the traffic
	// (perftest's: PerftestPort), with a closing exchange after it as
	// perftest does; 0: no TCP.
	Port uint16
	IPv6 bool
}

// nocmMessages is the messages (with their replies) of NoCM's traffic.
const nocmMessages = 3

// Frames builds the capture: the TCP exchange if asked, then the traffic
// (3 messages and their Acknowledges when the transport has them), then
// the TCP closing.
func (n NoCM) Frames() ([]Frame, error) {
	if !slices.Contains(NoCMKinds, n.Kind) {
		return nil, fmt.Errorf("craft: unknown traffic kind %q (want one of %v)", n.Kind, NoCMKinds)
	}
	a, b := Endpoints(n.Index, n.IPv6)
	c := &Conn{x: &Exchange{Transport: RoCEv2, IPv6: n.IPv6}, ends: [2]Endpoint{a, b}, mtu: 1024,
		qp: [2]uint32{0x000211, 0x000111}, psn: [2]uint32{0x001000, 0x002000}, t: DefaultStart}
	var tcp oobTCP
	if n.Port != 0 {
		tcp = oobTCP{c: c, ends: [2]Endpoint{a, b}, seq: [2]uint32{1000, 5000}}
		tcp.ends[0].Port, tcp.ends[1].Port = 40000, n.Port
		tcp.open()
	}
	payload := fill(64, 0x5a)
	for i := 0; i < nocmMessages; i++ {
		switch n.Kind {
		case NoCMRC:
			c.Send(Initiator, payload, SendOpts{})
			c.Ack(Responder, c.LastPSN(Initiator))
		case NoCMUC:
			c.packet(Initiator, layers.TransportUC|layers.OpSendOnly, c.nextPSN(Initiator, 1), false, nil, payload)
		case NoCMUD:
			c.packet(Initiator, layers.OpUDSendOnly, c.nextPSN(Initiator, 1), false,
				[]gopacket.SerializableLayer{&layers.DETH{QKey: 0x11111111, SrcQP: 0x000333}}, payload)
		case NoCMDC:
			c.packet(Initiator, layers.TransportRD|layers.OpWriteOnly, c.nextPSN(Initiator, 1), true,
				[]gopacket.SerializableLayer{dcHeaders(), &layers.RETH{VA: 0x7f0000001000, RKey: 0x1234, DMALength: 8}}, fill(8, 1))
			c.packet(Responder, layers.TransportRD|layers.OpAcknowledge, c.LastPSN(Initiator), false,
				[]gopacket.SerializableLayer{dcHeaders(), &layers.AETH{Syndrome: 0x1f, MSN: uint32(i + 1)}}, nil)
		}
	}
	if n.Port != 0 {
		tcp.close()
	}
	if c.err != nil {
		return nil, c.err
	}
	if tcp.err != nil {
		return nil, tcp.err
	}
	return c.frames, nil
}

// dcHeaders is what follows a DC packet's BTH before its RETH or AETH, as
// a ConnectX capture shows it: 8 octets, then where RD has its RDETH (4)
// and DETH (8) the DC access key (0xc0dc) in the DETH's Q_Key.
func dcHeaders() gopacket.Payload {
	return gopacket.Payload{0x11, 0, 0x90, 0x36, 0, 0x71, 0x50, 0x01, 0, 0x61, 0xe2, 0x4e, 0, 0, 0xc0, 0xdc, 0, 0, 0, 0}
}

// oobTCP is the out-of-band TCP connection of NoCM, its frames put in the
// traffic's sequence.
type oobTCP struct {
	c    *Conn
	ends [2]Endpoint // client, server
	seq  [2]uint32
	err  error
}

// segment adds one segment from side (0 the client) with payload p.
func (o *oobTCP) segment(side int, syn, fin bool, p []byte) {
	if o.err != nil {
		return
	}
	t := TCP{Src: o.ends[side], Dst: o.ends[1-side], Seq: o.seq[side], Ack: o.seq[1-side], SYN: syn, FIN: fin,
		ACK: !syn || side == 1, PSH: len(p) > 0, Payload: p}
	data, err := t.Frame()
	if err != nil {
		o.err = err
		return
	}
	o.seq[side] += uint32(len(p))
	if syn || fin {
		o.seq[side]++
	}
	o.c.t = o.c.t.Add(10 * time.Microsecond)
	o.c.frames = append(o.c.frames, Frame{Data: data, Time: o.c.t, LinkType: LinkEthernet})
}

// open is the handshake and the exchange of the peers' QP numbers, PSNs,
// R_Keys and addresses (perftest's text, one line each way).
func (o *oobTCP) open() {
	o.segment(0, true, false, nil)
	o.segment(1, true, false, nil)
	o.segment(0, false, false, []byte("0000:000211:001000:00001234:00007f0000001000\x00"))
	o.segment(1, false, false, []byte("0000:000111:002000:00005678:00007f0000002000\x00"))
}

// close is the last synchronisation and the FINs.
func (o *oobTCP) close() {
	o.segment(0, false, false, []byte("done\x00"))
	o.segment(1, false, false, []byte("done\x00"))
	o.segment(0, false, true, nil)
	o.segment(1, false, true, nil)
}
