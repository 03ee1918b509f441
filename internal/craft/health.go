package craft

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// RC transport health on a crafted connection: the cases a support
// engineer meets in a capture of a hanging or slow NFS/RDMA mount, each on
// demand (HealthCases), after a NULL Call and a READ whose data the
// responder writes.

// HealthCases are the cases HealthTraffic can write:
//
//   - nak: the capture holds the third packet of the responder's 8-packet
//     RDMA Write only after the fourth: it was lost on the wire; the
//     initiator sends a NAK (PSN sequence error) and the responder sends
//     everything again from there (go-back-N);
//   - rnr: the responder answers a Call with an RNR NAK; the initiator
//     sends it again after the RNR timer, and it is acknowledged;
//   - invalid-request: a Call longer than the inline threshold, which the
//     responder refuses with a NAK Invalid Request;
//   - access-error: the responder writes with an R_Key the initiator no
//     longer accepts (the one its Send With Invalidate invalidated when
//     both sides set R, else one no Call advertised): NAK Remote Access
//     Error;
//   - congestion: RoCEv2 traffic with DSCP 26 and ECN, some of the
//     initiator's packets marked CE and the responder's CNPs (DSCP 48);
//     FECN and BECN on RoCEv1 and native InfiniBand;
//   - missed: a packet of a 3-packet Call missing from the capture, which
//     no NAK names.
var HealthCases = []string{"nak", "rnr", "invalid-request", "access-error", "congestion", "missed"}

// Congestion marks of the congestion case.
const (
	healthDSCP    = 26 // AF31, common for RoCE traffic
	healthCNPDSCP = 48 // CS6, common for CNPs
	ecnECT0       = 0x02
	ecnCE         = 0x03
)

// HealthTraffic builds the exchange's setup, a NULL Call and its Reply, a
// READ whose data the responder writes, then each case asked for, and the
// disconnection.
func (x *Exchange) HealthTraffic(cases []string) ([]Frame, error) {
	for _, k := range cases {
		if !slices.Contains(HealthCases, k) {
			return nil, fmt.Errorf("craft: unknown health case %q (want one of %s)", k, strings.Join(HealthCases, ", "))
		}
	}
	want := func(k string) bool { return slices.Contains(cases, k) }
	conn, err := x.Connect()
	if err != nil {
		return nil, err
	}
	c := &healthConn{Conn: conn}
	setup := len(c.frames)
	n := NFS{C: c.Conn, XID: 0x6a000000 + x.ids()<<8, Credits: 32}
	null := n.Call(RPCMessage{})
	n.Reply(null, RPCMessage{}, SendOpts{})

	// A READ: the responder writes 8 packets into the Call's write chunk;
	// with nak, the third is lost on the wire.
	const va = 0x00007f0000100000
	w1 := layers.RPCRDMASegment{Handle: 0x00010001, Length: uint32(8 * c.mtu), Offset: va}
	inv := !x.Initiator.Absent && !x.Responder.Absent && x.Initiator.RemoteInvalidate && x.Responder.RemoteInvalidate
	read := n.Call(RPCMessage{WriteList: []layers.RPCRDMAChunk{{w1}}, Size: 164})
	if want("nak") {
		c.lostWrite(w1.Handle, w1.Offset, 8, 2)
	} else {
		c.Write(Responder, w1.Handle, w1.Offset, 8*c.mtu)
	}
	c.Ack(Initiator, c.LastPSN(Responder))
	n.Reply(read, RPCMessage{WriteList: []layers.RPCRDMAChunk{{w1}}, Size: 140}, SendOpts{WithInv: inv, Invalidate: w1.Handle})

	if want("rnr") {
		call := RPCMessage{XID: n.XID, Credits: n.Credits}
		n.XID++
		psn := c.nextPSN(Initiator, 1)
		c.packet(Initiator, layers.OpSendOnly, psn, true, nil, call.Bytes())
		c.aeth(Responder, psn, 0x20|0x0e) // RNR NAK, timer code 14 (1.28 ms)
		c.packet(Initiator, layers.OpSendOnly, psn, true, nil, call.Bytes())
		c.Ack(Responder, psn)
		n.Reply(call.XID, RPCMessage{}, SendOpts{})
	}
	if want("missed") {
		call := RPCMessage{XID: n.XID, Credits: n.Credits, Size: 2*c.mtu + 100}
		n.XID++
		before := len(c.frames)
		c.Send(Initiator, call.Bytes(), SendOpts{})
		c.frames = slices.Delete(c.frames, before+1, before+2) // the capture missed the middle packet
		c.Ack(Responder, c.LastPSN(Initiator))
		n.Reply(call.XID, RPCMessage{}, SendOpts{})
	}
	if want("congestion") {
		c.congested(&n)
	}
	if want("access-error") {
		rkey := uint32(0x0001dead) // no Call advertised it
		if inv {
			rkey = w1.Handle // invalidated by the Reply above
		}
		psn := c.nextPSN(Responder, 1)
		c.packet(Responder, layers.OpWriteOnly, psn, true,
			[]gopacket.SerializableLayer{&layers.RETH{VA: va, RKey: rkey, DMALength: 512}}, fill(512, 0x40))
		c.aeth(Initiator, psn, 0x60|0x02) // NAK Remote Access Error
	}
	if want("invalid-request") {
		toRes, _ := x.InlineThresholds()
		big := RPCMessage{XID: n.XID, Credits: n.Credits, Size: toRes + 4}
		n.XID++
		c.Send(Initiator, big.Bytes(), SendOpts{})
		c.aeth(Responder, c.LastPSN(Initiator), 0x60|0x01) // NAK Invalid Request: the receive buffer is too small
	}
	c.Disconnect()
	if want("congestion") {
		c.markAll(setup)
	}
	return c.Frames()
}

