package privdata

import (
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// recognise reads the octets as the upper layer they show by themselves: a
// Lustre magic, an SDP Hello, rsocket connection data, an SRP login, RDS
// addresses that repeat the connection's, an NVMe-oF request with plausible
// sizes. It returns a read without record when they show none.
func recognise(data []byte, c *Context) read {
	const strong = record.EvidencePrivateData
	df := gopacket.NilDecodeFeedback
	if layers.LustreO2IBOrder(data) != nil {
		r := lustre(data, c)
		r.u.Evidence = strong
		return r
	}
	switch c.Role {
	case RoleRequest:
		var sdp layers.SDPHello
		if sdp.DecodeFromBytes(data, df) == nil && sdp.Problem() == "" {
			return result(record.ULPSDP, &sdp, strong, "")
		}
		var rs layers.RSocketConnData
		if rs.DecodeFromBytes(data, df) == nil && rs.Plausible() {
			return result(record.ULPRSockets, &rs, strong, "")
		}
		if c.Consumer == layers.IPCMHeaderLen {
			var srp layers.SRPLoginReqRDMA
			if srp.DecodeFromBytes(data, df) == nil && srp.Plausible() {
				return result(record.ULPSRP, &srp, strong, "")
			}
		} else {
			var srp layers.SRPLoginReq
			if srp.DecodeFromBytes(data, df) == nil && srp.Plausible() {
				return result(record.ULPSRP, &srp, strong, "")
			}
		}
		src, dst := c.requestAddrs()
		if r := rds(data, src, dst, true, c); r.u != nil && r.u.Problem == "" {
			r.u.Evidence = strong
			return r
		}
		var nvme layers.NVMeRDMACMReq
		if nvme.DecodeFromBytes(data, df) == nil && nvme.Plausible() {
			return result(record.ULPNVMeRDMA, &nvme, strong, "")
		}
	case RoleAccept:
		var sdp layers.SDPHelloAck
		if sdp.DecodeFromBytes(data, df) == nil && sdp.Problem() == "" {
			return result(record.ULPSDP, &sdp, strong, "")
		}
		var rs layers.RSocketConnData
		if rs.DecodeFromBytes(data, df) == nil && rs.Plausible() {
			return result(record.ULPRSockets, &rs, strong, "")
		}
		var srp layers.SRPLoginRsp
		if srp.DecodeFromBytes(data, df) == nil && srp.Plausible() {
			return result(record.ULPSRP, &srp, strong, "")
		}
		if r := rds(data, c.Src, c.Dst, true, c); r.u != nil && r.u.Problem == "" {
			r.u.Evidence = strong
			return r
		}
	case RoleReject:
		var srp layers.SRPLoginRej
		if srp.DecodeFromBytes(data, df) == nil && srp.Plausible() {
			return result(record.ULPSRP, &srp, strong, "")
		}
	}
	return read{nvmeStatus: -1}
}

// requestAddrs are the addresses of the connection a request opens: its IP
// CM header's, else (iWARP) the frame's own.
func (c *Context) requestAddrs() (netip.Addr, netip.Addr) {
	if c.IPCMSrc.IsValid() {
		return c.IPCMSrc, c.IPCMDst
	}
	return c.Src, c.Dst
}

// decodeAs reads the octets with the layout of the upper layer name for the
// message's role. It returns a read without record when the layer defines
// no private data for the role.
func decodeAs(name record.ULPName, data []byte, c *Context) read {
	switch name {
	case record.ULPNVMeRDMA:
		return nvme(data, c)
	case record.ULPISER:
		if c.Role == RoleReject {
			break
		}
		var h layers.ISERCMHeader
		if err := h.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			return short(name, len(data), "the iSER CM header", layers.ISERCMHeaderLen, c)
		}
		r := result(name, &h, "", "")
		r.u.HasISERFlags, r.u.SendWithInvalidateNotSupported = true, h.SendWithInvalidateNotSupported
		return r
	case record.ULPSRP:
		return srp(data, c)
	case record.ULPRDS:
		switch c.Role {
		case RoleRequest:
			src, dst := c.requestAddrs()
			return rds(data, src, dst, false, c)
		case RoleAccept:
			return rds(data, c.Src, c.Dst, false, c)
		}
	case record.ULPRSockets:
		if c.Role == RoleReject {
			break
		}
		var rs layers.RSocketConnData
		if rs.DecodeFromBytes(data, gopacket.NilDecodeFeedback) != nil {
			return short(name, len(data), "rsocket connection data", layers.RSocketConnDataLen, c)
		}
		return result(name, &rs, "", "")
	case record.ULPLustre:
		return lustre(data, c)
	case record.ULPSDP:
		return sdp(data, c)
	case record.ULPIPoIBCM:
		if c.Role == RoleReject {
			break
		}
		var m layers.IPoIBCMData
		if m.DecodeFromBytes(data, gopacket.NilDecodeFeedback) != nil {
			return short(name, len(data), "IPoIB-CM private data", layers.IPoIBCMDataLen, c)
		}
		return result(name, &m, "", "")
	case record.ULPSMBDirect:
		if c.Role == RoleReject {
			break
		}
		// SMB Direct puts nothing of its own in the private data.
		return read{u: &record.ULP{Protocol: name, Summary: name.Title()}, nvmeStatus: -1}
	}
	return read{nvmeStatus: -1}
}

// short is the read of private data too short for its layout; when the
// capture cut it, that is not the sender's fault and no problem.
func short(name record.ULPName, have int, what string, need int, c *Context) read {
	u := &record.ULP{Protocol: name, Summary: name.Title()}
	if !c.Cut {
		u.Problem = fmt.Sprintf("%d octets of private data, %s needs %d", have, what, need)
	}
	return read{u: u, nvmeStatus: -1}
}

