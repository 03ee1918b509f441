package decode

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/crafttest"
)

// hotFrames builds one frame of each kind of the hot path.
func hotFrames(t testing.TB) map[string]*capture.Frame {
	t.Helper()
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
	cm, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	var wl bytes.Buffer
	if _, err := (craft.Workload{Size: 256 << 10, Seed: 7}).Write(&wl); err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(bytes.NewReader(wl.Bytes()), capture.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frames := map[string]*capture.Frame{}
	d := NewDecoder("t", Config{})
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		fi := d.classify(f.LinkType, f.Data)
		name := ""
		switch {
		case fi.kind == kindNone && len(f.Data) > 1000:
			name = "roce data"
		case fi.kind == kindNone:
			name = "small udp"
		case fi.kind == kindTCP && len(f.Data) > 1400:
			name = "tcp bulk"
		}
		if name != "" && frames[name] == nil {
			frames[name] = &capture.Frame{Data: bytes.Clone(f.Data), WireLen: f.WireLen, LinkType: f.LinkType, Time: f.Time, Index: 1}
		}
	}
	frames["cm"] = &capture.Frame{Data: cm[0].Data, WireLen: len(cm[0].Data), LinkType: 1, Index: 1}
	for _, n := range []string{"roce data", "small udp", "tcp bulk", "cm"} {
		if frames[n] == nil {
			t.Fatalf("no %s frame in the workload", n)
		}
	}
	return frames
}

// TestHotPathAllocs: the frames that make up almost all of a capture cost
// no allocation: a non-candidate (RoCEv2 data, small UDP), a TCP bulk
// segment of a direction already decided, the decoding of a CM frame
// with gopacket DecodingLayers, and a CM frame whole when its message is
// built in reused storage.
func TestHotPathAllocs(t *testing.T) {
	frames := hotFrames(t)
	d := NewDecoder("t", Config{})
	emit := func(*record.Message) {}
	// Let the TCP bulk direction be decided first: its segment is not an MPA
	// key; a single one is kept (it might be the tail of a frame whose start
	// comes next), a second one decides the direction.
	d.Decode(frames["tcp bulk"], emit)
	d.Decode(frames["tcp bulk"], emit)
	for _, name := range []string{"roce data", "small udp", "tcp bulk"} {
		f := frames[name]
		if n := testing.AllocsPerRun(1000, func() { d.Decode(f, emit) }); n != 0 {
			t.Errorf("%s: %v allocations per frame", name, n)
		}
	}
	// Decapsulation on the fast path allocates nothing either: RoCE data
	// and TCP bulk inside VXLAN, ERSPAN, MPLS and GRE.
	for _, k := range []crafttest.EncapKind{crafttest.EncapVXLAN, crafttest.EncapERSPAN2, crafttest.EncapMPLS, crafttest.EncapGRE} {
		for _, name := range []string{"roce data", "tcp bulk"} {
			b, err := crafttest.Wrap(frames[name].Data, crafttest.Encap{Kind: k, VNI: 1})
			if err != nil {
				t.Fatal(err)
			}
			tf := &capture.Frame{Data: b, WireLen: len(b), LinkType: 1, Index: 1}
			d.Decode(tf, emit)
			d.Decode(tf, emit)
			if n := testing.AllocsPerRun(1000, func() { d.Decode(tf, emit) }); n != 0 {
				t.Errorf("%s in %s: %v allocations per frame", name, k, n)
			}
		}
	}
	f := frames["cm"]
	fi := d.classify(f.LinkType, f.Data)
	if fi.kind != kindCM {
		t.Fatalf("the CM frame classifies as %v", fi.kind)
	}
	if n := testing.AllocsPerRun(1000, func() {
		fi := d.classify(f.LinkType, f.Data)
		d.decodeLayers(f, &fi)
	}); n != 0 {
		t.Errorf("CM decode: %v allocations per frame", n)
	}
	if d.ib.CM == nil || d.ib.CM.AttributeID() != 0x0010 || !d.ib.Has.BTH || !d.ib.Has.MAD {
		t.Errorf("the CM frame was not decoded: %+v", d.has)
	}
	// With its message built in the same storage (the program's run),
	// the whole CM frame, message included, allocates nothing; the
	// message is the REQ, whole.
	r := NewDecoder("t", Config{ReuseMessages: true})
	var got *record.Message
	keep := func(m *record.Message) { got = m }
	r.Decode(f, keep)
	if n := testing.AllocsPerRun(1000, func() { r.Decode(f, keep) }); n != 0 {
		t.Errorf("CM frame, message reused: %v allocations per frame", n)
	}
	if got == nil || got.Kind != record.KindREQ || got.RPCRDMA == nil || got.CMInfo == nil || len(got.PrivateData) != 92 ||
		got.IB == nil || got.IB.ICRC == nil || !got.IB.ICRC.Valid || len(got.Layers().CM) == 0 {
		t.Errorf("the reused message: %+v", got)
	}
}

