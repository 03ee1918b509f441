package privdata

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The upper layer step: which protocol the private data is read as, with
// what evidence, from which octet, and what is said when the octets do not
// fit. The layouts are the specifications' and the implementations': NVMe
// RDMA Transport Specification 1.0, section 3.1; IBTA Vol 1, Annexes A4
// (SDP), A11 (IP CM) and A12 (iSER); T10 SRP; RFC 4755 (IPoIB-CM); Linux
// RDS (net/rds/ib.h), librdmacm's rsockets and Lustre's o2iblnd. The
// layers' own tests check every field; here the Summary line stands for the
// decode.

// IP CM Service IDs (IBTA Annex A11): 0x0000000001, the port space (0x06
// TCP), the port.
const (
	sidNFS   = 0x0000000001064e51 // TCP 20049
	sidNVMe  = 0x0000000001061144 // TCP 4420
	sidISER  = 0x0000000001060cbc // TCP 3260
	sidRDS   = 0x00000000010648ca // TCP 18634
	sidSMB   = 0x00000000010601bd // TCP 445
	sidIPoIB = 0x1000000000000405 // IPoIB-CM: 0x1000000000000000 | QPN 0x000405
	sidSDP   = 0x0000000000011389 // rdma_cm's SDP port space, port 5001
)

var (
	ini4, res4 = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	ini6, res6 = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
)

// req is a REQ's 92 octets: the IP CM header, then the consumer's.
func req(consumer []byte) []byte { return pad(cat(ipcmHeader, consumer), reqPD) }

// reqCtx is a REQ with an IP CM Service ID: the consumer's data after the
// IP CM header of 192.0.2.1 → 192.0.2.2.
func reqCtx(sid uint64) Context {
	return Context{Role: RoleRequest, Consumer: layers.IPCMHeaderLen, ServiceID: sid, HasServiceID: true, IPCMSrc: ini4, IPCMDst: res4}
}

// ibReqCtx is a REQ without an IP CM header (AF_IB, SDP, IPoIB-CM).
func ibReqCtx(sid uint64) Context {
	return Context{Role: RoleRequest, ServiceID: sid, HasServiceID: true}
}

// replyCtx is a reply read as its request's upper layer, as the connection
// rules do (conn.Tracker.readAs).
func replyCtx(role Role, claim record.ULPName, ev record.ULPEvidence) Context {
	return Context{Role: role, Claim: claim, ClaimEvidence: ev, ClaimWhy: "as its request"}
}

// mpaReqCtx is an MPA Request to TCP port port; rev 2 puts the consumer's
// data after the IRD/ORD words.
func mpaReqCtx(port uint16, rev int) Context {
	c := Context{Role: RoleRequest, Port: port, HasPort: true, Src: ini4, Dst: res4}
	if rev == 2 {
		c.Consumer = layers.MPAIRDORDLen
	}
	return c
}

// ird is MPA revision 2's IRD and ORD words: IRD 16, ORD 16.
var ird = octets("0010 0010")

// Upper layers' private data, each with its layout.
var (
	// Lustre o2iblnd CONNREQ, little-endian: the 56 octets left after the
	// IP CM header.
	lustreConnReq = octets(`
		91 1b e9 0b   // magic 0x0be91b91, little-endian
		12 00 c0 08   // version 0x12, type CONNREQ, 8 credits
		38 00 00 00   // nob 56
		00 00 00 00   // no checksum
		01 02 00 c0 00 00 05 00  00 00 00 00 00 00 00 00   // source NID 192.0.2.1@o2ib, stamp
		02 02 00 c0 00 00 05 00  00 00 00 00 00 00 00 00   // destination NID 192.0.2.2@o2ib, stamp
		08 00 00 01   // queue depth 8, 256 fragments
		00 10 00 00   // max message size 4096`)
	// Lustre o2iblnd CONNACK, big-endian (the magic in the sender's order).
	lustreConnAck = octets(`
		0b e9 1b 91  00 11 c1 04   // magic, version 0x11, CONNACK, 4 credits
		00 00 00 38  00 00 00 00   // nob 56, no checksum
		0000000000000000 0000000000000000 0000000000000000 0000000000000000   // NIDs and stamps
		00 10 00 20  00 00 10 00   // queue depth 16, 32 fragments, max message size 4096`)
	// Lustre o2iblnd reject, little-endian, with its parameters.
	lustreRej = octets(`
		91 1b e9 0b  12 00 07 00   // magic, version 0x12, why 7, padding
		0000000000000001           // incarnation
		08 00 00 01  00 10 00 00   // queue depth 8, 256 fragments, 4096`)

	// SDP Hello (IBTA Annex A4): the BSDH, then the Hello Header.
	sdpHello = octets(`
		00 00 00 10  00 00 00 40  00000000 00000000   // MID Hello, flags, 16 buffers, len 64, MSeq, MSeqAck
		22 40 00 08   // version 2.2, IPv4 without capabilities, reserved, 8 adverts
		00 01 00 00   // desired remote receive size 65536
		00 00 80 00   // local receive size 32768
		13 8a 00 00   // local port 5002, reserved
		00000000 00000000 00000000 c0000201   // source 192.0.2.1
		00000000 00000000 00000000 c0000202   // destination 192.0.2.2`)
	sdpHelloAck = octets(`
		01 00 00 10  00 00 00 18  00000000 00000000   // MID HelloAck, 16 buffers, len 24
		22 40 00 00  00 00 80 00                      // version 2.2, IPv4, actual receive size 32768`)

	// rsockets connection data, version 1 (librdmacm's struct rs_conn_data).
	rsocket = octets(`
		01 00 01 80  00 00 00 00   // version 1, no flags, 384 credits, reserved, no iomap
		00007f0000001000 00001234 00000002   // target SGL: address, rkey, 2 entries
		00007f0000002000 00005678 00010000   // data buffer: address, rkey, 65536 octets`)

	// SRP_LOGIN_REQ as the private data of an IB CM REQ (64 octets).
	srpLoginReq = octets(`
		00 00000000000000   // SRP_LOGIN_REQ, reserved
		0000000000000001    // tag 1
		00002044 00000000   // requested max initiator to target IU length 8260, reserved
		0006 00 00 0000 0000   // required buffer formats: direct and indirect; flags; immediate data offset
		fe800000000000000002c90300012345   // initiator port ID
		fe800000000000000002c90300016789   // target port ID`)
	// SRP_LOGIN_REQ as Linux packs it behind an IP CM header (56 octets).
	srpLoginReqRDMA = octets(`
		0000000000000002    // tag 2
		0002 00 00          // required buffer formats: direct; flags; opcode SRP_LOGIN_REQ
		00002044            // requested max initiator to target IU length 8260
		fe800000000000000002c90300012345   // initiator port ID
		fe800000000000000002c90300016789   // target port ID
		0000 000000000000   // immediate data offset, reserved`)
	srpLoginRsp = octets(`
		c0 000000  00000040   // SRP_LOGIN_RSP, request limit delta 64
		0000000000000001      // tag
		00002044 00002044     // max IU lengths 8260 both ways
		0006 00               // supported buffer formats, flags`)
	srpLoginRej = octets(`
		c2 000000  00010001   // SRP_LOGIN_REJ, insufficient RDMA channel resources
		0000000000000001      // tag
		0000000000000000 0006 // reserved, supported buffer formats`)

	// RDS connection private data, IPv4 layout, addresses 192.0.2.1 →
	// 192.0.2.2 (the REQ's IP CM header's).
	rdsReq = octets(`
		c0000201 c0000202   // source, destination
		04 01 0002 00 00 2000   // protocol 4.1, minor mask, TOS, reserved, fragment size 8192
		0000000000000000 00000000   // ack sequence, credit`)
	// The REP's, the responder's own address first.
	rdsRep = octets(`
		c0000202 c0000201  04 01 0002 00 00 0000  0000000000000000 00000010   // credit 16`)
	rds6Req = octets(`
		20010db8000000000000000000000001 20010db8000000000000000000000002   // source, destination
		04 01 0002 00 00 0000  0000000000000000 00000000`)

	// NVMe-oF RDMA_CM_REQUEST (little-endian): admin queue, HRQSIZE 32,
	// HSQSIZE 31 (0's based), as Linux and SPDK size them.
	nvmeReq   = octets("0000 0000 2000 1f00 0000")
	nvmeIOReq = octets("0000 0100 8000 7f00 0100") // I/O queue 1, 128 and 127, controller 1
)

