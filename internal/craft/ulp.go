package craft

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// ULPs lists the upper layers ULPSetup builds, as the dissector names them.
var ULPs = []string{"rpc-over-rdma", "nvme-rdma", "iser", "srp", "rds", "rsockets", "lustre-o2iblnd", "sdp", "ipoib-cm", "smb-direct"}

// ibOnlyULPs cannot run over iWARP: SRP, SDP and IPoIB are InfiniBand's.
var ibOnlyULPs = map[string]bool{"srp": true, "sdp": true, "ipoib-cm": true}

// ULP is what an upper layer puts into a connection setup: the service it
// listens on and each side's private data (after the IP CM header of a
// REQ, after MPA revision 2's IRD/ORD words).
type ULP struct {
	ServiceID uint64 // InfiniBand family: the REQ's Service ID
	Port      uint16 // iWARP: the responder's TCP port
	// Request, Reply and Reject are the consumer's private data of the REQ
	// (MPA Request), the REP (accepting MPA Reply) and the consumer REJ
	// (rejecting MPA Reply); nil for none.
	Request, Reply, Reject []byte
	// Login is the iSCSI login that iSER exchanges in TCP streaming mode
	// before its MPA frames (iWARP only).
	LoginRequest, LoginResponse []byte
}

// ULPSetup builds the private data of upper layer name for a connection from
// a to b: iwarp says the carrier is MPA, ib that it is native InfiniBand.
// ini and res carry what the sides advertise where the layer has a matching
// notion: RemoteInvalidate (iSER's Send With Invalidate), ReceiveSize (a
// receive queue or buffer size). "rpc-over-rdma" is for the RFC 8797 peers
// themselves and has no setup here.
func ULPSetup(name string, a, b Endpoint, iwarp, ib bool) (ULP, error) {
	if iwarp && ibOnlyULPs[name] {
		return ULP{}, fmt.Errorf("craft: %s runs over InfiniBand and RoCE only, not iWARP", name)
	}
	tcp := func(port uint16) ULP { return ULP{ServiceID: 0x0000000001060000 | uint64(port), Port: port} }
	switch name {
	case "nvme-rdma":
		u := tcp(layers.NVMeRDMAPort)
		u.Request = encode(layers.NVMeRDMAReqLen, &layers.NVMeRDMACMReq{HRQSize: 32, HSQSize: 31})
		u.Reply = encode(layers.NVMeRDMARepLen, &layers.NVMeRDMACMRep{CRQSize: 32})
		u.Reject = encode(layers.NVMeRDMARejLen, &layers.NVMeRDMACMRej{Status: 6})
		return u, nil
	case "iser":
		u := tcp(layers.ISERPort)
		u.Request = encode(layers.ISERCMHeaderLen, &layers.ISERCMHeader{ZBVANotSupported: true, SendWithInvalidateNotSupported: true})
		u.Reply = encode(layers.ISERCMHeaderLen, &layers.ISERCMHeader{ZBVANotSupported: true, SendWithInvalidateNotSupported: true})
		if iwarp {
			u.LoginRequest, u.LoginResponse = ISCSILogin(true), ISCSILogin(false)
		}
		return u, nil
	case "srp":
		info := layers.SRPLoginReqInfo{Tag: 1, ReqITIULen: 8260, ReqBufFmt: layers.SRPBufFormatDirect | layers.SRPBufFormatIndirect,
			InitiatorPortID: [16]byte{8: 0x00, 9: 0x02, 10: 0xc9, 11: 0x03, 15: byte(a.LID)},
			TargetPortID:    [16]byte{1: 0x02, 2: 0xc9, 3: 0x03, 7: byte(b.LID), 9: 0x02, 10: 0xc9, 11: 0x03, 15: byte(b.LID)}}
		var u ULP
		if ib {
			// Over the IB CM, to the target's Service ID (its IOC GUID).
			u.ServiceID = 0x0002c90300000100 | uint64(b.LID)
			u.Request = encode(layers.SRPLoginReqLen, &layers.SRPLoginReq{SRPLoginReqInfo: info})
		} else {
			// ib_srpt's rdma_cm port has no default; 5000 here.
			u = tcp(5000)
			u.Request = encode(layers.SRPLoginReqRDMALen, &layers.SRPLoginReqRDMA{SRPLoginReqInfo: info})
		}
		u.Reply = encode(layers.SRPLoginRspLen, &layers.SRPLoginRsp{Opcode: layers.SRPLoginRspOp, ReqLimDelta: 64, Tag: 1,
			MaxITIULen: 8260, MaxTIIULen: 8260, BufFmt: layers.SRPBufFormatDirect | layers.SRPBufFormatIndirect, RspFlags: 0x02})
		u.Reject = encode(layers.SRPLoginRejLen, &layers.SRPLoginRej{Opcode: layers.SRPLoginRejOp, Reason: 0x00010001, Tag: 1,
			BufFmt: layers.SRPBufFormatDirect | layers.SRPBufFormatIndirect})
		return u, nil
	case "rds":
		u := tcp(layers.RDSPort)
		req := layers.RDSConnect{IPv6: !a.IP.Is4(), SrcAddr: a.IP, DstAddr: b.IP, ProtocolMajor: 4, ProtocolMinor: 1, MinorMask: 3}
		rep := req
		rep.SrcAddr, rep.DstAddr = b.IP, a.IP
		n := layers.RDSConnectLen
		if req.IPv6 {
			n = layers.RDS6ConnectLen
		}
		u.Request, u.Reply = encode(n, &req), encode(n, &rep)
		return u, nil
	case "rsockets":
		u := tcp(7471) // rstream's default port
		m := layers.RSocketConnData{Version: 1, Flags: layers.RSocketFlagIOMap, Credits: 384, TargetSGLAddr: 0x00007f0012340000,
			TargetSGLKey: 0x1a2b, TargetSGLLength: 2, DataBufAddr: 0x00007f0056780000, DataBufKey: 0x3c4d, DataBufLength: 65536}
		u.Request = encode(layers.RSocketConnDataLen, &m)
		m.TargetSGLKey, m.DataBufKey = 0x5e6f, 0x7a8b
		u.Reply = encode(layers.RSocketConnDataLen, &m)
		return u, nil
	case "lustre-o2iblnd":
		u := tcp(987) // o2iblnd's default service
		nid := func(e Endpoint) uint64 {
			if !e.IP.Is4() {
				return 0x0005000000000000 | uint64(binary.BigEndian.Uint32(e.IP.AsSlice()[12:]))
			}
			return 0x0005000000000000 | uint64(binary.BigEndian.Uint32(e.IP.AsSlice()))
		}
		m := layers.LustreO2IBMsg{Magic: layers.LustreO2IBMagic, Version: 0x12, Type: layers.LustreO2IBConnReq, Credits: 8,
			Nob: layers.LustreO2IBMsgLen, SrcNID: nid(a), SrcStamp: 1767225600000000000, DstNID: nid(b), QueueDepth: 8,
			MaxFrags: 256, MaxMsgSize: 4096}
		u.Request = encode(layers.LustreO2IBMsgLen, &m)
		m.Type, m.SrcNID, m.DstNID, m.DstStamp, m.SrcStamp = layers.LustreO2IBConnAck, nid(b), nid(a), m.SrcStamp, 1767225600000000001
		u.Reply = encode(layers.LustreO2IBMsgLen, &m)
		u.Reject = encode(layers.LustreO2IBRejLen, &layers.LustreO2IBRej{Magic: layers.LustreO2IBMagic, Version: 0x12, Why: 7,
			Incarnation: 1767225600000000001, HasParams: true, QueueDepth: 16, MaxFrags: 256, MaxMsgSize: 4096})
		return u, nil
	case "sdp":
		// SDP's own rdma_cm port space, no IP CM header: the Hello carries
		// the port and addresses.
		const port = 5002
		u := ULP{ServiceID: uint64(layers.SDPPortSpace)<<16 | port}
		ipv := uint8(4)
		if !a.IP.Is4() {
			ipv = 6
		}
		u.Request = encode(layers.SDPHelloLen, &layers.SDPHello{SDPBSDH: layers.SDPBSDH{Bufs: 4, Len: layers.SDPBSDHLen + 76},
			MajorVersion: 2, MinorVersion: 2, IPVersion: ipv, Capabilities: layers.SDPCapInvalidate, MaxAdverts: 4,
			DesRemRcvSz: 65536, LocalRcvSz: 32768, LocalPort: a.Port, SrcAddr: a.IP, DstAddr: b.IP})
		u.Reply = encode(layers.SDPHelloAckLen, &layers.SDPHelloAck{SDPBSDH: layers.SDPBSDH{MID: layers.SDPMIDHelloAck, Bufs: 8,
			Len: layers.SDPBSDHLen}, MajorVersion: 2, MinorVersion: 2, IPVersion: ipv, ActRcvSz: 32768})
		return u, nil
	case "ipoib-cm":
		// The Service ID names the responder's UD QP; each side sends its own
		// QPN and receive MTU.
		qa, qb := uint32(0x400|a.LID), uint32(0x400|b.LID)
		u := ULP{ServiceID: layers.IPoIBCMServiceBase | uint64(qb)}
		u.Request = encode(layers.IPoIBCMDataLen, &layers.IPoIBCMData{QPN: qa, MTU: 65524})
		u.Reply = encode(layers.IPoIBCMDataLen, &layers.IPoIBCMData{QPN: qb, MTU: 65524})
		return u, nil
	case "smb-direct":
		// No private data of its own; port 445 over the IB CM, 5445 over iWARP.
		u := tcp(445)
		u.Port = 5445
		return u, nil
	}
	return ULP{}, fmt.Errorf("craft: no upper layer %q (want one of %s)", name, strings.Join(ULPs[1:], ", "))
}

