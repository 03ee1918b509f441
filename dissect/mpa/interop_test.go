package mpa

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The FPDU follower against tshark's iwarp_mpa, iwarp_ddp and iwarp_rdma
// dissectors, FPDU by FPDU, on crafted captures and the real SoftUiWarp
// one. Every FPDU tshark 4.0 decodes must be ours, field by field, with
// the same verdict on its CRC. tshark has limits this test allows for:
//   - with markers it decodes only FPDUs that begin and end a TCP segment
//     (it frames markers by segment);
//   - when either MPA frame set M it expects markers both ways, although
//     M asks for them only in what its sender receives (RFC 5044, section
//     7.1.1): the direction without markers goes undecoded;
//   - a segment that begins with the tail of an FPDU and goes on with
//     others gets ULPDU_Length 0 and a bad CRC;
//   - its iwarp_ddp.rsvdulp is five octets long (the RDMAP control octet
//     with the four of RsvdULP), so it is not compared.

// nopTraffic takes the traffic and forgets it.
type nopTraffic struct{ findings []finding.Finding }

func (nopTraffic) Frame(int)                                                 {}
func (nopTraffic) Send(*Send)                                                {}
func (nopTraffic) ReadRequest(int, int, time.Time, *layers.RDMAPReadRequest) {}
func (nopTraffic) ReadDone(int)                                              {}
func (nopTraffic) Tagged(*Tagged)                                            {}
func (nopTraffic) Lost(int)                                                  {}
func (n *nopTraffic) Finding(f finding.Finding)                              { n.findings = append(n.findings, f) }
func (nopTraffic) Close(*[2]TCPHealth)                                       {}

// teeTraffic logs, and keeps the findings apart.
type teeTraffic struct {
	*trafficLog
	tr *nopTraffic
}

func (t *teeTraffic) Finding(f finding.Finding) { t.tr.Finding(f) }

// fpduFields are the fields compared, by tshark's names; each frame has a
// list of values per field, one per FPDU that has the field.
var fpduFields = []string{"iwarp_mpa.ulpdulength", "iwarp_ddp.tagged_flag", "iwarp_ddp.last_flag", "iwarp_ddp.stag",
	"iwarp_ddp.tagged_offset", "iwarp_ddp.qn", "iwarp_ddp.msn", "iwarp_ddp.mo", "iwarp_rdma.opcode", "iwarp_rdma.inval_stag",
	"iwarp_rdma.sinkstag", "iwarp_rdma.sinkto", "iwarp_rdma.rdmardsz", "iwarp_rdma.srcstag", "iwarp_rdma.srcto",
	"iwarp_rdma.term_layer", "crc"}

// oursFPDUs follows the capture and lists, by frame, each field's values.
func oursFPDUs(t *testing.T, file string) (map[int]map[string][]string, *nopTraffic) {
	t.Helper()
	return oursFPDUsWith(t, file, nil)
}