// ulpWant is the record expected, its Fields aside.
type ulpWant struct {
	protocol record.ULPName
	offset   int
	evidence record.ULPEvidence
	name     string // the layer's name; "" when nothing was decoded
	summary  string
	problem  string
}

type ulpCase struct {
	name  string
	pd    []byte
	ctx   Context
	want  *ulpWant
	finds []want
	// iSER's flag, read by the connection rules.
	iserNoInvalidate bool
}

func runULPCases(t *testing.T, cases []ulpCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, fs := Identify(tc.pd, tc.ctx)
			checkFindings(t, fs, tc.finds)
			if tc.want == nil {
				if u != nil {
					t.Errorf("read as %+v, want nothing", u)
				}
				return
			}
			if u == nil {
				t.Fatal("read as nothing")
			}
			got := ulpWant{u.Protocol, u.Offset, u.Evidence, u.Name, u.Summary, u.Problem}
			if got != *tc.want {
				t.Errorf("read as\n  %+v, want\n  %+v", got, *tc.want)
			}
			if (len(u.Fields) > 0) != (u.Name != "") {
				t.Errorf("%d fields for %q", len(u.Fields), u.Name)
			}
			if u.HasISERFlags != (u.Protocol == record.ULPISER && u.Name != "") || u.SendWithInvalidateNotSupported != tc.iserNoInvalidate {
				t.Errorf("iSER flags: has %v, no invalidate %v", u.HasISERFlags, u.SendWithInvalidateNotSupported)
			}
		})
	}
}

const (
	strong = record.EvidencePrivateData
	sport  = record.EvidenceServicePort
	tport  = record.EvidenceTCPPort
)