func BenchmarkHotPath(b *testing.B) {
	frames := hotFrames(b)
	for _, name := range []string{"roce data", "small udp", "tcp bulk", "cm", "cm reused"} {
		b.Run(name, func(b *testing.B) {
			// "cm reused": the CM message built in the same storage each
			// time, as the program's run does.
			d := NewDecoder("t", Config{ReuseMessages: name == "cm reused"})
			emit := func(*record.Message) {}
			f := frames[strings.TrimSuffix(name, " reused")]
			d.Decode(f, emit)
			b.ReportAllocs()
			b.SetBytes(int64(len(f.Data)))
			for b.Loop() {
				d.Decode(f, emit)
			}
		})
	}
}

// TestHostNotesAllocs: noting the hosts of traffic without CM (hosts.go)
// allocates nothing: perftest's TCP segments and RC frames, DC and UD
// frames, and RC frames of a new pair of hosts once the table is full.
func TestHostNotesAllocs(t *testing.T) {
	var frames []craft.Frame
	for _, n := range []craft.NoCM{{Kind: craft.NoCMRC, Port: craft.PerftestPort}, {Kind: craft.NoCMDC}, {Kind: craft.NoCMUD}} {
		fs, err := n.Frames()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, fs...)
	}
	for _, dp := range []bool{false, true} {
		d := NewDecoder("t", Config{Datapath: dp})
		emit := func(*record.Message) {}
		for i, fr := range frames {
			f := &capture.Frame{Data: fr.Data, WireLen: len(fr.Data), LinkType: fr.LinkType, Index: i + 1}
			d.Decode(f, emit)
			if n := testing.AllocsPerRun(100, func() { d.Decode(f, emit) }); n != 0 {
				t.Errorf("datapath %v, frame %d: %v allocations", dp, i+1, n)
			}
		}
		// Fill the table with other pairs of hosts (the source address
		// changed), then a pair it has no room for.
		rc := bytes.Clone(frames[4].Data) // an RC SEND Only over IPv4
		f := &capture.Frame{Data: rc, WireLen: len(rc), LinkType: 1, Index: 100}
		for i := 0; i < 2*hostSlots; i++ {
			rc[14+12+2], rc[14+12+3] = byte(i>>8), byte(i)
			d.Decode(f, emit)
		}
		rc[14+12+2] = 0xff
		if n := testing.AllocsPerRun(100, func() { rc[14+12+3]++; d.Decode(f, emit) }); n != 0 {
			t.Errorf("datapath %v, a full table: %v allocations", dp, n)
		}
		if tr := d.Traffic(); tr.RC == 0 || tr.DC == 0 || tr.UD == 0 || tr.OutOfBand == 0 || d.hosts.untracked == 0 {
			t.Errorf("datapath %v: %+v, %d untracked", dp, tr, d.hosts.untracked)
		}
	}
}
