package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// This file holds helpers that write capture files byte by byte, and a
// helper that reads a whole file into copies of its frames.

// byteOrder reads and appends.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func order(be bool) byteOrder {
	if be {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// pcapFile writes a pcap file.
type pcapFile struct {
	be, nano bool
	b        []byte
}

// newPcap starts a pcap file with the given header fields (version 2.4).
func newPcap(be, nano bool, snaplen, link uint32) *pcapFile {
	return newPcapVersion(be, nano, 2, 4, snaplen, link)
}

func newPcapVersion(be, nano bool, major, minor uint16, snaplen, link uint32) *pcapFile {
	p := &pcapFile{be: be, nano: nano}
	o := order(be)
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	p.b = o.AppendUint32(p.b, magic)
	p.b = o.AppendUint16(p.b, major)
	p.b = o.AppendUint16(p.b, minor)
	p.b = o.AppendUint32(p.b, 0) // thiszone
	p.b = o.AppendUint32(p.b, 0) // sigfigs
	p.b = o.AppendUint32(p.b, snaplen)
	p.b = o.AppendUint32(p.b, link)
	return p
}

// rec appends a record; wire 0 means len(data).
func (p *pcapFile) rec(sec, frac uint32, data []byte, wire uint32) *pcapFile {
	if wire == 0 {
		wire = uint32(len(data))
	}
	return p.recHeader(sec, frac, uint32(len(data)), wire).raw(data)
}

// recHeader appends a record header only.
func (p *pcapFile) recHeader(sec, frac, caplen, wire uint32) *pcapFile {
	o := order(p.be)
	p.b = o.AppendUint32(p.b, sec)
	p.b = o.AppendUint32(p.b, frac)
	p.b = o.AppendUint32(p.b, caplen)
	p.b = o.AppendUint32(p.b, wire)
	return p
}

func (p *pcapFile) raw(b []byte) *pcapFile {
	p.b = append(p.b, b...)
	return p
}

// ngFile writes one pcapng section (or several, by appending bytes).
type ngFile struct {
	be bool
	b  []byte
}

func (w *ngFile) o() byteOrder { return order(w.be) }

// block appends a block with the given body, padded to 4 octets.
func (w *ngFile) block(typ uint32, body []byte) *ngFile {
	pad := (4 - len(body)%4) % 4
	n := uint32(12 + len(body) + pad)
	w.b = w.o().AppendUint32(w.b, typ)
	w.b = w.o().AppendUint32(w.b, n)
	w.b = append(w.b, body...)
	w.b = append(w.b, make([]byte, pad)...)
	w.b = w.o().AppendUint32(w.b, n)
	return w
}

// newNg starts a section in the given byte order.
func newNg(be bool) *ngFile {
	w := &ngFile{be: be}
	return w.shb(1, 0)
}

// shb appends a Section Header Block (section length -1, one comment).
func (w *ngFile) shb(major, minor uint16) *ngFile {
	o := w.o()
	var body []byte
	body = o.AppendUint32(body, 0x1A2B3C4D)
	body = o.AppendUint16(body, major)
	body = o.AppendUint16(body, minor)
	body = o.AppendUint64(body, ^uint64(0))
	body = append(body, w.opt(1, []byte("a comment"))...)
	body = append(body, w.opt(0, nil)...)
	return w.block(blockSHB, body)
}

// opt encodes an option.
func (w *ngFile) opt(code uint16, v []byte) []byte {
	var b []byte
	b = w.o().AppendUint16(b, code)
	b = w.o().AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	return append(b, make([]byte, (4-len(v)%4)%4)...)
}

// idb appends an Interface Description Block; opts are encoded options.
func (w *ngFile) idb(link uint16, snap uint32, opts ...[]byte) *ngFile {
	var body []byte
	body = w.o().AppendUint16(body, link)
	body = w.o().AppendUint16(body, 0)
	body = w.o().AppendUint32(body, snap)
	for _, o := range opts {
		body = append(body, o...)
	}
	return w.block(blockIDB, body)
}

func (w *ngFile) tsresol(v byte) []byte { return w.opt(9, []byte{v}) }

func (w *ngFile) tsoffset(s int64) []byte { return w.opt(14, w.o().AppendUint64(nil, uint64(s))) }

// epb appends an Enhanced Packet Block; wire 0 means len(data).
func (w *ngFile) epb(id uint32, ts uint64, data []byte, wire uint32) *ngFile {
	if wire == 0 {
		wire = uint32(len(data))
	}
	o := w.o()
	var body []byte
	body = o.AppendUint32(body, id)
	body = o.AppendUint32(body, uint32(ts>>32))
	body = o.AppendUint32(body, uint32(ts))
	body = o.AppendUint32(body, uint32(len(data)))
	body = o.AppendUint32(body, wire)
	body = append(body, data...)
	body = append(body, make([]byte, (4-len(data)%4)%4)...)
	body = append(body, w.opt(1, []byte("packet comment"))...) // an option to skip
	return w.block(blockEPB, body)
}

// pb appends an obsolete Packet Block.
func (w *ngFile) pb(id uint16, ts uint64, data []byte, wire uint32) *ngFile {
	if wire == 0 {
		wire = uint32(len(data))
	}
	o := w.o()
	var body []byte
	body = o.AppendUint16(body, id)
	body = o.AppendUint16(body, 7) // drops count
	body = o.AppendUint32(body, uint32(ts>>32))
	body = o.AppendUint32(body, uint32(ts))
	body = o.AppendUint32(body, uint32(len(data)))
	body = o.AppendUint32(body, wire)
	body = append(body, data...)
	return w.block(blockPB, body)
}

// spb appends a Simple Packet Block holding data; wire is the original length.
func (w *ngFile) spb(wire uint32, data []byte) *ngFile {
	body := w.o().AppendUint32(nil, wire)
	return w.block(blockSPB, append(body, data...))
}

// raw appends octets as they are.
func (w *ngFile) raw(b []byte) *ngFile {
	w.b = append(w.b, b...)
	return w
}

// u32 encodes v in the section's byte order.
func (w *ngFile) u32(v uint32) []byte { return w.o().AppendUint32(nil, v) }

// payload returns n octets of a pattern that depends on seed.
func payload(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>8)
	}
	return b
}

