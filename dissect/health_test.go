package dissect_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// healthFindings are the RC transport findings.
var healthFindings = []finding.Code{finding.RCNAK, finding.RCRNRNAK, finding.RCRetransmission, finding.RCPacketsMissing,
	finding.RoCECongestion}

// healthOf is the one connection's transport health and its health
// findings, by code.
func healthOf(t *testing.T, c *dpCollect) (*record.Health, map[finding.Code]string) {
	t.Helper()
	if len(c.conns) != 1 || c.conns[0].Datapath == nil || c.conns[0].Datapath.Health == nil {
		t.Fatalf("%d connections, or no health", len(c.conns))
	}
	fs := map[finding.Code]string{}
	for _, f := range c.conns[0].Findings {
		if slices.Contains(healthFindings, f.Code) {
			if _, twice := fs[f.Code]; twice && f.Code != finding.RCRetransmission && f.Code != finding.RCNAK {
				t.Errorf("%s twice", f.Code)
			}
			fs[f.Code] += f.Message + "\n"
		}
	}
	return c.conns[0].Datapath.Health, fs
}

// TestHealthCases: each crafted case, on each carrier, gives the counts
// and the findings it should, and nothing else.
func TestHealthCases(t *testing.T) {
	type want struct {
		check func(t *testing.T, h *record.Health)
		codes []finding.Code
		says  []string
	}
	cases := map[string]want{
		// The responder's Write loses its third packet on the wire: the
		// initiator NAKs it, the responder sends it and the one after again.
		"nak": {func(t *testing.T, h *record.Health) {
			if h.NAKs[0][record.NAKPSNSequenceError] != 1 || h.Retransmitted != [2]int{0, 3} || h.Missing != [2]int{} ||
				!h.HasRetransmitDelay[1] || h.RetransmitMin[1] <= 0 || h.RetransmitMax[1] < h.RetransmitMin[1] {
				t.Errorf("%+v", h)
			}
		}, []finding.Code{finding.RCNAK, finding.RCRetransmission}, []string{"PSN sequence error", "all after a NAK", "packet_seq_err"}},
		"rnr": {func(t *testing.T, h *record.Health) {
			if h.RNRNAKs != [2]int{0, 1} || h.Retransmitted != [2]int{1, 0} {
				t.Errorf("%+v", h)
			}
		}, []finding.Code{finding.RCRNRNAK, finding.RCRetransmission}, []string{"1 Call from the initiator was outstanding against the 32 credits granted", "rnr_nak_retry_err"}},
		"invalid-request": {func(t *testing.T, h *record.Health) {
			if h.NAKs[1][record.NAKInvalidRequest] != 1 || h.Retransmitted != [2]int{} {
				t.Errorf("%+v", h)
			}
		}, []finding.Code{finding.RCNAK}, []string{"4100 octets, over the inline threshold of 4096", "req_remote_invalid_request"}},
		"access-error": {func(t *testing.T, h *record.Health) {
			if h.NAKs[0][record.NAKRemoteAccessError] != 1 {
				t.Errorf("%+v", h)
			}
		}, []finding.Code{finding.RCNAK}, []string{"RDMA Write of frame", "R_Key 0x00010001, which the Send With Invalidate of frame", "req_remote_access_errors"}},
		"missed": {func(t *testing.T, h *record.Health) {
			if h.Missing != [2]int{1, 0} || h.Retransmitted != [2]int{} || h.NAKTotal(1) != 0 {
				t.Errorf("%+v", h)
			}
		}, []finding.Code{finding.RCPacketsMissing}, []string{"lower bound"}},
	}
	for _, tr := range dpTransports {
		for _, k := range craft.HealthCases {
			t.Run(string(tr)+"/"+k, func(t *testing.T) {
				x := bothR(tr)
				frames, err := x.HealthTraffic([]string{k})
				if err != nil {
					t.Fatal(err)
				}
				c := runDatapathFrames(t, datapath.ModeFindings, frames)
				h, fs := healthOf(t, c)
				w, ok := cases[k]
				if k == "congestion" {
					w, ok = congestionWant(tr), true
				}
				if !ok {
					t.Fatal("no expectation")
				}
				w.check(t, h)
				var codes []finding.Code
				all := ""
				for code, msg := range fs {
					codes = append(codes, code)
					all += msg
				}
				slices.Sort(codes)
				if !slices.Equal(codes, w.codes) {
					t.Errorf("findings %v, want %v:\n%s", codes, w.codes, all)
				}
				for _, s := range w.says {
					if !strings.Contains(all, s) {
						t.Errorf("no %q in\n%s", s, all)
					}
				}
				// The usual traffic acknowledges every Send: ACKs both ways.
				if h.ACKs[0] == 0 || h.ACKs[1] == 0 || h.Octets[0][record.OctetsSend] == 0 || h.Octets[1][record.OctetsWrite] == 0 {
					t.Errorf("acks %v, octets %v", h.ACKs, h.Octets)
				}
			})
		}
	}
}

