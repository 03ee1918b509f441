package craft

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Flood kinds: hostile captures that try to make a dissector keep state.
const (
	FloodTCPStreams = "tcp-streams" // N TCP directions (half with a SYN) that never send an MPA frame
	FloodHalfMPA    = "half-mpa"    // N TCP directions that start an MPA Request and never finish it
	FloodREQs       = "reqs"        // N CM REQs that nobody answers
	FloodRetries    = "retries"     // one CM REQ sent N times (CM retries), never answered
	// FloodDescending: N TCP directions without a handshake, each 64 small
	// segments in descending order of sequence number with a hole between
	// each two (63 holes), all within an MPA frame's span: the worst order
	// for a reassembler that keeps octets by offset from the lowest one.
	FloodDescending = "descending"
)

// FloodKinds lists the kinds Flood knows.
var FloodKinds = []string{FloodTCPStreams, FloodHalfMPA, FloodREQs, FloodRetries, FloodDescending, FloodRCConns, FloodRCDirections, FloodIWARPConns, FloodOrphanReplies, FloodREQREPs, FloodBigRecords, FloodLargePD,
	FloodRCOrphanPackets, FloodRCLyingLengths, FloodRCReads, FloodRecordsFirst, FloodIWARPHole, FloodIWARPLostResponder, FloodIWARPSequential, FloodTCPThenRDMA, FloodRCChunks,
	FloodCombined}

// Flood writes a pcap file of n hostile units of the given kind, built from
// templates (patched ports, addresses and IDs) so that millions cost seconds.
// For FloodCombined, n scales the counts of Combined.
func Flood(w io.Writer, kind string, n int) (frames int, err error) {
	if !slices.Contains(FloodKinds, kind) {
		return 0, fmt.Errorf("craft: unknown flood %q (want one of %v)", kind, FloodKinds)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	pw := pcapgo.NewWriterNanos(bw)
	snaplen := uint32(Snaplen)
	if kind == FloodBigRecords || kind == FloodCombined {
		snaplen = BigRecord
	}
	if err := pw.WriteFileHeader(snaplen, golayers.LinkTypeEthernet); err != nil {
		return 0, err
	}
	t := DefaultStart
	emit := func(data []byte) error {
		frames++
		t = t.Add(time.Microsecond)
		return pw.WritePacket(gopacket.CaptureInfo{Timestamp: t, CaptureLength: len(data), Length: len(data)}, data)
	}
	if kind == FloodCombined {
		err = floodCombined(n, emit)
	} else {
		err = floodKind(kind, n, emit)
	}
	if err != nil {
		return frames, err
	}
	return frames, bw.Flush()
}

// floods writes each kind but FloodCombined (which is made of the others)
// through emit: one function per kind.
var floods = map[string]func(n int, emit func([]byte) error) error{
	FloodTCPStreams:    floodTCPStreams,
	FloodHalfMPA:       floodHalfMPA,
	FloodREQs:          floodREQs,
	FloodRetries:       floodRetries,
	FloodDescending:    floodDescending,
	FloodRCConns:       floodRCConns,
	FloodRCDirections:  floodRCDirections,
	FloodIWARPConns:    floodIWARP,
	FloodOrphanReplies: floodOrphanReplies,
	FloodREQREPs:       floodREQREPs,
	FloodBigRecords:    floodBigRecords,
	FloodLargePD:       floodLargePD,
	FloodRecordsFirst:  floodRecordsFirst,

	FloodRCOrphanPackets: floodRCOrphanPackets,
	FloodRCLyingLengths:  floodRCLyingLengths,
	FloodRCReads:         floodRCReads,
	// floodtcp.go
	FloodIWARPHole:          floodIWARPHole,
	FloodIWARPLostResponder: floodIWARPLostResponder,
	FloodIWARPSequential:    floodIWARPSequential,
	FloodTCPThenRDMA:        floodTCPThenRDMA,
	// floodchunks.go
	FloodRCChunks: floodRCChunks,
}

// floodKind writes n units of one kind (not FloodCombined) through emit.
func floodKind(kind string, n int, emit func([]byte) error) error {
	flood, ok := floods[kind]
	if !ok {
		return fmt.Errorf("craft: unknown flood %q (want one of %v)", kind, FloodKinds)
	}
	return flood(n, emit)
}

// floodPeers are the two sides of the TCP floods: the default initiator,
// and the default responder on the NFS/RDMA port.
func floodPeers() (Endpoint, Endpoint) {
	a, b := Endpoints(0, false)
	b.Port = 20049
	return a, b
}

// setFloodSource writes the i-th source address and port into a TCP or
// UDP frame over IPv4: 10.0.0.0/8 and ports from 1024, so that each unit
// is a flow of its own.
func setFloodSource(f []byte, i int) {
	binary.BigEndian.PutUint32(f[14+12:], 0x0a000000|uint32(i/50000)&0xffffff)
	binary.BigEndian.PutUint16(f[14+20:], uint16(1024+i%50000))
}

// floodTCPStreams writes n TCP directions, every other one opened by a
// SYN, each sending one segment that is no MPA frame.
func floodTCPStreams(n int, emit func([]byte) error) error {
	a, b := floodPeers()
	syn, err := (&TCP{Src: a, Dst: b, Seq: 100, SYN: true}).Frame()
	if err != nil {
		return err
	}
	data, err := (&TCP{Src: a, Dst: b, Seq: 101, ACK: true, PSH: true, Payload: []byte("GET / HTTP/1.1\r\n\r\n")}).Frame()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			setFloodSource(syn, i)
			if err := emit(syn); err != nil {
				return err
			}
		}
		setFloodSource(data, i)
		if err := emit(data); err != nil {
			return err
		}
	}
	return nil
}