func nvme(data []byte, c *Context) read {
	const name = record.ULPNVMeRDMA
	df := gopacket.NilDecodeFeedback
	switch c.Role {
	case RoleRequest:
		var m layers.NVMeRDMACMReq
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "the RDMA_CM_REQUEST private data", layers.NVMeRDMAReqMinLen, c)
		}
		return result(name, &m, "", "")
	case RoleAccept:
		var m layers.NVMeRDMACMRep
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "the RDMA_CM_ACCEPT private data", layers.NVMeRDMARepMinLen, c)
		}
		return result(name, &m, "", "")
	default:
		var m layers.NVMeRDMACMRej
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "the RDMA_CM_REJECT private data", layers.NVMeRDMARejLen, c)
		}
		r := result(name, &m, "", "")
		if m.RecFmt == 0 {
			r.nvmeStatus = int(m.Status)
		}
		return r
	}
}

func srp(data []byte, c *Context) read {
	const name = record.ULPSRP
	df := gopacket.NilDecodeFeedback
	switch {
	case c.Role == RoleRequest && c.Consumer == layers.IPCMHeaderLen:
		var m layers.SRPLoginReqRDMA
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "SRP_LOGIN_REQ (rdma_cm)", layers.SRPLoginReqRDMAMin, c)
		}
		return result(name, &m, "", "")
	case c.Role == RoleRequest:
		var m layers.SRPLoginReq
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "SRP_LOGIN_REQ", layers.SRPLoginReqLen, c)
		}
		return result(name, &m, "", "")
	case c.Role == RoleAccept:
		var m layers.SRPLoginRsp
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "SRP_LOGIN_RSP", layers.SRPLoginRspLen, c)
		}
		return result(name, &m, "", "")
	default:
		var m layers.SRPLoginRej
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "SRP_LOGIN_REJ", layers.SRPLoginRejLen, c)
		}
		return result(name, &m, "", "")
	}
}

// rds reads RDS connection private data whose addresses should be src and
// dst: the IPv6 layout when they are IPv6 addresses, else the IPv4 one.
// Alone (recognising), only a layout whose addresses repeat them counts;
// claimed, one that does not is a problem.
func rds(data []byte, src, dst netip.Addr, alone bool, c *Context) read {
	const name = record.ULPRDS
	df := gopacket.NilDecodeFeedback
	if alone && !src.IsValid() {
		return read{nvmeStatus: -1}
	}
	v6 := src.IsValid() && !src.Unmap().Is4()
	var m layers.RDSConnect
	var l layers.ULPPrivateData = &m
	var err error
	if v6 {
		var m6 layers.RDSConnectIPv6
		err, l = m6.DecodeFromBytes(data, df), &m6
		m = m6.RDSConnect
	} else {
		err = m.DecodeFromBytes(data, df)
	}
	if err != nil {
		if alone {
			return read{nvmeStatus: -1}
		}
		need, what := layers.RDSConnectLen, "the RDS connection private data"
		if v6 {
			need, what = layers.RDS6ConnectLen, "the RDS IPv6 connection private data"
		}
		return short(name, len(data), what, need, c)
	}
	repeats := m.Repeats(src, dst)
	if alone && !repeats {
		return read{nvmeStatus: -1}
	}
	r := result(name, l, "", "")
	if r.u.Problem == "" && src.IsValid() && !repeats {
		r.u.Problem = fmt.Sprintf("addresses %s → %s are not the connection's %s → %s", m.SrcAddr, m.DstAddr, src.Unmap(), dst.Unmap())
	}
	return r
}

func lustre(data []byte, c *Context) read {
	const name = record.ULPLustre
	df := gopacket.NilDecodeFeedback
	why := fmt.Sprintf("magic 0x%08x", uint32(layers.LustreO2IBMagic))
	if c.Role == RoleReject {
		var m layers.LustreO2IBRej
		if m.DecodeFromBytes(data, df) != nil {
			r := short(name, len(data), "the o2iblnd reject", layers.LustreO2IBRejMin, c)
			r.why = why
			return r
		}
		return result(name, &m, "", why)
	}
	var m layers.LustreO2IBMsg
	if m.DecodeFromBytes(data, df) != nil {
		r := short(name, len(data), "an o2iblnd connection message", layers.LustreO2IBMsgLen, c)
		r.why = why
		return r
	}
	r := result(name, &m, "", why)
	want, wantName := uint8(layers.LustreO2IBConnReq), "CONNREQ"
	if c.Role == RoleAccept {
		want, wantName = layers.LustreO2IBConnAck, "CONNACK"
	}
	if r.u.Problem == "" && m.Type != want {
		r.u.Problem = fmt.Sprintf("type 0x%02x where the %s belongs", m.Type, wantName)
	}
	return r
}

func sdp(data []byte, c *Context) read {
	const name = record.ULPSDP
	df := gopacket.NilDecodeFeedback
	switch c.Role {
	case RoleRequest:
		var m layers.SDPHello
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "the SDP Hello", layers.SDPHelloLen, c)
		}
		return result(name, &m, "", "")
	case RoleAccept:
		var m layers.SDPHelloAck
		if m.DecodeFromBytes(data, df) != nil {
			return short(name, len(data), "the SDP HelloAck", layers.SDPHelloAckLen, c)
		}
		return result(name, &m, "", "")
	}
	return read{nvmeStatus: -1}
}
