package conn

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/privdata"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The upper layer rules, on messages built as the decoder builds them: the
// private data goes through the private data step (privdata.Examine) with
// what the decoder knows of each message.

func octetsOf(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// pdOf is the consumer octets in a field of n octets, zero-filled.
func pdOf(n int, consumer []byte) []byte {
	b := make([]byte, n)
	copy(b, consumer)
	return b
}

// ulpMsg is one message of an upper layer test: a CM message between the
// hosts of exchange 0 (or an MPA frame between their ports), its private
// data the consumer octets.
type ulpMsg struct {
	kind     record.Kind
	sid      uint64 // REQ: the Service ID (IP CM ones get an IP CM header)
	port     uint16 // iWARP: the responder's TCP port
	consumer []byte
	reason   uint16 // REJ
	orphan   bool   // a reply to no request of the test
}

func (u ulpMsg) message(frame int) *record.Message {
	ini, res := hosts(0)
	m := &record.Message{File: "t", Frame: frame, Transport: record.RoCEv2, Src: ep(ini), Dst: ep(res), Kind: u.kind,
		LocalCommID: 1, RemoteCommID: 0, TransactionID: 7}
	carrier := privdata.Carrier{Name: m.Kind.String(), AbsentMatters: true}
	ctx := privdata.Context{}
	var pd []byte
	switch u.kind {
	case record.KindREQ:
		m.ServiceID, m.HasServiceID = u.sid, true
		ctx.Role, ctx.ServiceID, ctx.HasServiceID = privdata.RoleRequest, u.sid, true
		if layers.IsIPCMServiceID(u.sid) {
			pd = append(make([]byte, layers.IPCMHeaderLen), pdOf(56, u.consumer)...)
			m.ExpectedOffset, ctx.Consumer = 36, 36
		} else {
			pd = pdOf(92, u.consumer)
		}
	case record.KindREP:
		m.Src, m.Dst, m.LocalCommID, m.RemoteCommID = ep(res), ep(ini), 2, 1
		ctx.Role, pd = privdata.RoleAccept, pdOf(196, u.consumer)
	case record.KindREJ:
		m.Src, m.Dst, m.LocalCommID, m.RemoteCommID = ep(res), ep(ini), 2, 1
		m.CMInfo = &record.CMInfo{RejectReason: u.reason}
		if u.reason == layers.RejReasonConsumerReject {
			ctx.Role = privdata.RoleReject
		}
		pd = pdOf(148, u.consumer)
	case record.KindMPARequest, record.KindMPAReply:
		m.Transport = record.IWARP
		m.Src, m.Dst = ep(ini+":50000"), ep(res+":"+itoa(u.port))
		ctx.Role, ctx.HasPort, ctx.Port = privdata.RoleRequest, true, u.port
		m.ExpectedOffset, carrier.Expected, ctx.Consumer = 4, 4, 4
		if u.kind == record.KindMPAReply {
			m.Src, m.Dst = m.Dst, m.Src
			m.MPAInfo = &record.MPAHeader{HasFlags: true}
			ctx.Role = privdata.RoleAccept
		}
		pd = u.consumer
	}
	if u.orphan {
		m.RemoteCommID = 99
		if m.Kind.IsMPA() {
			m.Dst = ep(ini + ":50001")
		}
	}
	carrier.Size = len(pd)
	m.PrivateData, m.PrivateDataSize = pd, len(pd)
	r := privdata.Examine(pd, carrier, ctx)
	m.RPCRDMA, m.ULP, m.Findings = r.RPCRDMA, r.ULP, r.Findings
	r.Hold(m, 0)
	return m
}

func itoa(p uint16) string {
	const digits = "0123456789"
	if p == 0 {
		return "0"
	}
	var b []byte
	for ; p > 0; p /= 10 {
		b = append([]byte{digits[p%10]}, b...)
	}
	return string(b)
}

const (
	nvmePort   = 0x0000000001061144 // IP CM, TCP port 4420
	iserPort   = 0x0000000001060cbc // TCP port 3260
	softRoCE   = 0x0000000001061d2f // TCP port 7471: no upper layer of its own
	udpService = 0x0000000001111d2f // UDP port space
)

var (
	nvmeREQ   = octetsOf("0000 0000 2000 1f00 0000")
	nvmeREP   = octetsOf("0000 2100")
	nvmeREJ   = octetsOf("0000 0600")
	iserNoInv = octetsOf("c000 0000")
	iserInv   = octetsOf("8000 0000")
	rfc8797   = octetsOf("f6ab0e18 01 01 03 03")
	lustreREQ = octetsOf(`91 1b e9 0b 12 00 c0 08  38 00 00 00 00 00 00 00
		05 02 00 c0 00 00 05 00  cb 04 fb 71 1f 01 00 00  06 02 00 c0 01 00 05 00  00 00 00 00 00 00 00 00
		08 00 00 01 00 10 00 00`)
)

func TestConnectionULP(t *testing.T) {
	type want struct {
		ulp       record.ULPName
		evidence  record.ULPEvidence
		inline    bool // inline thresholds shown
		inv       bool
		state     record.State
		codes     []string   // the connection's findings
		msgCodes  [][]string // each message's findings
		replyULP  record.ULPName
		replyKeys string // the reply's ulp field keys, in order
	}
	tests := []struct {
		name string
		msgs []ulpMsg
		want want
	}{
		{"NVMe-oF REQ on its port, REP read as NVMe-oF",
			[]ulpMsg{{kind: record.KindREQ, sid: nvmePort, consumer: nvmeREQ}, {kind: record.KindREP, consumer: nvmeREP}},
			want{ulp: record.ULPNVMeRDMA, evidence: record.EvidencePrivateData, state: record.Established,
				msgCodes: [][]string{nil, nil}, replyULP: record.ULPNVMeRDMA, replyKeys: "recfmt crqsize"}},
		{"NVMe-oF by its port alone: the REQ's data does not fit",
			[]ulpMsg{{kind: record.KindREQ, sid: nvmePort, consumer: octetsOf("0100 0000 2000 1f00")}, {kind: record.KindREP, consumer: nvmeREP}},
			want{ulp: record.ULPNVMeRDMA, evidence: record.EvidenceServicePort, state: record.Established,
				msgCodes: [][]string{{"ulp-private-data-invalid"}, nil}, replyULP: record.ULPNVMeRDMA, replyKeys: "recfmt crqsize"}},
		{"NVMe-oF rejected",
			[]ulpMsg{{kind: record.KindREQ, sid: nvmePort, consumer: nvmeREQ}, {kind: record.KindREJ, reason: 28, consumer: nvmeREJ}},
			want{ulp: record.ULPNVMeRDMA, evidence: record.EvidencePrivateData, state: record.Rejected, codes: []string{"connection-rejected"},
				msgCodes: [][]string{nil, {"nvme-rdma-rejected"}}, replyULP: record.ULPNVMeRDMA, replyKeys: "recfmt status"}},
		{"a REJ that is no consumer reject carries no upper layer data",
			[]ulpMsg{{kind: record.KindREQ, sid: nvmePort, consumer: nvmeREQ}, {kind: record.KindREJ, reason: 1}},
			want{ulp: record.ULPNVMeRDMA, evidence: record.EvidencePrivateData, state: record.Rejected, codes: []string{"connection-rejected"},
				msgCodes: [][]string{nil, nil}}},
		{"NFS/RDMA port without RFC 8797 data: the defaults",
			[]ulpMsg{{kind: record.KindREQ, sid: nfsServiceID}, {kind: record.KindREP}},
			want{ulp: record.ULPRPCRDMA, evidence: record.EvidenceServicePort, inline: true, state: record.Established,
				msgCodes: [][]string{{"rpcrdma-absent"}, {"rpcrdma-absent"}}}},
		// On a connection of unknown upper layer, rpcrdma-absent is said
		// once: on the REQ, not again on its CM retries nor on the reply.
		{"unknown upper layer on a TCP-port-space service: the defaults, rpcrdma-absent once",
			[]ulpMsg{{kind: record.KindREQ, sid: softRoCE}, {kind: record.KindREP, consumer: octetsOf("deadbeef")}},
			want{inline: true, state: record.Established, msgCodes: [][]string{{"rpcrdma-absent"}, nil}}},
		{"unknown upper layer: a CM retry of the REQ and the REP say rpcrdma-absent no more",
			[]ulpMsg{{kind: record.KindREQ, sid: softRoCE}, {kind: record.KindREQ, sid: softRoCE}, {kind: record.KindREP}},
			want{inline: true, state: record.Established, msgCodes: [][]string{{"rpcrdma-absent"}, nil, nil}}},
		{"unknown upper layer, rejected: the REJ says rpcrdma-absent no more",
			[]ulpMsg{{kind: record.KindREQ, sid: softRoCE}, {kind: record.KindREJ, reason: layers.RejReasonConsumerReject}},
			want{inline: true, state: record.Rejected, codes: []string{"connection-rejected"}, msgCodes: [][]string{{"rpcrdma-absent"}, nil}}},
		{"unknown upper layer on a UDP-port-space service: no RPC-over-RDMA rules",
			[]ulpMsg{{kind: record.KindREQ, sid: udpService}, {kind: record.KindREP}},
			want{state: record.Established, msgCodes: [][]string{nil, nil}}},
		{"IPoIB connected mode",
			[]ulpMsg{{kind: record.KindREQ, sid: 0x1000000000000404, consumer: octetsOf("0000 0405 0000 fff4")},
				{kind: record.KindREP, consumer: octetsOf("0000 0404 0000 fff4")}},
			want{ulp: record.ULPIPoIBCM, evidence: record.EvidenceServicePort, state: record.Established, msgCodes: [][]string{nil, nil},
				replyULP: record.ULPIPoIBCM, replyKeys: "qpn mtu"}},
		{"RFC 8797 data in the REP only decides",
			[]ulpMsg{{kind: record.KindREQ, sid: softRoCE}, {kind: record.KindREP, consumer: rfc8797}},
			want{ulp: record.ULPRPCRDMA, evidence: record.EvidenceRFC8797, inline: true, state: record.Established,
				codes:    []string{"rpcrdma-one-sided", "remote-invalidation-one-sided"},
				msgCodes: [][]string{{"rpcrdma-absent"}, nil}}},
		{"the private data outweighs the port",
			[]ulpMsg{{kind: record.KindREQ, sid: nvmePort, consumer: lustreREQ}, {kind: record.KindREP}},
			want{ulp: record.ULPLustre, evidence: record.EvidencePrivateData, state: record.Established,
				msgCodes: [][]string{nil, {"ulp-private-data-invalid"}}, replyULP: record.ULPLustre,
				replyKeys: "byte_order version type credits nob checksum src_nid src_stamp dst_nid dst_stamp queue_depth max_frags max_msg_size"}},
		{"iSER, Send With Invalidate not supported",
			[]ulpMsg{{kind: record.KindREQ, sid: iserPort, consumer: iserNoInv}, {kind: record.KindREP, consumer: iserInv}},
			want{ulp: record.ULPISER, evidence: record.EvidenceServicePort, state: record.Established, msgCodes: [][]string{nil, nil},
				replyULP: record.ULPISER, replyKeys: "zbva_not_supported send_with_invalidate_not_supported"}},
		{"iSER, Send With Invalidate supported",
			[]ulpMsg{{kind: record.KindREQ, sid: iserPort, consumer: iserInv}, {kind: record.KindREP, consumer: iserInv}},
			want{ulp: record.ULPISER, evidence: record.EvidenceServicePort, inv: true, state: record.Established, msgCodes: [][]string{nil, nil},
				replyULP: record.ULPISER, replyKeys: "zbva_not_supported send_with_invalidate_not_supported"}},
		{"iSER over iWARP",
			[]ulpMsg{{kind: record.KindMPARequest, port: 3260, consumer: octetsOf("0010 0010 8000 0000")},
				{kind: record.KindMPAReply, port: 3260, consumer: octetsOf("0010 0010 8000 0000")}},
			want{ulp: record.ULPISER, evidence: record.EvidenceTCPPort, inv: true, state: record.Established, msgCodes: [][]string{nil, nil},
				replyULP: record.ULPISER, replyKeys: "zbva_not_supported send_with_invalidate_not_supported"}},
		{"iWARP of an unknown upper layer: the defaults",
			[]ulpMsg{{kind: record.KindMPARequest, port: 9999, consumer: octetsOf("0010 0010")},
				{kind: record.KindMPAReply, port: 9999, consumer: octetsOf("0010 0010")}},
			want{inline: true, state: record.Established, msgCodes: [][]string{{"rpcrdma-absent"}, nil}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(false, 0)
			var msgs []*record.Message
			for i, u := range tc.msgs {
				m := u.message(i + 1)
				tr.Message(m)
				msgs = append(msgs, m)
			}
			cs := handed(tr.Finish())
			if len(cs) != 1 {
				t.Fatalf("%d connections", len(cs))
			}
			c, w := cs[0], tc.want
			if c.ULP != w.ulp || c.ULPEvidence != w.evidence || (c.Inline != nil) != w.inline || c.RemoteInvalidation != w.inv || c.State != w.state {
				t.Errorf("ulp %q (%q), inline %v, remote invalidation %v, state %s; want %q (%q), %v, %v, %s",
					c.ULP, c.ULPEvidence, c.Inline, c.RemoteInvalidation, c.State, w.ulp, w.evidence, w.inline, w.inv, w.state)
			}
			if c.Inline != nil && w.inline && c.ResponderRPCRDMA == nil && c.InitiatorRPCRDMA == nil &&
				(c.Inline.InitiatorToResponder != 1024 || c.Inline.ResponderToInitiator != 1024) {
				t.Errorf("thresholds %+v, want the 1024/1024 defaults", *c.Inline)
			}
			if got := codesOf(c.Findings); !reflect.DeepEqual(got, w.codes) {
				t.Errorf("connection findings %v, want %v", got, w.codes)
			}
			for i, m := range msgs {
				if got := codesOf(m.Findings); !reflect.DeepEqual(got, w.msgCodes[i]) {
					t.Errorf("message %d findings %v, want %v", i+1, m.Findings, w.msgCodes[i])
				}
			}
			reply := msgs[len(msgs)-1]
			switch {
			case reply.ULP == nil && w.replyULP != "":
				t.Errorf("reply not read as %s", w.replyULP)
			case reply.ULP != nil && (reply.ULP.Protocol != w.replyULP || keys(reply.ULP) != w.replyKeys):
				t.Errorf("reply read as %s with %q, want %s with %q", reply.ULP.Protocol, keys(reply.ULP), w.replyULP, w.replyKeys)
			}
		})
	}
}

func codesOf(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Code.String())
	}
	return out
}

