package layers

import "testing"

// SRP login vectors laid out as Linux's ib_srp and ib_srpt send them
// (include/scsi/srp.h). tshark 4.0 decodes no SRP login.
var (
	//	00          opcode SRP_LOGIN_REQ, 7 reserved octets
	//	08          tag 0x1122334455667788
	//	10          requested max initiator-to-target IU length 8260, 4 reserved
	//	18          buffer formats 0x0006 (direct, indirect), flags 0x01, reserved, imm data offset 0, reserved
	//	20          initiator port identifier (id_ext 0, GUID 0x0002c90300000001)
	//	30          target port identifier (id_ext and IOC GUID 0x0002c90300000101)
	srpLoginReqIB = hexOctets(`
		00 00 00 00 00 00 00 00  11 22 33 44 55 66 77 88
		00 00 20 44 00 00 00 00  00 06 01 00 00 00 00 00
		00 00 00 00 00 00 00 00  00 02 c9 03 00 00 00 01
		00 02 c9 03 00 00 01 01  00 02 c9 03 00 00 01 01`)
	// The same request packed for rdma_cm (struct srp_login_req_rdma): tag,
	// buffer formats, flags, opcode, IU length, the port identifiers, the
	// immediate data offset and 6 reserved octets.
	srpLoginReqRDMA = hexOctets(`
		11 22 33 44 55 66 77 88  00 06 01 00 00 00 20 44
		00 00 00 00 00 00 00 00  00 02 c9 03 00 00 00 01
		00 02 c9 03 00 00 01 01  00 02 c9 03 00 00 01 01
		00 00 00 00 00 00 00 00`)
	// SRP_LOGIN_RSP: request limit delta 64, the tag, IU lengths 8260 and
	// 8260, buffer formats 0x0006, flags 0x02 (multi-channel maintained),
	// 25 reserved octets.
	srpLoginRsp = hexOctets(`
		c0 00 00 00 00 00 00 40  11 22 33 44 55 66 77 88
		00 00 20 44 00 00 20 44  00 06 02 00 00 00 00 00
		00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00
		00 00 00 00`)
	// SRP_LOGIN_REJ: reason 0x00010001, insufficient resources.
	srpLoginRej = hexOctets(`
		c2 00 00 00 00 01 00 01  11 22 33 44 55 66 77 88
		00 00 00 00 00 00 00 00  00 06 00 00 00 00 00 00`)
)

func TestSRPDecode(t *testing.T) {
	info := SRPLoginReqInfo{Tag: 0x1122334455667788, ReqITIULen: 8260, ReqBufFmt: 6, ReqFlags: 1,
		InitiatorPortID: [16]byte{8: 0x00, 9: 0x02, 10: 0xc9, 11: 0x03, 15: 0x01},
		TargetPortID:    [16]byte{1: 0x02, 2: 0xc9, 3: 0x03, 6: 0x01, 7: 0x01, 9: 0x02, 10: 0xc9, 11: 0x03, 14: 0x01, 15: 0x01}}
	ib := &SRPLoginReq{SRPLoginReqInfo: info, reservedZero: true}
	ib.Contents, ib.Payload = srpLoginReqIB, srpLoginReqIB[64:]
	rdma := &SRPLoginReqRDMA{SRPLoginReqInfo: info}
	rdma.Contents, rdma.Payload = srpLoginReqRDMA, srpLoginReqRDMA[56:]
	rsp := &SRPLoginRsp{Opcode: 0xc0, ReqLimDelta: 64, Tag: 0x1122334455667788, MaxITIULen: 8260, MaxTIIULen: 8260, BufFmt: 6,
		RspFlags: 2, reservedZero: true}
	rsp.Contents, rsp.Payload = srpLoginRsp, srpLoginRsp[52:]
	rej := &SRPLoginRej{Opcode: 0xc2, Reason: 0x00010001, Tag: 0x1122334455667788, BufFmt: 6}
	rej.Contents, rej.Payload = srpLoginRej, srpLoginRej[32:]
	badFmt := patch(srpLoginReqIB, at(24, 0, 1))
	badIB := &SRPLoginReq{SRPLoginReqInfo: info, reservedZero: true}
	badIB.ReqBufFmt = 1
	badIB.Contents, badIB.Payload = badFmt, badFmt[64:]
	runULPCases(t, []ulpCase{
		{name: "LOGIN_REQ over the IB CM", data: srpLoginReqIB, want: ib,
			summary: "SRP_LOGIN_REQ tag=0x1122334455667788 max_it_iu_len=8260 buf_fmt=0x0006",
			fields: map[string]string{"opcode": "0x00", "tag": "0x1122334455667788", "max_it_iu_len": "8260", "buf_fmt": "0x0006",
				"flags": "0x01", "initiator_port_id": "00000000000000000002c90300000001",
				"target_port_id": "0002c903000001010002c90300000101"}},
		{name: "LOGIN_REQ over rdma_cm", data: srpLoginReqRDMA, want: rdma,
			summary: "SRP_LOGIN_REQ tag=0x1122334455667788 max_it_iu_len=8260 buf_fmt=0x0006"},
		{name: "LOGIN_REQ with buffer format 1", data: badFmt, want: badIB,
			problem: "required buffer formats 0x0001 are neither direct (0x0002) nor indirect (0x0004)",
			summary: "SRP_LOGIN_REQ tag=0x1122334455667788 max_it_iu_len=8260 buf_fmt=0x0001"},
		{name: "LOGIN_RSP", data: srpLoginRsp, want: rsp,
			summary: "SRP_LOGIN_RSP req_lim_delta=64 max_it_iu_len=8260 max_ti_iu_len=8260",
			fields:  map[string]string{"opcode": "0xc0", "req_lim_delta": "64", "max_ti_iu_len": "8260", "flags": "0x02"}},
		{name: "LOGIN_REJ", data: srpLoginRej, want: rej,
			summary: "SRP_LOGIN_REJ reason=0x00010001 (insufficient RDMA channel resources)",
			fields:  map[string]string{"opcode": "0xc2", "reason": "0x00010001"}},
	})
}

func TestSRPPlausible(t *testing.T) {
	dec := func(l interface {
		ULPPrivateData
		Plausible() bool
	}, b []byte) bool {
		decodeOK(t, l, b)
		return l.Plausible()
	}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"IB request", dec(&SRPLoginReq{}, srpLoginReqIB), true},
		{"rdma_cm request", dec(&SRPLoginReqRDMA{}, srpLoginReqRDMA), true},
		{"response", dec(&SRPLoginRsp{}, srpLoginRsp), true},
		{"reject", dec(&SRPLoginRej{}, srpLoginRej), true},
		{"zeros as an IB request", dec(&SRPLoginReq{}, make([]byte, 92)), false},
		{"zeros as an rdma_cm request", dec(&SRPLoginReqRDMA{}, make([]byte, 56)), false},
		{"IB request with reserved octets set", dec(&SRPLoginReq{}, patch(srpLoginReqIB, at(3, 9))), false},
		{"IB request read as rdma_cm", dec(&SRPLoginReqRDMA{}, srpLoginReqIB), false},
		{"response with a small IU", dec(&SRPLoginRsp{}, patch(srpLoginRsp, at(16, 0, 0, 0, 8))), false},
		{"reject with an undefined reason", dec(&SRPLoginRej{}, patch(srpLoginRej, at(4, 0, 2))), false},
		{"NVMe-oF REQ as an rdma_cm request", dec(&SRPLoginReqRDMA{}, nvmeREQReal), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: Plausible %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