// oursFPDUsWith also hands the traffic to log, when not nil (its findings
// still go to the nopTraffic).
func oursFPDUsWith(t *testing.T, file string, log *trafficLog) (map[int]map[string][]string, *nopTraffic) {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]map[string][]string{}
	tr := &nopTraffic{}
	f := New(file, func(*record.Message) {})
	f.Follow(func(*Pair) Traffic {
		if log != nil {
			return &teeTraffic{log, tr}
		}
		return tr
	})
	f.trace = func(frame int, fo *follower) {
		m := out[frame]
		if m == nil {
			m = map[string][]string{}
			out[frame] = m
		}
		add := func(k, v string) { m[k] = append(m[k], v) }
		d := &fo.ddp
		b := map[bool]string{true: "1", false: "0"}
		add("iwarp_mpa.ulpdulength", strconv.Itoa(fo.ulpdu))
		add("iwarp_ddp.tagged_flag", b[d.Tagged])
		add("iwarp_ddp.last_flag", b[d.Last])
		add("iwarp_rdma.opcode", fmt.Sprintf("0x%02x", d.Opcode))
		if d.Tagged {
			add("iwarp_ddp.stag", fmt.Sprintf("0x%08x", d.STag))
			add("iwarp_ddp.tagged_offset", fmt.Sprintf("0x%016x", d.TaggedOffset))
		} else {
			add("iwarp_ddp.qn", strconv.Itoa(int(d.QN)))
			add("iwarp_ddp.msn", strconv.Itoa(int(d.MSN)))
			add("iwarp_ddp.mo", strconv.Itoa(int(d.MO)))
			switch d.Opcode {
			case layers.RDMAPOpSendInvalidate, layers.RDMAPOpSendSEInvalidate:
				add("iwarp_rdma.inval_stag", strconv.Itoa(int(d.InvalidateSTag)))
			case layers.RDMAPOpReadRequest:
				add("iwarp_rdma.sinkstag", fmt.Sprintf("0x%08x", fo.rr.SinkSTag))
				add("iwarp_rdma.sinkto", fmt.Sprintf("0x%016x", fo.rr.SinkTO))
				add("iwarp_rdma.rdmardsz", strconv.Itoa(int(fo.rr.Size)))
				add("iwarp_rdma.srcstag", fmt.Sprintf("0x%08x", fo.rr.SourceSTag))
				add("iwarp_rdma.srcto", fmt.Sprintf("0x%016x", fo.rr.SourceTO))
			case layers.RDMAPOpTerminate:
				add("iwarp_rdma.term_layer", fmt.Sprintf("0x%02x", fo.term.Layer))
			}
		}
		if fo.crc == modeOn {
			field := uint32(fo.crcBuf[0]) | uint32(fo.crcBuf[1])<<8 | uint32(fo.crcBuf[2])<<16 | uint32(fo.crcBuf[3])<<24
			add("crc", map[bool]string{true: "good", false: "bad"}[field == fo.sum])
		}
	}
	a := reassembly.New(reassembly.Options{}, f)
	var eth golayers.Ethernet
	var ip4 golayers.IPv4
	var ip6 golayers.IPv6
	var tcp golayers.TCP
	p := gopacket.NewDecodingLayerParser(golayers.LayerTypeEthernet, &eth, &ip4, &ip6, &tcp)
	p.IgnoreUnsupported = true
	var decoded []gopacket.LayerType
	for n := 1; ; n++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if err := p.DecodeLayers(data, &decoded); err != nil && len(decoded) < 3 {
			continue
		}
		var s reassembly.Segment
		ok := false
		for _, l := range decoded {
			switch l {
			case golayers.LayerTypeIPv4:
				copy(s.Flow.Src[12:], ip4.SrcIP.To4())
				copy(s.Flow.Dst[12:], ip4.DstIP.To4())
			case golayers.LayerTypeIPv6:
				copy(s.Flow.Src[:], ip6.SrcIP)
				copy(s.Flow.Dst[:], ip6.DstIP)
				s.Flow.V6 = true
			case golayers.LayerTypeTCP:
				ok = true
			}
		}
		if !ok {
			continue
		}
		s.Flow.SrcPort, s.Flow.DstPort = uint16(tcp.SrcPort), uint16(tcp.DstPort)
		s.Seq, s.SYN, s.FIN, s.RST = tcp.Seq, tcp.SYN, tcp.FIN, tcp.RST
		s.Payload, s.WireLen, s.Frame, s.Time = tcp.Payload, len(tcp.Payload), n, ci.Timestamp
		a.Segment(&s)
	}
	a.Flush()
	return out, tr
}

var badCRC = regexp.MustCompile(`CRC check: 0x[0-9a-f]+ \((Good|Bad) CRC32`)