// congestionWant is what the congestion case gives on a carrier: ECN,
// DSCP and a CNP on RoCEv2; FECN and BECN elsewhere.
func congestionWant(tr craft.Transport) struct {
	check func(t *testing.T, h *record.Health)
	codes []finding.Code
	says  []string
} {
	w := struct {
		check func(t *testing.T, h *record.Health)
		codes []finding.Code
		says  []string
	}{codes: []finding.Code{finding.RoCECongestion}}
	if tr == craft.RoCEv2 {
		w.check = func(t *testing.T, h *record.Health) {
			if h.ECNCE != [2]int{1, 0} || h.CNPs != [2]int{0, 1} || h.DSCP != [2]uint8{26, 26} || h.HasDSCP != [2]bool{true, true} ||
				!h.HasCNPDSCP || h.CNPDSCP != 48 || h.FECN != [2]int{} {
				t.Errorf("%+v", h)
			}
		}
		w.says = []string{"1 packet marked CE", "1 CNP from the responder", "np_cnp_sent at the responder"}
		return w
	}
	w.check = func(t *testing.T, h *record.Health) {
		if h.FECN != [2]int{1, 0} || h.BECN != [2]int{0, 1} || h.ECNCE != [2]int{} || h.HasDSCP[0] {
			t.Errorf("%+v", h)
		}
	}
	w.says = []string{"1 packet with FECN", "1 packet with BECN from the responder"}
	return w
}

// TestHealthQuiet: the usual crafted traffic flags nothing of the
// transport, on every carrier.
func TestHealthQuiet(t *testing.T) {
	for _, tr := range dpTransports {
		c := runDatapathFrames(t, datapath.ModeFindings, nfs(t, bothR(tr), craft.Traffic{}))
		h, fs := healthOf(t, c)
		if len(fs) != 0 || h.NAKTotal(0)+h.NAKTotal(1) != 0 || h.Retransmitted != [2]int{} || h.Missing != [2]int{} {
			t.Errorf("%s: %+v %v", tr, h, fs)
		}
	}
}

// TestHealthTshark: tshark is the oracle of every AETH field of every
// crafted case: its Acknowledges by syndrome (ACK, RNR NAK, NAK and its
// error code), by the side that sent them, are the data path's counts.
func TestHealthTshark(t *testing.T) {
	tshark, err := lookTshark()
	if err != nil {
		t.Skip("tshark not installed")
	}
	for _, tr := range dpTransports {
		cases := craft.HealthCases
		if testing.Short() {
			cases = []string{"nak", "rnr", "access-error"}
		}
		for _, k := range cases {
			t.Run(string(tr)+"/"+k, func(t *testing.T) {
				x := bothR(tr)
				frames, err := x.HealthTraffic([]string{k})
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(t.TempDir(), "h.pcap")
				if err := craft.WriteFile(p, frames); err != nil {
					t.Fatal(err)
				}
				c := runDatapathFile(t, datapath.ModeFindings, p)
				h, _ := healthOf(t, c)
				checkAETHOracle(t, tshark, p, []*record.Health{h}, true)
			})
		}
	}
}

// aethFields are the fields tshark shows of an Acknowledge, with those
// that tell its sender.
var aethFields = []string{"frame.number", "ip.src", "ipv6.src", "infiniband.grh.sgid", "infiniband.lrh.slid",
	"infiniband.aeth.syndrome", "infiniband.aeth.syndrome.opcode", "infiniband.aeth.syndrome.error_code",
	"infiniband.aeth.syndrome.timer", "infiniband.aeth.syndrome.credit_count", "infiniband.aeth.msn"}