// encoder is a layer that writes its octets.
type encoder interface{ Encode([]byte) }

func encode(n int, l encoder) []byte {
	b := make([]byte, n)
	l.Encode(b)
	return b
}

// ISCSILogin is an iSCSI Login Request (or Response) PDU (RFC 7143) that
// moves to the full feature phase with RDMAExtensions=Yes (RFC 7145): what
// an iSER initiator and target exchange in TCP streaming mode before they
// switch to MPA.
func ISCSILogin(request bool) []byte {
	text := "InitiatorName=iqn.2026-01.org.example:host\x00TargetName=iqn.2026-01.org.example:disk\x00" +
		"SessionType=Normal\x00RDMAExtensions=Yes\x00"
	op := byte(0x43) // immediate Login Request
	if !request {
		op = 0x23 // Login Response
		text = "RDMAExtensions=Yes\x00TargetPortalGroupTag=1\x00"
	}
	pad := (4 - len(text)%4) % 4
	b := make([]byte, 48, 48+len(text)+pad)
	b[0] = op
	b[1] = 0x87 // Transit, CSG 1 (operational negotiation), NSG 3 (full feature phase)
	// Version-max and version-active 0; no AHS; the data segment's length.
	b[5], b[6], b[7] = byte(len(text)>>16), byte(len(text)>>8), byte(len(text))
	copy(b[8:14], []byte{0x40, 0x00, 0x01, 0x37, 0x00, 0x00}) // ISID: random format
	binary.BigEndian.PutUint32(b[16:], 1)                     // Initiator Task Tag
	binary.BigEndian.PutUint32(b[24:], 1)                     // CmdSN (Response: StatSN)
	b = append(b, text...)
	return append(b, make([]byte, pad)...)
}

