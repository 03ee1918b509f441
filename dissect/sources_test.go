package dissect_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/crafttest"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestERFTypes: every ERF record type that carries Ethernet, IPv4, IPv6 or
// InfiniBand, with and without extension headers, gives the exchange; tshark
// agrees frame by frame.
func TestERFTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  uint8
		ext  int
		v6   bool
		ib   bool
	}{
		{"Ethernet (2)", layers.ERFTypeEthernet, 0, false, false},
		{"colour Ethernet (11)", layers.ERFTypeColorEthernet, 1, false, false},
		{"DSM colour Ethernet (16)", layers.ERFTypeDSMColorEthernet, 0, false, false},
		{"DSM colour Ethernet (16), two extension headers", layers.ERFTypeDSMColorEthernet, 2, true, false},
		{"colour hash Ethernet (20)", layers.ERFTypeColorHashEthernet, 3, false, false},
		{"IPv4 (22)", layers.ERFTypeIPv4, 0, false, false},
		{"IPv4 (22), an extension header", layers.ERFTypeIPv4, 1, false, false},
		{"IPv6 (23)", layers.ERFTypeIPv6, 1, true, false},
		{"InfiniBand (21)", layers.ERFTypeInfiniBand, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var xs []craft.Frame
			if tc.ib {
				x := craft.Exchange{Transport: craft.InfiniBand, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
					Responder: craft.Peer{SendSize: 8192, ReceiveSize: 8192}}
				var err error
				if xs, err = x.Frames(); err != nil {
					t.Fatal(err)
				}
			} else {
				xs = exchangeFrames(t, tc.v6)
			}
			var frames []craft.Frame
			for _, f := range xs {
				e, err := crafttest.ERF(f, tc.typ, tc.ext)
				if err != nil {
					t.Fatal(err)
				}
				frames = append(frames, e)
			}
			p := writeFrames(t, "erf.pcap", frames)
			c := runFile(t, p, dissect.Config{})
			checkExchange(t, c, []int{1, 2, 3})
			tsharkOracle(t, p)
		})
	}
}

// TestIPv6Chains: RoCEv2 over IPv6 behind extension header chains: each
// kind, AH (skipped by its own length rule), an atomic fragment, 8, 9 and
// 16 headers; a 17-header chain is counted, not looked into.
func TestIPv6Chains(t *testing.T) {
	h := func(typ uint8, n int) crafttest.ExtHeader { return crafttest.ExtHeader{Type: typ, Len: n} }
	many := func(n int) []crafttest.ExtHeader {
		var out []crafttest.ExtHeader
		for i := range n {
			out = append(out, h(crafttest.ExtDestOpts, 8*(1+i%3)))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		hdrs   []crafttest.ExtHeader
		tshark bool
		skip   bool // beyond the bound: no messages, a note
	}{
		{name: "hop-by-hop", hdrs: []crafttest.ExtHeader{h(crafttest.ExtHopByHop, 8)}, tshark: true},
		{name: "routing", hdrs: []crafttest.ExtHeader{h(crafttest.ExtRouting, 24)}, tshark: true},
		{name: "destination options", hdrs: []crafttest.ExtHeader{h(crafttest.ExtDestOpts, 16)}, tshark: true},
		{name: "AH", hdrs: []crafttest.ExtHeader{h(crafttest.ExtAH, 24)}, tshark: true},
		{name: "hop-by-hop, AH, destination options", hdrs: []crafttest.ExtHeader{h(crafttest.ExtHopByHop, 8), h(crafttest.ExtAH, 16), h(crafttest.ExtDestOpts, 8)}, tshark: true},
		{name: "atomic fragment", hdrs: []crafttest.ExtHeader{h(crafttest.ExtFragment, 8)}, tshark: true},
		{name: "mobility and experimental", hdrs: []crafttest.ExtHeader{h(crafttest.ExtMobility, 8), h(crafttest.ExtExperiment, 8)}},
		{name: "8 headers", hdrs: many(8), tshark: true},
		{name: "9 headers", hdrs: many(9), tshark: true},
		{name: "16 headers", hdrs: many(16), tshark: true},
		{name: "17 headers", hdrs: many(17), skip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var frames []craft.Frame
			for _, f := range exchangeFrames(t, true) {
				b, err := crafttest.InsertIPv6Ext(f.Data, tc.hdrs...)
				if err != nil {
					t.Fatal(err)
				}
				frames = append(frames, craft.Frame{Data: b, Time: f.Time, LinkType: craft.LinkEthernet})
			}
			p := writeFrames(t, "chain.pcap", frames)
			c := runFile(t, p, dissect.Config{})
			if tc.skip {
				if len(c.msgs) != 0 || len(c.sum.Notes) != 1 || c.sum.Notes[0].Code != finding.IPv6ChainTooLong ||
					!strings.Contains(c.sum.Notes[0].Message, "3 IPv6 packets have more than 16 extension headers (first at frame 1)") {
					t.Errorf("%d messages, notes %v", len(c.msgs), c.sum.Notes)
				}
				return
			}
			checkExchange(t, c, []int{1, 2, 3})
			if len(c.sum.Notes) != 0 {
				t.Errorf("notes %v", c.sum.Notes)
			}
			if tc.tshark {
				tsharkOracle(t, p)
			}
		})
	}
}

