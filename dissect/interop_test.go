package dissect_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Interoperability with Wireshark: for every sample capture in pcaps/ and
// every third-party capture in ../shared/captures/real/ (read in place,
// never copied), the dissector and tshark must find the same CM frames and
// agree, frame by frame, on the transport headers, the MAD transaction ID,
// the CM identifiers, the private data and the CRCs.
//
// tshark 4.0 decodes the CM messages REQ, REP, RTU, REJ, DREQ and DREP; the
// others (MRA, SIDR, LAP, APR) are left out on both sides. Quirks handled:
//   - link type 247 (LINKTYPE_INFINIBAND) is unknown to tshark: a copy of
//     the file with link type 147 (USER0) is decoded as InfiniBand through
//     a user DLT;
//   - with an IP CM Service ID, infiniband.cm.req.private is absent and
//     infiniband.cm.req.ip_cm.private holds only the 56 octets after the
//     36-octet IP CM header;
//   - tshark shows the ICRC and VCRC as big-endian numbers; the dissector
//     keeps the numbers they stand for, stored least-significant octet
//     first.

// interopRealDir is where the third-party captures are, seen from this
// package's directory; RDMACM_REAL_CAPTURES overrides it.
func interopRealDir() string {
	if d := os.Getenv("RDMACM_REAL_CAPTURES"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "captures", "real")
}

// interopCMs are the messages tshark decodes, by attribute ID, with the
// tshark fields of their Comm IDs and private data.
var interopCMs = map[uint16]struct {
	name, local, remote, private string
}{
	layers.AttrREQ:  {"REQ", "infiniband.cm.req", "", "infiniband.cm.req.private"},
	layers.AttrREP:  {"REP", "infiniband.cm.rep", "infiniband.cm.rep.remotecommid", "infiniband.cm.rep.private"},
	layers.AttrRTU:  {"RTU", "infiniband.cm.rtu.localcommid", "infiniband.cm.rtu.remotecommid", "infiniband.cm.rtu.private"},
	layers.AttrREJ:  {"REJ", "infiniband.cm.rej.localcommid", "infiniband.cm.rej.remotecommid", "infiniband.cm.rej.private"},
	layers.AttrDREQ: {"DREQ", "infiniband.cm.dreq.localcommid", "infiniband.cm.dreq.remotecommid", "infiniband.cm.dreq.private"},
	layers.AttrDREP: {"DREP", "infiniband.cm.drsp.localcommid", "infiniband.cm.drsp.remotecommid", "infiniband.cm.drsp.private"},
}

// interopFields are the tshark fields read, in column order.
var interopFields = func() []string {
	f := []string{
		"frame.number",
		"infiniband.mad.attributeid",
		"infiniband.bth.opcode", "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.psn",
		"infiniband.deth.q_key", "infiniband.deth.srcqp",
		"infiniband.mad.transactionid",
		"infiniband.cm.req.serviceid",
		"infiniband.cm.req.ip_cm.majv", "infiniband.cm.req.ip_cm.minv", "infiniband.cm.req.ip_cm.ipv",
		"infiniband.cm.req.ip_cm.sport",
		"infiniband.cm.req.ip_cm.sip4", "infiniband.cm.req.ip_cm.dip4",
		"infiniband.cm.req.ip_cm.sip6", "infiniband.cm.req.ip_cm.dip6",
		"infiniband.cm.req.ip_cm.private",
		"infiniband.invariant.crc", "infiniband.variant.crc",
	}
	attrs := make([]int, 0, len(interopCMs))
	for a := range interopCMs {
		attrs = append(attrs, int(a))
	}
	sort.Ints(attrs)
	for _, a := range attrs {
		c := interopCMs[uint16(a)]
		f = append(f, c.local)
		if c.remote != "" {
			f = append(f, c.remote)
		}
		f = append(f, c.private)
	}
	return f
}()

// interopRow is one frame as tshark printed it: field name -> value text.
type interopRow map[string]string

