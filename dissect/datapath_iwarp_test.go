package dissect_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The iWARP data path end to end: the FPDUs after the MPA exchange
// (craft.IWARPExchange.NFSTraffic) feed the same checks as RoCE, with the
// same codes, records and figures; and the four iWARP findings.

// bothRIWARP is an MPA revision 2 exchange where both sides set R and
// advertise 4096/4096.
func bothRIWARP() craft.IWARPExchange {
	p := craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}
	return craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p}
}

// onlyLongReply says the connection's one finding is the usual NFS
// exchange's: its Long Reply needed a larger inline threshold.
func onlyLongReply(c *record.Connection) bool {
	return reflect.DeepEqual(codes(c.Findings), []string{"inline-threshold-too-small"})
}

func iwNFS(t *testing.T, x craft.IWARPExchange, tr craft.Traffic) []craft.Frame {
	t.Helper()
	frames, err := x.NFSTraffic(tr)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

func TestDatapathIWARPExchange(t *testing.T) {
	for _, markers := range []bool{false, true} {
		name := "no markers"
		if markers {
			name = "markers"
		}
		t.Run(name, func(t *testing.T) {
			x := bothRIWARP()
			x.InitiatorMarkers, x.ResponderMarkers = markers, markers
			frames := iwNFS(t, x, craft.Traffic{})
			c := runDatapathFrames(t, datapath.ModeAll, frames)
			got := rpcRows(t, c, 4)
			i2r, r2i := record.InitiatorToResponder, record.ResponderToInitiator
			// Frames 1-3 are the TCP handshake, 4 and 5 the MPA frames; one
			// FPDU a segment, the RDMA Write of 8192 octets in six.
			want := []rpcRow{
				{6, i2r, "SEND", "RDMA_MSG", 0x5f000000, 68, 1},
				{7, r2i, "SEND", "RDMA_MSG", 0x5f000000, 52, 1},
				{8, i2r, "SEND", "RDMA_MSG", 0x5f000001, 264, 1},
				{15, r2i, "SEND_WITH_INVALIDATE", "RDMA_MSG", 0x5f000001, 156, 1},
				{16, i2r, "SEND", "RDMA_MSG", 0x5f000002, 192, 1},
				{21, r2i, "SEND_WITH_INVALIDATE", "RDMA_MSG", 0x5f000002, 188, 1},
				{24, i2r, "SEND", "RDMA_MSG", 0x5f000003, 3001, 3},
				{25, r2i, "SEND", "RDMA_MSG", 0x5f000003, 140, 1},
				{26, i2r, "SEND", "RDMA_MSG", 0x5f000004, 192, 1},
				{32, r2i, "SEND_WITH_INVALIDATE", "RDMA_NOMSG", 0x5f000004, 48, 1},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rpc records\n%v\nwant\n%v", got, want)
			}
			// The Read limits are MPA revision 2's IRD and ORD (16 each,
			// as craft writes them); the frames are TCP segments.
			checkNFSExchange(t, c, []int{22, 23, 24}, 27)
			if c := runDatapathFrames(t, datapath.ModeOff, frames); len(c.rpcs) != 0 || c.sum.RPCMessages != 0 || c.conns[0].Datapath != nil {
				t.Errorf("off: %d records, %d messages, datapath %+v", len(c.rpcs), c.sum.RPCMessages, c.conns[0].Datapath)
			}
		})
	}
}

// Each finding craft produces on demand over iWARP: exactly that finding
// (and, for an STag no Call advertised, the Send With Invalidate R does not
// allow), on the rpc record or the connection it belongs to.
func TestDatapathIWARPFindings(t *testing.T) {
	cases := []struct {
		code  string
		frame int // the first rpc record that carries it; 0: the connection
	}{
		{"inline-threshold-exceeded", 35}, // 4100 octets in three FPDUs
		{"send-with-invalidate-not-allowed", 15},
		{"invalidate-stag-unknown", 15},
		{"credits-exceeded", 7},
		{"rpcrdma-header-invalid", 33},
		{"rpcrdma-error-reply", 34},
		{"rdma-read-limit-exceeded", 0},
		{"mpa-crc-mismatch", 0},
		{"mpa-crc-missing", 0},
		{"rdmap-terminate", 0},
		{"fpdu-framing-lost", 0},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			c := runDatapathFrames(t, datapath.ModeFindings, iwNFS(t, bothRIWARP(), craft.Traffic{Findings: []string{tc.code}}))
			all := rpcRecordCodes(c.rpcs)
			if len(c.conns) != 1 {
				t.Fatalf("%d connections", len(c.conns))
			}
			var conn []string
			for _, code := range codes(c.conns[0].Findings) {
				// A finding's traffic may leave a Call without its Reply:
				// that the connection ended so is said, and beside the point;
				// the usual exchange's Long Reply says its threshold was too
				// small.
				if code != "remote-invalidation-one-sided" && code != "rpc-call-unanswered" && code != "inline-threshold-too-small" {
					conn = append(conn, code)
				}
			}
			if tc.frame == 0 {
				if len(all) != 0 || !reflect.DeepEqual(conn, []string{tc.code}) {
					t.Fatalf("rpc findings %v, connection %v", all, conn)
				}
				return
			}
			if len(c.rpcs) == 0 || c.rpcs[0].Frame != tc.frame || codes(c.rpcs[0].Findings)[0] != tc.code {
				t.Fatalf("records %v, findings %v", frameList(c.rpcs), all)
			}
			for _, code := range all {
				if code != tc.code {
					t.Errorf("also %s", code)
				}
			}
			if len(conn) != 0 {
				t.Errorf("connection findings %v", conn)
			}
		})
	}
}