// TestIPReassembly: the exchange in IPv4 and IPv6 fragments, in order,
// reversed, with duplicates, inside a tunnel and around one; each message
// is on the frame that completed it and lists its fragments. Missing
// fragments and the limits give up datagrams, and say so.
func TestIPReassembly(t *testing.T) {
	build := func(t *testing.T, v6 bool, size int, order string, wrap *crafttest.Encap, outer *crafttest.Encap) ([]craft.Frame, [][]int) {
		var frames []craft.Frame
		var lists [][]int
		for i, f := range exchangeFrames(t, v6) {
			data := f.Data
			if outer != nil {
				var err error
				if data, err = crafttest.Wrap(data, *outer); err != nil {
					t.Fatal(err)
				}
			}
			fs, err := crafttest.Fragment(data, size, uint32(100+i))
			if err != nil {
				t.Fatal(err)
			}
			switch order {
			case "reversed":
				slices.Reverse(fs)
			case "duplicated":
				fs = append(fs, fs[0])
			}
			var list []int
			for _, b := range fs {
				if wrap != nil {
					if b, err = crafttest.Wrap(b, *wrap); err != nil {
						t.Fatal(err)
					}
				}
				frames = append(frames, craft.Frame{Data: b, Time: f.Time, LinkType: craft.LinkEthernet})
				list = append(list, len(frames))
			}
			lists = append(lists, list)
		}
		return frames, lists
	}
	for _, tc := range []struct {
		name   string
		v6     bool
		size   int
		order  string
		wrap   *crafttest.Encap // each fragment in this tunnel
		outer  *crafttest.Encap // the tunnel packet fragmented
		tshark bool
	}{
		{name: "IPv4 in order", size: 96, tshark: true},
		{name: "IPv4 reversed", size: 128, order: "reversed", tshark: true},
		{name: "IPv4 with a duplicate", size: 64, order: "duplicated"},
		{name: "IPv6 in order", v6: true, size: 104, tshark: true},
		{name: "IPv6 reversed", v6: true, size: 64, order: "reversed", tshark: true},
		{name: "IPv4 fragments inside VXLAN", size: 96, wrap: &crafttest.Encap{Kind: crafttest.EncapVXLAN, VNI: 4}, tshark: true},
		{name: "a fragmented VXLAN packet", size: 200, outer: &crafttest.Encap{Kind: crafttest.EncapVXLAN, VNI: 4}, tshark: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames, lists := build(t, tc.v6, tc.size, tc.order, tc.wrap, tc.outer)
			p := writeFrames(t, "frag.pcap", frames)
			c := runFile(t, p, dissect.Config{})
			var last []int
			for _, l := range lists {
				last = append(last, slices.Max(l))
			}
			if tc.order == "duplicated" {
				for i := range last { // the duplicate comes after the datagram completed
					last[i]--
				}
			}
			msgs := checkExchange(t, c, last)
			for i, m := range msgs {
				want := lists[i]
				if tc.order == "duplicated" {
					want = want[:len(want)-1]
				}
				if !slices.Equal(m.Frames, slices.Sorted(slices.Values(want))) {
					t.Errorf("%s: frames %v, want %v", m.Name(), m.Frames, want)
				}
			}
			if len(c.sum.Notes) != 0 {
				t.Errorf("notes %v", c.sum.Notes)
			}
			if tc.tshark {
				tsharkOracle(t, p)
			}
		})
	}

	// A fragment missing, and each limit: the datagrams of interest given
	// up are counted (ip-fragment-skipped), nothing else is lost.
	frames, _ := build(t, false, 96, "", nil, nil)
	missing := append(slices.Clone(frames[:1]), frames[2:]...) // the REQ's second fragment
	for _, tc := range []struct {
		name   string
		frames []craft.Frame
		opts   ipfrag.Options
		msgs   int
		note   string
	}{
		{"a fragment missing", missing, ipfrag.Options{}, 2,
			"1 IP datagram whose first fragment holds the start of a CM MAD or an MPA frame was not reassembled (first at frame 1): 1 incomplete at the end of the input"},
		{"the fragment limit", frames, ipfrag.Options{Fragments: 2}, 0,
			"3 IP datagrams whose first fragment holds the start of a CM MAD or an MPA frame were not reassembled (first at frame 1): 3 given up at a reassembly limit"},
		{"the octet limit", frames, ipfrag.Options{Bytes: 200}, 0,
			"3 IP datagrams whose first fragment holds the start of a CM MAD or an MPA frame were not reassembled (first at frame 1): 3 given up at a reassembly limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runFile(t, writeFrames(t, "lost.pcap", tc.frames), dissect.Config{IPFrag: tc.opts})
			if len(c.msgs) != tc.msgs || len(c.sum.Notes) != 1 || c.sum.Notes[0].Code != finding.IPFragmentSkipped ||
				!strings.Contains(c.sum.Notes[0].Message, tc.note) {
				t.Errorf("%d messages, notes %v", len(c.msgs), c.sum.Notes)
			}
		})
	}

	// Ageing by capture time: the REP's last fragment comes a minute late.
	late := slices.Clone(frames)
	at := len(late) - 4 // the REP's last fragment (3 fragments each)
	late[at].Time = late[at].Time.Add(60e9)
	late = append(append(slices.Clone(late[:at]), late[at+1:]...), late[at])
	for i := range late[:len(late)-1] {
		late[i].Time = frames[0].Time
	}
	c := runFile(t, writeFrames(t, "late.pcap", late), dissect.Config{})
	if len(c.msgs) != 2 || len(c.sum.Notes) != 1 || !strings.Contains(c.sum.Notes[0].Message, "1 still incomplete 30s after their first fragment") {
		t.Errorf("%d messages, notes %v", len(c.msgs), c.sum.Notes)
	}
}

