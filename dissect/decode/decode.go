// Package decode is the decoder of the pipeline: it looks at each frame
// (classify, a few comparisons that skip almost everything), decodes the
// InfiniBand CM messages it finds into message records, and hands TCP
// segments to the reassembler (dissect/reassembly), whose MPA framer
// (dissect/mpa) makes the iWARP ones.
package decode

import (
	"fmt"
	"strings"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/mpa"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/privdata"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Config tunes decoding.
type Config struct {
	// RoCEPorts are UDP destination ports decoded as RoCEv2 besides 4791.
	RoCEPorts []uint16
	// TCP bounds the reassembly of MPA frames.
	TCP reassembly.Options
	// IPFrag bounds the reassembly of IP fragments.
	IPFrag ipfrag.Options
	// Datapath: the data path is on, so RC frames are events of their own
	// and the FPDUs of iWARP connections are followed.
	Datapath bool
	// ReuseMessages: whoever takes the events reads each CM message during
	// the call only (the run loop's sink does not keep one), so the decoder
	// builds every CM message in the same storage.
	ReuseMessages bool
}

// Decoder turns the frames of one input into messages. It keeps its layers
// between frames so that the decoding itself allocates nothing; a Decoder is
// not safe for concurrent use.
type Decoder struct {
	file      string
	ev        events // what the call under way gave
	datapath  bool
	rocePorts portSet

	ip4 golayers.IPv4
	ip6 golayers.IPv6
	udp golayers.UDP
	erf layers.ERF

	ib       *layers.IBStack // the InfiniBand layers of a CM candidate
	has      layerSet        // the layers in front of them
	ibOctets []byte          // what the IB layers were decoded from (nil: nothing)
	ibFirst  gopacket.LayerType
	noICRC   bool
	lens     lengths // the length fields of the candidate being decoded
	msgs     msgStore

	asm *reassembly.Assembler
	mpa *mpa.Framer
	seg reassembly.Segment

	rc rcState // the RC frame of the call under way

	// CM candidates whose headers did not decode as far as the MAD: how
	// many, and the first one's frame and why.
	undecodable      int
	undecodableFirst int
	undecodableWhy   string

	// InfiniBand-family packets that are not CM MADs, by carrier and
	// transport; the host pairs that exchanged them, CM MADs and TCP
	// (hosts.go).
	data  dataCounts
	hosts hostTable

	// Decapsulation, IP reassembly, odd records (tunnel.go, frag.go,
	// record.go).
	tun        [MaxTunnelDepth]encap
	frag       *ipfrag.Reassembler
	fragOpts   ipfrag.Options
	syn        []byte // the reassembled datagram's frame
	fragDepth  int
	fragFrames []int // while a reassembled datagram is decoded: its fragments' frames
	cur        current
	odd        [2]counted // by bit of frameInfo.odd
	records    counted    // frames whose record lengths disagree with the file
	badTimes   counted    // frames whose timestamps are out of range
}

// New makes a decoder for the input named file.
func New(file string, cfg Config) *Decoder {
	d := &Decoder{file: file, datapath: cfg.Datapath, ib: layers.NewIBStack(), msgs: msgStore{reuse: cfg.ReuseMessages}}
	d.mpa = mpa.New(file, d.emitMPA)
	d.mpa.SetBudget(cfg.TCP.Budget)
	if cfg.Datapath {
		d.mpa.Follow(d.ev.link)
	}
	d.asm = reassembly.New(cfg.TCP, d.mpa)
	d.fragOpts = cfg.IPFrag.WithDefaults()
	d.frag = ipfrag.New(d.fragOpts)
	d.rocePorts.add(layers.RoCEv2Port)
	for _, p := range cfg.RoCEPorts {
		d.rocePorts.add(p)
	}
	return d
}

// Shed makes room in a full memory budget: the TCP directions followed
// give up an eighth of what they hold. It returns what that gave (the MPA
// frames given up, as far as they came), valid until the next call.
func (d *Decoder) Shed() []Event {
	d.ev.reset(nil)
	d.mpa.Lend(nil, nil)
	d.asm.Shed()
	return d.ev.take()
}

// SetFile names the input of the frames that follow (live capture: the
// interface each frame came from).
func (d *Decoder) SetFile(name string) {
	d.file = name
	d.mpa.SetFile(name)
}

// Decode looks at one frame and returns what it gave, in order: the
// messages it completed, an RC frame, the traffic of iWARP connections.
// The events are valid until the next call.
func (d *Decoder) Decode(f *capture.Frame) []Event {
	d.ev.reset(f.Data)
	d.mpa.Lend(f.Data, f.Sums)
	d.decode(f)
	return d.ev.take()
}

// decode looks at one frame, or at a datagram reassembled from fragments.
func (d *Decoder) decode(f *capture.Frame) {
	fi := d.classify(f.LinkType, f.Data)
	if fi.odd|uint8(f.Issue) != 0 {
		d.countOdd(f, &fi)
	}
	if fi.class == classConnected {
		d.noteData(f.Index, f.Data, &fi)
	}
	switch fi.kind {
	case kindCM:
		d.noteCM(f.Data, &fi)
		d.decodeLayers(f, &fi)
		if !d.ib.Has.MAD && !(d.ib.Has.DETH && d.captureCut(f)) {
			// The fast filter took it for a CM MAD, but its headers do not
			// decode that far (and the capture did not cut it): no message,
			// counted for a run-level finding.
			d.undecodable++
			if d.undecodable == 1 {
				d.undecodableFirst = f.Index
				d.undecodableWhy = d.undecodableReason()
			}
			return
		}
		d.ev.message(d.cmMessage(f, &fi))
	case kindTCP:
		if parseTCP(f.Data, &fi, &d.seg) {
			d.seg.Frame, d.seg.Time = f.Index, f.Time
			d.noteTCP(&d.seg)
			if fi.tunnels != 0 || fi.lenZero || f.Issue != 0 || d.fragFrames != nil {
				d.segmentNoted(f, &fi) // the MPA message it completes says so
			} else {
				d.asm.Segment(&d.seg)
			}
		}
	case kindRC:
		d.rcFrame(f, &fi)
	case kindFragment:
		d.fragment(f, &fi)
	}
}

// Flush gives what is still pending at the end of the input: MPA frames
// whose stream never completed them, and the end of the iWARP traffic
// followed. The events are valid until the next call.
func (d *Decoder) Flush() []Event {
	d.ev.reset(nil)
	d.mpa.Lend(nil, nil)
	d.frag.Flush()
	d.asm.Flush()
	d.mpa.Stop()
	return d.ev.take()
}

// CheckCRCAside has the CRCs of the FPDUs that lie whole in a frame
// checked apart from their framing, in batches, on another goroutine with
// worker (mpa.Framer.CheckAside), their verdicts joined back in order: the
// output is the same. The octets of the frames decoded must then stay
// valid until Settle is called, which must be before their source moves
// or lets go of them (capture.Releaser).
func (d *Decoder) CheckCRCAside(worker bool) { d.mpa.CheckAside(worker) }

// Settle waits for the CRC checks made aside (CheckCRCAside): afterwards
// the octets of the frames decoded so far may go.
func (d *Decoder) Settle() { d.mpa.Settle() }

// Notes are run-level findings: what an input's decoder saw
// but could not show as messages: CM candidates that do not decode, first IP
// fragments of a CM MAD or an MPA frame, and TCP directions given up at a
// state limit with too little of an MPA key to show.
func (d *Decoder) Notes() []finding.Finding {
	var out []finding.Finding
	name := d.file
	if n, first, why := d.Undecodable(); n > 0 {
		what := "frame looks like a CM MAD but its headers do"
		if n > 1 {
			what = "frames look like CM MADs but their headers do"
		}
		out = append(out, finding.New(finding.CMUndecodable,
			"%s: %d %s not decode as far as the MAD (first at frame %d: %s); not shown as messages",
			name, n, what, first, why))
	}
	out = append(out, d.reassemblyNotes()...)
	out = append(out, d.oddNotes()...)
	if n := d.mpa.Dropped() - d.mpa.Silent(); n > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%s: %d %s that showed an MPA key %s given up at a state limit (--max-tcp-flows, --max-buffer-bytes, --max-stream-bytes) or because the memory budget was full: each is a message record with state-limit-reached, as far as its MPA frame came",
			name, n, plural(n, "TCP direction", "TCP directions"), plural(n, "was", "were")))
	}
	// One line for the holder (iwarp-traffic), with each cause's count.
	limit, full := d.mpa.NotFollowed()
	var why []string
	if limit > 0 {
		why = append(why, fmt.Sprintf("%d because the traffic of %d iWARP connections was followed at once already", limit, mpa.MaxFollowed))
	}
	if full > 0 {
		why = append(why, fmt.Sprintf("%d because the memory budget was full", full))
	}
	if n := limit + full; n > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%s: the FPDUs of %d TCP %s after their MPA frames were not followed: %s",
			name, n, plural(n, "direction", "directions"), strings.Join(why, ", ")))
	}
	if n := d.mpa.Silent(); n > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%s: %d TCP directions were given up at a state limit (--max-tcp-flows, --max-buffer-bytes, --max-stream-bytes) with too little of an MPA key to show",
			name, n))
	}
	if st := d.asm.Stats(); st.EarlyMissed > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%s: %d %s began with an MPA key only after more than %d octets that come after it in the stream had arrived (reordering), which decided %s not MPA (first at frame %d): %s not shown",
			name, st.EarlyMissed, plural(st.EarlyMissed, "TCP direction", "TCP directions"), mpa.MaxFrame,
			plural(st.EarlyMissed, "it was", "they were"), st.EarlyMissedFrame, plural(st.EarlyMissed, "its MPA frame is", "their MPA frames are")))
	}
	return out
}

