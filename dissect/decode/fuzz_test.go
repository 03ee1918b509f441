package decode

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/crafttest"
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
	// The upper layers' private data, over RoCEv2 and iWARP.
	for _, u := range craft.ULPs[1:] {
		for _, tr := range []craft.Transport{craft.RoCEv2, craft.IWARP} {
			frames, err := craft.ULPExchange(u, tr, false, false, 2)
			if err != nil {
				continue // not over iWARP
			}
			for _, fr := range frames {
				f.Add(uint8(0), fr.Data)
			}
		}
	}
	// Every encapsulation, an IPv6 chain, an ERF IPv4 record.
	for _, b := range tunnelSeeds(f) {
		f.Add(uint8(0), b)
	}
}

// tunnelSeeds are CM frames in each encapsulation (and VXLAN in ERSPAN),
// behind an IPv6 extension header chain, and their IP fragments.
func tunnelSeeds(f *testing.F) [][]byte {
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
	frames, err := x.Frames()
	if err != nil {
		f.Fatal(err)
	}
	req := frames[0].Data
	var out [][]byte
	for _, k := range crafttest.EncapKinds {
		b, err := crafttest.Wrap(req, crafttest.Encap{Kind: k, VNI: 1, Key: 2, Seq: 3, Session: 4, VLAN: 5})
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	v := out[0]
	if b, err := crafttest.Wrap(v, crafttest.Encap{Kind: crafttest.EncapERSPAN3, Platform: true}); err == nil {
		out = append(out, b)
	}
	x6 := craft.Exchange{Transport: craft.RoCEv2, IPv6: true}
	f6, _ := x6.Frames()
	if b, err := crafttest.InsertIPv6Ext(f6[0].Data, crafttest.ExtHeader{Type: crafttest.ExtHopByHop, Len: 8},
		crafttest.ExtHeader{Type: crafttest.ExtAH, Len: 16}, crafttest.ExtHeader{Type: crafttest.ExtFragment, Len: 8}); err == nil {
		out = append(out, b)
	}
	for _, b := range [][]byte{req, f6[0].Data, v} {
		if fs, err := crafttest.Fragment(b, 96, 7); err == nil {
			out = append(out, fs...)
		}
	}
	return out
}

// FuzzDecodeFrames feeds a sequence of frames (each with a 2-octet length
// in front) to one decoder: IP reassembly and decapsulation across frames
// must never panic, and what comes out is consistent.
func FuzzDecodeFrames(f *testing.F) {
	for _, group := range [][][]byte{tunnelSeeds(f)[len(crafttest.EncapKinds)+2:]} {
		var in []byte
		for _, b := range group {
			in = append(in, byte(len(b)>>8), byte(len(b)))
			in = append(in, b...)
		}
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := NewDecoder("fuzz", Config{})
		check := func(m *record.Message) {
			for _, fd := range m.Findings {
				if fd.Code.Check().Name == "" {
					t.Fatalf("uncatalogued finding %q", fd.Code.String())
				}
			}
			if len(m.Frames) > 0 && m.Frames[len(m.Frames)-1] > m.Frame+0 && m.Transport != record.IWARP {
				t.Fatalf("message on frame %d lists later frames %v", m.Frame, m.Frames)
			}
		}
		for i := 1; len(in) >= 2; i++ {
			n := min(int(in[0])<<8|int(in[1]), len(in)-2)
			data := in[2 : 2+n]
			in = in[2+n:]
			d.Decode(&capture.Frame{Data: data, WireLen: len(data), LinkType: linkEthernet, Index: i}, check)
		}
		d.Flush(check)
	})
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
			if u := m.ULP; u != nil && (u.Offset < 0 || u.Offset > len(m.PrivateData) || u.Protocol == "") {
				t.Fatalf("upper layer %q at %d of %d octets of private data", u.Protocol, u.Offset, len(m.PrivateData))
			}
			for _, fd := range m.Findings {
				if fd.Code.Check().Name == "" {
					t.Fatalf("uncatalogued finding %q", fd.Code.String())
				}
			}
		}
		fr := &capture.Frame{Data: data, WireLen: len(data) + int(link)%3*100, LinkType: lt, Index: 1}
		d.Decode(fr, check)
		// Again, as the first half of a TCP stream, and flush.
		fr.Index = 2
		d.Decode(fr, check)
		d.Flush(check)
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
			d.Decode(&capture.Frame{Data: fr.Data, WireLen: len(fr.Data), LinkType: fr.LinkType, Index: i + 1}, func(m *record.Message) { msgs = append(msgs, m) })
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
			if m.IB != nil && (m.IB.ICRC == nil || !m.IB.ICRC.Valid || (m.Layers().LRH != nil && (m.IB.VCRC == nil || !m.IB.VCRC.Valid))) {
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
		NewDecoder("seed", Config{}).Decode(&capture.Frame{Data: []byte(data), WireLen: len(data), LinkType: lt, Index: 1},
			func(m *record.Message) {
				if m.Layers().MAD != nil {
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