// aeth sends an Acknowledge from side with the syndrome given (an ACK, an
// RNR NAK or a NAK) for the other side's request PSN psn.
func (c *Conn) aeth(side Side, psn uint32, syndrome uint8) {
	c.msn[side]++
	c.packet(side, layers.OpAcknowledge, psn, false,
		[]gopacket.SerializableLayer{&layers.AETH{Syndrome: syndrome, MSN: c.msn[side] & 0xffffff}}, nil)
}

// lostWrite writes n packets from the responder into the initiator's
// memory, of which packet lost (from 0) is lost on the wire: the capture
// (at the initiator) holds the packets before it, the two after it, the
// initiator's NAK (PSN sequence error), then everything from the lost one
// again.
func (c *Conn) lostWrite(rkey uint32, va uint64, n, lost int) {
	psn := c.nextPSN(Responder, n)
	op := func(i int) (uint8, []gopacket.SerializableLayer) {
		switch i {
		case 0:
			return layers.OpWriteFirst, []gopacket.SerializableLayer{&layers.RETH{VA: va, RKey: rkey, DMALength: uint32(n * c.mtu)}}
		case n - 1:
			return layers.OpWriteLast, nil
		}
		return layers.OpWriteMiddle, nil
	}
	send := func(i int) {
		o, ext := op(i)
		c.packet(Responder, o, psn+uint32(i), i == n-1, ext, fill(c.mtu, byte(i)))
	}
	for i := range lost {
		send(i)
	}
	send(lost + 1) // the initiator sees the gap, and NAKs
	send(lost + 2)
	c.aeth(Initiator, psn+uint32(lost), 0x60) // NAK PSN sequence error: it expected the lost one
	for i := lost; i < n; i++ {
		send(i)
	}
}

// healthConn is a connection with the frames the congestion case marks:
// by their index in its frames.
type healthConn struct {
	*Conn
	marked []int // CE (RoCEv2) or FECN
	echoed []int // BECN
	cnps   []int
}

// congested is the congestion case's traffic: a Call of three packets
// from the initiator whose second arrives marked, the responder's CNP, its
// Reply.
func (c *healthConn) congested(n *NFS) {
	call := RPCMessage{XID: n.XID, Credits: n.Credits, Size: 2*c.mtu + 100}
	n.XID++
	before := len(c.frames)
	c.Send(Initiator, call.Bytes(), SendOpts{})
	c.marked = append(c.marked, before+1)
	if c.x.Transport == RoCEv2 {
		c.cnp(Responder)
	}
	c.Ack(Responder, c.LastPSN(Initiator))
	before = len(c.frames)
	n.Reply(call.XID, RPCMessage{}, SendOpts{})
	c.echoed = append(c.echoed, before)
}

