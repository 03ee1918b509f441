package craft

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Peer is what one side advertises in its RFC 8797 message.
type Peer struct {
	SendSize         int  // octets, a multiple of 1024; 0 means 1024
	ReceiveSize      int  // octets, a multiple of 1024; 0 means 1024
	RemoteInvalidate bool // R
	Absent           bool // send no RFC 8797 message at all
	// Data, when not nil, is sent instead of an RFC 8797 message: another
	// upper layer's private data (see ULPSetup), after the IP CM header of
	// a REQ and after MPA revision 2's IRD/ORD words.
	Data []byte
}

// Message returns the peer's 8 octets, or nil when Absent; its Data
// instead when it has any.
func (p Peer) Message() ([]byte, error) {
	if p.Data != nil {
		return p.Data, nil
	}
	if p.Absent {
		return nil, nil
	}
	send, err := layers.EncodeInlineSize(orInt(p.SendSize, layers.DefaultInline))
	if err != nil {
		return nil, fmt.Errorf("send size: %w", err)
	}
	recv, err := layers.EncodeInlineSize(orInt(p.ReceiveSize, layers.DefaultInline))
	if err != nil {
		return nil, fmt.Errorf("receive size: %w", err)
	}
	m := layers.RPCRDMAPrivateData{FormatIdentifier: layers.RPCRDMAFormatID, Version: layers.RPCRDMAVersion,
		RemoteInvalidate: p.RemoteInvalidate, SendSizeEncoded: send, ReceiveSizeEncoded: recv}
	b := make([]byte, layers.RPCRDMALen)
	m.Encode(b)
	return b, nil
}

// messages returns the two sides' RFC 8797 messages.
func messages(ini, res Peer) ([]byte, []byte, error) {
	a, err := ini.Message()
	if err != nil {
		return nil, nil, fmt.Errorf("initiator %w", err)
	}
	b, err := res.Message()
	if err != nil {
		return nil, nil, fmt.Errorf("responder %w", err)
	}
	return a, b, nil
}

// startOr is the time of an exchange's first frame: t, or DefaultStart.
func startOr(t time.Time) time.Time {
	if t.IsZero() {
		return DefaultStart
	}
	return t
}

// Exchange describes a whole connection setup: REQ, then REP and RTU, or a
// REJ.
type Exchange struct {
	Transport  Transport
	IPv6       bool
	Initiator  Peer
	Responder  Peer
	Reject     bool      // the responder answers with a consumer REJ (carrying its private data)
	ServiceID  uint64    // 0: the IP CM Service ID of NFS/RDMA (TCP port 20049)
	Start      time.Time // time of the REQ; zero: 2026-01-01T00:00:00Z
	Index      int       // distinguishes several exchanges in one file: addresses, IDs, ports
	Attempt    int       // a later connection between the same endpoints: new IDs and source port
	Initiator2 *Endpoint // override the initiator's addresses
	Responder2 *Endpoint // override the responder's addresses
	// RDMA Read depths (Responder Resources, Initiator Depth) of the REQ
	// and the REP, and the REQ's path MTU code (1 = 256 ... 5 = 4096); 0
	// means 16, 16, 16, 16 and 3 (1024 octets).
	ReqResponderResources, ReqInitiatorDepth uint8
	RepResponderResources, RepInitiatorDepth uint8
	PathMTU                                  uint8
}

// DefaultStart is the time of the first frame craft writes.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NFSServiceID is the IP CM Service ID of NFS/RDMA: TCP port space, port 20049.
const NFSServiceID = 0x0000000001064e51

// Endpoints returns the default initiator and responder of exchange index i:
// 192.0.2.(2i+1) and 192.0.2.(2i+2) (or 2001:db8::...), LIDs 2i+1 and 2i+2.
func Endpoints(i int, ipv6 bool) (Endpoint, Endpoint) {
	mk := func(n int) Endpoint {
		e := Endpoint{
			MAC:  net.HardwareAddr{0x02, 0, 0, 0, byte(n >> 8), byte(n)},
			LID:  uint16(n),
			Port: uint16(49152 + n),
		}
		if ipv6 {
			e.IP = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(n >> 8), 15: byte(n)})
		} else {
			e.IP = netip.AddrFrom4([4]byte{192, 0, 2, byte(n)})
		}
		return e
	}
	return mk(2*i + 1), mk(2*i + 2)
}