// The octets that show their protocol by themselves: a magic number or a
// layout check, whatever the Service ID says.
func TestIdentifyByOctets(t *testing.T) {
	runULPCases(t, []ulpCase{
		{name: "Lustre CONNREQ behind the IP CM header", pd: req(lustreConnReq), ctx: reqCtx(0x0000000001060fa3),
			want: &ulpWant{record.ULPLustre, 36, strong, "Lustre o2iblnd Message",
				"Lustre o2iblnd CONNREQ v0x12 credits=8 queue_depth=8 max_frags=256 max_msg_size=4096", ""}},
		{name: "Lustre CONNACK, big-endian, in the REP", pd: pad(lustreConnAck, repPD), ctx: Context{Role: RoleAccept},
			want: &ulpWant{record.ULPLustre, 0, strong, "Lustre o2iblnd Message",
				"Lustre o2iblnd CONNACK v0x11 credits=4 queue_depth=16 max_frags=32 max_msg_size=4096", ""}},
		{name: "Lustre reject in a consumer REJ", pd: pad(lustreRej, rejPD), ctx: Context{Role: RoleReject},
			want: &ulpWant{record.ULPLustre, 0, strong, "Lustre o2iblnd Reject",
				"Lustre o2iblnd reject why=7 (message queue size does not match)", ""}},
		{name: "the old 7-octet Lustre reject", pd: lustreRej[:7], ctx: Context{Role: RoleReject},
			want: &ulpWant{record.ULPLustre, 0, strong, "Lustre o2iblnd Reject",
				"Lustre o2iblnd reject why=7 (message queue size does not match)", ""}},
		{name: "the octets beat the port: Lustre to the NVMe-oF port", pd: req(lustreConnReq), ctx: reqCtx(sidNVMe),
			want: &ulpWant{record.ULPLustre, 36, strong, "Lustre o2iblnd Message",
				"Lustre o2iblnd CONNREQ v0x12 credits=8 queue_depth=8 max_frags=256 max_msg_size=4096", ""}},
		{name: "SDP Hello in a REQ without IP CM header", pd: pad(sdpHello, reqPD), ctx: ibReqCtx(sidSDP),
			want: &ulpWant{record.ULPSDP, 0, strong, "SDP Hello", "SDP Hello v2.2 local_rcv_sz=32768 des_rem_rcv_sz=65536 port=5002", ""}},
		{name: "SDP HelloAck in the REP", pd: pad(sdpHelloAck, repPD), ctx: Context{Role: RoleAccept},
			want: &ulpWant{record.ULPSDP, 0, strong, "SDP HelloAck", "SDP HelloAck v2.2 act_rcv_sz=32768", ""}},
		{name: "rsockets behind the IP CM header", pd: req(rsocket), ctx: reqCtx(0x0000000001061f90),
			want: &ulpWant{record.ULPRSockets, 36, strong, "rsockets Connection Data", "rsockets v1 credits=384 data_buf_length=65536", ""}},
		{name: "rsockets in the REP", pd: pad(rsocket, repPD), ctx: Context{Role: RoleAccept},
			want: &ulpWant{record.ULPRSockets, 0, strong, "rsockets Connection Data", "rsockets v1 credits=384 data_buf_length=65536", ""}},
		{name: "SRP_LOGIN_REQ over the IB CM", pd: pad(srpLoginReq, reqPD), ctx: ibReqCtx(0x0002c90300000001),
			want: &ulpWant{record.ULPSRP, 0, strong, "SRP_LOGIN_REQ", "SRP_LOGIN_REQ tag=0x1 max_it_iu_len=8260 buf_fmt=0x0006", ""}},
		{name: "SRP_LOGIN_REQ repacked behind the IP CM header", pd: req(srpLoginReqRDMA), ctx: reqCtx(0x0000000001061f91),
			want: &ulpWant{record.ULPSRP, 36, strong, "SRP_LOGIN_REQ (rdma_cm)", "SRP_LOGIN_REQ tag=0x2 max_it_iu_len=8260 buf_fmt=0x0002", ""}},
		{name: "the IB CM layout behind an IP CM header is no SRP login", pd: req(srpLoginReq[:56]), ctx: reqCtx(0x0000000001061f91)},
		{name: "SRP_LOGIN_RSP in the REP", pd: pad(srpLoginRsp, repPD), ctx: Context{Role: RoleAccept},
			want: &ulpWant{record.ULPSRP, 0, strong, "SRP_LOGIN_RSP", "SRP_LOGIN_RSP req_lim_delta=64 max_it_iu_len=8260 max_ti_iu_len=8260", ""}},
		{name: "SRP_LOGIN_REJ in a consumer REJ", pd: pad(srpLoginRej, rejPD), ctx: Context{Role: RoleReject},
			want: &ulpWant{record.ULPSRP, 0, strong, "SRP_LOGIN_REJ", "SRP_LOGIN_REJ reason=0x00010001 (insufficient RDMA channel resources)", ""}},
		{name: "RDS repeating the IP CM header's addresses", pd: req(rdsReq), ctx: reqCtx(0x0000000001060001),
			want: &ulpWant{record.ULPRDS, 36, strong, "RDS Connect Private Data", "RDS 4.1 credit=0 frag_size=8192", ""}},
		{name: "RDS in the REP, the responder's address first", pd: pad(rdsRep, repPD), ctx: Context{Role: RoleAccept, Src: res4, Dst: ini4},
			want: &ulpWant{record.ULPRDS, 0, strong, "RDS Connect Private Data", "RDS 4.1 credit=16", ""}},
		{name: "RDS, IPv6 layout for IPv6 addresses", pd: req(rds6Req),
			ctx:  Context{Role: RoleRequest, Consumer: 36, IPCMSrc: ini6, IPCMDst: res6},
			want: &ulpWant{record.ULPRDS, 36, strong, "RDS Connect Private Data (IPv6)", "RDS 4.1 credit=0", ""}},
		{name: "RDS, IPv4-mapped addresses take the IPv4 layout", pd: req(rdsReq),
			ctx:  Context{Role: RoleRequest, Consumer: 36, IPCMSrc: netip.AddrFrom16(ini4.As16()), IPCMDst: netip.AddrFrom16(res4.As16())},
			want: &ulpWant{record.ULPRDS, 36, strong, "RDS Connect Private Data", "RDS 4.1 credit=0 frag_size=8192", ""}},
		{name: "RDS over iWARP: the frame's addresses", pd: cat(ird, rdsReq), ctx: mpaReqCtx(18634, 2),
			want: &ulpWant{record.ULPRDS, 4, strong, "RDS Connect Private Data", "RDS 4.1 credit=0 frag_size=8192", ""}},
		{name: "RDS addresses without the connection's: not recognised", pd: req(rdsReq), ctx: Context{Role: RoleRequest, Consumer: 36}},
		{name: "RDS addresses of another connection: not recognised", pd: req(rdsRep), ctx: reqCtx(0x0000000001060001)},
		{name: "NVMe-oF admin queue without its port", pd: req(nvmeReq), ctx: reqCtx(0x0000000001061f92),
			want: &ulpWant{record.ULPNVMeRDMA, 36, strong, "NVMe-oF RDMA_CM_REQUEST Private Data", "NVMe-oF qid=0 hrqsize=32 hsqsize=31", ""}},
		{name: "NVMe-oF I/O queue to its port", pd: req(nvmeIOReq), ctx: reqCtx(sidNVMe),
			want: &ulpWant{record.ULPNVMeRDMA, 36, strong, "NVMe-oF RDMA_CM_REQUEST Private Data", "NVMe-oF qid=1 hrqsize=128 hsqsize=127 cntlid=1", ""}},
		{name: "zeros say nothing", pd: make([]byte, reqPD), ctx: reqCtx(0x0000000001061f92)},
		{name: "an RTU says nothing, whatever its octets", pd: pad(lustreConnReq, rtuPD), ctx: Context{Role: RoleOther}},
	})
}