// gz compresses b into one gzip member.
func gz(t testing.TB, b []byte, level int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// got is a frame copied out of the reader.
type got struct {
	Data      []byte
	WireLen   int
	Time      time.Time
	LinkType  uint16
	Interface int
	Index     int
	Offset    int64
}

func (g got) String() string {
	return fmt.Sprintf("#%d@%d if%d lt%d %d/%d %s %x", g.Index, g.Offset, g.Interface, g.LinkType,
		len(g.Data), g.WireLen, g.Time.Format(time.RFC3339Nano), g.Data[:min(len(g.Data), 8)])
}

// readAll reads every frame of r; it returns the frames and the error that
// ended them (nil at a clean end).
func readAll(r *Reader) ([]got, error) {
	var out []got
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, got{bytes.Clone(f.Data), f.WireLen, f.Time, f.LinkType, f.Interface, f.Index, f.Offset})
	}
}

// readBytes opens b with opts and reads it all.
func readBytes(b []byte, opts ReaderOptions) (*Reader, []got, error) {
	return readFrom(bytes.NewReader(b), opts)
}

func readFrom(src io.Reader, opts ReaderOptions) (*Reader, []got, error) {
	r, err := NewReader(src, opts)
	if err != nil {
		return nil, nil, err
	}
	frames, err := readAll(r)
	return r, frames, err
}

// sameFrames reports the first difference between two frame lists.
func sameFrames(t *testing.T, gotFrames, want []got) {
	t.Helper()
	for i := 0; i < len(gotFrames) && i < len(want); i++ {
		g, w := gotFrames[i], want[i]
		if !bytes.Equal(g.Data, w.Data) || g.WireLen != w.WireLen || !g.Time.Equal(w.Time) ||
			g.Time.Location() != time.UTC || g.LinkType != w.LinkType || g.Interface != w.Interface ||
			g.Index != w.Index || g.Offset != w.Offset {
			t.Fatalf("frame %d:\n got %v\nwant %v", i+1, g, w)
		}
	}
	if len(gotFrames) != len(want) {
		t.Fatalf("got %d frames, want %d", len(gotFrames), len(want))
	}
}

// errAfter is a reader that returns its data, then err.
type errAfter struct {
	data []byte
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

var errBoom = errors.New("boom")

func writeFile(name string, b []byte) error { return os.WriteFile(name, b, 0o644) }

// swapStdin makes os.Stdin the named file for the rest of the test.
func swapStdin(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() {
		os.Stdin = old
		f.Close()
	})
	return f
}

// fileReader is a Reader over a capture file it opened, which its Close
// closes too.
type fileReader struct {
	*Reader
	f *os.File
}

// openCapture opens the named capture file for reading; "-" means standard
// input, which Close leaves open. The Sources open their files themselves:
// only the tests want this.
func openCapture(name string, opts ReaderOptions) (*fileReader, error) {
	if name == "-" {
		r, err := NewReader(os.Stdin, opts)
		if err != nil {
			return nil, err
		}
		return &fileReader{Reader: r}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileReader{Reader: r, f: f}, nil
}

// Close releases the Reader, then closes the file (the first time).
func (r *fileReader) Close() error {
	r.Reader.Close()
	f := r.f
	r.f = nil
	if f != nil {
		return f.Close()
	}
	return nil
}