// TestIPLengthZero: an iWARP exchange captured with TSO (IPv4 Total Length
// 0 in every segment) gives its MPA messages, each with ip-length-zero; so
// does a CM message with a zero Total Length.
func TestIPLengthZero(t *testing.T) {
	x := craft.IWARPExchange{Rev: 2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096}, Responder: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
	fs, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	cm := exchangeFrames(t, false)
	fs = append(fs, cm[1])
	for i := range fs {
		fs[i].Data = slices.Clone(fs[i].Data)
		binary.BigEndian.PutUint16(fs[i].Data[14+2:], 0)
	}
	c := runFile(t, writeFrames(t, "tso.pcap", fs), dissect.Config{})
	if len(c.msgs) != 3 {
		t.Fatalf("%d messages, want MPA_REQ, MPA_REP, REP", len(c.msgs))
	}
	for _, m := range c.msgs {
		// The REP's ICRC covered the real Total Length: icrc-mismatch too.
		send := 4096
		if m.Kind == record.KindREP {
			send = 8192
			if !hasFinding(m.Findings, finding.ICRCMismatch) {
				t.Errorf("REP: findings %v, want icrc-mismatch as well", codes(m.Findings))
			}
		}
		if !hasFinding(m.Findings, finding.IPLengthZero) || m.RPCRDMA == nil || m.RPCRDMA.SendSize != send {
			t.Errorf("%s frame %d: findings %v, rpcrdma %+v", m.Name(), m.Frame, codes(m.Findings), m.RPCRDMA)
		}
	}
}

