package layers_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The ICRC checked against an independent implementation: scapy's
// scapy.contrib.roce (BTH.compute_icrc, RoCEv2 over IPv4 only). The script
// testdata/scapy_roce.py builds frames with scapy and prints them as hex;
// this test recomputes each ICRC with layers.ICRCRoCEv2 and has the
// dissector check the CM frames among them.
//
// scapy must be Debian's (python3-scapy), run by /usr/bin/python3: the
// python3 first on PATH may be another installation without it.

const scapyPython = "/usr/bin/python3"

// requireScapy skips the test unless /usr/bin/python3 can import scapy's
// RoCE layer.
func requireScapy(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(scapyPython); err != nil {
		t.Skipf("%s not found: %v", scapyPython, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, scapyPython, "-c", "import scapy.contrib.roce").CombinedOutput()
	if err != nil {
		t.Skipf("scapy's RoCE layer is not importable by %s (apt-get install python3-scapy): %v: %s",
			scapyPython, err, bytes.TrimSpace(out))
	}
}

// scapyFrames runs the script and returns its frames.
func scapyFrames(t *testing.T) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, scapyPython, filepath.Join("testdata", "scapy_roce.py"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("testdata/scapy_roce.py: %v\n%s", err, stderr.String())
	}
	var frames [][]byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("testdata/scapy_roce.py, line %d: not hex: %v", n, err)
		}
		frames = append(frames, b)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(frames) < 8 {
		t.Fatalf("testdata/scapy_roce.py printed %d frames, want at least 8", len(frames))
	}
	return frames
}

// roceV2 is a RoCEv2 frame cut into what the ICRC covers.
type roceV2 struct {
	ip, udp []byte // IPv4 header (with options) and UDP header
	ib      []byte // BTH up to the ICRC, excluding it
	icrc    uint32 // the stored ICRC, as a number (little-endian on the wire)
	tos     uint8
}

// splitRoCEv2 decodes Ethernet, IPv4 and UDP with gopacket and checks that
// the UDP datagram ends the frame, so that the ICRC is its last 4 octets.
func splitRoCEv2(frame []byte) (roceV2, error) {
	var (
		eth golayers.Ethernet
		ip4 golayers.IPv4
		udp golayers.UDP
	)
	p := gopacket.NewDecodingLayerParser(golayers.LayerTypeEthernet, &eth, &ip4, &udp)
	p.IgnoreUnsupported = true
	var decoded []gopacket.LayerType
	if err := p.DecodeLayers(frame, &decoded); err != nil {
		return roceV2{}, err
	}
	if len(decoded) != 3 || decoded[2] != golayers.LayerTypeUDP {
		return roceV2{}, fmt.Errorf("decoded %v, want Ethernet, IPv4, UDP", decoded)
	}
	if ip4.Flags&golayers.IPv4MoreFragments != 0 || ip4.FragOffset != 0 {
		return roceV2{}, fmt.Errorf("IPv4 fragment")
	}
	pay := udp.Payload
	if len(pay) < layers.BTHLen+layers.ICRCLen {
		return roceV2{}, fmt.Errorf("UDP payload of %d octets holds no BTH and ICRC", len(pay))
	}
	ipStart := len(eth.Contents)
	udpStart := ipStart + len(ip4.Contents)
	if end := udpStart + int(udp.Length); end != len(frame) {
		return roceV2{}, fmt.Errorf("UDP datagram ends at %d, the frame at %d", end, len(frame))
	}
	return roceV2{
		ip:   frame[ipStart:udpStart],
		udp:  frame[udpStart : udpStart+8],
		ib:   frame[udpStart+8 : len(frame)-layers.ICRCLen],
		icrc: binary.LittleEndian.Uint32(frame[len(frame)-layers.ICRCLen:]),
		tos:  ip4.TOS,
	}, nil
}