// The iWARP findings' messages say what was seen, and a revision 1
// exchange (no IRD and ORD) or one whose words say 0x3FFF sets no Read
// limit, so the same two Reads at once raise nothing.
func TestDatapathIWARPDetails(t *testing.T) {
	for _, tc := range []struct {
		code, want string
	}{
		{"mpa-crc-mismatch", "an FPDU from the initiator with a CRC that does not match"},
		{"mpa-crc-missing", "an FPDU from the initiator with a zero CRC field, although CRC is in use"},
		{"rdmap-terminate", "the initiator terminated the connection: DDP, untagged buffer error: DDP message too long"},
		{"fpdu-framing-lost", "the FPDUs from the initiator cannot be followed further: the marker at stream offset"},
		{"rdma-read-limit-exceeded", "2 RDMA Read Requests outstanding from the responder, more than the 1 its connection setup allows it (MPA Reply ORD 16, MPA Request IRD 1)"},
	} {
		c := runDatapathFrames(t, datapath.ModeFindings, iwNFS(t, bothRIWARP(), craft.Traffic{Findings: []string{tc.code}}))
		i := slices.IndexFunc(c.conns[0].Findings, func(f finding.Finding) bool { return f.Code.String() == tc.code })
		if i < 0 || !strings.Contains(c.conns[0].Findings[i].Message, tc.want) {
			t.Errorf("%s: %v", tc.code, c.conns[0].Findings)
		}
	}
	for _, tc := range []struct {
		name string
		x    func(*craft.IWARPExchange)
		side int // the side left without a limit
	}{
		{"revision 1", func(x *craft.IWARPExchange) { x.Rev = 1 }, -1},
		{"Request IRD 0x3FFF", func(x *craft.IWARPExchange) { x.RequestIRD = 0x3fff }, 1},
		{"Request ORD 0x3FFF", func(x *craft.IWARPExchange) { x.RequestORD = 0x3fff }, 0},
	} {
		x := bothRIWARP()
		tc.x(&x)
		c := runDatapathFrames(t, datapath.ModeFindings, iwNFS(t, x, craft.Traffic{}))
		d := c.conns[0].Datapath
		want := [2]bool{tc.side == 1, tc.side == 0} // a limit where the words give one
		if d == nil || d.HasReadLimit != want || !onlyLongReply(c.conns[0]) || d.RPCMessages != [2]int{5, 5} {
			t.Errorf("%s: %+v, %v", tc.name, d, codes(c.conns[0].Findings))
		}
	}
}

