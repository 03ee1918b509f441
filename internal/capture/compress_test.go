package capture

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

func zst(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedDefault))
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

func lz4Frame(t testing.TB, b []byte, legacy bool) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := lz4.NewWriter(&out)
	if legacy {
		if err := zw.Apply(lz4.LegacyOption(true)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// gzHeader returns a gzip member of b whose header carries a file name and
// a comment of the given lengths, and a header CRC.
func gzHeader(t testing.TB, b []byte, name, comment int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Name = strings.Repeat("n", name)
	zw.Comment = strings.Repeat("c", comment)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestCompression: every compression reads as the plain file does, by
// content, in one piece and one octet at a time; gzip with a name and a
// comment of any length, members one after the other, and zero padding
// after the last.
func TestCompression(t *testing.T) {
	plain, _ := bigFile(300<<10, 5000)
	_, want, err := readBytes(plain, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	half := len(plain) / 2
	long := gz(t, plain, gzip.BestSpeed)
	// A 600-octet name and a 70000-octet comment: gzip -t and tshark take
	// them, compress/gzip stops at 511.
	named := gzHeader(t, plain, 600, 0)
	named[3] |= 0x10 // FCOMMENT, spliced in after the name
	at := 10 + 600 + 1
	named = append(append(append([]byte(nil), named[:at]...), append(bytes.Repeat([]byte("c"), 70000), 0)...), named[at:]...)
	for _, tc := range []struct {
		name, comp string
		file       []byte
	}{
		{"gzip", "gz", long},
		{"gzip with a long name and comment", "gz", named},
		{"gzip, two members", "gz", append(gz(t, plain[:half], gzip.BestCompression), gz(t, plain[half:], gzip.NoCompression)...)},
		{"gzip, 512 zero octets of padding", "gz", append(bytes.Clone(long), make([]byte, 512)...)},
		{"gzip, padding after two members", "gz", append(append(gz(t, plain[:half], 1), gz(t, plain[half:], 1)...), make([]byte, 70000)...)},
		{"zstd", "zst", zst(t, plain)},
		{"zstd, two frames", "zst", append(zst(t, plain[:half]), zst(t, plain[half:])...)},
		{"lz4", "lz4", lz4Frame(t, plain, false)},
		{"lz4, two frames", "lz4", append(lz4Frame(t, plain[:half], false), lz4Frame(t, plain[half:], false)...)},
		{"lz4 legacy", "lz4", lz4Frame(t, plain, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneByte := range []bool{false, true} {
				var src io.Reader = bytes.NewReader(tc.file)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				for _, ahead := range []bool{false, true} {
					if oneByte && ahead {
						continue
					}
					r, err := NewReader(src, ReaderOptions{Readahead: ahead})
					if err != nil {
						t.Fatal(err)
					}
					frames, err := readAll(r)
					if err != nil {
						t.Fatalf("one octet %v: %v", oneByte, err)
					}
					sameFrames(t, frames, want)
					if !r.Compressed() || r.Compression() != tc.comp {
						t.Errorf("Compression %q, want %q", r.Compression(), tc.comp)
					}
					r.Close()
					src = bytes.NewReader(tc.file)
				}
			}
		})
	}
	// gzip's own tool agrees about the name, the comment and the padding.
	if _, err := exec.LookPath("gzip"); err == nil {
		cmd := exec.Command("gzip", "-t")
		cmd.Stdin = bytes.NewReader(named)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("gzip -t on the long-named member: %v %s", err, out)
		}
	}
}

// TestCompressionErrors: damage in each compressed format is one error,
// after the frames before it.
func TestCompressionErrors(t *testing.T) {
	plain, _ := bigFile(300<<10, 5000)
	long := gz(t, plain, gzip.BestSpeed)
	for _, tc := range []struct {
		name, msg string
		file      []byte
		kind      error
	}{
		{"gzip then garbage", "corrupt gzip stream: data after the last gzip member is neither a member nor zero padding",
			append(bytes.Clone(long), 0, 0, 'x'), ErrGzip},
		{"gzip, a damaged header CRC", "corrupt gzip stream: invalid gzip member header", func() []byte {
			b := gzHeader(t, plain, 3, 0)
			b[3] |= 0x02 // FHCRC, with two wrong octets spliced in after the name
			return append(append(append([]byte(nil), b[:14]...), 0xde, 0xad), b[14:]...)
		}(), ErrGzip},
		{"zstd cut short", "zstd stream cut short", func() []byte { b := zst(t, plain); return b[:len(b)/2] }(), ErrTruncated},
		{"lz4 cut short", "lz4 stream cut short", func() []byte { b := lz4Frame(t, plain, false); return b[:len(b)/2] }(), ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.file), ReaderOptions{})
			if err == nil {
				_, err = readAll(r)
			}
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !errors.Is(err, tc.kind) {
				t.Errorf("error %v, want %q (%v)", err, tc.msg, tc.kind)
			}
		})
	}
}