// isCMFrame reports whether a BTH (and what follows) is a UD SEND Only
// carrying a Communication Manager MAD.
func isCMFrame(ib []byte) bool {
	const madAt = layers.BTHLen + layers.DETHLen
	return len(ib) >= madAt+layers.MADLen && ib[0] == layers.OpUDSendOnly && ib[madAt+1] == layers.MgmtClassCM
}

// ICRCScapy: every ICRC scapy computes is the one layers.ICRCRoCEv2
// computes; changing a covered octet changes it, changing a variant field
// (TOS, TTL, header checksum, UDP checksum, the FECN/BECN octet) does not;
// the dissector finds the ICRC of scapy's CM frames valid.
func TestICRCScapy(t *testing.T) {
	requireScapy(t)
	frames := scapyFrames(t)

	var cm []int // indexes of the frames that carry a CM MAD
	for i, f := range frames {
		r, err := splitRoCEv2(f)
		if err != nil {
			t.Fatalf("scapy frame %d: %v", i, err)
		}
		if isCMFrame(r.ib) {
			cm = append(cm, i)
		}
		name := fmt.Sprintf("frame%02d_op%02x_ib%d_tos%02x", i, r.ib[0], len(r.ib), r.tos)
		t.Run(name, func(t *testing.T) {
			got := layers.ICRCRoCEv2(r.ip, r.udp, r.ib)
			if got != r.icrc {
				t.Fatalf("ICRC: computed 0x%08x, scapy stored 0x%08x (octets %x)", got, r.icrc, f[len(f)-4:])
			}

			// Negative: one flipped bit in what the ICRC covers. The
			// payload's last octet, or the PSN's low bit when the packet
			// has no payload after the BTH.
			g := append([]byte(nil), f...)
			bad, err := splitRoCEv2(g)
			if err != nil {
				t.Fatal(err)
			}
			where := "last payload octet"
			at := len(bad.ib) - 1
			if len(bad.ib) == layers.BTHLen {
				where, at = "PSN", 11
			}
			bad.ib[at] ^= 0x01
			if c := layers.ICRCRoCEv2(bad.ip, bad.udp, bad.ib); c == r.icrc {
				t.Errorf("ICRC unchanged (0x%08x) after flipping a bit of the %s", c, where)
			}
			// One flipped bit of the IPv4 destination address (covered).
			g = append(g[:0], f...)
			bad, _ = splitRoCEv2(g)
			bad.ip[19] ^= 0x80
			if c := layers.ICRCRoCEv2(bad.ip, bad.udp, bad.ib); c == r.icrc {
				t.Errorf("ICRC unchanged (0x%08x) after flipping a bit of the IPv4 destination", c)
			}

			// The variant fields are masked: changing them keeps the ICRC.
			g = append(g[:0], f...)
			v, _ := splitRoCEv2(g)
			v.ip[1] ^= 0xff           // TOS (DSCP, ECN)
			v.ip[8] ^= 0x5a           // TTL
			v.ip[10] ^= 0x12          // header checksum
			v.ip[11] ^= 0x34          //
			v.udp[6], v.udp[7] = 0, 0 // UDP checksum
			v.ib[4] ^= 0xc2           // FECN, BECN, a reserved bit
			if c := layers.ICRCRoCEv2(v.ip, v.udp, v.ib); c != r.icrc {
				t.Errorf("ICRC changed to 0x%08x (from 0x%08x) when only variant fields changed", c, r.icrc)
			}
		})
	}
	if len(cm) == 0 {
		t.Fatal("scapy built no frame carrying a CM MAD")
	}

	t.Run("dissector", func(t *testing.T) {
		// Every scapy frame, then each CM frame again with one bit of its
		// private data flipped (the ICRC left as it was).
		all := append([][]byte(nil), frames...)
		wantValid := map[int]bool{} // frame number -> expected validity
		for _, i := range cm {
			wantValid[i+1] = true
		}
		for _, i := range cm {
			g := append([]byte(nil), frames[i]...)
			g[len(g)-layers.ICRCLen-1] ^= 0x10
			all = append(all, g)
			wantValid[len(all)] = false
		}
		name := filepath.Join(t.TempDir(), "scapy.pcap")
		writePcap(t, name, all)

		var msgs []*record.Message
		_, err := dissect.Run(context.Background(), []string{name}, nil, dissect.Config{},
			sinkFunc(func(m *record.Message) error { msgs = append(msgs, m); return nil }))
		if err != nil {
			t.Fatalf("dissect.Run: %v", err)
		}
		seen := map[int]bool{}
		for _, m := range msgs {
			want, ok := wantValid[m.Frame]
			if !ok {
				t.Errorf("frame %d: dissector reports a %s where scapy built no CM MAD", m.Frame, m.Name())
				continue
			}
			seen[m.Frame] = true
			frame := all[m.Frame-1]
			stored := binary.LittleEndian.Uint32(frame[len(frame)-layers.ICRCLen:])
			if m.IB == nil || m.IB.ICRC == nil {
				t.Errorf("frame %d (%s): dissector reports no ICRC", m.Frame, m.Name())
				continue
			}
			c := m.IB.ICRC
			if c.Value != stored {
				t.Errorf("frame %d (%s): ICRC value 0x%08x, stored 0x%08x", m.Frame, m.Name(), c.Value, stored)
			}
			if c.Valid != want {
				t.Errorf("frame %d (%s): ICRC valid = %v, want %v (value 0x%08x, computed 0x%08x)",
					m.Frame, m.Name(), c.Valid, want, c.Value, c.Computed)
			}
			if want && c.Computed != stored {
				t.Errorf("frame %d (%s): computed ICRC 0x%08x, scapy's 0x%08x", m.Frame, m.Name(), c.Computed, stored)
			}
		}
		for f := range wantValid {
			if !seen[f] {
				t.Errorf("frame %d: scapy built a CM MAD the dissector does not report", f)
			}
		}
		t.Logf("%d frames written, %d CM messages checked (%d with a corrupted bit)", len(all), len(msgs), len(cm))
	})
}