// floodHalfMPA writes n TCP directions, each a SYN and the first 30
// octets of an MPA Request that never ends.
func floodHalfMPA(n int, emit func([]byte) error) error {
	a, b := floodPeers()
	req := (&MPA{Request: true, Rev: 1, Data: make([]byte, 100)}).Bytes()
	syn, err := (&TCP{Src: a, Dst: b, Seq: 100, SYN: true}).Frame()
	if err != nil {
		return err
	}
	part, err := (&TCP{Src: a, Dst: b, Seq: 101, ACK: true, PSH: true, Payload: req[:30]}).Frame()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		setFloodSource(syn, i)
		setFloodSource(part, i)
		if err := emit(syn); err != nil {
			return err
		}
		if err := emit(part); err != nil {
			return err
		}
	}
	return nil
}

// floodREQs writes n CM REQs, each from a Communication ID and an address
// of its own.
func floodREQs(n int, emit func([]byte) error) error { return floodREQ(n, emit, true) }

// floodRetries writes one CM REQ n times, as CM retries.
func floodRetries(n int, emit func([]byte) error) error { return floodREQ(n, emit, false) }

// floodREQ writes a RoCEv2 REQ n times, each a new attempt (a new Local
// Communication ID and source address) when fresh, the same one otherwise.
func floodREQ(n int, emit func([]byte) error, fresh bool) error {
	x := Exchange{Transport: RoCEv2, Initiator: Peer{SendSize: 4096, ReceiveSize: 4096}}
	fs, err := x.Frames()
	if err != nil {
		return err
	}
	req := fs[0].Data
	const commID = 14 + 20 + 8 + 12 + 8 + 24 // the REQ's Local Communication ID
	for i := 0; i < n; i++ {
		if fresh {
			binary.BigEndian.PutUint32(req[commID:], uint32(i))
			binary.BigEndian.PutUint32(req[14+12:], 0x0a000000|uint32(i/50000)&0xffffff)
			// The ICRC covers both: recompute it.
			end := len(req) - layers.ICRCLen
			binary.LittleEndian.PutUint32(req[end:], layers.ICRCRoCEv2(req[14:34], req[34:42], req[42:end]))
		}
		if err := emit(req); err != nil {
			return err
		}
	}
	return nil
}

// floodDescending writes n TCP directions of FloodDescending: 64 segments
// each, from the highest sequence number down, 4 octets with a hole of 4
// after each.
func floodDescending(n int, emit func([]byte) error) error {
	a, b := floodPeers()
	seg, err := (&TCP{Src: a, Dst: b, Seq: 0, ACK: true, Payload: []byte("abcd")}).Frame()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		setFloodSource(seg, i)
		for k := 63; k >= 0; k-- {
			binary.BigEndian.PutUint32(seg[14+20+4:], 1_000_000+uint32(8*k))
			if err := emit(seg); err != nil {
				return err
			}
		}
	}
	return nil
}
