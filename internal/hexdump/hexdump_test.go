package hexdump

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// blob is 8 octets of RFC 8797 data followed by ASCII letters, so that the
// dumps' ASCII columns hold hex-looking text ("ABCDEF") that must be
// skipped, and a run of zeros that hexdump folds into "*".
var blob = append(append([]byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03}, []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ")...),
	make([]byte, 70)...)

func TestParse(t *testing.T) {
	want8 := blob[:8]
	for _, tc := range []struct {
		name string
		text string
		want []byte
	}{
		{"plain", "f6ab0e18 01 01 03 03", want8},
		{"0x and commas", "0xf6,0xab,0x0e,0x18,0x01,0x01,0x03,0x03", want8},
		{"colons", "f6:ab:0e:18:01:01:03:03", want8},
		{"dashes and lines", "f6-ab-0e-18\n01-01-03-03\n", want8},
		{"xxd -p", "f6ab0e1801010303\n", want8},
		{"xxd", "00000000: f6ab 0e18 0101 0303                      ........\n", want8},
		{"xxd, split by the shell", "00000000: f6ab 0e18 0101 0303 ........", want8},
		{"xxd, ASCII that looks like hex", "00000000: f6ab 0e18 0101 0303 4142 4344 4546 4748  ........ABCDEFGH\n" +
			"00000010: 494a                                     IJ\n", blob[:18]},
		{"hexdump -C", "00000000  f6 ab 0e 18 01 01 03 03  41 42 43 44 45 46 47 48  |........ABCDEFGH|\n" +
			"00000010  49 4a                                             |IJ|\n00000012\n", blob[:18]},
		{"hexdump -C with a repeat", "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n*\n" +
			"00000030  01                                                |.|\n00000031\n", append(make([]byte, 48), 1)},
		{"hexdump -C ending in a repeat", "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n*\n00000040\n",
			make([]byte, 64)},
		{"tcpdump -X", "\t0x0000:  f6ab 0e18 0101 0303 4142 4344 4546 4748  ........ABCDEFGH\n\t0x0010:  494a                                     IJ\n",
			blob[:18]},
		{"tcpdump -x", "\t0x0000:  f6ab 0e18 0101 0303\n", want8},
		{"tshark -x", "0000  f6 ab 0e 18 01 01 03 03 41 42 43 44 45 46 47 48   ........ABCDEFGH\n0010  49 4a                                             IJ\n",
			blob[:18]},
		{"rdmacm-pd -x", "       Private Data\n" +
			"       0000  f6 ab 0e 18 01 01 03 03  00 00 00 00 00 00 00 00 |................|\n" +
			"             ^^ ^^ ^^ ^^ ^^ ^^ ^^ ^^\n" +
			"       0010  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00 |................|\n" +
			"       *\n" +
			"       0030  00 00 00 00                                      |....|\n",
			append(append([]byte(nil), want8...), make([]byte, 44)...)},
	} {
		got, err := Parse(tc.text)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %x, %v; want %x", tc.name, got, err, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"zz", `"zz" is not hex ("z" at 1)`},
		{"0xf6,0xag", `"0xag" is not hex ("g" at 4)`},
		{"f6a", "odd number of hex digits (3): each octet is two"},
		{"  \n", "no hex digits"},
		{"00000000: f6ab 0e18\n00000010: 0101 0303\n", "line 2: offset 0x10, but the lines before hold 0x4 octets"},
		{"00000000: f6ab 0e18\nhello\n", `line 2: "hello" does not start with an offset, as the dump's other lines do`},
		{"00000000: f6ab 0e1\n", `line 1: "0e1" is not hex octets`},
		{"00000000  f6 ab  |..|\n*\n00000005\n", "line 3: offset 0x5 does not follow the repeated line before it"},
		{"00000000  00 00  |..|\n*\nffffffff00\n", "line 3: offset 0xffffffff00 is beyond 1048576 octets: too long for private data"},
	} {
		_, err := Parse(tc.text)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}

// TestParseToolOutput feeds the dumps the real tools write of the same
// octets (each skipped when the tool is absent).
func TestParseToolOutput(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "blob.bin")
	if err := os.WriteFile(bin, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tool := range [][]string{{"xxd", bin}, {"xxd", "-g1", bin}, {"xxd", "-p", bin}, {"xxd", "-i", bin},
		{"hexdump", "-C", bin}, {"od", "-An", "-tx1", "-v", bin}} {
		path, err := exec.LookPath(tool[0])
		if err != nil {
			t.Logf("%s: not installed", tool[0])
			continue
		}
		out, err := exec.Command(path, tool[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v", tool, err)
		}
		text := string(out)
		if tool[1] == "-i" { // a C array: the octets only
			text = text[strings.Index(text, "{")+1 : strings.Index(text, "}")]
		}
		got, err := Parse(text)
		if err != nil || !bytes.Equal(got, blob) {
			t.Errorf("%v:\n%s\ngot %s, %v", tool, out, hex.EncodeToString(got), err)
		}
	}
}

// FuzzParse: any text parses or fails without a panic, and the plain hex
// and the xxd-style dump of any octets read back as those octets.
func FuzzParse(f *testing.F) {
	f.Add("00000000: f6ab 0e18 0101 0303  ........\n", []byte{1, 2, 3})
	f.Add("00000000  00 00  |..|\n*\n00000010\n", []byte{})
	f.Add("\t0x0000:  4500 0054  E..T\n", []byte{0xff})
	f.Fuzz(func(t *testing.T, text string, b []byte) {
		Parse(text)
		if len(b) == 0 {
			return
		}
		if got, err := Parse(hex.EncodeToString(b)); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("plain %x: %x, %v", b, got, err)
		}
		var dump strings.Builder
		for off := 0; off < len(b); off += 16 {
			line := b[off:min(off+16, len(b))]
			dump.WriteString(strings.ToLower(hex.EncodeToString([]byte{byte(off >> 24), byte(off >> 16), byte(off >> 8), byte(off)})) + ": ")
			for i := 0; i < len(line); i += 2 {
				dump.WriteString(hex.EncodeToString(line[i:min(i+2, len(line))]) + " ")
			}
			dump.WriteString("  " + strings.Repeat(".", len(line)) + "\n")
		}
		if got, err := Parse(dump.String()); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("dump of %x:\n%s\n%x, %v", b, dump.String(), got, err)
		}
	})
}
