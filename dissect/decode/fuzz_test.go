package decode

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/craft"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Fuzz targets of the dissector: a frame of any supported link type, a whole
// capture file, the MPA reassembler, and craft's encoder against the decoder.
// Seeds are under testdata/fuzz; .ci/fuzz runs them for a given time.

// fuzzLinks are the link types FuzzDecodeFrame tries, by the index its
// first argument selects: the corpus under testdata/fuzz relies on the order.
var fuzzLinks = []uint16{linkEthernet, linkIB, linkERF, linkSLL, linkSLL2, linkRaw, linkNull, linkIPv4, linkIPv6, linkLoop}

func seedFrames(f *testing.F) {
	for _, tr := range []craft.Transport{craft.RoCEv2, craft.RoCEv1, craft.InfiniBand} {
		x := craft.Exchange{Transport: tr, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}}
		frames, err := x.Frames()
		if err != nil {
			f.Fatal(err)
		}
		for _, fr := range frames {
			f.Add(uint8(0), fr.Data)
			if fr.LinkType == craft.LinkIB {
				f.Add(uint8(1), fr.Data)
			}
		}
	}
	xi := craft.IWARPExchange{Rev: 2, SplitAt: []int{7}}
	frames, _ := xi.Frames()
	for _, fr := range frames {
		f.Add(uint8(0), fr.Data)
	}
}

// FuzzDecodeFrame feeds arbitrary octets as a frame of each link type. No
// panic; and what comes out is consistent: an RFC 8797 message lies inside
// the private data, every finding is catalogued.
func FuzzDecodeFrame(f *testing.F) {
	seedFrames(f)
	f.Fuzz(func(t *testing.T, link uint8, data []byte) {
		d := NewDecoder("fuzz", Config{})
		lt := fuzzLinks[int(link)%len(fuzzLinks)]
		check := func(m *record.Message) {
			if rp := m.RPCRDMA; rp != nil {
				if rp.Offset < 0 || rp.Offset+layers.RPCRDMALen > len(m.PrivateData) || rp.Version != 1 ||
					!layers.IsRPCRDMAAt(m.PrivateData, rp.Offset) {
					t.Fatalf("RFC 8797 message at %d outside or not in %d octets of private data", rp.Offset, len(m.PrivateData))
				}
			}
			for _, fd := range m.Findings {
				if fd.Code.Check().Name == "" {
					t.Fatalf("uncatalogued finding %q", fd.Code.String())
				}
			}
		}
		fr := &Frame{Data: data, WireLen: len(data) + int(link)%3*100, LinkType: lt, Index: 1}
		d.Decode(fr, check)
		// Again, as the first half of a TCP stream, and flush.
		fr.Index = 2
		d.Decode(fr, check)
		d.Flush(check)
	})
}

// completed frame is the original one when the input was a valid Request.
func FuzzReassembly(f *testing.F) {
	req := rpcRequest(2)
	f.Add(true, []byte{0, 0, 0, 1, 0, 7, 0, 0, 7, 25, 0, 0})
	f.Add(true, []byte{20, 12, 0, 0, 0, 20, 0, 0})
	f.Add(false, bytes.Repeat([]byte{3, 9, 1, 0}, 10))
	f.Add(true, []byte{0, 0, 1, 0, 0, 7, 0, 0, 7, 25, 0, 0, 0xff, 0xfb})                     // the ISN 4 octets before the wrap
	f.Add(true, []byte{0, 0, 1, 0, 0, 20, 0, 0, 0, 3, 9, 0, 0, 28, 0, 0, 0, 28, 2, 0, 0xf0}) // a new ISN mid-frame
	f.Add(true, []byte{20, 12, 2, 0, 0, 20, 0, 0, 0, 0, 4, 200, 0, 9, 0, 250})               // FIN first; an RST; time jumps
	f.Fuzz(func(t *testing.T, useReq bool, script []byte) {
		stream := req
		if !useReq {
			stream = script
		}
		lim := TCPLimits{StreamBytes: 64, TotalBytes: 200, Flows: 2, MaxEarlySegs: 3}
		d := NewDecoder("fuzz", Config{TCP: lim})
		var got []*record.Message
		emit := func(m *record.Message) { got = append(got, m) }
		// The octets after the last whole step choose the initial sequence
		// number (near the wrap when present); a SYN with flag 8 starts a new
		// connection, its ISN moved by the step's length octet.
		isn := uint32(999)
		if tail := script[len(script)&^3:]; len(tail) > 0 {
			isn = ^uint32(0)
			for _, b := range tail {
				isn = isn<<8 | uint32(b)
			}
		}
		var s tcpSeg
		for i := 0; i+4 <= len(script) && i < 400; i += 4 {
			off, n, fl := int(script[i]), int(script[i+1]), script[i+2]
			if fl&9 == 9 {
				isn += uint32(n)<<16 | 1
			}
			s = tcpSeg{seq: isn + 1 + uint32(off), frame: i/4 + 1, syn: fl&1 != 0, fin: fl&2 != 0, rst: fl&4 != 0,
				time: craft.DefaultStart.Add(time.Duration(i) * time.Duration(script[i+3]) * time.Millisecond)}
			s.key.sport, s.key.dport = 40000+uint16(script[i+3]%3), 20049
			binary.BigEndian.PutUint32(s.key.src[12:], 0xc0000201)
			if s.syn {
				s.seq = isn
			} else if off < len(stream) {
				end := min(off+n, len(stream))
				s.payload = stream[off:end]
				s.wirePayload = len(s.payload) + int(fl>>4)
			}
			d.segment(&s, emit)
			if d.tcp.total < 0 || d.tcp.total > lim.TotalBytes || len(d.tcp.active) > lim.Flows {
				t.Fatalf("state: %d octets buffered, %d flows", d.tcp.total, len(d.tcp.active))
			}
		}
		d.Flush(emit)
		if d.tcp.total != 0 || len(d.tcp.active) != 0 {
			t.Fatalf("after the flush: %d octets, %d flows", d.tcp.total, len(d.tcp.active))
		}
		for _, m := range got {
			if useReq && m.Findings == nil && !bytes.Equal(m.PrivateData, req[20:]) {
				t.Fatalf("a complete, clean Request with private data %x, want %x", m.PrivateData, req[20:])
			}
		}
	})
}