// Undecodable counts the frames the fast filter took for CM MADs whose
// headers did not decode as far as the MAD; first is the first one's frame
// number and why the one that number names did not decode.
func (d *Decoder) Undecodable() (n, first int, why string) {
	return d.undecodable, d.undecodableFirst, d.undecodableWhy
}

// Fragments counts the IP datagrams given up (at a reassembly limit, by
// age, or incomplete at the end of the input) whose first fragment holds
// the start of a CM MAD or an MPA frame; first is the first one's frame
// number.
func (d *Decoder) Fragments() (n, first int) {
	s := d.frag.Stats()
	return s.Lost(), s.FlaggedFirst
}

// undecodableReason says where the decoding of the last candidate stopped.
func (d *Decoder) undecodableReason() string {
	if d.has.err != nil {
		return d.has.err.Error()
	}
	last := "the link header"
	switch {
	case d.ib.Has.DETH:
		last = "the DETH"
	case d.ib.Has.BTH:
		last = "the BTH"
	case d.ib.Has.GRH:
		last = "the GRH"
	case d.ib.Has.LRH:
		last = "the LRH"
	case d.has.udp:
		last = "the UDP header"
	case d.has.ip4 || d.has.ip6:
		last = "the IP header"
	}
	return "nothing decodes after " + last
}

