package pcaps

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/cmd"
)

// TestSamplesUpToDate runs each go:generate line of generate.go in process
// and checks that the file it writes is the one committed: the samples are
// what craft produces today.
func TestSamplesUpToDate(t *testing.T) {
	f, err := os.Open("generate.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "//go:generate go run .. ")
		if !ok {
			continue
		}
		args := strings.Fields(line)
		name := args[len(args)-1]
		args[len(args)-1] = filepath.Join(t.TempDir(), name)
		var out, errOut bytes.Buffer
		if code := cmd.Run(args, &cmd.IOStreams{Out: &out, ErrOut: &errOut, Getenv: os.Getenv}); code != 0 {
			t.Fatalf("%s: exit %d: %s", line, code, errOut.String())
		}
		got, err := os.ReadFile(args[len(args)-1])
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what craft writes now: run go generate ./pcaps", name)
		}
		n++
	}
	if n < 6 {
		t.Errorf("only %d samples", n)
	}
}