func keys(u *record.ULP) string {
	var ks []string
	for _, f := range u.Fields {
		ks = append(ks, f.Key)
	}
	return strings.Join(ks, " ")
}

// TestOrphanReplyRules: a reply whose request is not seen has no known
// service. An InfiniBand one gets rpcrdma-absent only when its own data makes
// the rules apply; an MPA Reply's TCP port is known, and iWARP is TCP.
func TestOrphanReplyRules(t *testing.T) {
	for _, tc := range []struct {
		m    ulpMsg
		want []string
	}{
		{ulpMsg{kind: record.KindREP, orphan: true}, nil},
		{ulpMsg{kind: record.KindREP, orphan: true, consumer: octetsOf("f6ab0e18 02 00 03 03")}, []string{"rpcrdma-version-unknown"}},
		{ulpMsg{kind: record.KindMPAReply, port: 9999, orphan: true}, []string{"rpcrdma-absent"}},
		{ulpMsg{kind: record.KindMPAReply, port: 3260, orphan: true, consumer: octetsOf("0010 0010 8000 0000")}, nil},
		// iSER's port, but no iSER CM header after IRD/ORD.
		{ulpMsg{kind: record.KindMPAReply, port: 3260, orphan: true, consumer: octetsOf("0010 0010")}, []string{"ulp-private-data-invalid"}},
	} {
		tr := NewTracker(false, 0)
		m := tc.m.message(1)
		tr.Message(m)
		if got := codesOf(m.Findings); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.m, got, tc.want)
		}
	}
}