// checkAETHOracle compares tshark's Acknowledges of a capture with the
// health of its connections: by the side that sent them when bySide (the
// initiator is the sender of frame 1), in all otherwise.
func checkAETHOracle(t *testing.T, tshark, file string, hs []*record.Health, bySide bool) {
	t.Helper()
	rows := tsharkRows(t, tshark, file, "infiniband.bth.opcode == 17 && infiniband.aeth", aethFields)
	first := tsharkRows(t, tshark, file, "frame.number == 1", aethFields[:5])
	sender := func(r map[string]string) string {
		return r["ip.src"] + r["ipv6.src"] + r["infiniband.grh.sgid"] + r["infiniband.lrh.slid"]
	}
	var want record.Health
	for _, r := range rows {
		side := 0
		if bySide && (len(first) != 1 || sender(r) != sender(first[0])) {
			side = 1
		}
		syn, err1 := strconv.ParseUint(strings.TrimSpace(r["infiniband.aeth.syndrome"]), 0, 8)
		kind, err2 := strconv.Atoi(r["infiniband.aeth.syndrome.opcode"])
		if err1 != nil || err2 != nil || int(syn>>5&3) != kind || r["infiniband.aeth.msn"] == "" {
			t.Fatalf("frame %s: syndrome %q, its opcode %q, MSN %q", r["frame.number"], r["infiniband.aeth.syndrome"],
				r["infiniband.aeth.syndrome.opcode"], r["infiniband.aeth.msn"])
		}
		switch kind {
		case 0:
			want.ACKs[side]++
			if c, err := strconv.ParseUint(r["infiniband.aeth.syndrome.credit_count"], 0, 8); err != nil || c != syn&0x1f {
				t.Errorf("frame %s: credit count %q, syndrome 0x%02x", r["frame.number"], r["infiniband.aeth.syndrome.credit_count"], syn)
			}
		case 1:
			want.RNRNAKs[side]++
			if c, err := strconv.ParseUint(r["infiniband.aeth.syndrome.timer"], 0, 8); err != nil || c != syn&0x1f {
				t.Errorf("frame %s: timer %q, syndrome 0x%02x", r["frame.number"], r["infiniband.aeth.syndrome.timer"], syn)
			}
		case 3:
			code, err := strconv.Atoi(r["infiniband.aeth.syndrome.error_code"])
			if err != nil || code != int(syn&0x1f) {
				t.Errorf("frame %s: error code %q, syndrome 0x%02x", r["frame.number"], r["infiniband.aeth.syndrome.error_code"], syn)
			}
			if code < record.NAKCodeCount {
				want.NAKs[side][code]++
			}
		}
	}
	var got record.Health
	for _, h := range hs {
		for side := range 2 {
			s := side
			if !bySide {
				s = 0
			}
			got.ACKs[s] += h.ACKs[side]
			got.RNRNAKs[s] += h.RNRNAKs[side]
			for code := range h.NAKs[side] {
				got.NAKs[s][code] += h.NAKs[side][code]
			}
		}
	}
	if got.ACKs != want.ACKs || got.RNRNAKs != want.RNRNAKs || got.NAKs != want.NAKs {
		t.Errorf("ACKs %v, RNR NAKs %v, NAKs %v; tshark: %v, %v, %v", got.ACKs, got.RNRNAKs, got.NAKs, want.ACKs, want.RNRNAKs, want.NAKs)
	}
}

// TestRealCapturesHealth: on every real capture nothing of the transport
// is flagged, and the Acknowledges the connections' traffic carried are
// tshark's, by syndrome.
func TestRealCapturesHealth(t *testing.T) {
	dir := interopRealDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no real captures: %v", err)
	}
	tshark, _ := lookTshark()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".pcap") && !strings.HasSuffix(name, ".pcapng") && !strings.HasSuffix(name, ".gz") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			p := realCapture(t, name)
			c := runDatapathFile(t, datapath.ModeFindings, p)
			var hs []*record.Health
			for _, conn := range c.conns {
				for _, f := range conn.Findings {
					if slices.Contains(healthFindings, f.Code) {
						t.Errorf("connection %d: %s: %s", conn.Number, f.Code, f.Message)
					}
				}
				if conn.Datapath != nil && conn.Datapath.Health != nil && conn.Datapath.Health.Kind == record.HealthRC {
					hs = append(hs, conn.Datapath.Health)
				}
			}
			if len(hs) == 0 || tshark == "" || c.sum.DatapathOrphanFrames > 0 {
				return // nothing to compare: no connection's traffic, or traffic of none
			}
			checkAETHOracle(t, tshark, p, hs, false)
		})
	}
}