// TestRecordLengths: records over the snap length and over their original
// length are read, with the finding on their messages and the count on the
// run; reading goes on (pcap and pcapng).
func TestRecordLengths(t *testing.T) {
	xs := exchangeFrames(t, false)
	for _, ng := range []bool{false, true} {
		name := "rec.pcap"
		if ng {
			name = "rec.pcapng"
		}
		p := writeFrames(t, name, xs)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ng {
			binary.LittleEndian.PutUint32(b[16:], 300) // snap length 300: the REQ (322) exceeds it
			rep := 24 + 16 + len(xs[0].Data)
			binary.LittleEndian.PutUint32(b[rep+12:], 100) // the REP's original length
		} else {
			patchNg(t, b, len(xs))
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c := runFile(t, p, dissect.Config{})
		// Every CM frame (322 octets) exceeds the snap length of 300; the
		// REP's original length is 100 as well.
		msgs := checkExchange(t, c, []int{1, 2, 3}, "record-length-inconsistent")
		for i, m := range msgs {
			want := "the capture record is inconsistent: the captured length 322 exceeds the snap length 300; read as captured"
			if i == 1 {
				want = "the capture record is inconsistent: the captured length 322 exceeds the snap length 300 and the captured length 322 exceeds the original length 100; read as captured"
			}
			if got := m.Findings[len(m.Findings)-1].Message; got != want {
				t.Errorf("%s: %q, want %q", m.Name(), got, want)
			}
		}
		if len(c.sum.Notes) != 1 || c.sum.Notes[0].Code != finding.RecordLengthInconsistent ||
			!strings.HasSuffix(c.sum.Notes[0].Message, ": 3 capture records have a captured length above the snap length or the original length (first at frame 1); each was read as captured") {
			t.Errorf("notes %v", c.sum.Notes)
		}
	}
}

// patchNg sets the interface snap length of a craft pcapng file to 300 and
// the second packet's original length to 100.
func patchNg(t *testing.T, b []byte, n int) {
	t.Helper()
	off, pkt := 0, 0
	for off+12 <= len(b) {
		typ, blen := binary.LittleEndian.Uint32(b[off:]), int(binary.LittleEndian.Uint32(b[off+4:]))
		switch typ {
		case 1:
			binary.LittleEndian.PutUint32(b[off+12:], 300)
		case 6:
			pkt++
			if pkt == 2 {
				binary.LittleEndian.PutUint32(b[off+24:], 100)
			}
		}
		off += blen
	}
	if pkt != n {
		t.Fatalf("%d packet blocks, want %d", pkt, n)
	}
}

// TestCompressedCaptures: the exchange, compressed each way, gives the
// same messages on the same frames; tshark agrees on the gzip file.
func TestCompressedCaptures(t *testing.T) {
	var plain bytes.Buffer
	var frames []craft.Frame
	for i, f := range exchangeFrames(t, false) {
		frames = append(frames, craft.Frame{Data: bulkFrame(t, false), Time: f.Time, LinkType: 1}, f)
		_ = i
	}
	if err := craft.Write(&plain, false, frames); err != nil {
		t.Fatal(err)
	}
	gzipped := func(b []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		zw.Name = strings.Repeat("capture-", 100) // 800 octets
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	zstded := func(b []byte) []byte {
		var out bytes.Buffer
		zw, _ := zstd.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	lz4ed := func(b []byte) []byte {
		var out bytes.Buffer
		zw := lz4.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	for _, tc := range []struct {
		name, format string
		data         []byte
		tshark       bool
	}{
		{"gzip with a long name", "pcap.gz", gzipped(plain.Bytes()), true},
		{"gzip with zero padding", "pcap.gz", append(gzipped(plain.Bytes()), make([]byte, 512)...), false},
		{"zstd", "pcap.zst", zstded(plain.Bytes()), false}, // tshark 4.0 reads no zstd (4.2 does)
		{"lz4", "pcap.lz4", lz4ed(plain.Bytes()), false},   // nor lz4
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "capture")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			c := runFile(t, p, dissect.Config{})
			checkExchange(t, c, []int{2, 4, 6})
			if in := c.sum.Inputs[0]; in.Describe() != tc.format || in.Frames != 6 || in.Err != nil {
				t.Errorf("input %+v, want %s", in, tc.format)
			}
			if tc.tshark {
				tsharkOracle(t, p)
			}
		})
	}
}
