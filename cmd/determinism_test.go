//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// longTests says whether the long robustness tests run: the floods at the
// sizes that reach every limit, the 2.5 GB hostile mix and the runs of a
// binary built with the race detector. .ci/run sets it; `go test ./...`
// leaves them out and keeps to its time.
func longTests() bool { return os.Getenv("RDMACM_LONG_TESTS") != "" }

// TestDeterministic dissects each hostile flood several times, from the
// file, from standard input and through gzip, and requires the same
// output every time: the memory budget decides by its charges, never by
// when the garbage collector ran, and a source's buffering changes none of
// its decisions. Only the summary's description of the input (its name,
// format, size and digest) may differ between a file and a pipe.
//
// With RDMACM_LONG_TESTS the floods run at sizes that fill the memory
// budget, and at the small sizes again with a binary built with -race
// (whose every run takes ten times as long).
func TestDeterministic(t *testing.T) {
	type flood struct {
		kind        string
		short, long int
	}
	floods := []flood{
		{"records-first", 1000, 70000},
		{"rc-conns", 500, 20000},
		{"rc-directions", 5000, 300000},
		{"iwarp-conns", 500, 20000},
		{"req-reps", 2000, 300000},
		{"half-mpa", 2000, 300000},
		{"combined", 0, 1},
	}
	type pass struct {
		bin  string
		long bool
	}
	passes := []pass{{rdmacmBinary(t), longTests()}}
	if longTests() {
		passes = append(passes, pass{raceBinary(t), false})
	}
	dir := t.TempDir()
	for _, ps := range passes {
		for _, fl := range floods {
			n := fl.short
			if ps.long {
				n = fl.long
			}
			if n == 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s-%d-%s", fl.kind, n, filepath.Base(ps.bin)), func(t *testing.T) {
				deterministic(t, ps.bin, filepath.Join(dir, fmt.Sprintf("%s-%d.pcap", fl.kind, n)), fl.kind, n)
			})
		}
	}
}

// deterministic crafts a flood of n units into file and compares its
// dissections.
func deterministic(t *testing.T, bin, file, kind string, n int) {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		if code, _, errOut := run(t, nil, nil, false, "craft", "--flood", kind, "--count", fmt.Sprint(n), "-w", file); code != 0 {
			t.Fatalf("craft --flood: %s", errOut)
		}
	}
	gz := file + ".gz"
	if _, err := os.Stat(gz); err != nil {
		gz = gzipFile(t, file)
	}
	want := dissectOut(t, bin, file, "")
	for i := 1; i < 3; i++ {
		if got := dissectOut(t, bin, file, ""); !bytes.Equal(got, want) {
			t.Fatalf("run %d differs from run 1 %s", i+1, firstDiff(got, want))
		}
	}
	// The records and the notes name the input: "-" for standard input.
	want = bytes.ReplaceAll(want, []byte(file), []byte("-"))
	for _, in := range []string{file, gz} {
		if got := dissectOut(t, bin, "-", in); !equalButInputs(t, got, want) {
			t.Fatalf("standard input (%s) differs from the file %s", filepath.Base(in), firstDiff(got, want))
		}
	}
	if got := bytes.ReplaceAll(dissectOut(t, bin, gz, ""), []byte(gz), []byte("-")); !equalButInputs(t, got, want) {
		t.Fatalf("the gzip file differs from the file %s", firstDiff(got, want))
	}
}

// dissectOut runs `dissect -T json` of name (stdin from the file named by
// in, when set) and returns its output.
func dissectOut(t *testing.T, bin, name, in string) []byte {
	t.Helper()
	cmd := exec.Command(bin, "dissect", "-T", "json", "--datapath", "all", name)
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("dissect: %v", err)
		}
	}
	if errOut.Len() > 0 && !strings.Contains(errOut.String(), "finding") {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.Bytes()
}

// equalButInputs compares two outputs record by record, the summaries
// without their inputs and the records without their file names.
func equalButInputs(t *testing.T, a, b []byte) bool {
	t.Helper()
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if bytes.Equal(la[i], lb[i]) {
			continue
		}
		var ra, rb map[string]any
		if json.Unmarshal(la[i], &ra) != nil || json.Unmarshal(lb[i], &rb) != nil {
			return false
		}
		for _, r := range []map[string]any{ra, rb} {
			delete(r, "inputs")
			delete(r, "file")
		}
		ja, _ := json.Marshal(ra)
		jb, _ := json.Marshal(rb)
		if !bytes.Equal(ja, jb) {
			return false
		}
	}
	return true
}

// firstDiff names the first line where two outputs differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("at line %d:\n got: %.600s\nwant: %.600s", i+1, x, y)
		}
	}
	return "(no line differs)"
}

// raceBinary builds the program with the race detector, once.
func raceBinary(t *testing.T) string {
	t.Helper()
	if builtRace != "" {
		return builtRace
	}
	bin := filepath.Join(t.TempDir(), "rdmacm-pd-race")
	cmd := exec.Command("go", "build", "-race", "-o", bin, "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -race: %v\n%s", err, out)
	}
	builtRace = bin
	return bin
}

var builtRace string