func TestInteropTshark(t *testing.T) {
	tshark, err := lookTshark()
	if err != nil {
		t.Skip("tshark not found (apt-get install tshark): the interoperability test needs it")
	}
	groups := []struct {
		name, dir string
		optional  bool
	}{
		{"pcaps", filepath.Join("..", "pcaps"), false},
		{"real", interopRealDir(), true},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			if st, err := os.Stat(g.dir); err != nil || !st.IsDir() {
				if g.optional {
					t.Skipf("%s: no third-party captures here (%v)", g.dir, err)
				}
				t.Fatalf("%s: %v", g.dir, err)
			}
			files := interopCaptures(t, g.dir)
			if len(files) == 0 {
				t.Fatalf("%s: no capture files", g.dir)
			}
			for _, file := range files {
				t.Run(filepath.Base(file), func(t *testing.T) {
					t.Parallel()
					interopCompare(t, tshark, file)
				})
			}
		})
	}
}

// interopCaptures lists the capture files of a folder.
func interopCaptures(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := strings.ToLower(e.Name())
		n = strings.TrimSuffix(n, ".gz")
		if e.Type().IsRegular() && (strings.HasSuffix(n, ".pcap") || strings.HasSuffix(n, ".pcapng") || strings.HasSuffix(n, ".cap")) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// interopCompare runs both dissectors over one file and compares them.
func interopCompare(t *testing.T, tshark, file string) {
	// Our side.
	var ours []*record.Message
	_, err := dissect.Run(context.Background(), []string{file}, nil, dissect.Config{}, interopSink(func(m *record.Message) error {
		if m.Transport != record.IWARP {
			if _, ok := interopCMs[m.AttributeID]; ok {
				ours = append(ours, m)
			}
		}
		return nil
	}))
	if err != nil {
		t.Errorf("%s: dissect.Run: %v", file, err)
	}
	byFrame := map[int]*record.Message{}
	for _, m := range ours {
		if byFrame[m.Frame] != nil {
			t.Errorf("%s frame %d: the dissector reports two CM messages", file, m.Frame)
		}
		byFrame[m.Frame] = m
	}

	// tshark's side.
	rows := interopTshark(t, tshark, file)
	theirs := map[int]interopRow{}
	for _, r := range rows {
		n, err := strconv.Atoi(r["frame.number"])
		if err != nil {
			t.Fatalf("%s: tshark frame number %q: %v", file, r["frame.number"], err)
		}
		attr, err := interopNum(r["infiniband.mad.attributeid"])
		if err != nil {
			t.Errorf("%s frame %d: tshark attribute ID %q: %v", file, n, r["infiniband.mad.attributeid"], err)
			continue
		}
		if _, ok := interopCMs[uint16(attr)]; ok {
			theirs[n] = r
		}
	}

	// The same frames on both sides.
	c := &interopCmp{t: t, file: file}
	var frames []int
	for n := range theirs {
		if byFrame[n] == nil {
			c.frame = n
			c.errorf("frame set", "tshark decodes a CM %s, the dissector reports nothing",
				interopCMs[uint16(mustNum(theirs[n]["infiniband.mad.attributeid"]))].name)
			continue
		}
		frames = append(frames, n)
	}
	for n, m := range byFrame {
		if theirs[n] == nil {
			c.frame = n
			c.errorf("frame set", "the dissector reports a CM %s, tshark decodes none", m.Name())
		}
	}
	sort.Ints(frames)

	for _, n := range frames {
		c.frame = n
		c.compare(theirs[n], byFrame[n])
	}
	t.Logf("%s: %d CM frames by tshark, %d by the dissector; %d frames and %d fields compared, %d mismatches",
		file, len(theirs), len(byFrame), len(frames), c.fields, c.mismatches)
}

type interopSink func(*record.Message) error

func (f interopSink) Message(m *record.Message) error     { return f(m) }
func (f interopSink) Connection(*record.Connection) error { return nil }
func (f interopSink) Summary(*record.Summary) error       { return nil }
func (interopSink) RPC(*record.RPC) error                 { return nil }

// interopTshark runs tshark over a file and returns its rows.
func interopTshark(t *testing.T, tshark, file string) []interopRow {
	t.Helper()
	input, opts := interopTsharkInput(t, file)
	args := append([]string{"-n", "-r", input}, opts...)
	args = append(args, "-Y", "infiniband.mad.mgmtclass==7", "-T", "fields", "-E", "occurrence=f", "-E", "header=n")
	for _, f := range interopFields {
		args = append(args, "-e", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tshark, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: tshark %s: %v\n%s", file, strings.Join(args, " "), err, stderr.String())
	}
	var rows []interopRow
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != len(interopFields) {
			t.Fatalf("%s: tshark printed %d columns, want %d: %q", file, len(cols), len(interopFields), line)
		}
		r := interopRow{}
		for i, f := range interopFields {
			r[f] = strings.TrimSpace(cols[i])
		}
		rows = append(rows, r)
	}
	return rows
}

// The user DLT through which tshark decodes link type 147 as InfiniBand.
const interopUserDLT = `uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""`

// interopTsharkInput returns the file tshark should read, and options:
// for link type 247, a copy in a temporary folder patched to link type 147
// with the user DLT that decodes it as InfiniBand.
func interopTsharkInput(t *testing.T, file string) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			// compress/gzip refuses what tshark reads (a header name over
			// 511 octets): tshark decompresses the file itself.
			return file, nil
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if !interopPatchLinkType(b, layers.LinkTypeIB, 147) {
		return file, nil
	}
	name := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(file), ".gz"))
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, []string{"-o", interopUserDLT}
}

