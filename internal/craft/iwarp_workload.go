package craft

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// IWARPWorkload describes an NFS iWARP capture for performance runs: many
// connections set up with RFC 8797 data, then, in turn, NFS READs (NFSv3
// and NFSv4.1 by turns, unless NFSVersion says one): a Call (an RDMA_MSG
// Send with a Write chunk), the data in RDMA Writes, and the Reply in a
// Send with Invalidate of the chunk's STag. Every MarkersEvery-th
// connection asks for markers both ways, and every CRCEvery-th uses CRC
// (all by default).
type IWARPWorkload struct {
	Size         int64  // octets to write (approximately)
	Seed         uint64 // the same seed gives the same file
	Conns        int    // connections; default 64
	ReadSize     int    // octets of each READ's data; default 32 KiB
	MarkersEvery int    // every this-many-th connection uses markers; default 4, negative for none
	CRCEvery     int    // every this-many-th connection uses CRC; default 1 (all), negative for none
	MSS          int    // TCP payload of a segment; default 1448
	NFSVersion   string // NFSv3, NFSv4 (4.1) or NFSMix (by turns)
}

// IWARPWorkloadCounts is what an iWARP workload holds.
type IWARPWorkloadCounts struct {
	Frames, Conns       int
	Octets              int64
	Calls, Replies      int // RPC-over-RDMA Sends each way
	WriteFPDUs          int
	MarkedConns         int
	CRCConns            int
	SendWithInvalidates int
}

func (c IWARPWorkloadCounts) String() string {
	return fmt.Sprintf("frames %d, octets %d: %d iWARP connections (%d with markers, %d with CRC), %d Calls, %d Replies (%d with Invalidate), %d RDMA Write FPDUs; expect %d messages (MPA_REQ %d, MPA_REP %d), %d established connections, %d rpc_messages and no finding",
		c.Frames, c.Octets, c.Conns, c.MarkedConns, c.CRCConns, c.Calls, c.Replies, c.SendWithInvalidates, c.WriteFPDUs,
		2*c.Conns, c.Conns, c.Conns, c.Conns, c.Calls+c.Replies)
}

// iwConnState is one connection of the workload.
type iwConnState struct {
	ep      [2]Endpoint
	seq     [2]uint32
	off     [2]int // stream offset after the MPA frame, for markers
	markers bool
	crc     bool
	msn     [2]uint32
	xid     uint32
	nfsSeq  uint32 // the last SEQUENCE's sequenceid
}

// Write writes the workload as a pcap file.
func (wl IWARPWorkload) Write(w io.Writer) (IWARPWorkloadCounts, error) {
	var c IWARPWorkloadCounts
	wl = wl.withDefaults()
	rng := rand.New(rand.NewPCG(wl.Seed, 0x1a4b))
	out, err := newPcapOut(w, rng, 1000, 1000, &c.Frames, &c.Octets)
	if err != nil {
		return c, err
	}
	conns := make([]*iwConnState, wl.Conns)
	for i := range conns {
		if conns[i], err = wl.connect(i, out, &c); err != nil {
			return c, err
		}
	}
	if !slices.Contains(NFSVersions, wl.NFSVersion) {
		return c, fmt.Errorf("craft: NFS version %q", wl.NFSVersion)
	}
	data := make([]byte, wl.ReadSize)
	for i := range data {
		data[i] = byte(i * 13)
	}
	ops := newWorkloadOps(iwarpCredits, wl.ReadSize, 0)
	for n := 0; c.Octets < wl.Size; n++ {
		v := n % 2
		switch wl.NFSVersion {
		case NFSv3:
			v = 0
		case NFSv4:
			v = 1
		}
		if err := wl.read(conns[n%len(conns)], n, &ops.read[v], data, out.emit, &c); err != nil {
			return c, err
		}
	}
	return c, out.flush()
}

// withDefaults is the workload with the defaults in place of zero values.
func (wl IWARPWorkload) withDefaults() IWARPWorkload {
	if wl.Conns <= 0 {
		wl.Conns = 64
	}
	if wl.ReadSize <= 0 {
		wl.ReadSize = 32 << 10
	}
	if wl.MarkersEvery == 0 {
		wl.MarkersEvery = 4
	}
	if wl.MSS <= 0 {
		wl.MSS = 1448
	}
	if wl.CRCEvery == 0 {
		wl.CRCEvery = 1
	}
	return wl
}

// connect writes the setup of connection i (the handshake, the MPA
// Request and Reply), with markers and CRC as the workload asks for, and
// returns the connection's state after it.
func (wl IWARPWorkload) connect(i int, out *pcapOut, c *IWARPWorkloadCounts) (*iwConnState, error) {
	markers := wl.MarkersEvery > 0 && i%wl.MarkersEvery == wl.MarkersEvery-1
	crc := wl.CRCEvery > 0 && i%wl.CRCEvery == wl.CRCEvery-1
	x := IWARPExchange{Rev: 2, Index: i, Start: out.t, InitiatorMarkers: markers, ResponderMarkers: markers, NoCRC: !crc,
		Initiator: Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
		Responder: Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}}
	frames, err := x.Frames()
	if err != nil {
		return nil, err
	}
	for _, f := range frames {
		if err := out.emit(f.Data); err != nil {
			return nil, err
		}
	}
	// The sequence numbers after the MPA frames: the last two frames
	// are the Request and the Reply.
	st := &iwConnState{markers: markers, crc: crc, xid: uint32(i) << 20}
	for side, f := range frames[len(frames)-2:] {
		p := gopacket.NewPacket(f.Data, golayers.LayerTypeEthernet, gopacket.NoCopy)
		tcp := p.Layer(golayers.LayerTypeTCP).(*golayers.TCP)
		st.seq[side] = tcp.Seq + uint32(len(tcp.Payload))
	}
	st.ep[0], st.ep[1] = Endpoints(i, false)
	st.ep[1].Port = 20049
	c.Conns++
	if markers {
		c.MarkedConns++
	}
	if crc {
		c.CRCConns++
	}
	return st, nil
}

