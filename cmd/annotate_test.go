package cmd

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// wantComments are the packet comments the JSON output of a run calls
// for, by frame: a message's and an rpc record's findings on its frame, a
// connection's on the frame it names, else on its request frame.
func wantComments(t *testing.T, ndjson string) (frames int, want map[int][]string) {
	t.Helper()
	want = map[int][]string{}
	for _, line := range strings.Split(strings.TrimSpace(ndjson), "\n") {
		var rec struct {
			Record       string          `json:"record"`
			Frame        int             `json:"frame"`
			Frames       json.RawMessage `json:"frames"`
			RequestFrame int             `json:"request_frame"`
			Warnings     []struct {
				Code      string `json:"code"`
				Severity  string `json:"severity"`
				Message   string `json:"message"`
				Reference string `json:"reference"`
			} `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if rec.Record == "summary" {
			frames, _ = strconv.Atoi(string(rec.Frames))
			continue
		}
		for _, w := range rec.Warnings {
			sev, _ := finding.ParseSeverity(w.Severity)
			code, ok := finding.Lookup(w.Code)
			if !ok {
				t.Fatalf("unknown code %s", w.Code)
			}
			f := finding.Finding{Code: code, Severity: sev, Message: w.Message, Reference: w.Reference}
			frame := rec.Frame
			if rec.Record == "connection" || rec.Record == "connection_update" {
				frame = rec.RequestFrame
				if rest, ok := strings.CutPrefix(w.Message, "frame "); ok {
					if n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ':')]); err == nil {
						frame = n
					}
				}
			}
			want[frame] = append(want[frame], capture.Comment(f))
		}
	}
	return frames, want
}

// tsharkComments are the frames tshark reads in file, and the packet
// comments of each.
func tsharkComments(t *testing.T, tshark, file string) (int, map[int][]string) {
	t.Helper()
	var args []string
	if ib := infinibandAsUser0(t, file); ib != "" {
		args = []string{"-o", `uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""`}
		file = ib
	}
	args = append(args, "-r", file, "-T", "json", "-e", "frame.number", "-e", "frame.comment")
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	var pkts []struct {
		Source struct {
			Layers map[string][]string `json:"layers"`
		} `json:"_source"`
	}
	if err := json.Unmarshal(out, &pkts); err != nil {
		t.Fatalf("tshark's JSON: %v", err)
	}
	got := map[int][]string{}
	for _, p := range pkts {
		n, _ := strconv.Atoi(p.Source.Layers["frame.number"][0])
		if cs := p.Source.Layers["frame.comment"]; len(cs) > 0 {
			got[n] = cs
		}
	}
	return len(pkts), got
}

// infinibandAsUser0 rewrites a pcapng file's interfaces of link type 247,
// which tshark 4.0 does not read, to 147 (USER0), into a new file; "" when
// it has none.
func infinibandAsUser0(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for off := 0; off+12 <= len(b); {
		typ, n := binary.LittleEndian.Uint32(b[off:]), int(binary.LittleEndian.Uint32(b[off+4:]))
		if typ == 1 && binary.LittleEndian.Uint16(b[off+8:]) == 247 {
			binary.LittleEndian.PutUint16(b[off+8:], 147)
			found = true
		}
		if n < 12 {
			break
		}
		off += n
	}
	if !found {
		return ""
	}
	out := filepath.Join(t.TempDir(), "user0.pcapng")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAnnotateTshark: an annotated file holds exactly the input's frames,
// and tshark reads on each frame the comments of the findings the JSON
// output puts there, on every shipped sample and crafted finding, from a
// file, from gzip and from standard input.
func TestAnnotateTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed")
	}
	dir := t.TempDir()
	inputs, _ := filepath.Glob("../pcaps/*.pcap*")
	crafted := [][]string{
		{"--finding", "inline-threshold-exceeded"},
		{"--transport", "iwarp", "--finding", "send-with-invalidate-not-allowed"},
		{"--transport", "ib", "--finding", "credits-exceeded"},
		{"--transport", "rocev1", "--finding", "invalidate-stag-unknown"},
		{"--transport", "iwarp", "--finding", "mpa-crc-mismatch"},
		{"--health", "nak"},
		{"--no-rpcrdma"},
	}
	for i, args := range crafted {
		in := filepath.Join(dir, fmt.Sprintf("craft%d.pcap", i))
		if code, _, errOut := run(t, nil, nil, false, append([]string{"craft", "-w", in}, args...)...); code != 0 {
			t.Fatalf("craft %v: %s", args, errOut)
		}
		inputs = append(inputs, in)
	}
	for i, in := range inputs {
		_, js, _ := run(t, nil, nil, false, "dissect", "-T", "json", in)
		frames, want := wantComments(t, js)
		raw, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		// tshark counts the input's frames, where it reads the link type.
		if out, err := exec.Command(tshark, "-r", in, "-T", "fields", "-e", "frame.number").Output(); err == nil {
			if n := strings.Count(string(out), "\n"); n != frames {
				t.Fatalf("%s: tshark reads %d frames, we %d", in, n, frames)
			}
		}
		ways := []struct {
			name  string
			stdin []byte
			arg   string
		}{{"file", nil, in}}
		if i%3 == 0 { // gzip and standard input on some, to keep the test short
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(raw)
			zw.Close()
			gz := filepath.Join(dir, fmt.Sprintf("in%d.gz", i))
			os.WriteFile(gz, z.Bytes(), 0o644)
			ways = append(ways, struct {
				name  string
				stdin []byte
				arg   string
			}{"gzip", nil, gz}, struct {
				name  string
				stdin []byte
				arg   string
			}{"stdin", raw, "-"})
		}
		for _, w := range ways {
			out := filepath.Join(dir, fmt.Sprintf("out%d-%s.pcapng", i, w.name))
			code, _, errOut := run(t, w.stdin, nil, false, "dissect", "-q", "--annotate", "-w", out, w.arg)
			if code != 0 || !strings.HasPrefix(errOut, "rdmacm-pd: wrote ") {
				t.Fatalf("%s (%s): exit %d, %s", in, w.name, code, errOut)
			}
			n, got := tsharkComments(t, tshark, out)
			if n != frames {
				t.Errorf("%s (%s): %d frames annotated, the input has %d", in, w.name, n, frames)
			}
			for f, cs := range want {
				if !slices.Equal(sorted(got[f]), sorted(cs)) {
					t.Errorf("%s (%s): frame %d: comments\n%q\nwant\n%q", in, w.name, f, got[f], cs)
				}
			}
			for f := range got {
				if _, ok := want[f]; !ok {
					t.Errorf("%s (%s): frame %d has comments %q, and no finding", in, w.name, f, got[f])
				}
			}
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestAnnotateSection: the section header's comment names the version,
// the command line and the totals; the run says what it wrote.
func TestAnnotateSection(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a.pcapng")
	code, _, errOut := run(t, nil, nil, false, "dissect", "--annotate", "-w", out, "../pcaps/rocev2-one-sided.pcap")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "rdmacm-pd: wrote 3 frames to " + out + ", 2 with a finding as a comment (3 comments)\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	b, _ := os.ReadFile(out)
	for _, s := range []string{ToolVersion(), "rdmacm-pd dissect --annotate -w", "3 frames, 3 messages, 1 connection (1 established), 3 findings",
		"3 findings as packet comments"} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("the file does not hold %q", s)
		}
	}
}

// TestAnnotateUsage: --annotate needs -w with a pcapng name, and files.
func TestAnnotateUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--annotate", nfs}, "rdmacm-pd: --annotate: give -w FILE.pcapng, the capture file to write the annotated frames to\n"},
		{[]string{"--annotate", "-w", "x.pcap", nfs}, "rdmacm-pd: --annotate: x.pcap is a pcap file, which has no packet comments: name it .pcapng\n"},
		{[]string{"--annotate", "-w", "x.PCAP", nfs}, "rdmacm-pd: --annotate: x.PCAP is a pcap file, which has no packet comments: name it .pcapng\n"},
	} {
		code, _, errOut := run(t, nil, nil, false, append([]string{"dissect"}, c.args...)...)
		if code != 2 || errOut != c.want {
			t.Errorf("%v: exit %d, %q; want 2, %q", c.args, code, errOut, c.want)
		}
	}
}
