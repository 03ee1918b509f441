package craft

import (
	"encoding/binary"
	"net/netip"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Floods of the iWARP data path under loss and load: a direction that loses
// a segment or its framing, ordinary TCP before RDMA traffic, and many
// short iWARP connections one after the other.
const (
	// FloodIWARPHole is N iWARP connections (MPA revision 2 with RFC 8797
	// data and CRC), each with five Calls and five Replies alternating,
	// closed by FIN both ways. One data segment of each is missing from
	// the capture: the third Call in connections of even index, the third
	// Reply in those of odd index.
	FloodIWARPHole = "iwarp-hole"
	// FloodIWARPLostResponder is N iWARP connections whose responder's
	// second Reply is an FPDU of DDP version 2 (RFC 5041 defines only 1),
	// so that its direction cannot be followed from there, then eight more
	// Calls and Replies (a grant of 4 credits), closed by FIN both ways.
	FloodIWARPLostResponder = "iwarp-lost-responder"
	// FloodIWARPSequential is N iWARP connections one after the other, each
	// opened, set up (MPA Request and Reply), one Call and its Reply,
	// closed by FIN both ways.
	FloodIWARPSequential = "iwarp-sequential"
	// FloodTCPThenRDMA is N ordinary TCP connections (a handshake, an
	// HTTP-like request and response, then FIN both ways in every other
	// one, the others left open), then TCPThenRDMAIWARP
	// iWARP connections and TCPThenRDMARoCE RoCEv2 connections, each with
	// five Calls and five Replies (iWARP ones closed by FIN, RoCE ones by
	// DREQ and DREP).
	FloodTCPThenRDMA = "tcp-then-rdma"
)

// The RDMA connections after the ordinary TCP of FloodTCPThenRDMA, and the
// Calls (and as many Replies) on each connection of the iWARP floods.
const (
	TCPThenRDMAIWARP = 100
	TCPThenRDMARoCE  = 100
	FloodCalls       = 5
	// LostResponderCalls is the Calls on each connection of
	// FloodIWARPLostResponder.
	LostResponderCalls = 10
)

// rpcPair is an RPC-over-RDMA Call and its Reply, with XID xid, the Reply
// granting credits.
func rpcPair(xid, credits uint32) (call, reply []byte) {
	call = (&RPCMessage{XID: xid, Credits: credits, Proc: layers.RPCRDMAMsg}).Bytes()
	reply = (&RPCMessage{XID: xid, Credits: credits, Proc: layers.RPCRDMAMsg, Reply: true}).Bytes()
	return call, reply
}

// floodIWARPPeer is what both sides of the iWARP floods send: RFC 8797
// data with thresholds of 4096.
var floodIWARPPeer = Peer{SendSize: 4096, ReceiveSize: 4096}

// iwarpCalls is the traffic of n Calls and Replies alternating, each in an
// FPDU (and a TCP segment) of its own.
func iwarpCalls(n int, credits uint32) []IWARPMessage {
	var out []IWARPMessage
	for k := 1; k <= n; k++ {
		call, reply := rpcPair(uint32(k), credits)
		out = append(out, IWARPMessage{Opcode: layers.RDMAPOpSend, Payload: call},
			IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpSend, Payload: reply})
	}
	return out
}

// emitIWARP writes connection i (Index and Attempt from i) of traffic,
// dropping the data segments drop, closed by FIN.
func emitIWARP(i int, traffic []IWARPMessage, drop []int, emit func([]byte) error) error {
	x := IWARPExchange{Rev: 2, Index: i & 0xffff, Attempt: i >> 16, Initiator: floodIWARPPeer, Responder: floodIWARPPeer,
		Traffic: traffic, Drop: drop, Close: true}
	frames, err := x.Frames()
	if err != nil {
		return err
	}
	return emitAll(frames, emit)
}

// floodIWARPHole writes n connections of FloodIWARPHole.
func floodIWARPHole(n int, emit func([]byte) error) error {
	traffic := iwarpCalls(FloodCalls, 32)
	for i := 0; i < n; i++ {
		// The data segments alternate Call, Reply: the third Call is 4, its
		// Reply 5.
		drop := []int{4 + i%2}
		if err := emitIWARP(i, traffic, drop, emit); err != nil {
			return err
		}
	}
	return nil
}

// floodIWARPLostResponder writes n connections of FloodIWARPLostResponder.
func floodIWARPLostResponder(n int, emit func([]byte) error) error {
	traffic := iwarpCalls(LostResponderCalls, 4)
	traffic[3].DDPVersion = 2 // the second Reply
	for i := 0; i < n; i++ {
		if err := emitIWARP(i, traffic, nil, emit); err != nil {
			return err
		}
	}
	return nil
}