// interopPatchLinkType rewrites link type from to link type to in a pcap
// file header or in the interface blocks of a pcapng file, in place, and
// reports whether it changed anything.
func interopPatchLinkType(b []byte, from, to uint16) bool {
	if len(b) < 24 {
		return false
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(b[0:4]) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	case 0x0a0d0d0a:
		return interopPatchPcapng(b, from, to)
	default:
		return false
	}
	// The link type is the low 16 bits of the 32-bit field (the high bits
	// can hold FCS information).
	lt := bo.Uint32(b[20:24])
	if uint16(lt) != from {
		return false
	}
	bo.PutUint32(b[20:24], lt&0xffff0000|uint32(to))
	return true
}

func interopPatchPcapng(b []byte, from, to uint16) bool {
	var bo binary.ByteOrder = binary.LittleEndian
	changed := false
	for off := 0; off+12 <= len(b); {
		typ := binary.LittleEndian.Uint32(b[off:]) // 0x0a0d0d0a reads the same both ways
		if typ == 0x0a0d0d0a {
			switch binary.LittleEndian.Uint32(b[off+8:]) {
			case 0x1a2b3c4d:
				bo = binary.LittleEndian
			case 0x4d3c2b1a:
				bo = binary.BigEndian
			default:
				return changed
			}
		} else {
			typ = bo.Uint32(b[off:])
		}
		n := int(bo.Uint32(b[off+4:]))
		if n < 12 || off+n > len(b) {
			return changed
		}
		if typ == 1 && n >= 20 && bo.Uint16(b[off+8:]) == from { // Interface Description Block
			bo.PutUint16(b[off+8:], to)
			changed = true
		}
		off += n
	}
	return changed
}