// theirFPDUs runs tshark on the capture.
func theirFPDUs(t *testing.T, tshark, file string) map[int]map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"-n", "-r", file, "-Y", "iwarp_mpa.ulpdulength", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", "frame.number"}
	for _, f := range fpduFields[:len(fpduFields)-1] {
		args = append(args, "-e", f)
	}
	raw, err := exec.CommandContext(ctx, tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	out := map[int]map[string][]string{}
	for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if line == "" {
			continue
		}
		col := strings.Split(line, "\t")
		n, _ := strconv.Atoi(col[0])
		m := map[string][]string{}
		for i, f := range fpduFields[:len(fpduFields)-1] {
			if v := col[i+1]; v != "" {
				m[f] = strings.Split(v, ",")
			}
		}
		out[n] = m
	}
	// The CRC check shows only in the tree.
	raw, err = exec.CommandContext(ctx, tshark, "-n", "-r", file, "-Y", "iwarp_mpa.ulpdulength", "-V").Output()
	if err != nil {
		t.Fatalf("tshark -V: %v", err)
	}
	frame := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "Frame ") {
			frame, _ = strconv.Atoi(strings.TrimSuffix(strings.Fields(line)[1], ":"))
		}
		if m := badCRC.FindStringSubmatch(line); m != nil && out[frame] != nil {
			out[frame]["crc"] = append(out[frame]["crc"], strings.ToLower(m[1]))
		}
	}
	return out
}

