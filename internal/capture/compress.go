package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compressed inputs, told apart by their first octets as the capture
// formats are: gzip (RFC 1952), Zstandard (RFC 8878) and LZ4 frames (and
// the legacy LZ4 format), as support engineers receive captures and as
// Wireshark 4.2 reads them.
//
// gzip members are read here, their inflate done by klauspost/compress
// (about twice as fast as compress/flate on captures): the header's name
// and comment may be of any length (compress/gzip refuses more than 511
// octets, which gzip and tshark accept), members may follow each other,
// and zero octets after the last member (tape and transfer padding) end
// the input as gzip does. Anything else after a member is an error. The
// CRC-32 and length of every member are checked.

// Compression kinds.
const (
	compNone = iota
	compGzip
	compZstd
	compLZ4
)

// compressionOf tells a compressed stream by its first octets (up to 4).
func compressionOf(h []byte) int {
	switch {
	case len(h) >= 2 && h[0] == gzipMagic0 && h[1] == gzipMagic1:
		return compGzip
	case len(h) >= 4 && h[0] == 0x28 && h[1] == 0xb5 && h[2] == 0x2f && h[3] == 0xfd:
		return compZstd
	case len(h) >= 4 && h[0] == 0x04 && h[1] == 0x22 && h[2] == 0x4d && h[3] == 0x18,
		len(h) >= 4 && h[0] == 0x02 && h[1] == 0x21 && h[2] == 0x4c && h[3] == 0x18:
		return compLZ4
	}
	return compNone
}

// compressionName is the kind's file suffix, as Input.Describe shows it.
var compressionName = [...]string{compNone: "", compGzip: "gz", compZstd: "zst", compLZ4: "lz4"}

// Zstandard window limit: what the zstd tool itself accepts by default
// (window log 27). A frame that asks for more is refused, so that a hostile
// header cannot make the reader allocate gigabytes.
const zstdMaxWindow = 128 << 20

// decompressor returns the reader of the decompressed stream of kind k
// read from raw, and what to call at the end.
func decompressor(k int, raw io.Reader) (io.Reader, func(), error) {
	switch k {
	case compGzip:
		z, err := newGzipReader(raw)
		if err != nil {
			return nil, nil, err
		}
		return z, func() {}, nil
	case compZstd:
		z, err := zstd.NewReader(bufio.NewReaderSize(raw, gzipInBufSize), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(zstdMaxWindow))
		if err != nil {
			return nil, nil, err
		}
		return z, z.Close, nil
	default:
		return lz4.NewReader(bufio.NewReaderSize(raw, gzipInBufSize)), func() {}, nil
	}
}

// Errors of the gzip reader.
var (
	errGzipHeader   = errors.New("invalid gzip member header")
	errGzipChecksum = errors.New("gzip member checksum mismatch")
	errGzipLength   = errors.New("gzip member length mismatch")
	errGzipTrailing = errors.New("data after the last gzip member is neither a member nor zero padding")
)

// gzip header flags (RFC 1952, section 2.3.1).
const (
	gzFHCRC    = 0x02
	gzFEXTRA   = 0x04
	gzFNAME    = 0x08
	gzFCOMMENT = 0x10
)

// gzipReader reads the members of a gzip stream.
type gzipReader struct {
	br     *bufio.Reader
	fr     io.ReadCloser // klauspost/compress/flate, reset for each member
	crc    uint32
	size   uint32
	in     bool // inside a member's deflate data
	err    error
	header [10]byte
}

func newGzipReader(r io.Reader) (*gzipReader, error) {
	z := &gzipReader{br: bufio.NewReaderSize(r, gzipInBufSize)}
	if err := z.member(); err != nil {
		return nil, err
	}
	return z, nil
}

