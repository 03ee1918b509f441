package cmd

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedFiles: each kind of damage gets one line on standard error
// naming the file and the frame or offset, exit code 2, and everything
// decoded before the damage is printed first. Damage the format cannot see
// (bytes changed inside a record) is decoded as it stands, without a crash.
func TestDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	nfsRaw, err := os.ReadFile(nfs)
	if err != nil {
		t.Fatal(err)
	}
	ngRaw, err := os.ReadFile("../pcaps/rocev2-ipv6.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	// The sample's records: the file header (24), then 3 records of 16+322.
	const rec2 = 24 + 16 + 322
	patch := func(b []byte, fn func([]byte)) []byte {
		c := bytes.Clone(b)
		fn(c)
		return c
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	corruptGz := patch(gz(nfsRaw), func(b []byte) { b[len(b)/2] ^= 0xff })
	cutGz := gz(nfsRaw)
	cutGz = cutGz[:len(cutGz)-30]

	cases := []struct {
		name   string
		data   []byte
		code   int
		stdout []string // must all appear
		not    []string // must not appear
		stderr string   // exactly, after "rdmacm-pd: FILE: "
	}{
		{name: "record cut short", data: nfsRaw[:len(nfsRaw)-100], code: 2, stdout: []string{"REQ", "REP"}, not: []string{"RTU"},
			stderr: "frame 3 at offset 700: record cut short: 222 of 322 octets"},
		{name: "absurd captured length", data: patch(nfsRaw, func(b []byte) { binary.LittleEndian.PutUint32(b[rec2+8:], 0x7fffffff) }),
			code: 2, stdout: []string{"REQ"}, not: []string{"REP"}, stderr: "frame 2 at offset 362: captured length 2147483647 exceeds limit 262144"},
		{name: "captured length over the snap length", data: patch(nfsRaw, func(b []byte) {
			binary.LittleEndian.PutUint32(b[rec2+8:], 300000)
			binary.LittleEndian.PutUint32(b[rec2+12:], 300000)
		}), code: 2, stdout: []string{"REQ"}, not: []string{"REP"}, stderr: "frame 2 at offset 362: captured length 300000 exceeds limit 262144"},
		// A captured length over the snap length or the original length is
		// odd, not damage: the record is read as captured, with a finding,
		// and reading goes on.
		{name: "captured length over the file's snap length", data: patch(nfsRaw, func(b []byte) {
			binary.LittleEndian.PutUint32(b[16:], 200)
		}), code: 0, stdout: []string{"REQ", "REP", "RTU", "3 frames, 3 messages",
			"record-length-inconsistent: the capture record is inconsistent: the captured length 322 exceeds the snap length 200; read as captured",
			"3 capture records have a captured length above the snap length or the original length (first at frame 1)"}},
		{name: "captured length over the original length", data: patch(nfsRaw, func(b []byte) { binary.LittleEndian.PutUint32(b[rec2+12:], 100) }),
			code: 0, stdout: []string{"REQ", "REP", "RTU", "the captured length 322 exceeds the original length 100; read as captured"}},
		{name: "not a link type", data: patch(nfsRaw, func(b []byte) { binary.LittleEndian.PutUint32(b[20:], 40000) }),
			code: 2, stderr: "frame 1 at offset 24: link type 40000 is not a LINKTYPE value: the file (or interface) header is damaged"},
		{name: "the wrong link type", data: patch(nfsRaw, func(b []byte) { binary.LittleEndian.PutUint32(b[20:], 105) }),
			code: 0, stdout: []string{"3 frames, 0 messages"}},
		{name: "zeroed record header", data: patch(nfsRaw, func(b []byte) { clear(b[rec2 : rec2+16]) }),
			code: 2, stdout: []string{"REQ", "2 frames, 1 message, 1 connection (1 cut), 1 finding (1 info), 1 unreadable input\n", "  1  cut          -        -  no   info   rpc-over-rdma  port 20049"}, stderr: "frame 3 at offset 378: captured length 33554432 exceeds limit 262144"},
		{name: "zeroed octets inside a record", data: patch(nfsRaw, func(b []byte) { clear(b[rec2+16+62 : rec2+16+162]) }),
			code: 0, stdout: []string{"REQ", "RTU", "3 frames, 2 messages"}, not: []string{"REP"}},
		{name: "random octets inside a record", data: patch(nfsRaw, func(b []byte) {
			copy(b[24+16+230:], []byte{0x13, 0x37, 0xca, 0xfe, 0xba, 0xbe, 0x99, 0x42})
		}), code: 0, stdout: []string{"icrc-mismatch", "REQ      192.0.2.1 → 192.0.2.2  R=1 send=4096"}},
		{name: "pcapng block with a bad length", data: patch(ngRaw, func(b []byte) { binary.LittleEndian.PutUint32(b[472+4:], 13) }),
			code: 2, stdout: []string{"REQ"}, not: []string{"REP"}, stderr: "frame 2 at offset 472: block total length 13 not a multiple of 4"},
		{name: "pcapng block longer than the file", data: patch(ngRaw, func(b []byte) { binary.LittleEndian.PutUint32(b[848+4:], 1<<20) }),
			code: 2, stdout: []string{"REQ", "REP"}, not: []string{"RTU"}, stderr: "frame 3 at offset 848: enhanced packet block cut short: 376 of 1048576 octets"},
		{name: "corrupt gzip stream", data: corruptGz, code: 2, stderr: "frame 1 at offset 24: corrupt gzip stream: flate: corrupt input before offset 131"},
		{name: "gzip stream cut short", data: cutGz, code: 2, stdout: []string{"REQ", "REP"}, not: []string{"RTU"},
			stderr: "frame 3 at offset 700: record cut short: 42 of 322 octets (gzip stream cut short)"},
		{name: "empty file", data: nil, code: 2, stderr: "offset 0: empty file"},
		{name: "not a capture file", data: []byte("<!DOCTYPE html>\n<html></html>\n"), code: 2,
			stderr: "offset 0: not a capture file (pcap, pcapng, gzip, zstd or lz4): starts with 3c 21 44 4f"},
		{name: "pcap file header cut short", data: nfsRaw[:10], code: 2, stderr: "offset 0: file header cut short: 10 of 24 octets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := run(t, nil, nil, false, "dissect", "--width", "0", path)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(out, s) {
					t.Errorf("stdout has %q:\n%s", s, out)
				}
			}
			switch {
			case tc.code == 0 && errOut != "":
				t.Errorf("stderr %q", errOut)
			case tc.code == 2 && tc.stderr != "" && errOut != "rdmacm-pd: "+path+": "+tc.stderr+"\n":
				t.Errorf("stderr\n got %q\nwant %q", errOut, "rdmacm-pd: "+path+": "+tc.stderr+"\n")
			case tc.code == 2 && (strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "rdmacm-pd: "+path+": ")):
				t.Errorf("not one line naming the file: %q", errOut)
			}
		})
	}
}

