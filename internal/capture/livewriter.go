package capture

import (
	"bufio"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Writer writes captured frames to a capture file as they come: pcapng with
// one interface per capture handle, or pcap when every handle has the same
// link type. The frames are buffered; Flush writes them out, leaving a
// valid file up to the last frame (the live capture flushes it at least
// every second, so that a capture that is killed leaves its frames).
type Writer struct {
	ng   *pcapgo.NgWriter
	pcap *pcapgo.Writer
	buf  *bufio.Writer
}

// CanWrite says whether one capture file can hold frames of these link
// types: pcapng can, pcap only when they are all the same.
func CanWrite(pcapng bool, linkTypes []uint16) error {
	if pcapng {
		return nil
	}
	for _, lt := range linkTypes[1:] {
		if lt != linkTypes[0] {
			return fmt.Errorf("a pcap file holds one link type; these interfaces have %v: write .pcapng", linkTypes)
		}
	}
	return nil
}

// NewWriter starts a capture file on w for frames from handles (in order:
// the frame's handle index is its interface).
func NewWriter(out io.Writer, pcapng bool, names []string, linkTypes []uint16, snaplen int) (*Writer, error) {
	if snaplen <= 0 {
		snaplen = accept
	}
	if err := CanWrite(pcapng, linkTypes); err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if !pcapng {
		pw := pcapgo.NewWriterNanos(w)
		if err := pw.WriteFileHeader(uint32(snaplen), golayers.LinkType(linkTypes[0])); err != nil {
			return nil, err
		}
		return &Writer{pcap: pw, buf: w}, nil
	}
	var nw *pcapgo.NgWriter
	for i, name := range names {
		intf := pcapgo.NgInterface{Name: name, LinkType: golayers.LinkType(linkTypes[i]), SnapLength: uint32(snaplen),
			TimestampResolution: 9}
		var err error
		if i == 0 {
			nw, err = pcapgo.NewNgWriterInterface(w, intf, pcapgo.NgWriterOptions{
				SectionInfo: pcapgo.NgSectionInfo{Application: "rdmacm-pd"}})
		} else {
			_, err = nw.AddInterface(intf)
		}
		if err != nil {
			return nil, err
		}
	}
	return &Writer{ng: nw, buf: w}, nil
}

// Write writes one frame captured on handle iface.
func (w *Writer) Write(iface int, data []byte, wireLen int, ts time.Time) error {
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: max(wireLen, len(data)), InterfaceIndex: iface}
	if w.pcap != nil {
		return w.pcap.WritePacket(ci, data)
	}
	return w.ng.WritePacket(ci, data)
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	if w.ng != nil {
		if err := w.ng.Flush(); err != nil {
			return err
		}
	}
	return w.buf.Flush()
}
