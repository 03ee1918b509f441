package mpa

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// fpduLog records what a follower reads.
type fpduLog struct{ got []string }

func (l *fpduLog) segment(d *layers.DDP, payload int) {
	l.got = append(l.got, fmt.Sprintf("segment op %d tagged %v last %v payload %d", d.Opcode, d.Tagged, d.Last, payload))
}
func (l *fpduLog) message(m *untagged) {
	l.got = append(l.got, fmt.Sprintf("message qn %d msn %d op %d inval %#x length %d gap %v first %q", m.qn, m.msn, m.opcode,
		m.invalidate, m.length, m.gap, m.first))
}
func (l *fpduLog) readRequest(rr *layers.RDMAPReadRequest) {
	l.got = append(l.got, fmt.Sprintf("read request size %d sink %#x source %#x", rr.Size, rr.SinkSTag, rr.SourceSTag))
}
func (l *fpduLog) readResponseDone() { l.got = append(l.got, "read response done") }
func (l *fpduLog) terminate(t *layers.RDMAPTerminate) {
	l.got = append(l.got, "terminate "+t.TermDescription())
}
func (l *fpduLog) crcProblem(off int, mismatch bool, field, computed uint32) {
	l.got = append(l.got, fmt.Sprintf("crc at %d mismatch %v", off, mismatch))
}
func (l *fpduLog) lost(why string) { l.got = append(l.got, "lost: "+why) }

// unit is one FPDU to build: a DDP header and payload.
type unit struct {
	ddp     layers.DDP
	payload []byte
	badCRC  bool
}

func send(msn, mo uint32, last bool, p string) unit {
	return unit{ddp: layers.DDP{Last: last, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpSend, MSN: msn, MO: mo}, payload: []byte(p)}
}

// stream builds the FPDUs of units, with markers every 512 octets from
// its start when markers is set, and CRCs when crc is set.
func stream(units []unit, markers, crc bool) []byte {
	var plain []byte
	var starts, crcAt []int
	for _, u := range units {
		buf := gopacket.NewSerializeBuffer()
		_ = gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, &layers.FPDU{}, &u.ddp, gopacket.Payload(u.payload))
		starts = append(starts, len(plain))
		plain = append(plain, buf.Bytes()...)
		crcAt = append(crcAt, len(plain)-4)
	}
	// Insert the markers, keeping where each FPDU and CRC field went.
	var out []byte
	next, fi := 0, 0
	mstart := make([]int, len(starts))
	mcrc := make([]int, len(crcAt))
	for i := 0; i <= len(plain); i++ {
		if markers && len(out)%layers.MarkerInterval == 0 && i < len(plain) {
			// FPDUPTR: back to the start of the FPDU this marker is in, 0
			// when an FPDU starts right after it.
			ptr := 0
			if !(fi < len(starts) && starts[fi] == i) {
				ptr = len(out) - mstart[fi-1]
			}
			out = append(out, 0, 0, byte(ptr>>8), byte(ptr))
		}
		if fi < len(starts) && starts[fi] == i {
			mstart[fi] = len(out)
			fi++
		}
		for next < len(crcAt) && crcAt[next] == i {
			mcrc[next] = len(out)
			next++
		}
		if i < len(plain) {
			out = append(out, plain[i])
		}
	}
	if crc {
		for k := range units {
			c := layers.FPDUCRC(out[mstart[k]:mcrc[k]])
			if units[k].badCRC {
				c ^= 1
			}
			binary.LittleEndian.PutUint32(out[mcrc[k]:], c)
		}
	}
	return out
}

// follow feeds s to a follower in pieces of the given sizes (cycled).
func follow(s []byte, markers, crc bool, sizes ...int) []string {
	var l fpduLog
	var f follower
	f.init(&l, 1000, markers, crc)
	off := 1000
	for i := 0; len(s) > 0; i++ {
		n := len(s)
		if len(sizes) > 0 {
			n = min(n, sizes[i%len(sizes)])
		}
		f.feed(off, s[:n])
		off += n
		s = s[n:]
	}
	return l.got
}

