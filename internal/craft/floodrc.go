package craft

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Data-path floods: hostile captures that try to make the data path keep
// state.
const (
	// FloodRCConns is N RoCEv2 connections set up with RFC 8797 data (path
	// MTU 256), each with an outstanding Call advertising 20 STags and a
	// multi-packet Send begun and never finished, none ever disconnected.
	FloodRCConns = "rc-conns"
	// FloodRCDirections is N directions of RC traffic without their
	// setup, each beginning a multi-packet Send and never finishing it.
	FloodRCDirections = "rc-directions"
	// FloodIWARPConns is N iWARP connections (handshake, MPA revision 2
	// Request and Reply with RFC 8797 data, CRC), each with an outstanding
	// Call in a Send over two DDP segments of which only the first is
	// sent, none ever closed: every connection's traffic stays followed.
	FloodIWARPConns = "iwarp-conns"
	// FloodOrphanReplies is N iWARP connections whose MPA Request is not in
	// the capture: the handshake, then an MPA Reply with 65000 octets of
	// private data. Each Reply waits for its Request, which never comes.
	FloodOrphanReplies = "orphan-replies"
)

// floodOrphanReplies writes n connections of FloodOrphanReplies.
func floodOrphanReplies(n int, emit func([]byte) error) error {
	pd := make([]byte, 65000)
	for i := range pd {
		pd[i] = byte(i)
	}
	for i := 0; i < n; i++ {
		x := IWARPExchange{Rev: 1, Index: i & 0xffff, Attempt: i >> 16, Responder: Peer{Data: pd}}
		frames, err := x.Frames()
		if err != nil {
			return err
		}
		for j, f := range frames {
			if j == 3 {
				continue // the MPA Request
			}
			if err := emit(f.Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// floodIWARP writes n connections of FloodIWARPConns through emit.
func floodIWARP(n int, emit func([]byte) error) error {
	call := (&RPCMessage{XID: 1, Credits: 32, Proc: layers.RPCRDMAMsg}).Bytes()
	call = append(call, make([]byte, 600)...)
	p := Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	for i := 0; i < n; i++ {
		x := IWARPExchange{Rev: 2, Index: i & 0xffff, Attempt: i >> 16, Initiator: p, Responder: p,
			Traffic: []IWARPMessage{{Opcode: layers.RDMAPOpSend, Payload: call, MaxSegment: 400}}}
		frames, err := x.Frames()
		if err != nil {
			return err
		}
		if err := emitAll(frames[:len(frames)-1], emit); err != nil { // the Send's last segment never comes
			return err
		}
	}
	return nil
}

// floodRCConns writes n RoCEv2 connections of FloodRCConns.
func floodRCConns(n int, emit func([]byte) error) error { return floodRC(FloodRCConns, n, emit) }

// floodRCDirections writes n RC directions of FloodRCDirections.
func floodRCDirections(n int, emit func([]byte) error) error {
	return floodRC(FloodRCDirections, n, emit)
}

// floodRC writes n units of a data-path flood kind through emit.
func floodRC(kind string, n int, emit func([]byte) error) error {
	segs := make([]layers.RPCRDMAReadSegment, 20)
	for i := range segs {
		segs[i] = layers.RPCRDMAReadSegment{RPCRDMASegment: layers.RPCRDMASegment{Handle: uint32(0x1000 + i), Length: 4096, Offset: uint64(i) << 12}}
	}
	call := (&RPCMessage{XID: 1, Credits: 32, Proc: layers.RPCRDMAMsg, ReadList: segs}).Bytes()
	long := (&RPCMessage{XID: 2, Credits: 32, Proc: layers.RPCRDMAMsg}).Bytes()
	long = append(long, make([]byte, 600)...)
	var (
		first []byte
		at    = -1
	)
	for i := 0; i < n; i++ {
		x := Exchange{Transport: RoCEv2, Index: i & 0xffff, Attempt: i >> 16,
			PathMTU:   1,
			Initiator: Peer{SendSize: 4096, ReceiveSize: 4096}, Responder: Peer{SendSize: 4096, ReceiveSize: 4096}}
		c, err := x.Connect()
		if err != nil {
			return err
		}
		if kind == FloodRCConns {
			c.Send(Initiator, call, SendOpts{})
		}
		c.Send(Initiator, long, SendOpts{}) // First, Middle, Last at the path MTU of 256
		fs, err := c.Frames()
		if err != nil {
			return err
		}
		if kind == FloodRCDirections {
			// Without its setup: only the SEND First, to a QP of its own.
			if at < 0 {
				at = len(fs) - 3
			}
			first = fs[at].Data
			if err := emit(first); err != nil {
				return err
			}
			continue
		}
		for _, f := range fs[:len(fs)-2] { // the setup, the Call, the SEND First
			if err := emit(f.Data); err != nil {
				return err
			}
		}
	}
	if kind != FloodRCConns && kind != FloodRCDirections {
		return fmt.Errorf("craft: unknown flood %q", kind)
	}
	return nil
}

// FloodRecordsFirst is N RoCEv2 connections whose setups all come first,
// then the traffic of each: two RDMA Read Requests from the initiator,
// never answered, where the setup allows it one outstanding (each raises
// rdma-read-limit-exceeded). A dissector that hands connection records
// on before their traffic (at a limit) must still say what it found.
const FloodRecordsFirst = "records-first"

// floodRecordsFirst writes n connections of FloodRecordsFirst: every
// setup, then every connection's traffic, in the same order.
func floodRecordsFirst(n int, emit func([]byte) error) error {
	conn := func(i int) (*Conn, int, error) {
		x := Exchange{Transport: RoCEv2, Index: i & 0xffff, Attempt: i >> 16, PathMTU: 1,
			ReqInitiatorDepth: 1, RepResponderResources: 1,
			Initiator: Peer{SendSize: 4096, ReceiveSize: 4096}, Responder: Peer{SendSize: 4096, ReceiveSize: 4096}}
		c, err := x.Connect()
		if err != nil {
			return nil, 0, err
		}
		setup, err := c.Frames()
		return c, len(setup), err
	}
	for i := 0; i < n; i++ {
		c, _, err := conn(i)
		if err != nil {
			return err
		}
		fs, _ := c.Frames()
		if err := emitAll(fs, emit); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		c, setup, err := conn(i)
		if err != nil {
			return err
		}
		c.ReadRequest(Initiator, 0x5000+uint32(i), 0x10000, 64)
		c.ReadRequest(Initiator, 0x5000+uint32(i), 0x20000, 64)
		fs, err := c.Frames()
		if err != nil {
			return err
		}
		if err := emitAll(fs[setup:], emit); err != nil {
			return err
		}
	}
	return nil
}
