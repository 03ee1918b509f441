package dissect_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// The upper layers end to end: crafted exchanges of every upper layer,
// accepted and rejected, over RoCEv2, native InfiniBand and iWARP, the real
// captures of NVMe-oF and IPoIB-CM, and tshark's decoding of the NVMe-oF,
// Lustre and SDP private data.

// runFrames writes frames to a capture and dissects it.
func runFrames(t *testing.T, name string, frames []craft.Frame) *collect {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := craft.WriteFile(p, frames); err != nil {
		t.Fatal(err)
	}
	var c collect
	if _, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// fieldText is a decoded upper layer field's text, "<none>" without it.
func fieldText(u *record.ULP, key string) string {
	if u == nil {
		return "<no ulp>"
	}
	for _, f := range u.Fields {
		if f.Key == key {
			return f.Text()
		}
	}
	return "<none>"
}

// rpcCodes are the findings that belong to RPC-over-RDMA alone.
var rpcCodes = []string{"rpcrdma-absent", "rpcrdma-one-sided", "remote-invalidation-one-sided", "pd-capacity-too-small",
	"properties-changed-on-reconnect"}

func TestULPExchanges(t *testing.T) {
	type side struct {
		key, value string // a field the message's upper layer object shows; "" for none
	}
	tests := []struct {
		ulp        string
		transports []craft.Transport
		evidence   map[craft.Transport]record.ULPEvidence // default: private-data
		req, rep   side
		rej        side   // "": the reject carries nothing of the layer's
		rejCode    string // the REJ's finding of the layer, if any
	}{
		{ulp: "nvme-rdma", transports: []craft.Transport{craft.RoCEv2, craft.InfiniBand, craft.IWARP},
			req: side{"hrqsize", "32"}, rep: side{"crqsize", "32"}, rej: side{"status", "6"}, rejCode: "nvme-rdma-rejected"},
		{ulp: "iser", transports: []craft.Transport{craft.RoCEv2, craft.IWARP},
			evidence: map[craft.Transport]record.ULPEvidence{craft.RoCEv2: record.EvidenceServicePort, craft.IWARP: record.EvidenceTCPPort},
			req:      side{"send_with_invalidate_not_supported", "true"}, rep: side{"zbva_not_supported", "true"}},
		{ulp: "srp", transports: []craft.Transport{craft.RoCEv2, craft.InfiniBand},
			req: side{"max_it_iu_len", "8260"}, rep: side{"req_lim_delta", "64"}, rej: side{"reason", "0x00010001"}},
		{ulp: "rds", transports: []craft.Transport{craft.RoCEv2, craft.IWARP}, req: side{"protocol_major", "4"}, rep: side{"dst", "192.0.2.1"}},
		{ulp: "rsockets", transports: []craft.Transport{craft.RoCEv2, craft.IWARP}, req: side{"credits", "384"}, rep: side{"data_buf_key", "0x00007a8b"}},
		{ulp: "lustre-o2iblnd", transports: []craft.Transport{craft.RoCEv2, craft.IWARP},
			req: side{"src_nid", "192.0.2.1@o2ib"}, rep: side{"type", "0xc1"}, rej: side{"why", "7"}},
		{ulp: "sdp", transports: []craft.Transport{craft.RoCEv2, craft.InfiniBand}, req: side{"local_port", "49153"},
			rep: side{"act_rcv_sz", "32768"}},
		{ulp: "ipoib-cm", transports: []craft.Transport{craft.InfiniBand, craft.RoCEv2},
			evidence: map[craft.Transport]record.ULPEvidence{craft.InfiniBand: record.EvidenceServicePort, craft.RoCEv2: record.EvidenceServicePort},
			req:      side{"qpn", "0x000401"}, rep: side{"mtu", "65524"}},
		{ulp: "smb-direct", transports: []craft.Transport{craft.RoCEv2, craft.IWARP},
			evidence: map[craft.Transport]record.ULPEvidence{craft.RoCEv2: record.EvidenceServicePort, craft.IWARP: record.EvidenceTCPPort}},
	}
	for _, tc := range tests {
		for _, tr := range tc.transports {
			for _, reject := range []bool{false, true} {
				name := tc.ulp + " " + string(tr)
				if reject {
					name += " rejected"
				}
				t.Run(name, func(t *testing.T) {
					frames, err := craft.ULPExchange(tc.ulp, tr, false, reject, 2)
					if err != nil {
						t.Fatal(err)
					}
					c := runFrames(t, "x.pcap", frames)
					if len(c.conns) != 1 {
						t.Fatalf("%d connections", len(c.conns))
					}
					cn := c.conns[0]
					ev := record.EvidencePrivateData
					if e, ok := tc.evidence[tr]; ok {
						ev = e
					}
					state := record.Established
					if reject {
						state = record.Rejected
					}
					// craft's iSER initiator does not support Send With
					// Invalidate: no connection here may use it.
					if string(cn.ULP) != tc.ulp || cn.ULPEvidence != ev || cn.State != state || cn.Inline != nil || cn.RemoteInvalidation {
						t.Errorf("connection: ulp %q (%q), state %s, inline %v, remote invalidation %v; want %s (%s), %s",
							cn.ULP, cn.ULPEvidence, cn.State, cn.Inline, cn.RemoteInvalidation, tc.ulp, ev, state)
					}
					wantConn := []string(nil)
					if reject {
						wantConn = []string{"connection-rejected"}
					}
					if got := codes(cn.Findings); !reflect.DeepEqual(got, wantConn) {
						t.Errorf("connection findings %v, want %v", cn.Findings, wantConn)
					}
					var req, reply *record.Message
					for _, m := range c.msgs {
						for _, f := range m.Findings {
							for _, rc := range rpcCodes {
								if f.Code.String() == rc {
									t.Errorf("%s: RPC-over-RDMA finding on a %s connection: %v", m.Name(), tc.ulp, f)
								}
							}
						}
						switch m.Kind {
						case record.KindREQ, record.KindMPARequest:
							req = m
						case record.KindREP, record.KindREJ, record.KindMPAReply:
							reply = m
						}
					}
					if req == nil || reply == nil {
						t.Fatalf("no request or reply among %d messages", len(c.msgs))
					}
					if req.ULP == nil || string(req.ULP.Protocol) != tc.ulp {
						t.Fatalf("request read as %+v", req.ULP)
					}
					if tc.req.key != "" && fieldText(req.ULP, tc.req.key) != tc.req.value {
						t.Errorf("request %s = %s, want %s", tc.req.key, fieldText(req.ULP, tc.req.key), tc.req.value)
					}
					want, wantCode := tc.rep, ""
					if reject {
						want, wantCode = tc.rej, tc.rejCode
					}
					switch {
					case want.key != "" && fieldText(reply.ULP, want.key) != want.value:
						t.Errorf("reply %s = %s, want %s (%+v)", want.key, fieldText(reply.ULP, want.key), want.value, reply.ULP)
					case want.key == "" && reply.ULP != nil && len(reply.ULP.Fields) > 0:
						t.Errorf("reply read as %+v", reply.ULP)
					}
					var got []string
					for _, f := range reply.Findings {
						if f.Code.String() != "mpa-reject" {
							got = append(got, f.Code.String())
						}
					}
					if wantCode == "" && len(got) > 0 || wantCode != "" && !reflect.DeepEqual(got, []string{wantCode}) {
						t.Errorf("reply findings %v, want %q", reply.Findings, wantCode)
					}
				})
			}
		}
	}
}

// TestISERLoginFirst: iSER over iWARP logs in over TCP in streaming mode
// (an iSCSI Login Request and Response), then exchanges MPA frames whose
// private data holds the iSER CM header after IRD/ORD; the MPA frames are
// found after the login.
func TestISERLoginFirst(t *testing.T) {
	frames, err := craft.ULPExchange("iser", craft.IWARP, true, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	c := runFrames(t, "iser.pcapng", frames)
	if len(c.msgs) != 2 || c.msgs[0].Frame != 6 || c.msgs[1].Frame != 7 {
		t.Fatalf("%d messages %v", len(c.msgs), c.msgs)
	}
	for _, m := range c.msgs {
		if m.ULP == nil || m.ULP.Offset != 4 || !m.ULP.HasISERFlags || !m.ULP.SendWithInvalidateNotSupported {
			t.Errorf("%s: %+v", m.Name(), m.ULP)
		}
	}
	if cn := c.conns[0]; cn.ULP != record.ULPISER || cn.Port != 3260 || cn.RemoteInvalidation {
		t.Errorf("connection %+v", cn)
	}
}

// TestRealULPs: the real NVMe-oF discovery (nvme-discover2.pcap, ConnectX)
// and IPoIB connected mode (softroce-demo-infiniband.pcap) captures get
// their upper layer and no RPC-over-RDMA finding; the Soft-RoCE ones (an
// application on port 7471) stay unknown, under the RPC-over-RDMA rules of
// a TCP-port-space service.
func TestRealULPs(t *testing.T) {
	run := func(t *testing.T, name string) *collect {
		var c collect
		if _, err := dissect.Run(context.Background(), []string{realCapture(t, name)}, nil, dissect.Config{}, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	noFindings := func(t *testing.T, c *collect) {
		t.Helper()
		for _, m := range c.msgs {
			if len(m.Findings) > 0 {
				t.Errorf("frame %d %s: %v", m.Frame, m.Name(), m.Findings)
			}
		}
		for _, cn := range c.conns {
			if len(cn.Findings) > 0 || cn.Inline != nil {
				t.Errorf("connection of frame %d: %v, inline %v", cn.RequestFrame, cn.Findings, cn.Inline)
			}
		}
	}
	t.Run("nvme-discover2", func(t *testing.T) {
		c := run(t, "nvme-discover2.pcap")
		noFindings(t, c)
		if len(c.conns) != 1 || c.conns[0].ULP != record.ULPNVMeRDMA || c.conns[0].ULPEvidence != record.EvidencePrivateData {
			t.Fatalf("connections %+v", c.conns)
		}
		req, rep := c.msgs[0].ULP, c.msgs[1].ULP
		want := map[string]string{"recfmt": "0", "qid": "0", "hrqsize": "32", "hsqsize": "31", "cntlid": "0"}
		for k, v := range want {
			if fieldText(req, k) != v {
				t.Errorf("REQ %s = %s, want %s", k, fieldText(req, k), v)
			}
		}
		if req.Offset != 36 || req.Summary != "NVMe-oF qid=0 hrqsize=32 hsqsize=31" {
			t.Errorf("REQ offset %d, summary %q", req.Offset, req.Summary)
		}
		if rep == nil || rep.Offset != 0 || fieldText(rep, "crqsize") != "33" || fieldText(rep, "recfmt") != "0" {
			t.Errorf("REP %+v", rep)
		}
	})
	t.Run("softroce-demo-infiniband", func(t *testing.T) {
		c := run(t, "softroce-demo-infiniband.pcap")
		noFindings(t, c)
		if len(c.conns) != 3 {
			t.Fatalf("%d connections", len(c.conns))
		}
		for _, cn := range c.conns {
			if cn.ULP != record.ULPIPoIBCM || cn.ULPEvidence != record.EvidenceServicePort || cn.RemoteInvalidation {
				t.Errorf("connection of frame %d: %q (%q)", cn.RequestFrame, cn.ULP, cn.ULPEvidence)
			}
		}
		// Frame 7: LID 4 asks LID 1's QP 0x404 (its Service ID), from its
		// own QP 0x405, MTU 65524; frame 8 answers from QP 0x404.
		if u := c.msgs[0].ULP; fieldText(u, "qpn") != "0x000405" || fieldText(u, "mtu") != "65524" {
			t.Errorf("frame 7: %+v", u)
		}
		if u := c.msgs[1].ULP; fieldText(u, "qpn") != "0x000404" || fieldText(u, "mtu") != "65524" {
			t.Errorf("frame 8: %+v", u)
		}
	})
	t.Run("soft-roce port 7471", func(t *testing.T) {
		c := run(t, "roce-lab-test.pcap")
		if len(c.conns) != 1 || c.conns[0].ULP != "" || c.conns[0].Inline == nil {
			t.Fatalf("connections %+v", c.conns)
		}
		if got := codes(c.msgs[0].Findings); !reflect.DeepEqual(got, []string{"rpcrdma-absent"}) || c.msgs[0].ULP != nil {
			t.Errorf("REQ findings %v, ulp %+v", got, c.msgs[0].ULP)
		}
	})
}

// TestULPTshark compares the upper layers' private data with tshark's
// decoding, field by field, where tshark 4.0.17 decodes it: NVMe-oF
// (nvme-rdma.cm.*) in the REP and REJ of a connection to port 4420, Lustre
// (lnet.*) in every message with the little-endian magic, SDP
// (infiniband_sdp.*) in the REP's HelloAck. Each exchange is a file of its
// own: tshark keeps one conversation per pair of hosts, and the last REQ
// between them decides how it reads a reply. Its quirks, shown below:
// it decodes no NVMe-oF or SDP REQ (the conversation that tells it the
// service comes after the REQ is dissected); it reads Lustre's reject as a
// message (its lnet.ib.type is the reject reason); it reads the RTU's zero
// private data of an SDP connection as a BSDH; and over iWARP it passes
// none of the MPA private data to these dissectors.
func TestULPTshark(t *testing.T) {
	tshark, err := lookTshark()
	if err != nil {
		t.Skip("tshark not found (apt-get install tshark)")
	}
	fields := []string{"frame.number",
		"nvme-rdma.cm.req.recfmt", "nvme-rdma.cm.req.qid", "nvme-rdma.cm.req.hrqsize", "nvme-rdma.cm.req.hsqsize",
		"nvme-rdma.cm.req.cntlid", "nvme-rdma.cm.rsp.recfmt", "nvme-rdma.cm.rsp.crqsize",
		"nvme-rdma.cm.rej.recfmt", "nvme-rdma.cm.rej.status",
		"lnet.ib.magic", "lnet.ib.version", "lnet.ib.type", "lnet.ib.credits", "lnet.ib.nob", "lnet.nid.addr",
		"lnet.nid.net_interface", "lnet.connparam.qdepth", "lnet.connparam.max_frags", "lnet.connparam.max_size",
		"infiniband_sdp.bsdh.mid", "infiniband_sdp.bsdh.flags", "infiniband_sdp.bsdh.bufs", "infiniband_sdp.bsdh.len",
		"infiniband_sdp.bsdh.mseq", "infiniband_sdp.bsdh.mseqack", "infiniband_sdp.hh.majv", "infiniband_sdp.hh.minv",
		"infiniband_sdp.hh.ipv", "infiniband_sdp.hh.cap", "infiniband_sdp.hh.maxadverts", "infiniband_sdp.hh.desremrcvsz",
		"infiniband_sdp.hh.localrcvsz", "infiniband_sdp.hh.localport"}
	decode := func(t *testing.T, file string) map[int]map[string]string {
		path, opts := interopTsharkInput(t, file)
		args := append(opts, "-r", path, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,")
		for _, f := range fields {
			args = append(args, "-e", f)
		}
		out, err := exec.Command(tshark, args...).Output()
		if err != nil {
			t.Fatalf("tshark: %v", err)
		}
		rows := map[int]map[string]string{}
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			cols := strings.Split(line, "\t")
			n, _ := strconv.Atoi(cols[0])
			r := map[string]string{}
			for i, f := range fields[1:] {
				if i+1 < len(cols) && cols[i+1] != "" {
					r[f] = cols[i+1]
				}
			}
			rows[n] = r
		}
		return rows
	}
	num := func(s string) string { // tshark's 0x0006 and 6 alike
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return s
		}
		return strconv.FormatUint(v, 10)
	}
	type check struct {
		frame  int
		tshark string // tshark's field
		key    string // our field of the message's ulp; "" when tshark shows nothing
	}
	cases := []struct {
		ulp    string
		tr     craft.Transport
		reject bool
		checks []check
		none   []int // frames where tshark shows none of its fields
	}{
		{"nvme-rdma", craft.RoCEv2, false, []check{{2, "nvme-rdma.cm.rsp.recfmt", "recfmt"}, {2, "nvme-rdma.cm.rsp.crqsize", "crqsize"}}, []int{1, 3}},
		{"nvme-rdma", craft.RoCEv2, true, []check{{2, "nvme-rdma.cm.rej.recfmt", "recfmt"}, {2, "nvme-rdma.cm.rej.status", "status"}}, []int{1}},
		// Over native InfiniBand tshark decodes the REQ too, after its IP CM
		// header.
		{"nvme-rdma", craft.InfiniBand, false, []check{{1, "nvme-rdma.cm.req.recfmt", "recfmt"}, {1, "nvme-rdma.cm.req.qid", "qid"},
			{1, "nvme-rdma.cm.req.hrqsize", "hrqsize"}, {1, "nvme-rdma.cm.req.hsqsize", "hsqsize"}, {1, "nvme-rdma.cm.req.cntlid", "cntlid"},
			{2, "nvme-rdma.cm.rsp.crqsize", "crqsize"}}, []int{3}},
		{"lustre-o2iblnd", craft.RoCEv2, false, []check{
			{1, "lnet.ib.version", "version"}, {1, "lnet.ib.type", "type"}, {1, "lnet.ib.credits", "credits"}, {1, "lnet.ib.nob", "nob"},
			{1, "lnet.connparam.qdepth", "queue_depth"}, {1, "lnet.connparam.max_frags", "max_frags"},
			{1, "lnet.connparam.max_size", "max_msg_size"},
			{2, "lnet.ib.version", "version"}, {2, "lnet.ib.type", "type"}, {2, "lnet.connparam.qdepth", "queue_depth"}}, []int{3}},
		// tshark takes the reject for a message: its "type" is our reason.
		{"lustre-o2iblnd", craft.RoCEv2, true, []check{{2, "lnet.ib.version", "version"}, {2, "lnet.ib.type", "why"}}, nil},
		{"sdp", craft.RoCEv2, false, []check{{2, "infiniband_sdp.bsdh.mid", "mid"}, {2, "infiniband_sdp.bsdh.flags", "flags"},
			{2, "infiniband_sdp.bsdh.bufs", "bufs"}, {2, "infiniband_sdp.bsdh.len", "len"}, {2, "infiniband_sdp.bsdh.mseq", "mseq"},
			{2, "infiniband_sdp.bsdh.mseqack", "mseq_ack"}}, []int{1}},
		// Over native InfiniBand the Hello too (and the RTU's zeros as one).
		{"sdp", craft.InfiniBand, false, []check{{1, "infiniband_sdp.bsdh.mid", "mid"}, {1, "infiniband_sdp.bsdh.bufs", "bufs"},
			{1, "infiniband_sdp.bsdh.len", "len"}, {1, "infiniband_sdp.hh.majv", "major_version"}, {1, "infiniband_sdp.hh.minv", "minor_version"},
			{1, "infiniband_sdp.hh.ipv", "ip_version"}, {1, "infiniband_sdp.hh.cap", "capabilities"},
			{1, "infiniband_sdp.hh.maxadverts", "max_adverts"}, {1, "infiniband_sdp.hh.desremrcvsz", "des_rem_rcv_sz"},
			{1, "infiniband_sdp.hh.localrcvsz", "local_rcv_sz"}, {1, "infiniband_sdp.hh.localport", "local_port"},
			{2, "infiniband_sdp.bsdh.mid", "mid"}, {2, "infiniband_sdp.bsdh.len", "len"}}, nil},
		{"nvme-rdma", craft.IWARP, false, nil, []int{4, 5}},
		{"lustre-o2iblnd", craft.IWARP, false, nil, []int{4, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.ulp+" "+string(tc.tr)+map[bool]string{true: " rejected"}[tc.reject], func(t *testing.T) {
			frames, err := craft.ULPExchange(tc.ulp, tc.tr, false, tc.reject, 2)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "x.pcap")
			if err := craft.WriteFile(path, frames); err != nil {
				t.Fatal(err)
			}
			rows := decode(t, path)
			c := runFrames(t, "x.pcap", frames)
			byFrame := map[int]*record.Message{}
			for _, m := range c.msgs {
				byFrame[m.Frame] = m
			}
			for _, ck := range tc.checks {
				got, ok := rows[ck.frame][ck.tshark]
				if !ok {
					t.Errorf("frame %d: tshark shows no %s", ck.frame, ck.tshark)
					continue
				}
				if ours := num(fieldText(byFrame[ck.frame].ULP, ck.key)); num(got) != ours {
					t.Errorf("frame %d: tshark %s = %s, our %s = %s", ck.frame, ck.tshark, got, ck.key, ours)
				}
			}
			for _, f := range tc.none {
				if len(rows[f]) > 0 {
					t.Errorf("frame %d: tshark now decodes %v", f, rows[f])
				}
			}
			if tc.ulp == "lustre-o2iblnd" && !tc.reject && tc.tr == craft.RoCEv2 {
				// The NIDs' addresses and network numbers.
				src, dst := fieldText(byFrame[1].ULP, "src_nid"), fieldText(byFrame[1].ULP, "dst_nid")
				addrs := strings.Split(rows[1]["lnet.nid.addr"], ",")
				if len(addrs) != 2 || !strings.HasPrefix(src, addrs[0]+"@") || !strings.HasPrefix(dst, addrs[1]+"@") {
					t.Errorf("tshark NIDs %v, ours %s %s", addrs, src, dst)
				}
			}
			if tc.ulp == "sdp" {
				// tshark reads the RTU's zeros as a BSDH too.
				if rows[3]["infiniband_sdp.bsdh.mid"] != "0x00" {
					t.Logf("tshark no longer decodes the RTU as SDP: %v", rows[3])
				}
			}
		})
	}
	t.Run("real nvme-discover2", func(t *testing.T) {
		p := realCapture(t, "nvme-discover2.pcap")
		rows := decode(t, p)
		var c collect
		if _, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c); err != nil {
			t.Fatal(err)
		}
		rep := c.msgs[1]
		if rows[2]["nvme-rdma.cm.rsp.crqsize"] != fieldText(rep.ULP, "crqsize") || rows[2]["nvme-rdma.cm.rsp.recfmt"] != fieldText(rep.ULP, "recfmt") {
			t.Errorf("REP: tshark %v, ours %+v", rows[2], rep.ULP)
		}
		if len(rows[1]) > 0 {
			t.Errorf("tshark now decodes the REQ: %v", rows[1])
		}
	})
}