// floodIWARPSequential writes n connections of FloodIWARPSequential.
func floodIWARPSequential(n int, emit func([]byte) error) error {
	traffic := iwarpCalls(1, 32)
	for i := 0; i < n; i++ {
		if err := emitIWARP(i, traffic, nil, emit); err != nil {
			return err
		}
	}
	return nil
}

// floodTCPThenRDMA writes n ordinary TCP connections, then the RDMA
// connections of FloodTCPThenRDMA.
func floodTCPThenRDMA(n int, emit func([]byte) error) error {
	if err := ordinaryTCP(n, emit); err != nil {
		return err
	}
	traffic := iwarpCalls(FloodCalls, 32)
	for i := 0; i < TCPThenRDMAIWARP; i++ {
		if err := emitIWARP(i, traffic, nil, emit); err != nil {
			return err
		}
	}
	for i := 0; i < TCPThenRDMARoCE; i++ {
		x := Exchange{Transport: RoCEv2, Index: TCPThenRDMAIWARP + i, Initiator: floodIWARPPeer, Responder: floodIWARPPeer}
		c, err := x.Connect()
		if err != nil {
			return err
		}
		for k := 1; k <= FloodCalls; k++ {
			call, reply := rpcPair(uint32(k), 32)
			c.Send(Initiator, call, SendOpts{})
			c.Send(Responder, reply, SendOpts{})
		}
		c.Disconnect()
		fs, err := c.Frames()
		if err != nil {
			return err
		}
		if err := emitAll(fs, emit); err != nil {
			return err
		}
	}
	return nil
}

// ordinaryTCP writes n HTTP-like TCP connections, from 10.0.0.0/8 (as
// setFloodSource numbers them) to 198.51.100.80 port 80: the handshake, a
// request, a response of 1200 octets (more than an MPA frame spans), and
// in connections of even index FIN both ways (those of odd index stay
// open, as kept-alive ones do).
func ordinaryTCP(n int, emit func([]byte) error) error {
	a, b := floodPeers()
	b.IP, b.Port = netip.AddrFrom4([4]byte{198, 51, 100, 80}), 80
	req := []byte("GET /index.html HTTP/1.1\r\nHost: www.example.org\r\n\r\n")
	resp := append([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1162\r\n\r\n"), make([]byte, 1162)...)
	resp = resp[:1200]
	const ca, cb = 100, 9000
	lq, lp := uint32(len(req)), uint32(len(resp))
	segs := []struct {
		t       TCP
		fromCli bool
	}{
		{TCP{Src: a, Dst: b, Seq: ca, SYN: true}, true},
		{TCP{Src: b, Dst: a, Seq: cb, Ack: ca + 1, SYN: true, ACK: true}, false},
		{TCP{Src: a, Dst: b, Seq: ca + 1, Ack: cb + 1, ACK: true, PSH: true, Payload: req}, true},
		{TCP{Src: b, Dst: a, Seq: cb + 1, Ack: ca + 1 + lq, ACK: true, PSH: true, Payload: resp}, false},
		{TCP{Src: a, Dst: b, Seq: ca + 1 + lq, Ack: cb + 1 + lp, ACK: true, FIN: true}, true},
		{TCP{Src: b, Dst: a, Seq: cb + 1 + lp, Ack: ca + 2 + lq, ACK: true, FIN: true}, false},
		{TCP{Src: a, Dst: b, Seq: ca + 2 + lq, Ack: cb + 2 + lp, ACK: true}, true},
	}
	frames := make([][]byte, len(segs))
	for k := range segs {
		f, err := segs[k].t.Frame()
		if err != nil {
			return err
		}
		frames[k] = f
	}
	for i := 0; i < n; i++ {
		for k, f := range frames {
			if k >= 4 && i%2 == 1 {
				break // left open
			}
			// The client's address and port: the source of its segments, the
			// destination of the server's.
			ip, port := 14+12, 14+20
			if !segs[k].fromCli {
				ip, port = 14+16, 14+22
			}
			binary.BigEndian.PutUint32(f[ip:], 0x0a000000|uint32(i/50000)&0xffffff)
			binary.BigEndian.PutUint16(f[port:], uint16(1024+i%50000))
			resealIPv4(f)
			if err := emit(f); err != nil {
				return err
			}
		}
	}
	return nil
}
