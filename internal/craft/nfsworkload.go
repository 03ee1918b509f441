package craft

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// NFSWorkload describes a reproducible NFS/RDMA capture for performance
// runs of the data path: RoCEv2 connections set up with RFC 8797 data
// (both sides R, 4096/4096, path MTU 4096) carrying NFSv3 and NFSv4.1
// Calls and their Replies (READs into write chunks, WRITEs from read
// chunks, GETATTR, LOOKUP, ACCESS, COMMIT, OPEN inline), the RDMA
// WRITEs and READs that move their data,
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
	// NFSVersion is the NFS version of the Calls: NFSv3, NFSv4 (4.1) or
	// NFSMix, either at random.
	NFSVersion string
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
	LongCalls    int // RPCSEC_GSS WRITEs as Long Calls: RDMA_NOMSG, the server's RDMA READs of the Call, a Reply With Invalidate
	LongReplies  int // directory listings answered as Long Replies: RDMA WRITEs into the reply chunk, an RDMA_NOMSG With Invalidate
	RPCMessages  int
	Invalidating int // Sends With Invalidate
}

// Messages is the number of connection messages the dissector must report.
func (c NFSWorkloadCounts) Messages() int { return 3*c.Setups + 2*c.Disconnects }

func (c NFSWorkloadCounts) String() string {
	return fmt.Sprintf("frames %d, octets %d: RoCEv2 RC %d, TCP bulk %d; CM setups %d, disconnections %d; "+
		"NFS READs %d, WRITEs %d, small Calls %d, Long Calls %d, Long Replies %d, %d RPC-over-RDMA messages (%d Sends With Invalidate); "+
		"expect %d messages, %d established connections, %d rpc_messages and no finding but inline-threshold-too-small",
		c.Frames, c.Octets, c.RCFrames, c.TCPBulk, c.Setups, c.Disconnects, c.Reads, c.Writes, c.Small, c.LongCalls, c.LongReplies,
		c.RPCMessages, c.Invalidating, c.Messages(), c.Setups, c.RPCMessages)
}

// take hands over the frames built so far, keeping the connection going.
func (c *Conn) take() ([]Frame, error) {
	f, err := c.frames, c.err
	c.frames = nil
	return f, err
}

// nfsConn is one connection of the workload.
type nfsConn struct {
	x       Exchange
	c       *Conn
	n       *NFS
	ops     int
	attempt int    // how many times the connection was set up before
	seq     uint32 // the last SEQUENCE's sequenceid
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
	tpl, err := newTemplates()
	if err != nil {
		return cnt, err
	}
	if !slices.Contains(NFSVersions, wl.NFSVersion) {
		return cnt, fmt.Errorf("craft: NFS version %q", wl.NFSVersion)
	}
	nw := &nfsWriter{out: out, rng: rng, cnt: &cnt, version: wl.NFSVersion,
		ops: newWorkloadOps(nfsCredits, nfsDataSize, 0x00007f0000000000)}
	conns := make([]*nfsConn, wl.Connections)
	for i := range conns {
		if conns[i], err = nw.connect(i, 0); err != nil {
			return cnt, err
		}
	}
	for op := 0; cnt.Octets < wl.Size; op++ {
		i := op % wl.Connections
		nc := conns[i]
		nw.operation(i, nc)
		if err := nw.flush(nc.c); err != nil {
			return cnt, err
		}
		// TCP bulk between operations: about a sixth of the octets.
		for range rng.IntN(9) {
			if err := out.emit(tpl.tcp(rng)); err != nil {
				return cnt, err
			}
			cnt.TCPBulk++
		}
		if nc.ops++; nc.ops >= wl.ReconnectEvery {
			if conns[i], err = nw.reconnect(i, nc); err != nil {
				return cnt, err
			}
		}
	}
	cnt.Invalidating = cnt.Reads + cnt.Writes + cnt.LongCalls + cnt.LongReplies
	return cnt, out.flush()
}

// nfsWriter writes the frames of an NFSWorkload and counts them.
type nfsWriter struct {
	out     *pcapOut
	rng     *rand.Rand
	cnt     *NFSWorkloadCounts
	version string
	ops     *workloadOps
}

// The NFS workload's credits and the octets each READ and WRITE moves.
const (
	nfsCredits  = 32
	nfsDataSize = 65536
)

// nfsPeer is what both sides of every connection advertise.
var nfsPeer = Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}

// connect sets connection i up for the attempt-th time and writes its
// setup.
func (nw *nfsWriter) connect(i, attempt int) (*nfsConn, error) {
	nc := &nfsConn{x: Exchange{Transport: RoCEv2, Index: 200 + i, Attempt: attempt, Initiator: nfsPeer, Responder: nfsPeer, PathMTU: 5},
		attempt: attempt}
	c, err := nc.x.Connect()
	if err != nil {
		return nil, err
	}
	nc.c, nc.n = c, &NFS{C: c, XID: uint32(i)<<24 | uint32(attempt)<<16, Credits: nfsCredits}
	nw.cnt.Setups++
	return nc, nw.emitCM(c)
}