// FuzzCraftRoundTrip: whatever properties craft encodes, the dissector
// decodes the same (decode(encode(x)) == x), with valid CRCs and no finding
// about the encoding.
func FuzzCraftRoundTrip(f *testing.F) {
	f.Add(uint8(0), uint8(3), uint8(3), true, uint8(7), uint8(7), false, false)
	f.Add(uint8(2), uint8(0), uint8(255), false, uint8(1), uint8(0), true, true)
	f.Add(uint8(3), uint8(15), uint8(15), true, uint8(15), uint8(15), true, false)
	f.Fuzz(func(t *testing.T, tr, s1, r1 uint8, inv1 bool, s2, r2 uint8, inv2, reject bool) {
		peer := func(s, r uint8, inv bool) craft.Peer {
			return craft.Peer{SendSize: (int(s) + 1) * 1024, ReceiveSize: (int(r) + 1) * 1024, RemoteInvalidate: inv}
		}
		ini, res := peer(s1, r1, inv1), peer(s2, r2, inv2)
		var frames []craft.Frame
		var err error
		switch tr % 5 {
		case 0, 1, 2:
			x := craft.Exchange{Transport: []craft.Transport{craft.RoCEv2, craft.RoCEv1, craft.InfiniBand}[tr%5], IPv6: tr&0x10 != 0,
				Initiator: ini, Responder: res, Reject: reject}
			frames, err = x.Frames()
		default:
			x := craft.IWARPExchange{Rev: 1 + tr%5 - 3, IPv6: tr&0x10 != 0, Initiator: ini, Responder: res, Reject: reject}
			frames, err = x.Frames()
		}
		if err != nil {
			t.Fatal(err)
		}
		d := NewDecoder("fuzz", Config{})
		var msgs []*record.Message
		for i, fr := range frames {
			d.Decode(&Frame{Data: fr.Data, WireLen: len(fr.Data), LinkType: fr.LinkType, Index: i + 1}, func(m *record.Message) { msgs = append(msgs, m) })
		}
		d.Flush(func(m *record.Message) { msgs = append(msgs, m) })
		if len(msgs) < 2 {
			t.Fatalf("%d messages", len(msgs))
		}
		for i, want := range []craft.Peer{ini, res} {
			m := msgs[i]
			rp := m.RPCRDMA
			if rp == nil || rp.SendSize != want.SendSize || rp.ReceiveSize != want.ReceiveSize || rp.RemoteInvalidate != want.RemoteInvalidate {
				t.Fatalf("%s: decoded %+v, encoded %+v", m.Name(), rp, want)
			}
			if m.IB != nil && (m.IB.ICRC == nil || !m.IB.ICRC.Valid || (m.IB.LRH != nil && (m.IB.VCRC == nil || !m.IB.VCRC.Valid))) {
				t.Fatalf("%s: CRCs %+v", m.Name(), m.IB)
			}
			for _, fd := range m.Findings {
				if fd.Code.String() != "mpa-reject" {
					t.Fatalf("%s: finding %v", m.Name(), fd)
				}
			}
		}
	})
}

// TestFuzzCorpusCoversLinks checks that the seed corpus of FuzzDecodeFrame
// holds a CM frame of every link type it tries (Ethernet and InfiniBand
// come from seedFrames), each decoding to a message,
// and that FuzzDissectFile's holds a gzip file and an ERF capture.
func TestFuzzCorpusCoversLinks(t *testing.T) {
	dir := "testdata/fuzz/FuzzDecodeFrame"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint16]bool{}
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[1], "byte(") || !strings.HasPrefix(lines[2], "[]byte(") {
			t.Fatalf("%s: not a FuzzDecodeFrame entry", e.Name())
		}
		r, _, _, err := strconv.UnquoteChar(strings.TrimSuffix(strings.TrimPrefix(lines[1], "byte('"), "')"), '\'')
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[2], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		lt := fuzzLinks[int(r)%len(fuzzLinks)]
		n := 0
		NewDecoder("seed", Config{}).Decode(&Frame{Data: []byte(data), WireLen: len(data), LinkType: lt, Index: 1},
			func(m *record.Message) {
				if m.MAD != nil {
					n++
				}
			})
		if n == 1 {
			seen[lt] = true
		}
	}
	for _, lt := range fuzzLinks {
		// seedFrames adds Ethernet and InfiniBand frames from craft.
		if !seen[lt] && lt != linkEthernet && lt != linkIB {
			t.Errorf("no seed of link type %d decodes to a CM message", lt)
		}
	}

}