// ULPExchange builds a whole connection setup of upper layer name over
// transport tr (any, iWARP with MPA revision rev): the layer's service, its
// private data in each message, its reject data when the responder
// rejects, and for iSER over iWARP the iSCSI login before the MPA frames.
func ULPExchange(name string, tr Transport, ipv6, reject bool, rev uint8) ([]Frame, error) {
	a, b := Endpoints(0, ipv6)
	u, err := ULPSetup(name, a, b, tr == IWARP, tr == InfiniBand)
	if err != nil {
		return nil, err
	}
	ini, res := Peer{Data: orEmpty(u.Request)}, Peer{Data: orEmpty(u.Reply)}
	if reject {
		res = Peer{Data: orEmpty(u.Reject)}
	}
	if tr == IWARP {
		x := IWARPExchange{IPv6: ipv6, Rev: rev, Initiator: ini, Responder: res, Reject: reject, Port: u.Port,
			StreamingRequest: u.LoginRequest, StreamingReply: u.LoginResponse}
		return x.Frames()
	}
	x := Exchange{Transport: tr, IPv6: ipv6, Initiator: ini, Responder: res, Reject: reject, ServiceID: u.ServiceID}
	return x.Frames()
}

// orEmpty is b, or no octets: a Peer's nil Data would mean RFC 8797's.
func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