type sinkFunc func(*record.Message) error

func (f sinkFunc) Message(m *record.Message) error     { return f(m) }
func (f sinkFunc) Connection(*record.Connection) error { return nil }
func (f sinkFunc) Summary(*record.Summary) error       { return nil }
func (sinkFunc) RPC(*record.RPC) error                 { return nil }
func (sinkFunc) Update(*record.ConnectionUpdate) error { return nil }

func writePcap(t *testing.T, name string, frames [][]byte) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, golayers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, b := range frames {
		ci := gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(b), Length: len(b)}
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Known vectors: scapy's own RoCE unit tests (test/contrib/roce.uts in the
// scapy sources) hold frames captured on ConnectX adapters, as hex dumps
// given to import_hexcap, each followed by the ICRC scapy must read from
// it. Debian's python3-scapy does not install the tests; the vectors are
// read at run time from wherever a roce.uts is found (SCAPY_ROCE_UTS names
// one explicitly) and never copied here. Frames that scapy builds from
// field values in that file are not used: only complete captured frames.

// scapyUTSFiles lists the roce.uts files on this machine.
func scapyUTSFiles() []string {
	var found []string
	seen := map[string]bool{}
	add := func(p string) {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && !seen[p] {
			seen[p] = true
			found = append(found, p)
		}
	}
	if p := os.Getenv("SCAPY_ROCE_UTS"); p != "" {
		add(p)
	}
	var roots []string
	if _, err := os.Stat(scapyPython); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, scapyPython, "-c",
			"import os, scapy; print(os.path.dirname(os.path.abspath(scapy.__file__)))").Output()
		cancel()
		if err == nil {
			dir := strings.TrimSpace(string(out))
			roots = append(roots, filepath.Join(dir, "test"), filepath.Join(dir, "..", "test"))
		}
	}
	roots = append(roots, "/usr/share/doc/python3-scapy", "/usr/share/scapy", "/usr/local/share/scapy")
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if !d.IsDir() && (d.Name() == "roce.uts" || d.Name() == "roce.uts.gz") {
				add(p)
			}
			return nil
		})
	}
	return found
}