// Dropped counts TCP directions given up because of a state limit, the
// MPA frames lost to the early window (SilentDrops), and the directions
// whose FPDUs were not followed at mpa.MaxFollowed.
func (d *Decoder) Dropped() int {
	limit, full := d.mpa.NotFollowed()
	return d.mpa.Dropped() + d.odd[0].n + d.asm.Stats().EarlyMissed + limit + full
}

// Drops reports what Dropped counts, by holder.
func (d *Decoder) Drops(drop func(record.DropHolder, int)) {
	drop(record.DropTCPDirections, d.mpa.Dropped())
	drop(record.DropTunnels, d.odd[0].n)
	drop(record.DropEarlyWindow, d.asm.Stats().EarlyMissed)
	limit, full := d.mpa.NotFollowed()
	drop(record.DropIWARPTraffic, limit+full)
}

// SilentDrops counts the TCP directions given up at a state limit when they
// had shown too little of an MPA key for a message, and those whose MPA
// frame began only after more octets of the direction than an MPA frame
// spans had arrived before it (reordering: the early window had decided the
// direction was not MPA). No message carries a finding for them; the notes
// say so.
func (d *Decoder) SilentDrops() int { return d.mpa.Silent() + d.asm.Stats().EarlyMissed }

// KeylessEvictions counts the TCP directions given up at a state limit
// before they showed any octet of an MPA key.
func (d *Decoder) KeylessEvictions() int { return d.asm.Stats().Keyless }

// TCPStats are the TCP reassembler's counters.
func (d *Decoder) TCPStats() reassembly.Stats { return d.asm.Stats() }

// CheckPrivateData checks a private-data blob on its own (the decode
// command): see privdata.Blob.
func CheckPrivateData(pd []byte, expected int) (*record.RPCRDMA, []finding.Finding) {
	return privdata.Blob(pd, expected)
}