func (z *gzipReader) Read(p []byte) (int, error) {
	for z.err == nil {
		if !z.in {
			z.err = z.next()
			continue
		}
		n, err := z.fr.Read(p)
		z.crc = crc32.Update(z.crc, crc32.IEEETable, p[:n])
		z.size += uint32(n)
		switch {
		case err == io.EOF:
			z.in = false
			if err := z.trailer(); err != nil {
				z.err = err
			}
		case err != nil:
			z.err = noEOF(err)
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, z.err
}

// next starts the member that follows, or ends the stream (io.EOF) at the
// end of the input or at zero padding.
func (z *gzipReader) next() error {
	b, err := z.br.Peek(1)
	switch {
	case err == io.EOF:
		return io.EOF
	case err != nil:
		return err
	case b[0] == gzipMagic0:
		return z.member()
	case b[0] != 0:
		return errGzipTrailing
	}
	// Zero padding: it must run to the end.
	for {
		if _, err := z.br.Peek(1); err == io.EOF {
			return io.EOF
		} else if err != nil {
			return err
		}
		chunk, _ := z.br.Peek(z.br.Buffered())
		for _, c := range chunk {
			if c != 0 {
				return errGzipTrailing
			}
		}
		z.br.Discard(len(chunk))
	}
}

// member reads a member header and starts its deflate data.
func (z *gzipReader) member() error {
	h := z.header[:]
	if _, err := io.ReadFull(z.br, h); err != nil {
		return noEOF(err)
	}
	if h[0] != gzipMagic0 || h[1] != gzipMagic1 || h[2] != 8 || h[3]&0xe0 != 0 {
		return errGzipHeader // not gzip, not deflate, or reserved flags set
	}
	flags := h[3]
	hcrc := crc32.Update(0, crc32.IEEETable, h)
	if flags&gzFEXTRA != 0 {
		var n [2]byte
		if _, err := io.ReadFull(z.br, n[:]); err != nil {
			return noEOF(err)
		}
		hcrc = crc32.Update(hcrc, crc32.IEEETable, n[:])
		if err := z.skip(int(binary.LittleEndian.Uint16(n[:])), &hcrc); err != nil {
			return err
		}
	}
	for _, f := range []byte{gzFNAME, gzFCOMMENT} {
		if flags&f != 0 {
			if err := z.skipString(&hcrc); err != nil {
				return err
			}
		}
	}
	if flags&gzFHCRC != 0 {
		var c [2]byte
		if _, err := io.ReadFull(z.br, c[:]); err != nil {
			return noEOF(err)
		}
		if binary.LittleEndian.Uint16(c[:]) != uint16(hcrc) {
			return errGzipHeader
		}
	}
	if z.fr == nil {
		z.fr = flate.NewReader(z.br)
	} else if err := z.fr.(flate.Resetter).Reset(z.br, nil); err != nil {
		return err
	}
	z.crc, z.size, z.in = 0, 0, true
	return nil
}

// skip steps over n header octets.
func (z *gzipReader) skip(n int, hcrc *uint32) error {
	for n > 0 {
		b, err := z.br.Peek(min(n, z.br.Size()))
		if len(b) == 0 {
			return noEOF(err)
		}
		*hcrc = crc32.Update(*hcrc, crc32.IEEETable, b)
		z.br.Discard(len(b))
		n -= len(b)
	}
	return nil
}

// skipString steps over a zero-terminated header string of any length.
func (z *gzipReader) skipString(hcrc *uint32) error {
	for {
		b, err := z.br.ReadSlice(0)
		*hcrc = crc32.Update(*hcrc, crc32.IEEETable, b)
		switch {
		case err == nil:
			return nil
		case err != bufio.ErrBufferFull:
			return noEOF(err)
		}
	}
}

// trailer checks a member's CRC-32 and length.
func (z *gzipReader) trailer() error {
	var t [8]byte
	if _, err := io.ReadFull(z.br, t[:]); err != nil {
		return noEOF(err)
	}
	if binary.LittleEndian.Uint32(t[:4]) != z.crc {
		return errGzipChecksum
	}
	if binary.LittleEndian.Uint32(t[4:]) != z.size {
		return errGzipLength
	}
	return nil
}

// noEOF turns an end of input inside a member into a cut stream.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