type knownVector struct {
	source, name string
	frame        []byte
	want         uint32 // the ICRC scapy asserts, as scapy reads it (big-endian)
}

var (
	hexcapRE = regexp.MustCompile(`import_hexcap\('''`)
	icrcRE   = regexp.MustCompile(`icrc\s*==\s*0x([0-9a-fA-F]{1,8})\b`)
	// A line of a hex dump, as scapy's import_hexcap reads it: an optional
	// offset, then up to 16 octets.
	hexcapLineRE = regexp.MustCompile(`^\s*((?:0x)?[0-9a-fA-F]{2,}[ :\t]{0,3}|) *((?:[0-9a-fA-F]{2} {0,2}){0,16})`)
)

// parseUTS finds the import_hexcap frames of a scapy .uts file that are
// followed, within the same test, by an assertion of their ICRC.
func parseUTS(name string, text string) ([]knownVector, error) {
	var vs []knownVector
	for _, loc := range hexcapRE.FindAllStringIndex(text, -1) {
		body := text[loc[1]:]
		end := strings.Index(body, "'''")
		if end < 0 {
			return nil, fmt.Errorf("%s: unterminated import_hexcap at offset %d", name, loc[0])
		}
		var frame []byte
		for _, line := range strings.Split(body[:end], "\n") {
			m := hexcapLineRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			b, err := hex.DecodeString(strings.ReplaceAll(m[2], " ", ""))
			if err != nil {
				return nil, fmt.Errorf("%s: hex dump at offset %d: %v", name, loc[0], err)
			}
			frame = append(frame, b...)
		}
		// The ICRC asserted in the rest of this test.
		rest := body[end+3:]
		if i := strings.Index(rest, "\n= "); i >= 0 {
			rest = rest[:i]
		}
		if i := hexcapRE.FindStringIndex(rest); i != nil {
			rest = rest[:i[0]]
		}
		m := icrcRE.FindStringSubmatch(rest)
		if m == nil || len(frame) == 0 {
			continue
		}
		var want uint32
		fmt.Sscanf(m[1], "%x", &want)
		title := "frame"
		if i := strings.LastIndex(text[:loc[0]], "\n= "); i >= 0 {
			title = strings.TrimSpace(strings.SplitN(text[i+3:], "\n", 2)[0])
		}
		vs = append(vs, knownVector{source: name, name: title, frame: frame, want: want})
	}
	return vs, nil
}

func readMaybeGzip(name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return "", err
		}
		if b, err = io.ReadAll(zr); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

