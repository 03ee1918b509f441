package mpa

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// trafficLog is a Traffic that writes down what it is told.
type trafficLog struct {
	rr        layers.RDMAPReadRequest // the last Read Request
	got       []string
	frames    int
	links     int
	pair      *Pair
	logTagged bool // log the pieces of tagged segments
	tcp       [2]TCPHealth
}

func (l *trafficLog) Frame(int) { l.frames++ }
func (l *trafficLog) Send(s *Send) {
	l.got = append(l.got, fmt.Sprintf("send side %d %s inval %v %#x len %d known %v complete %v frame %d frames %v head %q whole %v cut %q",
		s.Side, s.Opcode, s.Invalidate, s.InvalidateSTag, s.Length, s.LengthKnown, s.Complete, s.Frame, s.Frames, s.Head, s.HeadWhole, s.HeadCut))
}
func (l *trafficLog) ReadRequest(side, frame int, at time.Time, rr *layers.RDMAPReadRequest) {
	l.rr = *rr
	l.got = append(l.got, fmt.Sprintf("read request side %d frame %d", side, frame))
}
func (l *trafficLog) Tagged(t *Tagged) {
	if l.logTagged {
		l.got = append(l.got, fmt.Sprintf("tagged side %d frame %d op %d stag %#x to %#x n %d data %d start %v seg %d first %v last %v end %v",
			t.Side, t.Frame, t.Opcode, t.STag, t.TO, t.N, len(t.Data), t.Start, t.SegmentLen, t.First, t.Last, t.End))
	}
}
func (l *trafficLog) ReadDone(side int) {
	l.got = append(l.got, fmt.Sprintf("read done side %d", side))
}
func (l *trafficLog) Lost(side int) { l.got = append(l.got, fmt.Sprintf("lost side %d", side)) }
func (l *trafficLog) Finding(f finding.Finding) {
	l.got = append(l.got, f.Code.String()+": "+f.Message)
}
func (l *trafficLog) Close(tcp *[2]TCPHealth) {
	l.got = append(l.got, "close")
	if tcp != nil {
		l.tcp = *tcp
	}
}

// conn drives both directions of one connection through the assembler.
type conn struct {
	r   *segRun
	log trafficLog
	seq [2]uint32
}

func newConn() *conn {
	c := &conn{seq: [2]uint32{1000, 900000}}
	c.r = newSegRun(reassembly.Options{})
	c.r.f.Follow(func(p *Pair) Traffic { c.log.links++; c.log.pair = p; return &c.log })
	return c
}

func dirFlow(side int) reassembly.Flow {
	f := flow(0)
	if side == 1 {
		f.Src, f.Dst, f.SrcPort, f.DstPort = f.Dst, f.Src, f.DstPort, f.SrcPort
	}
	return f
}

// send sends octets from side in segments of at most seg octets (all when 0).
func (c *conn) send(side int, p []byte, seg int) {
	for len(p) > 0 {
		n := len(p)
		if seg > 0 {
			n = min(n, seg)
		}
		c.at(side, c.seq[side], p[:n])
		c.seq[side] += uint32(n)
		p = p[n:]
	}
}

// at sends one segment of side at seq.
func (c *conn) at(side int, seq uint32, p []byte) {
	s := reassembly.Segment{Flow: dirFlow(side), Seq: seq, Payload: p, WireLen: len(p), Frame: c.r.frame, Time: time.Unix(1e9, 0)}
	c.r.frame++
	c.r.a.Segment(&s)
}

func (c *conn) syn() {
	for side := range 2 {
		s := reassembly.Segment{Flow: dirFlow(side), Seq: c.seq[side] - 1, SYN: true, Frame: c.r.frame, Time: time.Unix(1e9, 0)}
		c.r.frame++
		c.r.a.Segment(&s)
	}
}

func sendUnit(op uint8, msn, mo uint32, last bool, inval uint32, p string) unit {
	return unit{DDP: layers.DDP{Last: last, Version: 1, RDMAPVersion: 1, Opcode: op, MSN: msn, MO: mo, InvalidateSTag: inval}, Payload: []byte(p)}
}

