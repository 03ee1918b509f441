package craft

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Snaplen written into the files craft makes.
const Snaplen = 262144

// IsPcapng reports whether a file name asks for pcapng (by its extension).
func IsPcapng(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".pcapng") || strings.HasSuffix(n, ".ntar")
}

// Write writes frames as a pcap (nanosecond) or pcapng file. All frames of a
// pcap file must share one link type; pcapng gets one interface per link
// type.
func Write(w io.Writer, pcapng bool, frames []Frame) error {
	if len(frames) == 0 {
		return fmt.Errorf("craft: no frames to write")
	}
	if !pcapng {
		pw := pcapgo.NewWriterNanos(w)
		lt := frames[0].LinkType
		if err := pw.WriteFileHeader(Snaplen, golayers.LinkType(lt)); err != nil {
			return err
		}
		for _, f := range frames {
			if f.LinkType != lt {
				return fmt.Errorf("craft: a pcap file holds one link type (%d and %d given); write pcapng", lt, f.LinkType)
			}
			if err := pw.WritePacket(captureInfo(f), f.Data); err != nil {
				return err
			}
		}
		return nil
	}
	ifaces := map[uint16]int{}
	var nw *pcapgo.NgWriter
	for _, f := range frames {
		id, ok := ifaces[f.LinkType]
		if !ok {
			intf := pcapgo.NgInterface{Name: fmt.Sprintf("craft%d", len(ifaces)), LinkType: golayers.LinkType(f.LinkType),
				SnapLength: Snaplen, TimestampResolution: 9}
			var err error
			if nw == nil {
				nw, err = pcapgo.NewNgWriterInterface(w, intf, pcapgo.NgWriterOptions{
					SectionInfo: pcapgo.NgSectionInfo{Application: "rdmacm-pd craft"}})
			} else {
				id, err = nw.AddInterface(intf)
			}
			if err != nil {
				return err
			}
			ifaces[f.LinkType] = id
		}
		ci := captureInfo(f)
		ci.InterfaceIndex = id
		if err := nw.WritePacket(ci, f.Data); err != nil {
			return err
		}
	}
	return nw.Flush()
}

func captureInfo(f Frame) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: len(f.Data)}
}

// WriteFile writes frames to the file name, as pcapng when its extension
// asks for it (IsPcapng) and as pcap otherwise. Errors name the file.
func WriteFile(name string, frames []Frame) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = Write(w, IsPcapng(name), frames)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// pcapOut writes a workload's frames as pcap, each stamped a random gap
// (gap to gap+spread nanoseconds) after the one before, counting the
// frames and the octets written (record headers included).
type pcapOut struct {
	bw          *bufio.Writer
	pw          *pcapgo.Writer
	rng         *rand.Rand
	gap, spread int
	t           time.Time // the time of the last frame written
	frames      *int
	octets      *int64
}

func newPcapOut(w io.Writer, rng *rand.Rand, gap, spread int, frames *int, octets *int64) (*pcapOut, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	pw := pcapgo.NewWriterNanos(bw)
	if err := pw.WriteFileHeader(Snaplen, golayers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	return &pcapOut{bw: bw, pw: pw, rng: rng, gap: gap, spread: spread, t: DefaultStart, frames: frames, octets: octets}, nil
}

func (o *pcapOut) emit(data []byte) error {
	o.t = o.t.Add(time.Duration(o.gap+o.rng.IntN(o.spread)) * time.Nanosecond)
	*o.frames++
	*o.octets += int64(len(data)) + 16
	return o.pw.WritePacket(gopacket.CaptureInfo{Timestamp: o.t, CaptureLength: len(data), Length: len(data)}, data)
}

func (o *pcapOut) flush() error { return o.bw.Flush() }