// iSER's counterpart of the R bit: the initiator's iSER CM header says it
// does not support Send With Invalidate, and the target sends one (on
// RoCEv2, SEND Only with Invalidate; on iWARP, Send with Invalidate). Two
// such Sends give one finding that counts them; a Send With Invalidate
// from the initiator, or a plain Send, none. No RPC-over-RDMA finding is
// raised on the iSER connection.
func TestDatapathISERSendWithInvalidate(t *testing.T) {
	a, b := craft.Endpoints(0, false)
	for _, iwarp := range []bool{false, true} {
		u, err := craft.ULPSetup("iser", a, b, iwarp, false)
		if err != nil {
			t.Fatal(err)
		}
		ini, res := craft.Peer{Data: u.Request}, craft.Peer{Data: u.Reply}
		var frames []craft.Frame
		if iwarp {
			send := func(fromRes bool, op uint8, stag uint32) craft.IWARPMessage {
				return craft.IWARPMessage{FromResponder: fromRes, Opcode: op, InvalidateSTag: stag, Payload: make([]byte, 48)}
			}
			x := craft.IWARPExchange{Rev: 2, Initiator: ini, Responder: res, Port: u.Port,
				StreamingRequest: u.LoginRequest, StreamingReply: u.LoginResponse,
				Traffic: []craft.IWARPMessage{send(false, layers.RDMAPOpSend, 0), send(true, layers.RDMAPOpSendInvalidate, 0x1234),
					send(false, layers.RDMAPOpSendInvalidate, 0x99), send(true, layers.RDMAPOpSendSEInvalidate, 0x5678), send(true, layers.RDMAPOpSend, 0)}}
			if frames, err = x.Frames(); err != nil {
				t.Fatal(err)
			}
		} else {
			x := craft.Exchange{Transport: craft.RoCEv2, ServiceID: u.ServiceID, Initiator: ini, Responder: res}
			c, err := x.Connect()
			if err != nil {
				t.Fatal(err)
			}
			c.Send(craft.Initiator, make([]byte, 48), craft.SendOpts{})
			c.Send(craft.Responder, make([]byte, 48), craft.SendOpts{WithInv: true, Invalidate: 0x1234})
			c.Send(craft.Initiator, make([]byte, 48), craft.SendOpts{WithInv: true, Invalidate: 0x99})
			c.Send(craft.Responder, make([]byte, 48), craft.SendOpts{WithInv: true, Invalidate: 0x5678})
			c.Send(craft.Responder, make([]byte, 48), craft.SendOpts{})
			if frames, err = c.Frames(); err != nil {
				t.Fatal(err)
			}
		}
		c := runDatapathFrames(t, datapath.ModeAll, frames)
		if len(c.conns) != 1 || c.conns[0].ULP != record.ULPISER {
			t.Fatalf("iwarp %v: connections %+v", iwarp, c.conns)
		}
		fs := c.conns[0].Findings
		if len(c.rpcs) != 0 || len(fs) != 1 || fs[0].Code != finding.ISERSendWithInvalidateUnsupported ||
			!strings.Contains(fs[0].Message, "STag 0x00001234") || !strings.HasSuffix(fs[0].Message, "; 2 such Sends With Invalidate in all") {
			t.Errorf("iwarp %v: %d rpc records, findings %v", iwarp, len(c.rpcs), fs)
		}
		if d := c.conns[0].Datapath; d == nil || d.SendWithInvalidate != 3 || d.RPCMessages != [2]int{} {
			t.Errorf("iwarp %v: datapath %+v", iwarp, d)
		}
	}
}

// iWARP traffic whose MPA Request is not in the capture: the responder's
// Sends after the Reply are decoded (rpc records without a connection or
// direction) and counted, never judged; nothing of the initiator's is
// followed (where its FPDUs start is not known).
func TestDatapathIWARPWithoutSetup(t *testing.T) {
	frames := iwNFS(t, bothRIWARP(), craft.Traffic{Findings: []string{"inline-threshold-exceeded"}})
	frames = slices.Delete(frames, 3, 4) // the MPA Request
	c := runDatapathFrames(t, datapath.ModeAll, frames)
	if len(c.conns) != 0 {
		t.Fatalf("connections %+v", c.conns)
	}
	var xids []uint32
	for _, r := range c.rpcs {
		if r.Connection != 0 || r.Direction != record.NoDirection || len(r.Findings) != 0 || r.Src.String() != "192.0.2.2:20049" {
			t.Errorf("frame %d: connection %d, direction %q, findings %v, from %s", r.Frame, r.Connection, r.Direction, codes(r.Findings), r.Src)
		}
		xids = append(xids, r.Header.XID)
	}
	if want := []uint32{0x5f000000, 0x5f000001, 0x5f000002, 0x5f000003, 0x5f000004, 0x5f000005}; !reflect.DeepEqual(xids, want) {
		t.Errorf("xids %x, want %x", xids, want)
	}
	if c.sum.DatapathOrphanFrames == 0 || c.sum.RPCMessages != 6 {
		t.Errorf("summary: %d orphan frames, %d rpc messages", c.sum.DatapathOrphanFrames, c.sum.RPCMessages)
	}
}

// A segment captured ahead of the MPA Reply: the initiator's first Call
// arrives before the Reply that sets the connection up. The Call is read
// as traffic of no connection; the rest is the connection's, judged as
// usual, and the Reply to that first Call raises nothing although its
// Call was not the connection's.
func TestDatapathIWARPAheadOfReply(t *testing.T) {
	frames := iwNFS(t, bothRIWARP(), craft.Traffic{})
	frames[4], frames[5] = frames[5], frames[4] // the first Call, then the Reply
	frames[4].Time, frames[5].Time = frames[5].Time, frames[4].Time
	c := runDatapathFrames(t, datapath.ModeAll, frames)
	if len(c.conns) != 1 || c.conns[0].State != record.Established || c.conns[0].Datapath == nil {
		t.Fatalf("connections %+v", c.conns)
	}
	var without, with int
	for _, r := range c.rpcs {
		if len(r.Findings) > 0 {
			t.Errorf("frame %d: %v", r.Frame, codes(r.Findings))
		}
		if r.Connection == 0 {
			without++
		} else {
			with++
		}
	}
	d := c.conns[0].Datapath
	if without != 1 || with != 9 || d.RPCMessages != [2]int{4, 5} || d.SendWithInvalidate != 3 || !onlyLongReply(c.conns[0]) {
		t.Errorf("%d records without the connection, %d with; %+v; findings %v", without, with, d, codes(c.conns[0].Findings))
	}
}