func TestTrafficFollowed(t *testing.T) {
	readReq := unit{DDP: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpReadRequest, QN: 1, MSN: 1},
		Payload: make([]byte, 28)}
	binary.BigEndian.PutUint32(readReq.Payload[12:], 64)
	resp := unit{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpReadResponse, STag: 7}, Payload: make([]byte, 64)}
	write := unit{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite, STag: 9}, Payload: make([]byte, 3000)}
	for _, tc := range []struct {
		name         string
		reqM, repM   bool
		reqC, repC   bool
		seg          int
		want0, want1 []string
	}{
		{name: "CRC, one segment each", reqC: true, repC: true},
		{name: "no CRC, split every 7 octets", seg: 7},
		{name: "markers both ways, CRC by the Reply", reqM: true, repM: true, repC: true, seg: 100},
		{name: "markers to the responder only", repM: true, seg: 1460},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConn()
			c.syn()
			req := (&craft.MPA{Request: true, Rev: 1, Marker: tc.reqM, CRC: tc.reqC}).Bytes()
			rep := (&craft.MPA{Rev: 1, Marker: tc.repM, CRC: tc.repC}).Bytes()
			crc := tc.reqC || tc.repC
			c.send(0, req, 0)
			c.send(1, rep, 0)
			// The initiator: a Call in two segments, a Read Request; the
			// responder: the Read Response, a Write, a Reply with Invalidate.
			ini := stream([]unit{sendUnit(layers.RDMAPOpSend, 1, 0, false, 0, "call "), sendUnit(layers.RDMAPOpSend, 1, 5, true, 0, "one"), readReq}, tc.repM, crc)
			res := stream([]unit{resp, write, sendUnit(layers.RDMAPOpSendInvalidate, 1, 0, true, 0x1234, "reply")}, tc.reqM, crc)
			c.send(0, ini, tc.seg)
			c.send(1, res, tc.seg)
			c.r.flush()
			var sends []string
			for _, g := range c.log.got {
				if strings.HasPrefix(g, "send") || strings.HasPrefix(g, "read") || g == "close" {
					sends = append(sends, g)
				} else {
					t.Errorf("unexpected: %s", g)
				}
			}
			if c.log.links != 1 || c.log.pair.Request == nil || c.log.pair.Reply == nil {
				t.Errorf("linked %d times, pair %+v", c.log.links, c.log.pair)
			}
			if len(sends) != 5 {
				t.Fatalf("got %q", sends)
			}
			if !strings.HasPrefix(sends[0], `send side 0 SEND inval false 0x0 len 8 known true complete true`) || !strings.HasSuffix(sends[0], `head "call one" whole true cut ""`) {
				t.Errorf("call: %s", sends[0])
			}
			if !strings.HasPrefix(sends[1], "read request side 0") || sends[2] != "read done side 0" {
				t.Errorf("read: %q", sends[1:3])
			}
			if !strings.HasPrefix(sends[3], `send side 1 SEND_WITH_INVALIDATE inval true 0x1234 len 5 known true complete true`) || !strings.HasSuffix(sends[3], `head "reply" whole true cut ""`) {
				t.Errorf("reply: %s", sends[3])
			}
			if sends[4] != "close" {
				t.Errorf("end: %s", sends[4])
			}
			if c.log.frames == 0 {
				t.Error("no frame counted")
			}
		})
	}
}

// TestTrafficFrames: the frames of a Send are those that carried its
// FPDUs, and the one that completed it.
func TestTrafficFrames(t *testing.T) {
	c := newConn()
	c.syn()                                                   // frames 1, 2
	c.send(0, (&craft.MPA{Request: true, Rev: 1}).Bytes(), 0) // 3
	c.send(1, (&craft.MPA{Rev: 1}).Bytes(), 0)                // 4
	s := stream([]unit{sendUnit(layers.RDMAPOpSend, 1, 0, false, 0, strings.Repeat("a", 100)),
		{DDP: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite}, Payload: make([]byte, 200)},
		sendUnit(layers.RDMAPOpSend, 1, 100, true, 0, "b")}, false, false)
	first := layers.FPDULen(layers.DDPUntaggedLen + 100)
	second := layers.FPDULen(layers.DDPTaggedLen + 200)
	// Frame 5: the first FPDU; 6: the Write; 7: the last FPDU.
	c.send(0, s[:first], 0)
	c.send(0, s[first:first+second], 0)
	c.send(0, s[first+second:], 0)
	c.r.flush()
	if len(c.log.got) == 0 || !strings.Contains(c.log.got[0], "len 101 known true complete true frame 7 frames [5 7]") {
		t.Errorf("got %q", c.log.got)
	}
}