// TestRPCRDMAAbsentOrder: rpcrdma-absent takes its place before the
// private data step's own findings.
func TestRPCRDMAAbsentOrder(t *testing.T) {
	m := ulpMsg{kind: record.KindREQ, sid: softRoCE, consumer: octetsOf("f6ab0e18 02 00 03 03")}.message(1)
	// A finding raised before the private data step, as the decoder does.
	m.Findings = append([]finding.Finding{finding.New(finding.ICRCMismatch, "x")}, m.Findings...)
	m.Held[0].At++
	NewTracker(false, 0).Message(m)
	if got := codesOf(m.Findings); !reflect.DeepEqual(got, []string{"icrc-mismatch", "rpcrdma-absent", "rpcrdma-version-unknown"}) {
		t.Errorf("findings %v", got)
	}
}

func TestISERSendWithInvalidate(t *testing.T) {
	established := func(consumer []byte, sid uint64) *record.Connection {
		tr := NewTracker(false, 0)
		tr.Message(ulpMsg{kind: record.KindREQ, sid: sid, consumer: consumer}.message(3))
		tr.Message(ulpMsg{kind: record.KindREP, consumer: iserInv}.message(4))
		return handed(tr.Finish())[0]
	}
	if c := established(iserNoInv, iserPort); !ISERForbidsInvalidate(c) {
		t.Error("not supported: not forbidden")
	} else if f := ISERSendWithInvalidate(12, 0x1234, c.RequestFrame); f.Code != finding.ISERSendWithInvalidateUnsupported ||
		f.Message != "frame 12: the target sent a Send With Invalidate of STag 0x00001234 although the initiator's iSER CM header (frame 3) says it does not support Send With Invalidate" {
		t.Errorf("not supported: %+v", f)
	}
	for name, c := range map[string]*record.Connection{
		"supported":      established(iserInv, iserPort),
		"NVMe-oF":        established(nvmeREQ, nvmePort),
		"no iSER header": {ULP: record.ULPISER},
	} {
		if ISERForbidsInvalidate(c) {
			t.Errorf("%s: raised", name)
		}
	}
}