// interopNum parses a number as tshark prints it: 0x-prefixed hex or
// decimal.
func interopNum(s string) (uint64, error) {
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

func mustNum(s string) uint64 {
	n, _ := interopNum(s)
	return n
}

// interopCmp compares one frame and counts what it compared.
type interopCmp struct {
	t          *testing.T
	file       string
	frame      int
	fields     int
	mismatches int
}

func (c *interopCmp) errorf(field, format string, args ...any) {
	c.t.Helper()
	c.mismatches++
	c.t.Errorf("%s frame %d: %s: %s", c.file, c.frame, field, fmt.Sprintf(format, args...))
}

// num compares a number: tshark's text against ours (have says whether we
// have it).
func (c *interopCmp) num(field, tv string, ours uint64, have bool) {
	c.t.Helper()
	c.fields++
	switch {
	case tv == "" && !have:
		c.fields-- // neither side has it: nothing compared
	case tv == "":
		c.errorf(field, "tshark shows none, ours 0x%x (%d)", ours, ours)
	case !have:
		c.errorf(field, "tshark %s, ours none", tv)
	default:
		n, err := interopNum(tv)
		if err != nil {
			c.errorf(field, "tshark %q is not a number: %v", tv, err)
		} else if n != ours {
			c.errorf(field, "tshark %s (0x%x), ours 0x%x (%d)", tv, n, ours, ours)
		}
	}
}

// blob compares octets: tshark's hex against ours.
func (c *interopCmp) blob(field, tv string, ours []byte) {
	c.t.Helper()
	c.fields++
	tb, err := hex.DecodeString(strings.ReplaceAll(tv, ":", ""))
	if err != nil {
		c.errorf(field, "tshark %q is not hex: %v", tv, err)
		return
	}
	if !bytes.Equal(tb, ours) {
		c.errorf(field, "tshark %d octets %s, ours %d octets %s", len(tb), interopShort(tb), len(ours), interopShort(ours))
	}
}

// addr compares an address: tshark's text against ours.
func (c *interopCmp) addr(field, tv string, ours netip.Addr) {
	c.t.Helper()
	c.fields++
	a, err := netip.ParseAddr(tv)
	if err != nil {
		c.errorf(field, "tshark %q is not an address: %v", tv, err)
		return
	}
	if a != ours {
		c.errorf(field, "tshark %s, ours %s", a, ours)
	}
}

// interopShort shows octets in hex, long runs shortened.
func interopShort(b []byte) string {
	s := hex.EncodeToString(b)
	if len(s) > 96 {
		return s[:80] + "..." + s[len(s)-16:]
	}
	return s
}

// interopField finds a field by its JSON key.
func interopField(fs []layers.Field, key string) (layers.Field, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f, true
		}
	}
	return layers.Field{}, false
}

func (c *interopCmp) field(name, tv string, fs []layers.Field, key string) {
	c.t.Helper()
	f, ok := interopField(fs, key)
	c.num(name, tv, f.Value, ok)
}

func (c *interopCmp) compare(r interopRow, m *record.Message) {
	c.t.Helper()
	cm := interopCMs[m.AttributeID]
	c.num("MAD attribute ID", r["infiniband.mad.attributeid"], uint64(m.AttributeID), true)
	if m.IB == nil {
		c.errorf("IB headers", "the dissector has none")
		return
	}
	c.field("BTH opcode", r["infiniband.bth.opcode"], m.Layers().BTH, "opcode")
	c.field("BTH P_Key", r["infiniband.bth.p_key"], m.Layers().BTH, "p_key")
	c.field("BTH DestQP", r["infiniband.bth.destqp"], m.Layers().BTH, "dest_qp")
	c.field("BTH PSN", r["infiniband.bth.psn"], m.Layers().BTH, "psn")
	c.field("DETH Q_Key", r["infiniband.deth.q_key"], m.Layers().DETH, "q_key")
	c.field("DETH SrcQP", r["infiniband.deth.srcqp"], m.Layers().DETH, "src_qp")
	c.field("MAD transaction ID", r["infiniband.mad.transactionid"], m.Layers().MAD, "transaction_id")

	c.field(cm.name+" Local Comm ID", r[cm.local], m.Layers().CM, "local_comm_id")
	if cm.remote != "" {
		c.field(cm.name+" Remote Comm ID", r[cm.remote], m.Layers().CM, "remote_comm_id")
	}

	ipcm := false
	if m.AttributeID == layers.AttrREQ {
		c.field("REQ Service ID", r["infiniband.cm.req.serviceid"], m.Layers().CM, "service_id")
		sid, _ := interopField(m.Layers().CM, "service_id")
		ipcm = layers.IsIPCMServiceID(sid.Value)
	}
	if ipcm {
		c.compareIPCM(r, m)
	} else {
		c.blob(cm.name+" private data", r[cm.private], m.PrivateData)
	}

	// ICRC: tshark reads the 4 octets big-endian.
	if tv := r["infiniband.invariant.crc"]; tv != "" || m.IB.ICRC != nil {
		n, err := interopNum(tv)
		if err == nil {
			tv = fmt.Sprintf("0x%08x", bits.ReverseBytes32(uint32(n)))
		}
		var v uint64
		if m.IB.ICRC != nil {
			v = uint64(m.IB.ICRC.Value)
		}
		c.num("ICRC (tshark's octets read little-endian)", tv, v, m.IB.ICRC != nil)
	}
	// VCRC, native InfiniBand only: tshark reads the 2 octets big-endian.
	if tv := r["infiniband.variant.crc"]; tv != "" || m.IB.VCRC != nil {
		n, err := interopNum(tv)
		if err == nil {
			tv = fmt.Sprintf("0x%04x", bits.ReverseBytes16(uint16(n)))
		}
		var v uint64
		if m.IB.VCRC != nil {
			v = uint64(m.IB.VCRC.Value)
		}
		c.num("VCRC (tshark's octets read little-endian)", tv, v, m.IB.VCRC != nil)
	}
}