// cnp sends a RoCEv2 CNP from side to the QP of the other side: a BTH
// with opcode 0x81 and BECN set, 16 reserved octets.
func (c *healthConn) cnp(side Side) {
	if c.err != nil {
		return
	}
	bth := &layers.BTH{OpCode: layers.OpCNP, PKey: 0xffff, BECN: true, DestQP: c.qp[side]}
	cm := &CM{Transport: c.x.Transport, Src: c.ends[side], Dst: c.ends[1-side]}
	data, link, err := cm.build([]gopacket.SerializableLayer{bth, gopacket.Payload(make([]byte, 16))})
	if err != nil {
		c.err = err
		return
	}
	c.t = c.t.Add(2 * time.Microsecond)
	c.frames = append(c.frames, Frame{Data: data, Time: c.t, LinkType: link})
	c.cnps = append(c.cnps, len(c.frames)-1)
}

// markAll sets the congestion marks of the frames after the setup: on
// RoCEv2 every frame's DSCP (26, the CNPs' 48) and ECN (ECT(0), the marked
// packets' CE); on RoCEv1 and native InfiniBand the marked packets' FECN
// and the echoed packets' BECN (and the VCRC again).
func (c *healthConn) markAll(setup int) {
	for i := setup; i < len(c.frames); i++ {
		b := c.frames[i].Data
		switch c.x.Transport {
		case RoCEv2:
			tc := uint8(healthDSCP<<2 | ecnECT0)
			switch {
			case slices.Contains(c.cnps, i):
				tc = healthCNPDSCP << 2
			case slices.Contains(c.marked, i):
				tc = healthDSCP<<2 | ecnCE
			}
			setTrafficClass(b, tc)
		default:
			bth := c.bthOffset(b)
			switch {
			case slices.Contains(c.marked, i):
				b[bth+4] |= 0x80 // FECN
			case slices.Contains(c.echoed, i):
				b[bth+4] |= 0x40 // BECN
			default:
				continue
			}
			if c.x.Transport == InfiniBand {
				binary.LittleEndian.PutUint16(b[len(b)-2:], layers.VCRC(b[:len(b)-2]))
			}
		}
	}
}

// setTrafficClass sets the IP traffic class of a RoCEv2 frame (after a
// 14-octet Ethernet header) and the IPv4 header checksum. Neither the
// ICRC nor the UDP checksum covers it.
func setTrafficClass(b []byte, tc uint8) {
	const l3 = 14
	if b[l3]>>4 == 4 {
		b[l3+1] = tc
		ihl := int(b[l3]&0x0f) * 4
		binary.BigEndian.PutUint16(b[l3+10:], 0)
		var sum uint32
		for i := 0; i < ihl; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[l3+i:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(b[l3+10:], ^uint16(sum))
		return
	}
	b[l3] = b[l3]&0xf0 | tc>>4
	b[l3+1] = b[l3+1]&0x0f | tc<<4
}

// bthOffset is where the BTH of a RoCEv1 or native InfiniBand frame of
// the connection starts.
func (c *Conn) bthOffset(b []byte) int {
	if c.x.Transport == RoCEv1 {
		return 14 + layers.GRHLen
	}
	return layers.LRHLen
}

// WriteCut writes frames as a pcap file whose snap length is snap: every
// frame longer is cut there, as tcpdump -s does.
func WriteCut(w io.Writer, frames []Frame, snap int) error {
	if len(frames) == 0 {
		return fmt.Errorf("craft: no frames to write")
	}
	pw := pcapgo.NewWriterNanos(w)
	lt := frames[0].LinkType
	if err := pw.WriteFileHeader(uint32(snap), golayers.LinkType(lt)); err != nil {
		return err
	}
	for _, f := range frames {
		if f.LinkType != lt {
			return fmt.Errorf("craft: a pcap file holds one link type (%d and %d given)", lt, f.LinkType)
		}
		data := f.Data[:min(len(f.Data), snap)]
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(data), Length: len(f.Data)}
		if err := pw.WritePacket(ci, data); err != nil {
			return err
		}
	}
	return nil
}