// TestTrafficTagged: the pieces of a tagged segment name the frames that
// carried them, the side that sent them and the Read Request's fields.
func TestTrafficTagged(t *testing.T) {
	c := newConn()
	c.log.logTagged = true
	c.syn()                                                   // frames 1, 2
	c.send(0, (&craft.MPA{Request: true, Rev: 1}).Bytes(), 0) // 3
	c.send(1, (&craft.MPA{Rev: 1}).Bytes(), 0)                // 4
	rr := unit{DDP: layers.DDP{Last: true, Opcode: layers.RDMAPOpReadRequest, QN: 1, MSN: 1}, Payload: make([]byte, 28)}
	binary.BigEndian.PutUint32(rr.Payload[0:], 0xa1)    // sink STag
	binary.BigEndian.PutUint64(rr.Payload[4:], 0x1000)  // sink TO
	binary.BigEndian.PutUint32(rr.Payload[12:], 300)    // size
	binary.BigEndian.PutUint32(rr.Payload[16:], 0x22)   // source STag
	binary.BigEndian.PutUint64(rr.Payload[20:], 0x7f00) // source TO
	c.send(1, stream([]unit{rr}, false, false), 0)      // 5
	s := stream([]unit{{DDP: layers.DDP{Tagged: true, Last: true, Opcode: layers.RDMAPOpReadResponse, STag: 0xa1, TaggedOffset: 0x1000},
		Payload: make([]byte, 300)}}, false, false)
	c.send(0, s[:100], 0) // 6: the headers and 84 octets
	c.send(0, s[100:], 0) // 7: the rest
	c.r.flush()
	want := []string{
		"read request side 1 frame 5",
		"tagged side 0 frame 6 op 2 stag 0xa1 to 0x1000 n 84 data 84 start true seg 300 first true last true end false",
		"tagged side 0 frame 7 op 2 stag 0xa1 to 0x1054 n 216 data 216 start false seg 300 first true last true end true",
		"read done side 1",
		"close",
	}
	if !reflect.DeepEqual(c.log.got, want) {
		t.Errorf("got\n%q\nwant\n%q", c.log.got, want)
	}
	if r := c.log.rr; r.SinkSTag != 0xa1 || r.SinkTO != 0x1000 || r.Size != 300 || r.SourceSTag != 0x22 || r.SourceTO != 0x7f00 {
		t.Errorf("read request %+v", r)
	}
}