// Octets that show nothing by themselves are read as what the carrier
// claims: the Service ID's port, the iWARP responder's TCP port, or the
// upper layer the request named (weak evidence).
func TestIdentifyByClaim(t *testing.T) {
	flagsNoInv := octets("40 000000") // iSER: Send With Invalidate not supported
	flagsNone := octets("c0 000000")  // iSER: no ZBVA, no Send With Invalidate
	nvmeSameSizes := octets("0000 0000 2000 2000 0000")
	runULPCases(t, []ulpCase{
		{name: "NVMe-oF sizes no host sends, to its port", pd: req(nvmeSameSizes), ctx: reqCtx(sidNVMe),
			want: &ulpWant{record.ULPNVMeRDMA, 36, sport, "NVMe-oF RDMA_CM_REQUEST Private Data", "NVMe-oF qid=0 hrqsize=32 hsqsize=32", ""}},
		{name: "NVMe-oF with RECFMT 1", pd: req(octets("0100 0000 2000 1f00 0000")), ctx: reqCtx(sidNVMe),
			want:  &ulpWant{record.ULPNVMeRDMA, 36, sport, "NVMe-oF RDMA_CM_REQUEST Private Data", "NVMe-oF qid=0 hrqsize=32 hsqsize=31", "RECFMT is 1, not 0"},
			finds: []want{{finding.ULPPrivateDataInvalid, "NVMe-oF (Service ID port 4420): RECFMT is 1, not 0"}}},
		{name: "NVMe-oF over iWARP, to TCP port 4420", pd: cat(ird, octets("0200 0000 2000 1f00 0000")), ctx: mpaReqCtx(4420, 2),
			want:  &ulpWant{record.ULPNVMeRDMA, 4, tport, "NVMe-oF RDMA_CM_REQUEST Private Data", "NVMe-oF qid=0 hrqsize=32 hsqsize=31", "RECFMT is 2, not 0"},
			finds: []want{{finding.ULPPrivateDataInvalid, "NVMe-oF (TCP port 4420): RECFMT is 2, not 0"}}},
		{name: "NVMe-oF accept as its request, with Linux's garbage after CRQSIZE", pd: pad(octets("0000 8000 deadbeef"), repPD),
			ctx:  replyCtx(RoleAccept, record.ULPNVMeRDMA, sport),
			want: &ulpWant{record.ULPNVMeRDMA, 0, sport, "NVMe-oF RDMA_CM_ACCEPT Private Data", "NVMe-oF crqsize=128", ""}},
		{name: "NVMe-oF reject: RDMA No Resources", pd: pad(octets("0000 0600"), rejPD), ctx: replyCtx(RoleReject, record.ULPNVMeRDMA, sport),
			want:  &ulpWant{record.ULPNVMeRDMA, 0, sport, "NVMe-oF RDMA_CM_REJECT Private Data", "NVMe-oF status=6 (RDMA No Resources)", ""},
			finds: []want{{finding.NVMeRDMARejected, "the controller rejected the host's request with status 6 (RDMA No Resources)"}}},
		{name: "NVMe-oF reject with a reserved status", pd: pad(octets("0000 0000"), rejPD), ctx: replyCtx(RoleReject, record.ULPNVMeRDMA, strong),
			want: &ulpWant{record.ULPNVMeRDMA, 0, strong, "NVMe-oF RDMA_CM_REJECT Private Data", "NVMe-oF status=0", "STS 0 is reserved"},
			finds: []want{{finding.ULPPrivateDataInvalid, "NVMe-oF (as its request): STS 0 is reserved"},
				{finding.NVMeRDMARejected, "the controller rejected the host's request with status 0 (reserved)"}}},
		{name: "NVMe-oF reject of another record format: no status to tell", pd: pad(octets("0100 0600"), rejPD),
			ctx:   replyCtx(RoleReject, record.ULPNVMeRDMA, sport),
			want:  &ulpWant{record.ULPNVMeRDMA, 0, sport, "NVMe-oF RDMA_CM_REJECT Private Data", "NVMe-oF status=6 (RDMA No Resources)", "RECFMT is 1, not 0"},
			finds: []want{{finding.ULPPrivateDataInvalid, "NVMe-oF (as its request): RECFMT is 1, not 0"}}},
		{name: "iSER CM header behind the IP CM header", pd: req(flagsNoInv), ctx: reqCtx(sidISER), iserNoInvalidate: true,
			want: &ulpWant{record.ULPISER, 36, sport, "iSER CM Header", "iSER flags=0x40 (no Send With Invalidate)", ""}},
		{name: "iSER REP as its request", pd: pad(flagsNone, repPD), ctx: replyCtx(RoleAccept, record.ULPISER, sport), iserNoInvalidate: true,
			want: &ulpWant{record.ULPISER, 0, sport, "iSER CM Header", "iSER flags=0xc0 (no ZBVA, no Send With Invalidate)", ""}},
		{name: "iSER over iWARP, flags clear", pd: cat(ird, octets("00 000000")), ctx: mpaReqCtx(3260, 2),
			want: &ulpWant{record.ULPISER, 4, tport, "iSER CM Header", "iSER flags=0x00", ""}},
		{name: "iSER defines no reject data", pd: make([]byte, rejPD), ctx: replyCtx(RoleReject, record.ULPISER, sport)},
		{name: "RDS to its port, addresses of another connection", pd: req(octets("c6336401 c6336402 04 01")), ctx: reqCtx(sidRDS),
			want: &ulpWant{record.ULPRDS, 36, sport, "RDS Connect Private Data", "RDS 4.1 credit=0",
				"addresses 198.51.100.1 → 198.51.100.2 are not the connection's 192.0.2.1 → 192.0.2.2"},
			finds: []want{{finding.ULPPrivateDataInvalid,
				"RDS (Service ID port 18634): addresses 198.51.100.1 → 198.51.100.2 are not the connection's 192.0.2.1 → 192.0.2.2"}}},
		{name: "RDS to its port, protocol 5", pd: req(octets("c0000201 c0000202 05 00")), ctx: reqCtx(0x0000000001064001),
			want:  &ulpWant{record.ULPRDS, 36, sport, "RDS Connect Private Data", "RDS 5.0 credit=0", "protocol major version 5 is neither 3 nor 4"},
			finds: []want{{finding.ULPPrivateDataInvalid, "RDS (Service ID port 16385): protocol major version 5 is neither 3 nor 4"}}},
		{name: "RDS REP as its request, without the frame's addresses", pd: pad(rdsRep, repPD), ctx: replyCtx(RoleAccept, record.ULPRDS, sport),
			want: &ulpWant{record.ULPRDS, 0, sport, "RDS Connect Private Data", "RDS 4.1 credit=16", ""}},
		{name: "RDS defines no reject data", pd: make([]byte, rejPD), ctx: replyCtx(RoleReject, record.ULPRDS, sport)},
		{name: "rsockets REP with another version, as its request", pd: pad(cat(octets("02"), rsocket[1:]), repPD),
			ctx:   replyCtx(RoleAccept, record.ULPRSockets, strong),
			want:  &ulpWant{record.ULPRSockets, 0, strong, "rsockets Connection Data", "rsockets v2 credits=384 data_buf_length=65536", "version 2 is not 1"},
			finds: []want{{finding.ULPPrivateDataInvalid, "rsockets (as its request): version 2 is not 1"}}},
		{name: "rsockets defines no reject data", pd: make([]byte, rejPD), ctx: replyCtx(RoleReject, record.ULPRSockets, strong)},
		{name: "SRP REP of zeros, as its request", pd: make([]byte, repPD), ctx: replyCtx(RoleAccept, record.ULPSRP, strong),
			want: &ulpWant{record.ULPSRP, 0, strong, "SRP_LOGIN_RSP", "SRP_LOGIN_RSP req_lim_delta=0 max_it_iu_len=0 max_ti_iu_len=0",
				"opcode 0x00 is not SRP_LOGIN_RSP (0xc0)"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (as its request): opcode 0x00 is not SRP_LOGIN_RSP (0xc0)"}}},
		{name: "SRP REJ of another reason, as its request", pd: pad(octets("c2 000000 00010007"), rejPD), ctx: replyCtx(RoleReject, record.ULPSRP, strong),
			want:  &ulpWant{record.ULPSRP, 0, strong, "SRP_LOGIN_REJ", "SRP_LOGIN_REJ reason=0x00010007", "reason 0x00010007 is not defined"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (as its request): reason 0x00010007 is not defined"}}},
		{name: "SRP REQ behind the IP CM header, as claimed", pd: req(cat(srpLoginReqRDMA[:11], octets("c0"), srpLoginReqRDMA[12:])),
			ctx:   Context{Role: RoleRequest, Consumer: 36, Claim: record.ULPSRP, ClaimEvidence: strong, ClaimWhy: "said so"},
			want:  &ulpWant{record.ULPSRP, 36, strong, "SRP_LOGIN_REQ (rdma_cm)", "SRP_LOGIN_REQ tag=0x2 max_it_iu_len=8260 buf_fmt=0x0002", "opcode 0xc0 is not SRP_LOGIN_REQ (0x00)"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (said so): opcode 0xc0 is not SRP_LOGIN_REQ (0x00)"}}},
		{name: "SRP REQ over the IB CM, IU length too small", pd: pad(cat(srpLoginReq[:16], octets("00000020"), srpLoginReq[20:]), reqPD),
			ctx:   Context{Role: RoleRequest, Claim: record.ULPSRP, ClaimEvidence: strong, ClaimWhy: "said so"},
			want:  &ulpWant{record.ULPSRP, 0, strong, "SRP_LOGIN_REQ", "SRP_LOGIN_REQ tag=0x1 max_it_iu_len=32 buf_fmt=0x0006", "requested maximum initiator to target IU length 32 is under 64"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (said so): requested maximum initiator to target IU length 32 is under 64"}}},
		{name: "SDP Service ID, Hello of major version 1", pd: pad(cat(sdpHello[:16], octets("12"), sdpHello[17:]), reqPD), ctx: ibReqCtx(sidSDP),
			want:  &ulpWant{record.ULPSDP, 0, sport, "SDP Hello", "SDP Hello v1.2 local_rcv_sz=32768 des_rem_rcv_sz=65536 port=5002", "major version 1 is not 2"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SDP (SDP Service ID, port 5001): major version 1 is not 2"}}},
		{name: "SDP HelloAck of the wrong MID, as its request", pd: pad(cat(octets("02"), sdpHelloAck[1:]), repPD), ctx: replyCtx(RoleAccept, record.ULPSDP, strong),
			want:  &ulpWant{record.ULPSDP, 0, strong, "SDP HelloAck", "SDP HelloAck v2.2 act_rcv_sz=32768", "MID 0x02 is not HelloAck (0x01)"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SDP (as its request): MID 0x02 is not HelloAck (0x01)"}}},
		{name: "SDP defines no reject data", pd: make([]byte, rejPD), ctx: replyCtx(RoleReject, record.ULPSDP, strong)},
		{name: "Lustre CONNREQ in the REP", pd: pad(lustreConnReq, repPD), ctx: Context{Role: RoleAccept},
			want: &ulpWant{record.ULPLustre, 0, strong, "Lustre o2iblnd Message",
				"Lustre o2iblnd CONNREQ v0x12 credits=8 queue_depth=8 max_frags=256 max_msg_size=4096", "type 0xc0 where the CONNACK belongs"},
			finds: []want{{finding.ULPPrivateDataInvalid, "Lustre o2iblnd (magic 0x0be91b91): type 0xc0 where the CONNACK belongs"}}},
		{name: "Lustre CONNACK in a REQ", pd: req(lustreConnAck), ctx: reqCtx(0x0000000001060fa3),
			want: &ulpWant{record.ULPLustre, 36, strong, "Lustre o2iblnd Message",
				"Lustre o2iblnd CONNACK v0x11 credits=4 queue_depth=16 max_frags=32 max_msg_size=4096", "type 0xc1 where the CONNREQ belongs"},
			finds: []want{{finding.ULPPrivateDataInvalid, "Lustre o2iblnd (magic 0x0be91b91): type 0xc1 where the CONNREQ belongs"}}},
		{name: "Lustre of version 0x13", pd: req(cat(lustreConnReq[:4], octets("1300"), lustreConnReq[6:])), ctx: reqCtx(0x0000000001060fa3),
			want: &ulpWant{record.ULPLustre, 36, strong, "Lustre o2iblnd Message",
				"Lustre o2iblnd CONNREQ v0x13 credits=8 queue_depth=8 max_frags=256 max_msg_size=4096", "version 0x13 is neither 0x11 nor 0x12"},
			finds: []want{{finding.ULPPrivateDataInvalid, "Lustre o2iblnd (magic 0x0be91b91): version 0x13 is neither 0x11 nor 0x12"}}},
		{name: "IPoIB-CM by its Service ID", pd: pad(octets("00000405 0000fff4"), reqPD), ctx: ibReqCtx(sidIPoIB),
			want: &ulpWant{record.ULPIPoIBCM, 0, sport, "IPoIB-CM Private Data", "IPoIB-CM qpn=0x000405 mtu=65524", ""}},
		{name: "IPoIB-CM with a QPN of more than 24 bits", pd: pad(octets("01000405 0000fff4"), reqPD), ctx: ibReqCtx(sidIPoIB),
			want:  &ulpWant{record.ULPIPoIBCM, 0, sport, "IPoIB-CM Private Data", "IPoIB-CM qpn=0x1000405 mtu=65524", "QPN 0x01000405 has more than 24 bits"},
			finds: []want{{finding.ULPPrivateDataInvalid, "IPoIB-CM (Service ID 0x1000000000000405): QPN 0x01000405 has more than 24 bits"}}},
		{name: "IPoIB-CM defines no reject data", pd: make([]byte, rejPD), ctx: replyCtx(RoleReject, record.ULPIPoIBCM, sport)},
		{name: "SMB Direct by port 445: nothing of its own to decode", pd: req(nil), ctx: reqCtx(sidSMB),
			want: &ulpWant{record.ULPSMBDirect, 36, sport, "", "SMB Direct", ""}},
		{name: "SMB Direct over iWARP, port 5445", pd: cat(ird, make([]byte, 8)), ctx: mpaReqCtx(5445, 2),
			want: &ulpWant{record.ULPSMBDirect, 4, tport, "", "SMB Direct", ""}},
		{name: "SMB Direct defines no reject data", pd: make([]byte, rejPD), ctx: replyCtx(RoleReject, record.ULPSMBDirect, sport)},
		{name: "NFS/RDMA's port without RFC 8797 data: nothing to read", pd: req(nil), ctx: reqCtx(sidNFS)},
		{name: "NFS/RDMA's TCP port: nothing to read", pd: cat(ird, make([]byte, 8)), ctx: mpaReqCtx(20049, 2)},
		{name: "a port no upper layer is known by", pd: req(nil), ctx: reqCtx(0x0000000001060050)},
		{name: "the request's claim beats the Service ID", pd: req(flagsNoInv),
			ctx:  Context{Role: RoleRequest, Consumer: 36, ServiceID: sidNVMe, HasServiceID: true, Claim: record.ULPISER, ClaimEvidence: strong, ClaimWhy: "said so"},
			want: &ulpWant{record.ULPISER, 36, strong, "iSER CM Header", "iSER flags=0x40 (no Send With Invalidate)", ""}, iserNoInvalidate: true},
	})
}

// Too few octets for the layout claimed is a fault of the sender's, unless
// the capture cut them.
func TestIdentifyShort(t *testing.T) {
	cut := func(c Context) Context { c.Cut = true; return c }
	lustreMPA := lustreConnReq[:20] // an MPA Request of 20 octets
	runULPCases(t, []ulpCase{
		{name: "NVMe-oF request", pd: cat(ird, nvmeReq[:6]), ctx: mpaReqCtx(4420, 2),
			want:  &ulpWant{record.ULPNVMeRDMA, 4, tport, "", "NVMe-oF", "6 octets of private data, the RDMA_CM_REQUEST private data needs 10"},
			finds: []want{{finding.ULPPrivateDataInvalid, "NVMe-oF (TCP port 4420): 6 octets of private data, the RDMA_CM_REQUEST private data needs 10"}}},
		{name: "NVMe-oF request, cut by the capture", pd: cat(ird, nvmeReq[:6]), ctx: cut(mpaReqCtx(4420, 2)),
			want: &ulpWant{record.ULPNVMeRDMA, 4, tport, "", "NVMe-oF", ""}},
		{name: "NVMe-oF accept", pd: octets("0000"), ctx: replyCtx(RoleAccept, record.ULPNVMeRDMA, tport),
			want:  &ulpWant{record.ULPNVMeRDMA, 0, tport, "", "NVMe-oF", "2 octets of private data, the RDMA_CM_ACCEPT private data needs 4"},
			finds: []want{{finding.ULPPrivateDataInvalid, "NVMe-oF (as its request): 2 octets of private data, the RDMA_CM_ACCEPT private data needs 4"}}},
		{name: "NVMe-oF reject", pd: octets("000006"), ctx: replyCtx(RoleReject, record.ULPNVMeRDMA, tport),
			want:  &ulpWant{record.ULPNVMeRDMA, 0, tport, "", "NVMe-oF", "3 octets of private data, the RDMA_CM_REJECT private data needs 4"},
			finds: []want{{finding.ULPPrivateDataInvalid, "NVMe-oF (as its request): 3 octets of private data, the RDMA_CM_REJECT private data needs 4"}}},
		{name: "iSER", pd: cat(ird, octets("4000")), ctx: mpaReqCtx(3260, 2),
			want:  &ulpWant{record.ULPISER, 4, tport, "", "iSER", "2 octets of private data, the iSER CM header needs 4"},
			finds: []want{{finding.ULPPrivateDataInvalid, "iSER (TCP port 3260): 2 octets of private data, the iSER CM header needs 4"}}},
		{name: "RDS, IPv4", pd: cat(ird, rdsReq[:10]), ctx: mpaReqCtx(18634, 2),
			want:  &ulpWant{record.ULPRDS, 4, tport, "", "RDS", "10 octets of private data, the RDS connection private data needs 28"},
			finds: []want{{finding.ULPPrivateDataInvalid, "RDS (TCP port 18634): 10 octets of private data, the RDS connection private data needs 28"}}},
		{name: "RDS, IPv6", pd: cat(ird, rds6Req[:28]), ctx: func() Context { c := mpaReqCtx(18634, 2); c.Src, c.Dst = ini6, res6; return c }(),
			want:  &ulpWant{record.ULPRDS, 4, tport, "", "RDS", "28 octets of private data, the RDS IPv6 connection private data needs 52"},
			finds: []want{{finding.ULPPrivateDataInvalid, "RDS (TCP port 18634): 28 octets of private data, the RDS IPv6 connection private data needs 52"}}},
		{name: "rsockets", pd: rsocket[:39], ctx: replyCtx(RoleAccept, record.ULPRSockets, strong),
			want:  &ulpWant{record.ULPRSockets, 0, strong, "", "rsockets", "39 octets of private data, rsocket connection data needs 40"},
			finds: []want{{finding.ULPPrivateDataInvalid, "rsockets (as its request): 39 octets of private data, rsocket connection data needs 40"}}},
		{name: "SRP login request over the IB CM", pd: srpLoginReq[:63], ctx: Context{Role: RoleRequest, Claim: record.ULPSRP, ClaimEvidence: strong, ClaimWhy: "x"},
			want:  &ulpWant{record.ULPSRP, 0, strong, "", "SRP", "63 octets of private data, SRP_LOGIN_REQ needs 64"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (x): 63 octets of private data, SRP_LOGIN_REQ needs 64"}}},
		{name: "SRP login request behind an IP CM header", pd: cat(ipcmHeader, srpLoginReqRDMA[:47]),
			ctx:   Context{Role: RoleRequest, Consumer: 36, Claim: record.ULPSRP, ClaimEvidence: strong, ClaimWhy: "x"},
			want:  &ulpWant{record.ULPSRP, 36, strong, "", "SRP", "47 octets of private data, SRP_LOGIN_REQ (rdma_cm) needs 48"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (x): 47 octets of private data, SRP_LOGIN_REQ (rdma_cm) needs 48"}}},
		{name: "SRP login response", pd: srpLoginRsp[:20], ctx: replyCtx(RoleAccept, record.ULPSRP, strong),
			want:  &ulpWant{record.ULPSRP, 0, strong, "", "SRP", "20 octets of private data, SRP_LOGIN_RSP needs 52"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (as its request): 20 octets of private data, SRP_LOGIN_RSP needs 52"}}},
		{name: "SRP login reject", pd: srpLoginRej[:20], ctx: replyCtx(RoleReject, record.ULPSRP, strong),
			want:  &ulpWant{record.ULPSRP, 0, strong, "", "SRP", "20 octets of private data, SRP_LOGIN_REJ needs 32"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SRP (as its request): 20 octets of private data, SRP_LOGIN_REJ needs 32"}}},
		{name: "SDP Hello", pd: sdpHello[:40], ctx: ibReqCtx(sidSDP),
			want:  &ulpWant{record.ULPSDP, 0, sport, "", "SDP", "40 octets of private data, the SDP Hello needs 64"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SDP (SDP Service ID, port 5001): 40 octets of private data, the SDP Hello needs 64"}}},
		{name: "SDP HelloAck", pd: sdpHelloAck[:20], ctx: replyCtx(RoleAccept, record.ULPSDP, sport),
			want:  &ulpWant{record.ULPSDP, 0, sport, "", "SDP", "20 octets of private data, the SDP HelloAck needs 24"},
			finds: []want{{finding.ULPPrivateDataInvalid, "SDP (as its request): 20 octets of private data, the SDP HelloAck needs 24"}}},
		{name: "IPoIB-CM", pd: octets("00000405"), ctx: ibReqCtx(sidIPoIB),
			want:  &ulpWant{record.ULPIPoIBCM, 0, sport, "", "IPoIB-CM", "4 octets of private data, IPoIB-CM private data needs 8"},
			finds: []want{{finding.ULPPrivateDataInvalid, "IPoIB-CM (Service ID 0x1000000000000405): 4 octets of private data, IPoIB-CM private data needs 8"}}},
		{name: "Lustre message, by its magic", pd: lustreMPA, ctx: mpaReqCtx(988, 1),
			want:  &ulpWant{record.ULPLustre, 0, strong, "", "Lustre o2iblnd", "20 octets of private data, an o2iblnd connection message needs 56"},
			finds: []want{{finding.ULPPrivateDataInvalid, "Lustre o2iblnd (magic 0x0be91b91): 20 octets of private data, an o2iblnd connection message needs 56"}}},
		{name: "Lustre message cut by the capture", pd: lustreMPA, ctx: cut(mpaReqCtx(988, 1)),
			want: &ulpWant{record.ULPLustre, 0, strong, "", "Lustre o2iblnd", ""}},
		{name: "Lustre reject", pd: lustreRej[:5], ctx: Context{Role: RoleReject},
			want:  &ulpWant{record.ULPLustre, 0, strong, "", "Lustre o2iblnd", "5 octets of private data, the o2iblnd reject needs 7"},
			finds: []want{{finding.ULPPrivateDataInvalid, "Lustre o2iblnd (magic 0x0be91b91): 5 octets of private data, the o2iblnd reject needs 7"}}},
		{name: "the consumer's data past the end of what was captured", pd: ipcmHeader[:20], ctx: cut(reqCtx(sidNVMe)),
			want: &ulpWant{record.ULPNVMeRDMA, 20, sport, "", "NVMe-oF", ""}},
		{name: "a negative consumer offset counts as 0", pd: pad(octets("00000405 0000fff4"), reqPD),
			ctx:  Context{Role: RoleRequest, Consumer: -4, ServiceID: sidIPoIB, HasServiceID: true},
			want: &ulpWant{record.ULPIPoIBCM, 0, sport, "IPoIB-CM Private Data", "IPoIB-CM qpn=0x000405 mtu=65524", ""}},
	})
}

func TestServiceULP(t *testing.T) {
	for _, tc := range []struct {
		sid  uint64
		want record.ULPName
	}{
		{sidNFS, record.ULPRPCRDMA},
		{sidNVMe, record.ULPNVMeRDMA},
		{sidISER, record.ULPISER},
		{sidRDS, record.ULPRDS},
		{0x0000000001064001, record.ULPRDS}, // RDS's rdma_cm port 16385
		{sidSMB, record.ULPSMBDirect},
		{sidIPoIB, record.ULPIPoIBCM},
		{0x1000000000ffffff, record.ULPIPoIBCM}, // the largest QPN
		{0x1000000001000000, ""},                // more than 24 bits of QPN
		{sidSDP, record.ULPSDP},
		{0x0000000000010000, record.ULPSDP},
		{0x0000000001111144, ""}, // the NVMe-oF port in the UDP port space
		{0x00000000013f4e51, ""}, // NFS/RDMA's port in the IB port space
		{0x0000000001061389, ""}, // TCP port 5001
		{0x0000000002064e51, ""}, // not the IP CM prefix
		{0, ""},
	} {
		if got := ServiceULP(tc.sid); got != tc.want {
			t.Errorf("ServiceULP(0x%016x) = %q, want %q", tc.sid, got, tc.want)
		}
	}
}

func TestPortULP(t *testing.T) {
	for _, tc := range []struct {
		port uint16
		want record.ULPName
	}{
		{20049, record.ULPRPCRDMA},
		{4420, record.ULPNVMeRDMA},
		{3260, record.ULPISER},
		{18634, record.ULPRDS},
		{16385, record.ULPRDS},
		{5445, record.ULPSMBDirect}, // SMB Direct over iWARP (MS-SMBD)
		{445, ""},
		{0, ""},
		{80, ""},
	} {
		if got := PortULP(tc.port); got != tc.want {
			t.Errorf("PortULP(%d) = %q, want %q", tc.port, got, tc.want)
		}
	}
}

// ContextOf reads again, from a message's record, what the carrier knew.
func TestContextOf(t *testing.T) {
	ep := func(a netip.Addr) record.Endpoint { return record.IPEndpoint(a.AsSlice()) }
	tcp := func(a netip.Addr, port uint16) record.Endpoint { return record.TCPEndpoint(a.As16(), false, port) }
	iniTCP, resTCP := tcp(ini4, 40000), tcp(res4, 20049)
	pd92, pd4 := make([]byte, 92), make([]byte, 4)
	for _, tc := range []struct {
		name string
		m    record.Message
		want Context
	}{
		{"REQ behind an IP CM header",
			record.Message{Kind: record.KindREQ, ExpectedOffset: 36, PrivateData: pd92, PrivateDataSize: 92, ServiceID: sidNVMe, HasServiceID: true,
				Src: ep(ini4), Dst: ep(res4)},
			Context{Role: RoleRequest, Consumer: 36, ServiceID: sidNVMe, HasServiceID: true, Src: ini4, Dst: res4}},
		{"REQ the capture cut",
			record.Message{Kind: record.KindREQ, PrivateData: pd92[:50], PrivateDataSize: 92, Src: record.LIDEndpoint(1), Dst: record.LIDEndpoint(2)},
			Context{Role: RoleRequest, Cut: true}},
		{"REP", record.Message{Kind: record.KindREP, PrivateData: pd92, PrivateDataSize: 92, Src: ep(res4), Dst: ep(ini4)},
			Context{Role: RoleAccept, Src: res4, Dst: ini4}},
		{"consumer REJ", record.Message{Kind: record.KindREJ, CMInfo: &record.CMInfo{RejectReason: 28}},
			Context{Role: RoleReject}},
		{"REJ for a timeout", record.Message{Kind: record.KindREJ, CMInfo: &record.CMInfo{RejectReason: 1}},
			Context{Role: RoleOther}},
		{"REJ without its body", record.Message{Kind: record.KindREJ}, Context{Role: RoleOther}},
		{"RTU", record.Message{Kind: record.KindRTU}, Context{Role: RoleOther}},
		{"MPA Request, revision 2: the responder's port",
			record.Message{Kind: record.KindMPARequest, ExpectedOffset: 4, PrivateData: pd4, PrivateDataSize: 4, Src: iniTCP, Dst: resTCP},
			Context{Role: RoleRequest, Consumer: 4, Port: 20049, HasPort: true, Src: ini4, Dst: res4}},
		{"MPA Request, revision 2, shorter than IRD/ORD",
			record.Message{Kind: record.KindMPARequest, ExpectedOffset: 4, PrivateData: pd4[:2], PrivateDataSize: 2, Src: iniTCP, Dst: resTCP},
			Context{Role: RoleRequest, Port: 20049, HasPort: true, Src: ini4, Dst: res4}},
		{"MPA Request, revision 1",
			record.Message{Kind: record.KindMPARequest, PrivateData: pd4, PrivateDataSize: 4, Src: iniTCP, Dst: resTCP},
			Context{Role: RoleRequest, Port: 20049, HasPort: true, Src: ini4, Dst: res4}},
		{"MPA Reply with the MS-SMBD header's expected offset",
			record.Message{Kind: record.KindMPAReply, ExpectedOffset: 8, PrivateData: pd92, PrivateDataSize: 92, Src: resTCP, Dst: iniTCP,
				MPAInfo: &record.MPAHeader{HasFlags: true}},
			Context{Role: RoleAccept, Port: 20049, HasPort: true, Src: res4, Dst: ini4}},
		{"MPA Reply rejecting",
			record.Message{Kind: record.KindMPAReply, ExpectedOffset: 4, PrivateData: pd4, PrivateDataSize: 4, Src: resTCP, Dst: iniTCP,
				MPAInfo: &record.MPAHeader{HasFlags: true, Reject: true}},
			Context{Role: RoleReject, Consumer: 4, Port: 20049, HasPort: true, Src: res4, Dst: ini4}},
		{"MPA Reply that ended before its flags",
			record.Message{Kind: record.KindMPAReply, Src: resTCP, Dst: iniTCP, MPAInfo: &record.MPAHeader{}},
			Context{Role: RoleOther, Port: 20049, HasPort: true, Src: res4, Dst: ini4}},
		{"MPA Reply without its header",
			record.Message{Kind: record.KindMPAReply, Src: resTCP, Dst: iniTCP},
			Context{Role: RoleOther, Port: 20049, HasPort: true, Src: res4, Dst: ini4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContextOf(&tc.m); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ContextOf = %+v\nwant          %+v", got, tc.want)
			}
		})
	}
}