func TestFollower(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 64) // 1024 octets
	rr := unit{ddp: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpReadRequest, QN: 1, MSN: 1},
		payload: make([]byte, 28)}
	binary.BigEndian.PutUint32(rr.payload[12:], 4096)
	binary.BigEndian.PutUint32(rr.payload[0:], 0x11)
	binary.BigEndian.PutUint32(rr.payload[16:], 0x22)
	write := unit{ddp: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpWrite, STag: 9}, payload: []byte(big)}
	resp := unit{ddp: layers.DDP{Tagged: true, Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpReadResponse, STag: 0x11}, payload: []byte("data")}
	inv := unit{ddp: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpSendInvalidate, InvalidateSTag: 0xabc, MSN: 3}, payload: []byte("rpl")}
	term := unit{ddp: layers.DDP{Last: true, Version: 1, RDMAPVersion: 1, Opcode: layers.RDMAPOpTerminate, QN: 2, MSN: 1}, payload: []byte{0x12, 0x05, 0x40, 0x00}}
	units := []unit{send(1, 0, false, "hello "), send(1, 6, true, "world"), rr, write, resp, inv, term}
	want := []string{
		"segment op 3 tagged false last false payload 6",
		"segment op 3 tagged false last true payload 5",
		`message qn 0 msn 1 op 3 inval 0x0 length 11 gap false first "hello world"`,
		"segment op 1 tagged false last true payload 0",
		"read request size 4096 sink 0x11 source 0x22",
		"segment op 0 tagged true last true payload 1024",
		"segment op 2 tagged true last true payload 4",
		"read response done",
		"segment op 4 tagged false last true payload 3",
		`message qn 0 msn 3 op 4 inval 0xabc length 3 gap false first "rpl"`,
		"segment op 7 tagged false last true payload 0",
		"terminate DDP, untagged buffer error: DDP message too long for the available buffer (layer 1, type 2, code 0x05)",
	}
	for _, markers := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			s := stream(units, markers, crc)
			for _, sizes := range [][]int{nil, {1}, {7, 13}, {1460}, {3, 500, 2}} {
				name := fmt.Sprintf("markers %v crc %v pieces %v", markers, crc, sizes)
				if got := follow(s, markers, crc, sizes...); !reflect.DeepEqual(got, want) {
					t.Errorf("%s:\n got %q\nwant %q", name, got, want)
				}
			}
		}
	}
}

func TestFollowerProblems(t *testing.T) {
	good := []unit{send(1, 0, true, "abcd")}
	bad := []unit{{ddp: good[0].ddp, payload: good[0].payload, badCRC: true}}
	cases := []struct {
		name    string
		s       []byte
		markers bool
		crc     bool
		want    string
	}{
		{"CRC mismatch", stream(bad, false, true), false, true, "crc at 1000 mismatch true"},
		{"CRC zero when in use", stream(good, false, false), false, true, "crc at 1000 mismatch false"},
		{"CRC present when not in use", stream(good, false, true), false, false, "crc at 1000 mismatch false"},
		{"ULPDU_Length too short", []byte{0, 4, 0x41, 0x43, 0, 0, 0, 0, 0, 0}, false, false, "lost: the FPDU at stream offset 1000 has ULPDU_Length 4, shorter than any DDP header"},
		{"DDP version 2", func() []byte { s := stream(good, false, false); s[2] = 0x42; return s }(), false, false,
			"lost: the FPDU at stream offset 1000 has DDP version 2 and RDMAP version 1, not 1 and 1"},
		{"marker pointing elsewhere", func() []byte {
			s := stream([]unit{send(1, 0, true, strings.Repeat("x", 600))}, true, false)
			s[512+3] ^= 4
			return s
		}(), true, false, "lost: the marker at stream offset 1512 has FPDUPTR 504, but the FPDU it is in starts 508 octets before it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := follow(tc.s, tc.markers, tc.crc)
			found := false
			for _, g := range got {
				found = found || g == tc.want
			}
			if !found {
				t.Errorf("got %q, want %q among them", got, tc.want)
			}
		})
	}
	// After framing is lost nothing more is read, however much comes.
	var l fpduLog
	var f follower
	f.init(&l, 0, false, false)
	f.feed(0, []byte{0, 1, 2, 3, 4, 5})
	f.feed(6, make([]byte, 100000))
	if len(l.got) != 1 {
		t.Errorf("after the loss: %q", l.got)
	}
}