func TestTrafficProblems(t *testing.T) {
	good := sendUnit(layers.RDMAPOpSend, 1, 0, true, 0, "abcd")
	bad := good
	bad.BadCRC = true
	term := unit{DDP: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpTerminate, QN: 2, MSN: 1}, Payload: []byte{0x12, 0x05, 0x40, 0x00}}
	for _, tc := range []struct {
		name       string
		reqC, repC bool
		ini        []byte
		want       []string
	}{
		{name: "clean", reqC: true, ini: stream([]unit{good, good}, false, true)},
		{name: "bad CRC", reqC: true, ini: stream([]unit{good, bad, bad}, false, true),
			want: []string{"mpa-crc-mismatch: frame 6: 2 FPDUs, the first, from the initiator with a CRC that does not match"}},
		{name: "zero CRC in use", repC: true, ini: stream([]unit{good}, false, false),
			want: []string{"mpa-crc-missing: frame 5: an FPDU from the initiator with a zero CRC field, although CRC is in use"}},
		{name: "CRC not in use", ini: stream([]unit{good}, false, true),
			want: []string{"mpa-crc-missing: frame 5: an FPDU from the initiator with a CRC field (0x"}},
		{name: "terminate", ini: stream([]unit{good, term}, false, false),
			want: []string{"rdmap-terminate: frame 6: the initiator terminated the connection: DDP, untagged buffer error: DDP message too long for the available buffer (layer 1, type 2, code 0x05)"}},
		{name: "framing lost", ini: append(stream([]unit{good}, false, false), 0, 3, 0, 0, 0, 0, 0, 0),
			want: []string{"lost side 0", "fpdu-framing-lost: frame 6: the FPDUs from the initiator cannot be followed further: the FPDU at stream offset 48 has ULPDU_Length 3, shorter than any DDP header"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConn()
			c.syn()
			c.send(0, (&craft.MPA{Request: true, Rev: 1, CRC: tc.reqC}).Bytes(), 0)
			c.send(1, (&craft.MPA{Rev: 1, CRC: tc.repC}).Bytes(), 0)
			c.send(0, tc.ini, len(stream([]unit{good}, false, false)))
			c.r.flush()
			var got []string
			for _, g := range c.log.got {
				if !strings.HasPrefix(g, "send") && g != "close" {
					got = append(got, g)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("got %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}

// TestTrafficGuessed: without the peer's MPA frame, markers and CRC are
// worked out from the stream.
func TestTrafficGuessed(t *testing.T) {
	good := sendUnit(layers.RDMAPOpSend, 1, 0, true, 0, strings.Repeat("z", 700))
	for _, markers := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			c := newConn()
			c.syn()
			c.send(0, (&craft.MPA{Request: true, Rev: 1}).Bytes(), 0)
			c.send(0, stream([]unit{good, good}, markers, crc), 300)
			c.r.flush()
			var sends int
			for _, g := range c.log.got {
				switch {
				case strings.HasPrefix(g, "send side 0 SEND inval false 0x0 len 700 known true complete true"):
					sends++
				case g == "close":
				default:
					t.Errorf("markers %v crc %v: %s", markers, crc, g)
				}
			}
			if sends != 2 || c.log.pair.Reply != nil {
				t.Errorf("markers %v crc %v: %q", markers, crc, c.log.got)
			}
		}
	}
}

// TestTrafficRetransmitted: retransmitted and reordered segments are read
// once, in order.
func TestTrafficRetransmitted(t *testing.T) {
	c := newConn()
	c.syn()
	c.send(0, (&craft.MPA{Request: true, Rev: 1, CRC: true}).Bytes(), 0)
	c.send(1, (&craft.MPA{Rev: 1, CRC: true}).Bytes(), 0)
	s := stream([]unit{sendUnit(layers.RDMAPOpSend, 1, 0, true, 0, "first"), sendUnit(layers.RDMAPOpSend, 2, 0, true, 0, "second")}, false, true)
	base := c.seq[0]
	half := len(s) / 2
	c.at(0, base+uint32(half), s[half:]) // the second half first
	c.at(0, base, s[:half])
	c.at(0, base, s) // all again
	c.r.flush()
	want := []string{"first", "second"}
	var got []string
	for _, g := range c.log.got {
		if i := strings.Index(g, `head "`); i >= 0 {
			got = append(got, strings.SplitN(g[i+6:], `"`, 2)[0])
		} else if g != "close" {
			t.Errorf("unexpected: %s", g)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

// TestTrafficSoftUiWarp: the real SoftUiWarp capture (MPA revision 1, no
// markers, no CRC; its CRC fields are zero) has four Sends from the
// initiator (MSN 1 to 4) and a Read Request from the responder; nothing
// in it is wrong.
func TestTrafficSoftUiWarp(t *testing.T) {
	file := filepath.Join("..", "..", "..", "shared", "captures", "real", "softuiwarp-uiwarp.pcap")
	if !fileExists(file) {
		t.Skip("the real captures are not here")
	}
	var log trafficLog
	_, tr := oursFPDUsWith(t, file, &log)
	if len(tr.findings) != 0 {
		t.Errorf("findings: %v", tr.findings)
	}
	var sends, reads []string
	for _, g := range log.got {
		switch {
		case strings.HasPrefix(g, "send"):
			sends = append(sends, g)
		case strings.HasPrefix(g, "read"):
			reads = append(reads, g)
		case g == "close":
		default:
			t.Errorf("unexpected: %s", g)
		}
	}
	want := []int{8, 9, 12, 13}
	if len(sends) != len(want) {
		t.Fatalf("sends: %q", sends)
	}
	for i, s := range sends {
		if !strings.HasPrefix(s, fmt.Sprintf("send side 0 SEND inval false 0x0 len 16 known true complete true frame %d frames [%d]", want[i], want[i])) {
			t.Errorf("send %d: %s", i, s)
		}
	}
	if !reflect.DeepEqual(reads, []string{"read request side 1 frame 10"}) {
		t.Errorf("reads: %q", reads)
	}
	if log.rr.Size != 64 || log.rr.SinkSTag != 0x40cc4300 || log.rr.SourceSTag != 0xffffe080 {
		t.Errorf("read request: %+v", log.rr)
	}
}