// TestMissingFileAmongOthers: a missing file is an error, the others are
// still read (exit 2 at the end).
func TestMissingFileAmongOthers(t *testing.T) {
	code, out, errOut := run(t, nil, nil, false, "dissect", "no-such.pcap", nfs)
	if code != 2 || errOut != "rdmacm-pd: no-such.pcap: no such file or directory\n" || !strings.Contains(out, "RTU") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errOut, out)
	}
}

// TestDamagedFileFormats: in JSON and Markdown too, what was decoded before
// the damage is written, with the summary saying which input failed and
// why, and the same one-line error.
func TestDamagedFileFormats(t *testing.T) {
	path := cutSample(t, 100)
	const why = "frame 3 at offset 700: record cut short: 222 of 322 octets"
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"json", []string{`"message":"REQ"`, `"message":"REP"`, `"record":"connection"`, `"decode_errors":1`,
			`"error":"` + why + `"`}},
		{"markdown", []string{"frame 1 (connection 1): REQ", "frame 2 (connection 1): REP", "| 1 | **established** | 4096 | 4096 | no |", "| " + why + " |"}},
	} {
		code, out, errOut := run(t, nil, nil, false, "dissect", "-T", tc.format, path)
		named := path
		if tc.format == "markdown" {
			named = filepath.Base(path) // a report names its inputs by their base names
		}
		if code != 2 || errOut != "rdmacm-pd: "+named+": "+why+"\n" {
			t.Errorf("%s: exit %d, stderr %q", tc.format, code, errOut)
		}
		for _, s := range tc.want {
			if !strings.Contains(out, s) {
				t.Errorf("%s: output lacks %q:\n%s", tc.format, s, out)
			}
		}
		if strings.Contains(out, "RTU") {
			t.Errorf("%s: a message after the damage", tc.format)
		}
	}
}
