package cmd

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// pluginFields are the fields of the plugin compared with the JSON's
// rpcrdma object, by its keys.
var pluginFields = []string{"offset", "format_identifier", "version", "reserved", "remote_invalidate", "send_size",
	"receive_size", "send_size_encoded", "receive_size_encoded"}

// pluginCodes are the findings the plugin raises as expert info.
var pluginCodes = []string{"rpcrdma-version-unknown", "rpcrdma-truncated", "rpcrdma-reserved-nonzero"}

// oddPrivateData writes captures whose RFC 8797 messages are where the
// carriers do not put them, beside versions it does not know, set
// reserved bits and identifiers cut by the end of the private data.
func oddPrivateData(t *testing.T, dir string) []string {
	id := []byte{0xf6, 0xab, 0x0e, 0x18}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	v2 := cat(id, []byte{2, 1, 3, 3})
	good := cat(id, []byte{1, 1, 3, 7})
	reserved := cat(id, []byte{1, 0xff, 0x0f, 0x00})
	var out []string
	write := func(name string, frames []craft.Frame, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := craft.WriteFile(p, frames); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	for _, tr := range []craft.Transport{craft.RoCEv2, craft.RoCEv1, craft.InfiniBand} {
		x := &craft.Exchange{Transport: tr, Initiator: craft.Peer{Data: cat([]byte{1, 2, 3}, v2, good)},
			Responder: craft.Peer{Data: cat(make([]byte, 150), reserved)}}
		fr, err := x.Frames()
		write(fmt.Sprintf("odd-%s.pcap", tr), fr, err)
		if tr == craft.InfiniBand { // and as ibdump writes it: ERF records of type 21
			write("odd-ib-erf.pcap", asERF(fr), nil)
		}
		x = &craft.Exchange{Transport: tr, Reject: true, Initiator: craft.Peer{Data: v2},
			Responder: craft.Peer{Data: cat(make([]byte, 148-5), id, []byte{1})}}
		fr, err = x.Frames()
		write(fmt.Sprintf("odd-%s-rej.pcap", tr), fr, err)
	}
	for _, rev := range []uint8{1, 2} {
		x := &craft.IWARPExchange{Rev: rev, SplitAt: []int{7, 21, 26}, Initiator: craft.Peer{Data: cat([]byte{9}, v2, good, id, []byte{1})},
			Responder: craft.Peer{Data: cat([]byte{0, 0}, reserved)}}
		fr, err := x.Frames()
		write(fmt.Sprintf("odd-iwarp%d.pcap", rev), fr, err)
		x = &craft.IWARPExchange{Rev: rev, Reject: true, Initiator: craft.Peer{Data: cat(v2, id)}, Responder: craft.Peer{Data: good}}
		fr, err = x.Frames()
		write(fmt.Sprintf("odd-iwarp%d-rej.pcap", rev), fr, err)
	}
	return out
}

// asERF wraps native InfiniBand frames in ERF records of type 21 (ERF
// InfiniBand), as ibdump writes them.
func asERF(frames []craft.Frame) []craft.Frame {
	out := make([]craft.Frame, len(frames))
	for i, f := range frames {
		h := make([]byte, 16, 16+len(f.Data))
		binary.LittleEndian.PutUint64(h, uint64(f.Time.Unix())<<32)
		h[8] = 21
		binary.BigEndian.PutUint16(h[10:], uint16(16+len(f.Data)))
		binary.BigEndian.PutUint16(h[14:], uint16(len(f.Data)))
		f.Data, f.LinkType = append(h, f.Data...), 197
		out[i] = f
	}
	return out
}

// asUser0 rewrites a capture of link type 247, which tshark 4.0 does not
// read, to link type 147 (USER0) in a new file; "" when it has none.
func asUser0(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= 24 && binary.LittleEndian.Uint32(b) != 0x0a0d0d0a { // pcap
		if binary.LittleEndian.Uint32(b[20:]) != 247 {
			return ""
		}
		binary.LittleEndian.PutUint32(b[20:], 147)
		out := filepath.Join(t.TempDir(), "user0.pcap")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return infinibandAsUser0(t, file)
}

// TestWiresharkPlugin: tshark with the generated plugin reads, on every
// message of every shipped sample, real capture and odd crafted capture,
// the RFC 8797 fields the tool's JSON has, and nothing where the tool
// finds no message; its expert info names the findings the tool raises.
func TestWiresharkPlugin(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed")
	}
	dir := t.TempDir()
	_, lua, _ := run(t, nil, nil, false, "wireshark-plugin")
	plugin := filepath.Join(dir, "rpcrdma_cm.lua")
	if err := os.WriteFile(plugin, []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	inputs, _ := filepath.Glob("../pcaps/*.pcap*")
	real := os.Getenv("RDMACM_REAL_CAPTURES")
	if real == "" {
		real = filepath.Join("..", "..", "shared", "captures", "real")
	}
	reals, _ := filepath.Glob(filepath.Join(real, "*.pcap*"))
	inputs = append(append(inputs, reals...), oddPrivateData(t, dir)...)
	fields := []string{"frame.number", "_ws.expert.message"}
	for _, f := range pluginFields {
		fields = append(fields, "rpcrdma_cm."+f)
	}
	found := 0
	for _, in := range inputs {
		_, js, _ := run(t, nil, nil, false, "dissect", "-T", "json", "--datapath", "off", in)
		want := map[int]map[string]string{}
		wantCodes := map[int][]string{}
		for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
			var rec struct {
				Record   string                     `json:"record"`
				Frame    int                        `json:"frame"`
				RPCRDMA  map[string]json.RawMessage `json:"rpcrdma"`
				Warnings []struct {
					Code string `json:"code"`
				} `json:"warnings"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if rec.Record != "message" {
				continue
			}
			for _, w := range rec.Warnings {
				for _, c := range pluginCodes {
					if w.Code == c {
						wantCodes[rec.Frame] = append(wantCodes[rec.Frame], c)
					}
				}
			}
			if rec.RPCRDMA == nil {
				continue
			}
			m := map[string]string{}
			for _, k := range pluginFields {
				v := string(rec.RPCRDMA[k])
				switch v {
				case "true":
					v = "1"
				case "false":
					v = "0"
				}
				m[k] = v
			}
			want[rec.Frame] = m
		}
		if strings.Contains(in, "odd-") && !strings.Contains(in, "-rej") && len(want) != 2 {
			t.Errorf("%s: the tool finds %d RFC 8797 messages, want 2", in, len(want))
		}
		file, args := in, []string{}
		if u := asUser0(t, in); u != "" {
			file, args = u, []string{"-o", `uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""`}
		}
		args = append(args, "-X", "lua_script:"+plugin, "-r", file, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
			"-E", "aggregator=|")
		for _, f := range fields {
			args = append(args, "-e", f)
		}
		out, err := exec.Command(tshark, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tshark %v: %v\n%s", args, err, out)
		}
		got := map[int]map[string]string{}
		gotCodes := map[int][]string{}
		for _, line := range strings.Split(string(out), "\n") {
			cols := strings.Split(line, "\t")
			if len(cols) != len(fields) {
				continue // tshark's own notes
			}
			n, err := strconv.Atoi(cols[0])
			if err != nil {
				continue
			}
			for _, c := range pluginCodes {
				if strings.Contains(cols[1], c+":") {
					gotCodes[n] = append(gotCodes[n], c)
				}
			}
			if cols[2] == "" {
				continue
			}
			m := map[string]string{}
			for i, k := range pluginFields {
				v := cols[2+i]
				if k == "format_identifier" || k == "reserved" || strings.HasSuffix(k, "_encoded") {
					x, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
					if err != nil {
						t.Fatalf("%s frame %d: %s %q", in, n, k, v)
					}
					v = strconv.FormatUint(x, 10)
				}
				m[k] = v
			}
			got[n] = m
		}
		for n, w := range want {
			found++
			if g := got[n]; fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("%s frame %d: the plugin has %v, the tool %v", in, n, g, w)
			}
		}
		for n, g := range got {
			if _, ok := want[n]; !ok {
				t.Errorf("%s frame %d: the plugin decodes %v, the tool finds no message", in, n, g)
			}
		}
		for _, m := range []map[int][]string{wantCodes, gotCodes} {
			for _, cs := range m {
				sort.Strings(cs)
			}
		}
		if fmt.Sprint(gotCodes) != fmt.Sprint(wantCodes) {
			t.Errorf("%s: expert info %v, the tool's findings %v", in, gotCodes, wantCodes)
		}
	}
	if found == 0 {
		t.Fatal("no RFC 8797 message compared")
	}
}