// compareIPCM compares a REQ with an IP CM Service ID: tshark decodes the
// IP CM header and shows only the consumer's 56 octets as private data.
func (c *interopCmp) compareIPCM(r interopRow, m *record.Message) {
	c.t.Helper()
	if tv := r["infiniband.cm.req.private"]; tv != "" {
		c.fields++
		c.errorf("REQ private data", "IP CM Service ID, yet tshark shows infiniband.cm.req.private (%d hex digits)", len(tv))
	}
	if len(m.PrivateData) < layers.IPCMHeaderLen {
		c.fields++
		c.errorf("REQ private data", "IP CM Service ID, ours holds only %d octets", len(m.PrivateData))
		return
	}
	c.blob("REQ IP CM consumer private data", r["infiniband.cm.req.ip_cm.private"], m.PrivateData[layers.IPCMHeaderLen:])

	if m.Layers().IPCM == nil {
		c.fields++
		c.errorf("REQ IP CM header", "IP CM Service ID, the dissector decodes no IP CM header")
		return
	}
	ver, okv := interopField(m.Layers().IPCM, "version")
	c.num("IP CM major version", r["infiniband.cm.req.ip_cm.majv"], ver.Value>>4, okv)
	c.num("IP CM minor version", r["infiniband.cm.req.ip_cm.minv"], ver.Value&0x0f, okv)
	c.field("IP CM IP version", r["infiniband.cm.req.ip_cm.ipv"], m.Layers().IPCM, "ip_version")
	c.field("IP CM source port", r["infiniband.cm.req.ip_cm.sport"], m.Layers().IPCM, "src_port")

	ipv, _ := interopField(m.Layers().IPCM, "ip_version")
	src, oks := interopField(m.Layers().IPCM, "src")
	dst, okd := interopField(m.Layers().IPCM, "dst")
	sa, _ := netip.AddrFromSlice(src.Bytes)
	da, _ := netip.AddrFromSlice(dst.Bytes)
	sk, dk := "infiniband.cm.req.ip_cm.sip6", "infiniband.cm.req.ip_cm.dip6"
	if ipv.Value == 4 {
		sk, dk = "infiniband.cm.req.ip_cm.sip4", "infiniband.cm.req.ip_cm.dip4"
	}
	for _, x := range []struct {
		name, key string
		a         netip.Addr
		ok        bool
	}{{"IP CM source address", sk, sa, oks}, {"IP CM destination address", dk, da, okd}} {
		tv := r[x.key]
		switch {
		case tv == "" && !x.ok:
		case tv == "":
			c.fields++
			c.errorf(x.name, "tshark shows no %s, ours %s", x.key, x.a)
		case !x.ok:
			c.fields++
			c.errorf(x.name, "tshark %s, ours none", tv)
		default:
			c.addr(x.name+" ("+x.key+")", tv, x.a)
		}
	}
}

func (interopSink) Update(*record.ConnectionUpdate) error { return nil }

// lookTshark finds tshark for the oracle tests, as exec.LookPath does; with
// -short it reports none: tshark runs take seconds each, and go test -short
// checks the logic alone (the README's go test ./..., and CI, run them).
func lookTshark() (string, error) {
	if testing.Short() {
		return "", errors.New("tshark is not run with -short")
	}
	return exec.LookPath("tshark")
}
