//go:build linux

package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// longTests says whether the long robustness tests run: the floods at the
// sizes that reach every limit, the 2.5 GB hostile mix and the runs of a
// binary built with the race detector. .ci/run sets it; `go test ./...`
// leaves them out and keeps to its time.
func longTests() bool { return os.Getenv("RDMACM_LONG_TESTS") == "1" }

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
// dissections. The outputs go to files and are compared a line at a time:
// at full size they are hundreds of megabytes.
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
	dir := t.TempDir()
	want := filepath.Join(dir, "want.json")
	dissectTo(t, bin, file, "", want)
	got := filepath.Join(dir, "got.json")
	for i := 1; i < 3; i++ {
		dissectTo(t, bin, file, "", got)
		if diff := compareOutputs(t, got, want, nil); diff != "" {
			t.Fatalf("run %d differs from run 1 %s", i+1, diff)
		}
	}
	// The records and the notes name the input: "-" for standard input.
	names := []string{gz, file}
	for _, in := range []string{file, gz} {
		dissectTo(t, bin, "-", in, got)
		if diff := compareOutputs(t, got, want, names); diff != "" {
			t.Fatalf("standard input (%s) differs from the file %s", filepath.Base(in), diff)
		}
	}
	dissectTo(t, bin, gz, "", got)
	if diff := compareOutputs(t, got, want, names); diff != "" {
		t.Fatalf("the gzip file differs from the file %s", diff)
	}
	// The data path on a worker of its own (dissect/pipeline.go) decides
	// the same at one core and at eight.
	one := filepath.Join(dir, "worker1.json")
	dissectToEnv(t, bin, file, "", one, "RDMACM_DATAPATH_WORKER=1", "GOMAXPROCS=1")
	dissectToEnv(t, bin, file, "", got, "RDMACM_DATAPATH_WORKER=1", "GOMAXPROCS=8")
	if diff := compareOutputs(t, got, one, nil); diff != "" {
		t.Fatalf("with the data path's worker, GOMAXPROCS=8 differs from 1 %s", diff)
	}
}

// dissectTo runs `dissect -T json --datapath all` of name (stdin from the
// file named by in, when set) into the file out.
func dissectTo(t *testing.T, bin, name, in, out string) {
	t.Helper()
	dissectToEnv(t, bin, name, in, out)
}

// dissectToEnv is dissectTo with env added to the environment.
func dissectToEnv(t *testing.T, bin, name, in, out string, env ...string) {
	t.Helper()
	cmd := exec.Command(bin, "dissect", "-T", "json", "--datapath", "all", name)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	o, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = o, &errOut
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("dissect: %v", err)
		}
	}
}

// compareOutputs compares two outputs a line at a time and describes the
// first difference ("" when none). With names, the input's names are read
// as "-" in both, and the summaries are compared without their inputs.
func compareOutputs(t *testing.T, got, want string, names []string) string {
	t.Helper()
	open := func(name string) *bufio.Scanner {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		return sc
	}
	g, w := open(got), open(want)
	for line := 1; ; line++ {
		gok, wok := g.Scan(), w.Scan()
		if !gok || !wok {
			if gok != wok {
				return fmt.Sprintf("at line %d: one output ends first", line)
			}
			return ""
		}
		gl, wl := g.Bytes(), w.Bytes()
		if names != nil {
			gl, wl = normalize(gl, names), normalize(wl, names)
		}
		if !bytes.Equal(gl, wl) {
			return fmt.Sprintf("at line %d:\n got: %.600s\nwant: %.600s", line, gl, wl)
		}
	}
}

// normalize names every input "-", and leaves a summary's inputs out.
func normalize(line []byte, names []string) []byte {
	for _, n := range names {
		line = bytes.ReplaceAll(line, []byte(n), []byte("-"))
	}
	if !bytes.HasPrefix(line, []byte(`{"record":"summary"`)) {
		return line
	}
	var r map[string]any
	if json.Unmarshal(line, &r) != nil {
		return line
	}
	delete(r, "inputs")
	out, _ := json.Marshal(r)
	return out
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
