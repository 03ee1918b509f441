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
var FloodKinds = []string{FloodTCPStreams, FloodHalfMPA, FloodREQs, FloodRetries, FloodDescending, FloodRCConns, FloodRCDirections, FloodIWARPConns, FloodOrphanReplies, FloodREQREPs, FloodBigRecords, FloodLargePD, FloodCombined}

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

// floodKind writes n units of one kind (not FloodCombined) through emit.
func floodKind(kind string, n int, emit func([]byte) error) error {
	a, b := Endpoints(0, false)
	b.Port = 20049
	// setAddr writes the i-th source address and port into a TCP or UDP
	// frame over IPv4: 10.0.0.0/8 and ports from 1024.
	setAddr := func(f []byte, i int) {
		binary.BigEndian.PutUint32(f[14+12:], 0x0a000000|uint32(i/50000)&0xffffff)
		binary.BigEndian.PutUint16(f[14+20:], uint16(1024+i%50000))
	}
	switch kind {
	case FloodTCPStreams:
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
				setAddr(syn, i)
				if err := emit(syn); err != nil {
					return err
				}
			}
			setAddr(data, i)
			if err := emit(data); err != nil {
				return err
			}
		}
	case FloodHalfMPA:
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
			setAddr(syn, i)
			setAddr(part, i)
			if err := emit(syn); err != nil {
				return err
			}
			if err := emit(part); err != nil {
				return err
			}
		}
	case FloodREQs, FloodRetries:
		x := Exchange{Transport: RoCEv2, Initiator: Peer{SendSize: 4096, ReceiveSize: 4096}}
		fs, err := x.Frames()
		if err != nil {
			return err
		}
		req := fs[0].Data
		const commID = 14 + 20 + 8 + 12 + 8 + 24 // the REQ's Local Communication ID
		for i := 0; i < n; i++ {
			if kind == FloodREQs {
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
	case FloodDescending:
		seg, err := (&TCP{Src: a, Dst: b, Seq: 0, ACK: true, Payload: []byte("abcd")}).Frame()
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			setAddr(seg, i)
			for k := 63; k >= 0; k-- {
				binary.BigEndian.PutUint32(seg[14+20+4:], 1_000_000+uint32(8*k))
				if err := emit(seg); err != nil {
					return err
				}
			}
		}
	case FloodIWARPConns:
		return floodIWARP(n, emit)
	case FloodOrphanReplies:
		return floodOrphanReplies(n, emit)
	case FloodRCConns, FloodRCDirections:
		return floodRC(kind, n, emit)
	case FloodREQREPs:
		return floodREQREPs(n, emit)
	case FloodBigRecords:
		return floodBigRecords(n, emit)
	case FloodLargePD:
		return floodLargePD(n, emit)
	default:
		return fmt.Errorf("craft: unknown flood %q (want one of %v)", kind, FloodKinds)
	}
	return nil
}
