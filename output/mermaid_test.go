package output_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMermaidParses parses every ladder diagram of the Markdown golden
// reports with Mermaid's own parser (npm mermaid under jsdom): none may
// show GitHub's "Syntax error" box. Set RDMACM_NODE_MODULES to a
// node_modules folder holding mermaid and jsdom (.ci/run does); the test
// skips without it.
func TestMermaidParses(t *testing.T) {
	mods := os.Getenv("RDMACM_NODE_MODULES")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		t.Skip("needs node and RDMACM_NODE_MODULES (npm install mermaid jsdom; see .ci/run)")
	}
	if _, err := os.Stat(filepath.Join(mods, "mermaid")); err != nil {
		t.Skip("no mermaid in RDMACM_NODE_MODULES")
	}
	// All the reports in one run: loading Mermaid takes seconds.
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.md"))
	var all bytes.Buffer
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(src)
		all.WriteString("\n")
	}
	want := strings.Count(all.String(), "```mermaid\n")
	if want == 0 {
		t.Fatal("no diagram in the golden reports")
	}
	cmd := exec.Command(node, filepath.Join("testdata", "mermaid-parse.mjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	cmd.Stdin = &all
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; last != fmt.Sprintf("%d diagrams", want) {
		t.Errorf("the parser says %q, want %d diagrams", last, want)
	}
	for _, l := range lines[:len(lines)-1] {
		t.Errorf("%s", l)
	}
}