// interopCaptures writes the crafted iWARP captures the test compares.
func interopIWARP(t *testing.T) []string {
	big := make([]byte, 3000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	traffic := func(bad bool) []craft.IWARPMessage {
		return []craft.IWARPMessage{
			{Opcode: layers.RDMAPOpSend, Payload: []byte("a Call of some length")},
			{Opcode: layers.RDMAPOpSend, Payload: big[:1500], MaxSegment: 700},
			{Opcode: layers.RDMAPOpReadRequest, Read: &layers.RDMAPReadRequest{SinkSTag: 0x11, SinkTO: 0x1000, Size: 64, SourceSTag: 0x22, SourceTO: 0x2000}},
			{FromResponder: true, Opcode: layers.RDMAPOpReadResponse, STag: 0x11, TO: 0x1000, Payload: big[:64]},
			{FromResponder: true, Opcode: layers.RDMAPOpWrite, STag: 0x33, TO: 0xfeed0000, Payload: big, MaxSegment: 1400},
			{FromResponder: true, Opcode: layers.RDMAPOpSendInvalidate, InvalidateSTag: 0x33, Payload: []byte("a Reply")},
			{FromResponder: true, Opcode: layers.RDMAPOpSendSE, Payload: []byte("solicited"), BadCRC: bad},
			{FromResponder: true, Opcode: layers.RDMAPOpSendSEInvalidate, InvalidateSTag: 0x44, Payload: []byte("both")},
			{Opcode: layers.RDMAPOpTerminate, Term: &layers.RDMAPTerminate{Layer: 1, EType: 2, ErrorCode: 5}},
		}
	}
	var files []string
	for i, x := range []craft.IWARPExchange{
		{Rev: 1, Traffic: traffic(true)},
		{Rev: 2, NoCRC: true, Traffic: traffic(false)},
		{Rev: 1, InitiatorMarkers: true, ResponderMarkers: true, Traffic: traffic(true)},
		{Rev: 2, ResponderMarkers: true, Traffic: traffic(false), IPv6: true},
		{Rev: 1, TCPSegment: 500, Traffic: traffic(true)},
		{Rev: 1, TCPSegment: 9000, Traffic: traffic(false)},
		{Rev: 1, InitiatorMarkers: true, TCPSegment: 333, Traffic: traffic(true)},
		{Rev: 1, Retransmit: []int{1, 6}, Reorder: []int{3}, Traffic: traffic(true)},
	} {
		fr, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		kind := ""
		if (x.InitiatorMarkers || x.ResponderMarkers) && x.TCPSegment > 0 {
			kind = "-markers-split"
		}
		name := filepath.Join(t.TempDir(), fmt.Sprintf("iwarp-traffic-%d%s.pcap", i, kind))
		if err := craft.WriteFile(name, fr); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	// The NFS-like exchanges of the data path (the shipped sample is the
	// first), with and without markers, and with a bad CRC.
	peer := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	for i, c := range []struct {
		markers bool
		finding []string
	}{{false, nil}, {true, nil}, {false, []string{"mpa-crc-mismatch"}}} {
		x := craft.IWARPExchange{Rev: 2, Initiator: peer, Responder: peer, InitiatorMarkers: c.markers, ResponderMarkers: c.markers}
		fr, err := x.NFSTraffic(craft.Traffic{Findings: c.finding})
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(t.TempDir(), fmt.Sprintf("iwarp-nfs-%d.pcap", i))
		if err := craft.WriteFile(name, fr); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	if real := filepath.Join("..", "..", "..", "shared", "captures", "real", "softuiwarp-uiwarp.pcap"); fileExists(real) {
		files = append(files, real)
	}
	return files
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func TestInteropTsharkFPDU(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not found (apt-get install tshark)")
	}
	for _, file := range interopIWARP(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ours, _ := oursFPDUs(t, file)
			theirs := theirFPDUs(t, tshark, file)
			if len(theirs) == 0 {
				if strings.Contains(file, "markers-split") {
					t.Skip("tshark 4.0 decodes no FPDU split over segments when markers are in use")
				}
				t.Fatal("tshark decodes no FPDU")
			}
			misframed := 0
			for n, tm := range theirs {
				if slices.Contains(tm["iwarp_mpa.ulpdulength"], "0") {
					// tshark 4.0 loses the framing of a segment that begins
					// with the tail of an FPDU and goes on with others: it
					// shows ULPDU_Length 0 and a bad CRC.
					misframed++
					continue
				}
				om := ours[n]
				if om == nil {
					t.Errorf("frame %d: tshark decodes FPDUs (%v), we complete none there", n, tm)
					continue
				}
				for _, f := range fpduFields {
					if !reflect.DeepEqual(om[f], tm[f]) {
						t.Errorf("frame %d %s: ours %q, tshark %q", n, f, om[f], tm[f])
					}
				}
			}
			// Frames only we decode: where tshark cannot (markers in an
			// FPDU split over segments, or segments it takes for
			// retransmissions).
			only := 0
			for n := range ours {
				if theirs[n] == nil {
					only++
				}
			}
			t.Logf("%d frames with FPDUs compared, %d misframed by tshark; %d only ours", len(theirs)-misframed, misframed, only)
		})
	}
}

// TestInteropTsharkTagged: the tagged segments the framer hands on (the
// first piece of each: STag and Tagged Offset) are those tshark decodes
// (iwarp_ddp.stag, iwarp_ddp.tagged_offset); where tshark 4.0 cannot
// frame an FPDU (markers in one split over segments, markers one way
// only, a segment that begins with the tail of one), ours are more.
func TestInteropTsharkTagged(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not found (apt-get install tshark)")
	}
	for _, file := range interopIWARP(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			log := &trafficLog{logTagged: true}
			oursFPDUsWith(t, file, log)
			ours := map[string]int{}
			n := 0
			for _, g := range log.got {
				if f := strings.Fields(g); len(f) > 16 && f[0] == "tagged" && f[16] == "true" { // start true
					ours[f[8]+" "+f[10]]++
					n++
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			raw, err := exec.CommandContext(ctx, tshark, "-n", "-r", file, "-Y", "iwarp_ddp.stag", "-T", "fields", "-E", "occurrence=a",
				"-E", "aggregator=,", "-e", "iwarp_ddp.stag", "-e", "iwarp_ddp.tagged_offset").Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			theirs := 0
			for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				col := strings.Split(line, "\t")
				if len(col) != 2 {
					continue
				}
				stags, tos := strings.Split(col[0], ","), strings.Split(col[1], ",")
				for i := range min(len(stags), len(tos)) {
					s, _ := strconv.ParseUint(stags[i], 0, 32)
					o, _ := strconv.ParseUint(tos[i], 0, 64)
					k := fmt.Sprintf("%#x %#x", s, o)
					if ours[k] == 0 {
						t.Errorf("tshark decodes a tagged segment with STag and TO %s, the framer hands on none", k)
						continue
					}
					ours[k]--
					theirs++
				}
			}
			// The NFS-like exchanges put one FPDU in a segment, with markers
			// both ways or none: tshark frames them all.
			if strings.Contains(file, "iwarp-nfs") && (theirs != n || n == 0) {
				t.Errorf("tshark decodes %d tagged segments, the framer hands on %d", theirs, n)
			}
			t.Logf("%d tagged segments compared, %d only ours", theirs, n-theirs)
		})
	}
}