// icrcOfFrame computes the ICRC of an Ethernet frame carrying RoCEv2 over
// IPv4 or IPv6, or RoCEv1, and returns it with the stored one.
func icrcOfFrame(f []byte) (computed, stored uint32, kind string, err error) {
	if len(f) < 14 {
		return 0, 0, "", fmt.Errorf("frame of %d octets", len(f))
	}
	et := binary.BigEndian.Uint16(f[12:14])
	off := 14
	for (et == 0x8100 || et == 0x88a8) && len(f) >= off+4 {
		et = binary.BigEndian.Uint16(f[off+2 : off+4])
		off += 4
	}
	var ip, udp, ib []byte
	switch et {
	case 0x0800:
		kind = "RoCEv2/IPv4"
		if len(f) < off+20 {
			return 0, 0, kind, fmt.Errorf("short IPv4 header")
		}
		ihl := int(f[off]&0x0f) * 4
		if len(f) < off+ihl+8 || f[off+9] != 17 {
			return 0, 0, kind, fmt.Errorf("not UDP over IPv4")
		}
		ip, udp = f[off:off+ihl], f[off+ihl:off+ihl+8]
		end := off + ihl + int(binary.BigEndian.Uint16(udp[4:6]))
		if end > len(f) || end < off+ihl+8+layers.BTHLen+layers.ICRCLen {
			return 0, 0, kind, fmt.Errorf("UDP length %d does not fit", end)
		}
		ib = f[off+ihl+8 : end]
	case 0x86dd:
		kind = "RoCEv2/IPv6"
		if len(f) < off+48 || f[off+6] != 17 {
			return 0, 0, kind, fmt.Errorf("not UDP over IPv6 without extension headers")
		}
		ip, udp = f[off:off+40], f[off+40:off+48]
		end := off + 40 + int(binary.BigEndian.Uint16(udp[4:6]))
		if end > len(f) || end < off+48+layers.BTHLen+layers.ICRCLen {
			return 0, 0, kind, fmt.Errorf("UDP length %d does not fit", end)
		}
		ib = f[off+48 : end]
	case layers.EtherTypeRoCEv1:
		kind = "RoCEv1"
		if len(f) < off+layers.GRHLen {
			return 0, 0, kind, fmt.Errorf("short GRH")
		}
		grh := f[off : off+layers.GRHLen]
		end := off + layers.GRHLen + int(binary.BigEndian.Uint16(grh[4:6]))
		if end > len(f) || end < off+layers.GRHLen+layers.BTHLen+layers.ICRCLen {
			return 0, 0, kind, fmt.Errorf("GRH payload length does not fit")
		}
		ib = f[off+layers.GRHLen : end]
		stored = binary.LittleEndian.Uint32(ib[len(ib)-4:])
		return layers.ICRCGRH(grh, ib[:len(ib)-4]), stored, kind, nil
	default:
		return 0, 0, "", fmt.Errorf("EtherType 0x%04x is not RoCE", et)
	}
	stored = binary.LittleEndian.Uint32(ib[len(ib)-4:])
	return layers.ICRCRoCEv2(ip, udp, ib[:len(ib)-4]), stored, kind, nil
}

// ICRCScapyKnownVectors: the ICRC of the captured frames in scapy's RoCE
// unit tests, read from an installed roce.uts.
func TestICRCScapyKnownVectors(t *testing.T) {
	files := scapyUTSFiles()
	if len(files) == 0 {
		t.Skip("no scapy roce.uts on this machine (python3-scapy does not install its tests; " +
			"set SCAPY_ROCE_UTS to test/contrib/roce.uts of a scapy source tree)")
	}
	var vs []knownVector
	for _, name := range files {
		text, err := readMaybeGzip(name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := parseUTS(name, text)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v...)
	}
	if len(vs) == 0 {
		t.Skipf("%s: no captured frame with an asserted ICRC", strings.Join(files, ", "))
	}
	for i, v := range vs {
		t.Run(fmt.Sprintf("%02d_%s", i, v.name), func(t *testing.T) {
			computed, stored, kind, err := icrcOfFrame(v.frame)
			if err != nil {
				t.Fatalf("%s: %s: %v", v.source, v.name, err)
			}
			// scapy reads the ICRC as a big-endian number; its value is the
			// little-endian one.
			want := bits.ReverseBytes32(v.want)
			if stored != want {
				t.Errorf("%s: %s: frame stores ICRC 0x%08x, the test asserts 0x%08x (scapy's reading 0x%08x)",
					v.source, v.name, stored, want, v.want)
			}
			if computed != want {
				t.Errorf("%s: %s (%s): computed ICRC 0x%08x, scapy's test asserts 0x%08x (scapy's reading 0x%08x)",
					v.source, v.name, kind, computed, want, v.want)
			}
			t.Logf("%s, %d octets, ICRC 0x%08x", kind, len(v.frame), computed)
		})
	}
}