// TestRPCRDMANotRC: a REQ with RFC 8797 data that asks for UC, RD or the
// reserved service type gets rpcrdma-not-rc; one for RC, or one without
// RFC 8797 data, does not.
func TestRPCRDMANotRC(t *testing.T) {
	a, b := craft.Endpoints(0, false)
	msg, err := craft.Peer{SendSize: 4096, ReceiveSize: 4096}.Message()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		st      uint8
		rpcrdma bool
		want    bool
	}{{0, true, false}, {1, true, true}, {2, true, true}, {3, true, true}, {1, false, false}} {
		pd := craft.IPCMHeader(a, b, a.Port)
		if tc.rpcrdma {
			pd = append(pd, msg...)
		}
		req := &layers.CMReq{LocalCommID: 1, ServiceID: craft.NFSServiceID, LocalQPN: 0x100, TransportServiceType: tc.st,
			StartingPSN: 1, PathPacketPayloadMTU: 3, PartitionKey: 0xffff}
		req.PrivateData = pd
		data, link, err := (&craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b, Msg: req, TID: 1}).Frame()
		if err != nil {
			t.Fatal(err)
		}
		c := runDatapathFrames(t, datapath.ModeFindings, []craft.Frame{{Data: data, Time: craft.DefaultStart, LinkType: link}})
		var got []string
		for _, f := range c.msgs[0].Findings {
			if f.Code == finding.RPCRDMANotRC {
				got = append(got, f.Message)
			}
		}
		if len(got) > 0 != tc.want || tc.want && !strings.Contains(got[0], "Transport Service Type "+strconv.Itoa(int(tc.st))) {
			t.Errorf("service type %d, RFC 8797 %v: %v", tc.st, tc.rpcrdma, got)
		}
	}
}

// TestAccessErrorLinksChunkViolation: an RDMA Write outside every chunk
// the Calls offered, which the peer answers with a Remote Access Error
// NAK, is one event seen twice; each finding names the other (RoCE's
// answer to a chunk violation, RFC 8166 section 4.5.3), and a violation
// no NAK answered says nothing of one (TestChunkViolations).
func TestAccessErrorLinksChunkViolation(t *testing.T) {
	for _, tr := range dpTransports {
		t.Run(string(tr), func(t *testing.T) {
			p := craft.Peer{SendSize: 4096, ReceiveSize: 4096} // no R: the Write uses a handle no Call offered
			x := craft.Exchange{Transport: tr, Initiator: p, Responder: p}
			frames, err := x.HealthTraffic([]string{"access-error"})
			if err != nil {
				t.Fatal(err)
			}
			c := runDatapathFrames(t, datapath.ModeFindings, frames)
			var cv, nak []string
			for _, f := range c.conns[0].Findings {
				switch f.Code {
				case finding.ChunkViolation:
					cv = append(cv, f.Message)
				case finding.RCNAK:
					nak = append(nak, f.Message)
				}
			}
			m := regexp.MustCompile(`^frame (\d+): an RDMA Write from the responder to handle 0x0001dead .*, which no outstanding Call advertised; the initiator answered it with a Remote Access Error NAK \(frame (\d+), rc-nak\)$`)
			if len(cv) != 1 || len(nak) != 1 || !m.MatchString(cv[0]) {
				t.Fatalf("chunk-violation %q, rc-nak %q", cv, nak)
			}
			g := m.FindStringSubmatch(cv[0])
			want := fmt.Sprintf("NAK (frame %s): 1 remote access error (PSN 0x%%06x: it answers the RDMA Write of frame %s, R_Key 0x0001dead, outside every chunk the Calls offered (chunk-violation);", g[2], g[1])
			if !strings.Contains(nak[0], "it answers the RDMA Write of frame "+g[1]+", R_Key 0x0001dead, outside every chunk the Calls offered (chunk-violation);") ||
				!strings.Contains(nak[0], "NAK (frame "+g[2]+")") {
				t.Errorf("rc-nak %q, want %s", nak[0], want)
			}
		})
	}
}
