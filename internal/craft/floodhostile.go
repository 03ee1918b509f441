package craft

import (
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Data-path floods of what the data path must not drop without a word, nor
// believe: SEND Middle and Last packets whose First never comes, length
// fields that claim more than the wire carried and packets that break the
// path MTU, and more RDMA Reads outstanding than any setup allows. Each is
// one RoCEv2 connection (IPv4, no VLAN) set up with RFC 8797 data (4096
// octets each way, R on both sides), then its traffic.
const (
	// FloodRCOrphanPackets is N Sends of three packets (path MTU 256)
	// whose SEND First is not in the capture: N SEND Middle and N SEND Last
	// packets without their First.
	FloodRCOrphanPackets = "rc-orphan-packets"
	// FloodRCLyingLengths is, at a path MTU of 1024: a SEND Only (an RPC
	// Call, 68 octets) whose UDP Length says 65535; an honest Reply; a
	// multi-packet Call whose SEND First is honest, then N SEND Middles
	// that take turns at a 102-octet frame whose UDP Length says 65535, the
	// same frame whose IPv4 Total Length says 65535 (its UDP Length
	// honest), and an honest Middle 64 octets short of the path MTU, then
	// an honest SEND Last; and last an RDMA WRITE Only whose UDP Length
	// says 65535. No frame is cut: each record's captured length is its
	// original length.
	FloodRCLyingLengths = "rc-lying-lengths"
	// FloodRCReads is N RDMA READ Requests of 4096 octets from the
	// initiator (path MTU 1024, Read depths of 16 each way), none answered.
	FloodRCReads = "rc-reads"
)

// The offsets of a RoCEv2 frame over IPv4 without VLAN tag.
const (
	v2IPv4 = 14
	v2UDP  = v2IPv4 + 20
	v2BTH  = v2UDP + 8
)

// hostileConn is the connection of the hostile data-path floods.
func hostileConn(mtu uint8) (*Conn, error) {
	p := Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	x := Exchange{Transport: RoCEv2, Initiator: p, Responder: p, PathMTU: mtu}
	return x.Connect()
}

// reframe sets the PSN of a RoCEv2/IPv4 frame and makes its checksums
// right again: the IPv4 header checksum, the ICRC (which covers the length
// fields as they are, even lying ones); the UDP checksum is left out (0).
func reframe(f []byte, psn uint32) {
	f[v2BTH+9], f[v2BTH+10], f[v2BTH+11] = byte(psn>>16), byte(psn>>8), byte(psn)
	binary.BigEndian.PutUint16(f[v2UDP+6:], 0)
	binary.BigEndian.PutUint16(f[v2IPv4+10:], 0)
	var sum uint32
	for i := v2IPv4; i < v2UDP; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(f[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(f[v2IPv4+10:], ^uint16(sum))
	end := len(f) - layers.ICRCLen
	binary.LittleEndian.PutUint32(f[end:], layers.ICRCRoCEv2(f[v2IPv4:v2UDP], f[v2UDP:v2BTH], f[v2BTH:end]))
}

// emitAll writes frames through emit.
func emitAll(fs []Frame, emit func([]byte) error) error {
	for _, f := range fs {
		if err := emit(f.Data); err != nil {
			return err
		}
	}
	return nil
}

// floodRCOrphanPackets writes the connection of FloodRCOrphanPackets and
// its n Sends without their First.
func floodRCOrphanPackets(n int, emit func([]byte) error) error {
	c, err := hostileConn(1)
	if err != nil {
		return err
	}
	msg := (&RPCMessage{XID: 1, Credits: 32, Proc: layers.RPCRDMAMsg, Size: 600}).Bytes()
	c.Send(Initiator, msg, SendOpts{}) // First, Middle, Last
	fs, err := c.Frames()
	if err != nil {
		return err
	}
	if err := emitAll(fs[:len(fs)-3], emit); err != nil { // the setup
		return err
	}
	middle, last := fs[len(fs)-2].Data, fs[len(fs)-1].Data
	psn := binary.BigEndian.Uint32(middle[v2BTH+8:]) & 0xffffff
	for i := 0; i < n; i++ {
		p := psn + 3*uint32(i) // each Send takes 3 PSNs; its First's is missing
		reframe(middle, p&0xffffff)
		reframe(last, (p+1)&0xffffff)
		if err := emit(middle); err != nil {
			return err
		}
		if err := emit(last); err != nil {
			return err
		}
	}
	return nil
}

// floodRCLyingLengths writes FloodRCLyingLengths with n SEND Middles.
func floodRCLyingLengths(n int, emit func([]byte) error) error {
	c, err := hostileConn(3) // 1024 octets
	if err != nil {
		return err
	}
	call1 := (&RPCMessage{XID: 1, Credits: 32, Proc: layers.RPCRDMAMsg}).Bytes()
	c.Send(Initiator, call1, SendOpts{})
	c.Send(Responder, (&RPCMessage{XID: 1, Credits: 32, Proc: layers.RPCRDMAMsg, Reply: true}).Bytes(), SendOpts{})
	fs, err := c.Frames()
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint16(fs[len(fs)-2].Data[v2UDP+4:], 0xffff) // the SEND Only of Call 1
	reframe(fs[len(fs)-2].Data, c.psnOf(fs[len(fs)-2].Data))
	// Call 2: its First at the path MTU; its Middles and its Last follow.
	call2 := (&RPCMessage{XID: 2, Credits: 32, Proc: layers.RPCRDMAMsg, Size: 1024 + 100}).Bytes()
	first := c.psn[Initiator]
	c.packet(Initiator, layers.OpSendFirst, first, false, nil, call2[:1024])
	c.packet(Initiator, layers.OpSendMiddle, first+1, false, nil, make([]byte, 44))
	c.packet(Initiator, layers.OpSendMiddle, first+1, false, nil, make([]byte, 960))
	c.packet(Initiator, layers.OpSendLast, first+1, true, nil, call2[1024:])
	c.psn[Initiator] = (first + 1) & 0xffffff
	if fs, err = c.Frames(); err != nil {
		return err
	}
	k := len(fs) - 4
	if err := emitAll(fs[:k+1], emit); err != nil { // the setup, Call 1, its Reply, Call 2's First
		return err
	}
	short, honest, last := fs[k+1].Data, fs[k+2].Data, fs[k+3].Data
	udpLie := append([]byte(nil), short...)
	binary.BigEndian.PutUint16(udpLie[v2UDP+4:], 0xffff)
	ipLie := append([]byte(nil), short...)
	binary.BigEndian.PutUint16(ipLie[v2IPv4+2:], 0xffff)
	psn := first + 1
	for i := 0; i < n; i++ {
		f := [...][]byte{udpLie, ipLie, honest}[i%3]
		reframe(f, psn&0xffffff)
		if err := emit(f); err != nil {
			return err
		}
		psn++
	}
	reframe(last, psn&0xffffff)
	if err := emit(last); err != nil {
		return err
	}
	// An RDMA WRITE Only whose UDP Length lies: part of no Send.
	c.psn[Initiator] = (psn + 1) & 0xffffff
	c.Write(Initiator, 0x1234, 0, 100)
	if fs, err = c.Frames(); err != nil {
		return err
	}
	w := fs[len(fs)-1].Data
	binary.BigEndian.PutUint16(w[v2UDP+4:], 0xffff)
	reframe(w, c.psnOf(w))
	return emit(w)
}

// psnOf is the PSN of a RoCEv2/IPv4 frame.
func (c *Conn) psnOf(f []byte) uint32 { return binary.BigEndian.Uint32(f[v2BTH+8:]) & 0xffffff }

// floodRCReads writes the connection of FloodRCReads and its n READ
// Requests.
func floodRCReads(n int, emit func([]byte) error) error {
	c, err := hostileConn(3)
	if err != nil {
		return err
	}
	c.ReadRequest(Initiator, 0x5000, 0x10000, 4096)
	fs, err := c.Frames()
	if err != nil {
		return err
	}
	if err := emitAll(fs[:len(fs)-1], emit); err != nil {
		return err
	}
	req := fs[len(fs)-1].Data
	psn := c.psnOf(req)
	for i := 0; i < n; i++ {
		reframe(req, (psn+4*uint32(i))&0xffffff) // 4096 octets: 4 PSNs at 1024
		if err := emit(req); err != nil {
			return err
		}
	}
	return nil
}