// reconnect closes connection i (DREQ, DREP) and sets it up again.
func (nw *nfsWriter) reconnect(i int, nc *nfsConn) (*nfsConn, error) {
	nc.c.Disconnect()
	nw.cnt.Disconnects++
	if err := nw.emitCM(nc.c); err != nil {
		return nil, err
	}
	return nw.connect(i, nc.attempt+1)
}

// operation has connection i carry one NFS operation, chosen at random:
// a READ (48 in 100), a WRITE (30), a Long Call (2: an RPCSEC_GSS WRITE,
// its data inline), a Long Reply (2: a directory listing) or a small
// inline Call and Reply, NFSv3 or NFSv4.1 as the version says (at random
// in the mix).
func (nw *nfsWriter) operation(i int, nc *nfsConn) {
	const va = 0x00007f0000000000
	c, n := nc.c, nc.n
	stag := uint32(i)<<20 | uint32(nc.ops&0xfffff)
	v := 0
	switch nw.version {
	case NFSv4:
		v = 1
	case NFSMix:
		v = nw.rng.IntN(2)
	}
	nc.seq++
	xid := n.XID
	n.XID++
	switch r := nw.rng.IntN(100); {
	case r < 48: // READ of 64 KiB into a write chunk
		op := &nw.ops.read[v]
		n.sendRaw(Initiator, op.call.patch(xid, stag, nc.seq), SendOpts{})
		c.Write(Responder, stag, va, nfsDataSize)
		c.Ack(Initiator, c.LastPSN(Responder))
		n.sendRaw(Responder, op.reply.patch(xid, stag, nc.seq), SendOpts{WithInv: true, Invalidate: stag})
		nw.cnt.Reads++
	case r < 78: // WRITE of 64 KiB from a read chunk
		op := &nw.ops.write[v]
		n.sendRaw(Initiator, op.call.patch(xid, stag, nc.seq), SendOpts{})
		c.Read(Responder, stag, va, nfsDataSize)
		n.sendRaw(Responder, op.reply.patch(xid, stag, nc.seq), SendOpts{WithInv: true, Invalidate: stag})
		nw.cnt.Writes++
	case r < 80: // a Long Call: the server pulls it from the read chunk
		op := &nw.ops.longCall[v]
		n.sendRaw(Initiator, op.nomsg.patch(xid, stag, nc.seq), SendOpts{})
		msg := op.msg.patch(xid, stag, nc.seq)
		for at := 0; at < len(msg); at += longSegment {
			l := min(longSegment, len(msg)-at)
			c.RespondData(Responder, c.ReadRequest(Responder, stag, va+uint64(at), l), msg[at:at+l])
		}
		n.sendRaw(Responder, op.inline.patch(xid, stag, nc.seq), SendOpts{WithInv: true, Invalidate: stag})
		nw.cnt.LongCalls++
	case r < 82: // a Long Reply: the server writes it into the reply chunk
		op := &nw.ops.longReply[v]
		n.sendRaw(Initiator, op.inline.patch(xid, stag, nc.seq), SendOpts{})
		c.WriteData(Responder, stag, va, op.msg.patch(xid, stag, nc.seq))
		c.Ack(Initiator, c.LastPSN(Responder))
		n.sendRaw(Responder, op.nomsg.patch(xid, stag, nc.seq), SendOpts{WithInv: true, Invalidate: stag})
		nw.cnt.LongReplies++
	default: // a small Call and Reply, inline
		small := nw.ops.small[v]
		op := &small[nw.rng.IntN(len(small))]
		n.sendRaw(Initiator, op.call.patch(xid, stag, nc.seq), SendOpts{})
		n.sendRaw(Responder, op.reply.patch(xid, stag, nc.seq), SendOpts{})
		nw.cnt.Small++
	}
	nw.cnt.RPCMessages += 2
}

// flush writes the RC frames an operation built on c. A CM frame is left
// out: setups and disconnections are written, and counted, by emitCM.
func (nw *nfsWriter) flush(c *Conn) error {
	frames, err := c.take()
	for _, f := range frames {
		if err != nil {
			break
		}
		if f.Data[42] == layers.OpUDSendOnly {
			continue
		}
		nw.cnt.RCFrames++
		err = nw.out.emit(f.Data)
	}
	return err
}

// emitCM writes all the frames of a setup or a disconnection, counting
// any RC frame among them.
func (nw *nfsWriter) emitCM(c *Conn) error {
	frames, err := c.take()
	for _, f := range frames {
		if err != nil {
			break
		}
		if f.Data[42] != layers.OpUDSendOnly {
			nw.cnt.RCFrames++
		}
		err = nw.out.emit(f.Data)
	}
	return err
}