// iwarpCredits are what the iWARP workload's Calls ask and Replies grant.
const iwarpCredits = 128

// read writes the n-th NFS READ, op, on st: the Call, data in RDMA Writes
// of at most one segment each, and the Reply with Invalidate of the
// chunk's STag.
func (wl IWARPWorkload) read(st *iwConnState, n int, op *rpcOp, data []byte, emit func([]byte) error, c *IWARPWorkloadCounts) error {
	maxPayload := wl.MSS - 64 // FPDU framing, headers and markers fit in a segment
	st.xid++
	st.nfsSeq++
	stag := 0x1000 + uint32(n%4096)
	// The Call: RDMA_MSG with one Write chunk for the data.
	call := op.call.patch(st.xid, stag, st.nfsSeq)
	if err := st.send(emit, 0, []FPDUUnit{{DDP: layers.DDP{Opcode: layers.RDMAPOpSend, QN: layers.QNSend, MSN: st.next(0), Last: true}, Payload: call}}, wl.MSS); err != nil {
		return err
	}
	c.Calls++
	// The data, in RDMA Writes of at most one segment each.
	var units []FPDUUnit
	for off := 0; off < len(data); off += maxPayload {
		end := min(len(data), off+maxPayload)
		units = append(units, FPDUUnit{DDP: layers.DDP{Tagged: true, Opcode: layers.RDMAPOpWrite, STag: stag, TaggedOffset: uint64(off), Last: end == len(data)},
			Payload: data[off:end]})
	}
	c.WriteFPDUs += len(units)
	// The Reply, with Invalidate of the chunk's STag.
	reply := op.reply.patch(st.xid, stag, st.nfsSeq)
	units = append(units, FPDUUnit{DDP: layers.DDP{Opcode: layers.RDMAPOpSendInvalidate, QN: layers.QNSend, MSN: st.next(1), Last: true, InvalidateSTag: stag}, Payload: reply})
	if err := st.send(emit, 1, units, wl.MSS); err != nil {
		return err
	}
	c.Replies++
	c.SendWithInvalidates++
	return nil
}

func (st *iwConnState) next(side int) uint32 {
	st.msn[side]++
	return st.msn[side]
}

// send frames units from side, one FPDU per segment, with markers when the
// connection uses them.
func (st *iwConnState) send(emit func([]byte) error, side int, units []FPDUUnit, mss int) error {
	for i := range units {
		u := units[i]
		u.DDP.Version, u.DDP.RDMAPVersion = layers.DDPVersion, layers.RDMAPVersion
		var p []byte
		if st.markers {
			p = markedFPDU(&u, st.off[side], st.crc)
		} else {
			p, _ = FPDUStream([]FPDUUnit{u}, false, st.crc)
		}
		seg := TCP{Src: st.ep[side], Dst: st.ep[1-side], Seq: st.seq[side], Ack: st.seq[1-side], ACK: true, PSH: true, Payload: p}
		f, err := seg.Frame()
		if err != nil {
			return err
		}
		if err := emit(f); err != nil {
			return err
		}
		st.seq[side] += uint32(len(p))
		st.off[side] += len(p)
	}
	return nil
}

// markedFPDU frames one FPDU that starts at stream offset off (counted
// from the first FPDU), with the markers that fall in it, and its CRC (a
// zero field without crc).
func markedFPDU(u *FPDUUnit, off int, crc bool) []byte {
	plain, _ := FPDUStream([]FPDUUnit{*u}, false, false)
	crcAt := len(plain) - layers.FPDUCRCLen
	var out []byte
	pos := off
	start := -1
	for i := 0; i <= len(plain); i++ {
		if pos%layers.MarkerInterval == 0 && i < len(plain) {
			ptr := 0
			if start >= 0 {
				ptr = len(out) - start
			}
			out = append(out, 0, 0, byte(ptr>>8), byte(ptr))
			pos += layers.MarkerLen
		}
		if i == 0 {
			start = len(out)
		}
		if i == crcAt {
			break
		}
		out = append(out, plain[i])
		pos++
	}
	// The CRC: over the FPDU with its markers (and a leading one).
	from := start
	if start == layers.MarkerLen && off%layers.MarkerInterval == 0 {
		from = 0
	}
	var field [layers.FPDUCRCLen]byte
	if crc {
		binary.LittleEndian.PutUint32(field[:], layers.FPDUCRC(out[from:]))
	}
	for _, b := range field {
		if pos%layers.MarkerInterval == 0 {
			ptr := len(out) - start
			out = append(out, 0, 0, byte(ptr>>8), byte(ptr))
			pos += layers.MarkerLen
		}
		out = append(out, b)
		pos++
	}
	return out
}
