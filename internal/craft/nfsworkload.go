package craft

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// NFSWorkload describes a reproducible NFS/RDMA-like capture for
// performance runs of the data path: RoCEv2 connections set up with RFC
// 8797 data (both sides R, 4096/4096, path MTU 4096) carrying Calls and
// Replies with chunks, the RDMA WRITEs and READs that move their data,
// Replies With Invalidate, each Send acknowledged; TCP bulk mixed in; and
// connections closed (DREQ, DREP) and set up again now and then. The
// traffic keeps to what each connection negotiated: dissecting it raises no
// finding.
type NFSWorkload struct {
	Size        int64  // octets to write (approximately: the file stops after the operation that crosses it)
	Seed        uint64 // the same seed gives the same file
	Connections int    // concurrent connections; default 16
	// ReconnectEvery is how many operations a connection carries before
	// it is closed and set up again; default 2000.
	ReconnectEvery int
}

// NFSWorkloadCounts is what an NFS/RDMA-like workload holds.
type NFSWorkloadCounts struct {
	Frames       int
	Octets       int64
	RCFrames     int
	TCPBulk      int
	Setups       int // REQ, REP, RTU each
	Disconnects  int // DREQ, DREP each
	Reads        int // NFS READs: a Call with a write chunk, an RDMA WRITE, a Reply With Invalidate
	Writes       int // NFS WRITEs: a Call with a read chunk, an RDMA READ, a Reply With Invalidate
	Small        int // Calls and Replies inline
	RPCMessages  int
	Invalidating int // Sends With Invalidate
}

// Messages is the number of connection messages the dissector must report.
func (c NFSWorkloadCounts) Messages() int { return 3*c.Setups + 2*c.Disconnects }

func (c NFSWorkloadCounts) String() string {
	return fmt.Sprintf("frames %d, octets %d: RoCEv2 RC %d, TCP bulk %d; CM setups %d, disconnections %d; "+
		"NFS READs %d, WRITEs %d, small Calls %d, %d RPC-over-RDMA messages (%d Sends With Invalidate); "+
		"expect %d messages, %d established connections, %d rpc_messages and no finding",
		c.Frames, c.Octets, c.RCFrames, c.TCPBulk, c.Setups, c.Disconnects, c.Reads, c.Writes, c.Small, c.RPCMessages,
		c.Invalidating, c.Messages(), c.Setups, c.RPCMessages)
}

// take hands over the frames built so far, keeping the connection going.
func (c *Conn) take() ([]Frame, error) {
	f, err := c.frames, c.err
	c.frames = nil
	return f, err
}

// nfsConn is one connection of the workload.
type nfsConn struct {
	x   Exchange
	c   *Conn
	n   *NFS
	ops int
}

// Write writes the workload as a pcap file and returns what it holds.
func (wl NFSWorkload) Write(w io.Writer) (NFSWorkloadCounts, error) {
	var cnt NFSWorkloadCounts
	if wl.Connections <= 0 {
		wl.Connections = 16
	}
	if wl.ReconnectEvery <= 0 {
		wl.ReconnectEvery = 2000
	}
	rng := rand.New(rand.NewPCG(wl.Seed, 0x4e4653))
	out, err := newPcapOut(w, rng, 500, 1000, &cnt.Frames, &cnt.Octets)
	if err != nil {
		return cnt, err
	}
	emit := out.emit
	tpl, err := newTemplates()
	if err != nil {
		return cnt, err
	}
	flush := func(c *Conn) error {
		frames, err := c.take()
		for _, f := range frames {
			if err != nil {
				break
			}
			op := f.Data[42]
			if op == layers.OpUDSendOnly {
				continue // counted by setup and disconnect
			}
			cnt.RCFrames++
			err = emit(f.Data)
		}
		return err
	}
	emitCM := func(c *Conn) error { // the setup's or the disconnection's CM frames
		frames, err := c.take()
		for _, f := range frames {
			if err != nil {
				break
			}
			if f.Data[42] != layers.OpUDSendOnly {
				cnt.RCFrames++
			}
			err = emit(f.Data)
		}
		return err
	}
	peer := Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	connect := func(i, attempt int) (*nfsConn, error) {
		nc := &nfsConn{x: Exchange{Transport: RoCEv2, Index: 200 + i, Attempt: attempt, Initiator: peer, Responder: peer, PathMTU: 5}}
		c, err := nc.x.Connect()
		if err != nil {
			return nil, err
		}
		nc.c, nc.n = c, &NFS{C: c, XID: uint32(i)<<24 | uint32(attempt)<<16, Credits: 32}
		cnt.Setups++
		return nc, emitCM(c)
	}
	conns := make([]*nfsConn, wl.Connections)
	attempts := make([]int, wl.Connections)
	for i := range conns {
		if conns[i], err = connect(i, 0); err != nil {
			return cnt, err
		}
	}
	const va = 0x00007f0000000000
	for op := 0; cnt.Octets < wl.Size; op++ {
		i := op % wl.Connections
		nc := conns[i]
		c, n := nc.c, nc.n
		stag := uint32(i)<<20 | uint32(nc.ops&0xfffff)
		switch r := rng.IntN(10); {
		case r < 5: // READ of 64 KiB into a write chunk
			seg := layers.RPCRDMASegment{Handle: stag, Length: 65536, Offset: va}
			xid := n.Call(RPCMessage{WriteList: []layers.RPCRDMAChunk{{seg}}, Size: 180})
			c.Write(Responder, stag, va, 65536)
			c.Ack(Initiator, c.LastPSN(Responder))
			n.Reply(xid, RPCMessage{WriteList: []layers.RPCRDMAChunk{{seg}}, Size: 140}, SendOpts{WithInv: true, Invalidate: stag})
			cnt.Reads++
		case r < 8: // WRITE of 64 KiB from a read chunk
			seg := layers.RPCRDMAReadSegment{Position: 160, RPCRDMASegment: layers.RPCRDMASegment{Handle: stag, Length: 65536, Offset: va}}
			xid := n.Call(RPCMessage{ReadList: []layers.RPCRDMAReadSegment{seg}, Size: 200})
			c.Read(Responder, stag, va, 65536)
			n.Reply(xid, RPCMessage{Size: 160}, SendOpts{WithInv: true, Invalidate: stag})
			cnt.Writes++
		default: // a small Call and Reply, inline
			n.Reply(n.Call(RPCMessage{Size: 240 + rng.IntN(200)}), RPCMessage{Size: 120 + rng.IntN(400)}, SendOpts{})
			cnt.Small++
		}
		cnt.RPCMessages += 2
		if err := flush(c); err != nil {
			return cnt, err
		}
		// TCP bulk between operations: about a sixth of the octets.
		for range rng.IntN(9) {
			if err := emit(tpl.tcp(rng)); err != nil {
				return cnt, err
			}
			cnt.TCPBulk++
		}
		if nc.ops++; nc.ops >= wl.ReconnectEvery {
			c.Disconnect()
			cnt.Disconnects++
			if err := emitCM(c); err != nil {
				return cnt, err
			}
			attempts[i]++
			if conns[i], err = connect(i, attempts[i]); err != nil {
				return cnt, err
			}
		}
	}
	cnt.Invalidating = cnt.Reads + cnt.Writes
	return cnt, out.flush()
}