// Frame is one built frame with its time and link type.
type Frame struct {
	Data     []byte
	Time     time.Time
	LinkType uint16
}

// Frames builds the exchange's frames.
func (x *Exchange) Frames() ([]Frame, error) {
	a, b := x.endpoints()
	start := startOr(x.Start)
	sid := x.ServiceID
	if sid == 0 {
		sid = NFSServiceID
	}
	ini, res, err := messages(x.Initiator, x.Responder)
	if err != nil {
		return nil, err
	}
	n := x.ids()
	reqID, repID := 0x0a000001+n, 0x0b000001+n
	tid := uint64(0x0000000100000000) | uint64(n)<<8

	req := &layers.CMReq{
		LocalCommID: reqID, ServiceID: sid, LocalCAGUID: 0x0002c90300000001 + uint64(n),
		LocalQPN: x.qpn(false), ResponderResources: or8(x.ReqResponderResources, 16), InitiatorDepth: or8(x.ReqInitiatorDepth, 16),
		TransportServiceType: 0, StartingPSN: x.startPSN(false), RemoteCMResponseTimeout: 20, LocalCMResponseTimeout: 20,
		RetryCount: 7, PartitionKey: 0xffff, PathPacketPayloadMTU: or8(x.PathMTU, 3), RNRRetryCount: 7, MaxCMRetries: 15,
		Primary: layers.CMPath{LocalPortLID: a.LID, RemotePortLID: b.LID, LocalPortGID: a.GID(), RemotePortGID: b.GID(),
			HopLimit: 64, PacketRate: 3, LocalACKTimeout: 18, SubnetLocal: true},
	}
	req.PrivateData = ini
	if layers.IsIPCMServiceID(sid) {
		req.PrivateData = append(IPCMHeader(a, b, a.Port), ini...)
	}
	type step struct {
		from, to Endpoint
		msg      layers.CMMessage
	}
	frames := []step{{a, b, req}}
	if x.Reject {
		rej := &layers.CMRej{LocalCommID: repID, RemoteCommID: reqID, MessageRejected: 0,
			Reason: layers.RejReasonConsumerReject}
		rej.PrivateData = res
		frames = append(frames, step{b, a, rej})
	} else {
		rep := &layers.CMRep{LocalCommID: repID, RemoteCommID: reqID, LocalQPN: x.qpn(true),
			StartingPSN: x.startPSN(true), ResponderResources: or8(x.RepResponderResources, 16),
			InitiatorDepth: or8(x.RepInitiatorDepth, 16), TargetACKDelay: 15,
			RNRRetryCount: 7, LocalCAGUID: 0x0002c90300000101 + uint64(n)}
		rep.PrivateData = res
		rtu := &layers.CMRtu{LocalCommID: reqID, RemoteCommID: repID}
		frames = append(frames, step{b, a, rep}, step{a, b, rtu})
	}
	var out []Frame
	for i, f := range frames {
		cm := &CM{Transport: x.Transport, Src: f.from, Dst: f.to, Msg: f.msg, TID: tid}
		data, link, err := cm.Frame()
		if err != nil {
			return nil, err
		}
		out = append(out, Frame{Data: data, Time: start.Add(time.Duration(i) * time.Millisecond), LinkType: link})
	}
	return out, nil
}

// IPCMHeader returns the 36-octet IP CM header rdma_cm puts in front of a
// REQ's private data, for a connection from src (port) to dst.
func IPCMHeader(src, dst Endpoint, port uint16) []byte {
	h := layers.IPCMHeader{SrcPort: port, IPVersion: 6}
	if src.IP.Is4() {
		h.IPVersion = 4
		s, d := src.IP.As4(), dst.IP.As4()
		copy(h.SrcAddr[12:], s[:])
		copy(h.DstAddr[12:], d[:])
	} else {
		h.SrcAddr, h.DstAddr = src.IP.As16(), dst.IP.As16()
	}
	b := make([]byte, layers.IPCMHeaderLen)
	h.Encode(b)
	return b
}

func orInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
