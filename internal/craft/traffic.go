package craft

import (
	"fmt"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Reliable Connected data traffic on a crafted connection: SENDs (split to
// the path MTU, padded, with Immediate or Invalidate), RDMA WRITEs, RDMA
// READs with their responses, Acknowledges, and the disconnection. Every
// packet has the PSN of its side's sequence and correct ICRCs.

// endpoints are the exchange's initiator and responder; a later attempt
// connects from another source port.
func (x *Exchange) endpoints() (Endpoint, Endpoint) {
	a, b := Endpoints(x.Index, x.IPv6)
	if x.Initiator2 != nil {
		a = *x.Initiator2
	}
	if x.Responder2 != nil {
		b = *x.Responder2
	}
	a.Port += uint16(x.Attempt) * 1000
	return a, b
}

// ids is what tells the exchange's identifiers from those of other
// exchanges and attempts.
func (x *Exchange) ids() uint32 { return uint32(x.Index) + uint32(x.Attempt)<<16 }

// qpn is the Local QPN of the REQ, or of the REP.
func (x *Exchange) qpn(rep bool) uint32 {
	if rep {
		return 0x000200 + x.ids()
	}
	return 0x000100 + x.ids()
}

// startPSN is the Starting PSN of the REQ, or of the REP.
func (x *Exchange) startPSN(rep bool) uint32 {
	if rep {
		return 0x002000 + x.ids()
	}
	return 0x001000 + x.ids()
}

// Side names a side of a connection.
type Side int

// The sides.
const (
	Initiator Side = 0
	Responder Side = 1
)

// Conn builds the traffic of an established crafted connection, frame by
// frame, after its setup.
type Conn struct {
	x      *Exchange
	ends   [2]Endpoint
	qp     [2]uint32 // the QPN each side's frames go to
	psn    [2]uint32 // each side's next request PSN
	msn    [2]uint32
	mtu    int
	t      time.Time
	frames []Frame
	err    error
}

// Connect builds the exchange's setup (REQ, REP, RTU) and returns the
// connection, whose traffic follows.
func (x *Exchange) Connect() (*Conn, error) {
	if x.Transport != RoCEv2 && x.Transport != RoCEv1 && x.Transport != InfiniBand {
		return nil, fmt.Errorf("craft: data traffic over %q is not built", x.Transport)
	}
	if x.Reject {
		return nil, fmt.Errorf("craft: a rejected connection carries no traffic")
	}
	setup, err := x.Frames()
	if err != nil {
		return nil, err
	}
	a, b := x.endpoints()
	c := &Conn{x: x, ends: [2]Endpoint{a, b}, frames: setup, t: setup[len(setup)-1].Time,
		qp:  [2]uint32{x.qpn(true), x.qpn(false)},
		psn: [2]uint32{x.startPSN(true), x.startPSN(false)},
		mtu: 128 << or8(x.PathMTU, 3)}
	return c, nil
}

// Frames is the connection's frames so far: its setup, then its traffic.
func (c *Conn) Frames() ([]Frame, error) { return c.frames, c.err }

// packet adds one RC packet from side: BTH, extended headers, payload
// padded to 4 octets.
func (c *Conn) packet(side Side, op uint8, psn uint32, ack bool, ext []gopacket.SerializableLayer, payload []byte) {
	if c.err != nil {
		return
	}
	pad := (4 - len(payload)%4) % 4
	bth := &layers.BTH{OpCode: op, PadCnt: uint8(pad), PKey: 0xffff, DestQP: c.qp[side], AckReq: ack, PSN: psn & 0xffffff}
	ls := append([]gopacket.SerializableLayer{bth}, ext...)
	if len(payload)+pad > 0 {
		ls = append(ls, gopacket.Payload(append(append([]byte(nil), payload...), make([]byte, pad)...)))
	}
	cm := &CM{Transport: c.x.Transport, Src: c.ends[side], Dst: c.ends[1-side]}
	data, link, err := cm.build(ls)
	if err != nil {
		c.err = err
		return
	}
	c.t = c.t.Add(10 * time.Microsecond)
	c.frames = append(c.frames, Frame{Data: data, Time: c.t, LinkType: link})
}

// nextPSN takes n PSNs of side's request sequence.
func (c *Conn) nextPSN(side Side, n int) uint32 {
	p := c.psn[side]
	c.psn[side] = (p + uint32(n)) & 0xffffff
	return p
}

// SendOpts vary a Send.
type SendOpts struct {
	Invalidate uint32 // the R_Key to invalidate: SEND (Last, Only) with Invalidate
	WithInv    bool   // use Invalidate (Invalidate may be 0)
	Immediate  bool   // SEND (Last, Only) with Immediate
}

// Send sends data from side as one SEND message: SEND Only, or First,
// Middle..., Last of the path MTU each.
func (c *Conn) Send(side Side, data []byte, o SendOpts) {
	n := max(1, (len(data)+c.mtu-1)/c.mtu)
	psn := c.nextPSN(side, n)
	for i := 0; i < n; i++ {
		part := data[i*c.mtu : min(len(data), (i+1)*c.mtu)]
		var op uint8
		var ext []gopacket.SerializableLayer
		last := i == n-1
		switch {
		case n == 1:
			op = layers.OpSendOnly
		case i == 0:
			op = layers.OpSendFirst
		case !last:
			op = layers.OpSendMiddle
		default:
			op = layers.OpSendLast
		}
		if last {
			switch {
			case o.WithInv && n == 1:
				op, ext = layers.OpSendOnlyInvalidate, []gopacket.SerializableLayer{&layers.IETH{RKey: o.Invalidate}}
			case o.WithInv:
				op, ext = layers.OpSendLastInvalidate, []gopacket.SerializableLayer{&layers.IETH{RKey: o.Invalidate}}
			case o.Immediate:
				op, ext = op+1, []gopacket.SerializableLayer{&layers.ImmDt{Data: 0x1234}} // Only → Only with Immediate, Last → Last with Immediate
			}
		}
		c.packet(side, op, psn+uint32(i), last, ext, part)
	}
}

// Ack sends an Acknowledge from side for the other side's request PSN psn.
func (c *Conn) Ack(side Side, psn uint32) {
	c.msn[side]++
	c.packet(side, layers.OpAcknowledge, psn, false,
		[]gopacket.SerializableLayer{&layers.AETH{Syndrome: 0x1f, MSN: c.msn[side] & 0xffffff}}, nil)
}

// LastPSN is the last request PSN side used.
func (c *Conn) LastPSN(side Side) uint32 { return (c.psn[side] - 1) & 0xffffff }

// Write writes n octets from side into the other side's memory (rkey, va):
// RDMA WRITE Only, or First (with the RETH), Middle..., Last.
func (c *Conn) Write(side Side, rkey uint32, va uint64, n int) {
	c.write(side, rkey, va, n, nil)
}

// WriteData writes data from side into the other side's memory (rkey,
// va), as Write.
func (c *Conn) WriteData(side Side, rkey uint32, va uint64, data []byte) {
	c.write(side, rkey, va, len(data), data)
}

// write writes data, or n octets of a pattern when data is nil.
func (c *Conn) write(side Side, rkey uint32, va uint64, n int, data []byte) {
	np := max(1, (n+c.mtu-1)/c.mtu)
	psn := c.nextPSN(side, np)
	for i := 0; i < np; i++ {
		size := min(c.mtu, n-i*c.mtu)
		var op uint8
		var ext []gopacket.SerializableLayer
		switch {
		case np == 1:
			op = layers.OpWriteOnly
		case i == 0:
			op = layers.OpWriteFirst
		case i < np-1:
			op = layers.OpWriteMiddle
		default:
			op = layers.OpWriteLast
		}
		if i == 0 {
			ext = []gopacket.SerializableLayer{&layers.RETH{VA: va, RKey: rkey, DMALength: uint32(n)}}
		}
		part := fill(size, byte(i))
		if data != nil {
			part = data[i*c.mtu : i*c.mtu+size]
		}
		c.packet(side, op, psn+uint32(i), i == np-1, ext, part)
	}
}

// ReadRequest sends an RDMA READ Request from side for n octets of the
// other side's memory, and returns its first PSN; Respond answers it.
func (c *Conn) ReadRequest(side Side, rkey uint32, va uint64, n int) uint32 {
	np := max(1, (n+c.mtu-1)/c.mtu)
	psn := c.nextPSN(side, np)
	c.packet(side, layers.OpReadRequest, psn, true, []gopacket.SerializableLayer{&layers.RETH{VA: va, RKey: rkey, DMALength: uint32(n)}}, nil)
	return psn
}

// Respond sends the READ Response of the other side to side's Read of n
// octets at psn: Only, or First, Middle..., Last (AETH on First and Last).
func (c *Conn) Respond(side Side, psn uint32, n int) { c.respond(side, psn, n, nil) }

// RespondData sends the READ Response of the other side to side's Read at
// psn that carries data (the octets the Read pulled), as Respond.
func (c *Conn) RespondData(side Side, psn uint32, data []byte) { c.respond(side, psn, len(data), data) }

// respond sends a READ Response of data, or of n octets of a pattern when
// data is nil.
func (c *Conn) respond(side Side, psn uint32, n int, data []byte) {
	from := 1 - side
	np := max(1, (n+c.mtu-1)/c.mtu)
	for i := 0; i < np; i++ {
		size := min(c.mtu, n-i*c.mtu)
		var op uint8
		var ext []gopacket.SerializableLayer
		switch {
		case np == 1:
			op = layers.OpReadResponseOnly
		case i == 0:
			op = layers.OpReadResponseFirst
		case i < np-1:
			op = layers.OpReadResponseMiddle
		default:
			op = layers.OpReadResponseLast
		}
		if op != layers.OpReadResponseMiddle {
			c.msn[from]++
			ext = []gopacket.SerializableLayer{&layers.AETH{Syndrome: 0x1f, MSN: c.msn[from] & 0xffffff}}
		}
		part := fill(size, 0xa0+byte(i))
		if data != nil {
			part = data[i*c.mtu : i*c.mtu+size]
		}
		c.packet(from, op, psn+uint32(i), false, ext, part)
	}
}

// Read is a whole RDMA Read: side's Request and the other side's Response.
func (c *Conn) Read(side Side, rkey uint32, va uint64, n int) {
	c.Respond(side, c.ReadRequest(side, rkey, va, n), n)
}

// Disconnect ends the connection: the initiator's DREQ, the responder's
// DREP.
func (c *Conn) Disconnect() {
	if c.err != nil {
		return
	}
	n := c.x.ids()
	reqID, repID := 0x0a000001+n, 0x0b000001+n
	tid := uint64(0x0000000200000000) | uint64(n)<<8
	dreq := &layers.CMDreq{LocalCommID: reqID, RemoteCommID: repID, RemoteQPNEECN: c.qp[Initiator]}
	drep := &layers.CMDrep{LocalCommID: repID, RemoteCommID: reqID}
	for i, m := range []layers.CMMessage{dreq, drep} {
		side := Side(i)
		cm := &CM{Transport: c.x.Transport, Src: c.ends[side], Dst: c.ends[1-side], Msg: m, TID: tid}
		data, link, err := cm.Frame()
		if err != nil {
			c.err = err
			return
		}
		c.t = c.t.Add(time.Millisecond)
		c.frames = append(c.frames, Frame{Data: data, Time: c.t, LinkType: link})
	}
}

// fill is n octets of a recognisable pattern.
func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}
