package output_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReportRendersInBrowser renders the Markdown golden reports as GitHub
// does (marked, GitHub-flavoured Markdown) in headless Chromium, with
// Mermaid drawing their diagrams in the page, and reads the page back:
// every diagram must be drawn, and none may show Mermaid's "Syntax error"
// box. It needs Debian's chromium and RDMACM_NODE_MODULES holding marked
// and mermaid (.ci/run installs both); it skips without them.
func TestReportRendersInBrowser(t *testing.T) {
	mods := os.Getenv("RDMACM_NODE_MODULES")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		t.Skip("needs node and RDMACM_NODE_MODULES (npm install marked mermaid; see .ci/run)")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("needs chromium (apt-get install chromium; see .ci/run)")
	}
	for _, m := range []string{"marked", "mermaid"} {
		if _, err := os.Stat(filepath.Join(mods, m)); err != nil {
			t.Skipf("no %s in RDMACM_NODE_MODULES", m)
		}
	}
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
	// One broken diagram at the end: the page must see its error box, or
	// it would see none anywhere.
	all.WriteString("```mermaid\nsequenceDiagram\n  A->>: broken\n  participant\n```\n")
	page := filepath.Join(t.TempDir(), "report.html")
	build := exec.Command(node, filepath.Join("testdata", "browser-page.mjs"))
	build.Env = append(os.Environ(), "NODE_PATH="+mods)
	build.Stdin = &all
	html, err := build.Output()
	if err != nil {
		t.Fatalf("building the page: %v", err)
	}
	if err := os.WriteFile(page, html, 0o644); err != nil {
		t.Fatal(err)
	}
	// --virtual-time-budget lets the page's scripts (Mermaid's drawing)
	// finish before the DOM is read back.
	// A CI container may run it as root with a small /dev/shm: no
	// sandbox, no shared memory for its renderers; and never a hang.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--virtual-time-budget=60000", "--dump-dom", page).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	m := regexp.MustCompile(`id="result"[^>]*>([^<]*)<`).FindSubmatch(dom)
	if m == nil {
		t.Fatal("the page gave no result")
	}
	t.Logf("%s (%d reports, and the broken diagram)", m[1], len(files))
	if got, exp := string(m[1]), fmt.Sprintf("rendered %d diagrams, 1 syntax errors", want+1); got != exp {
		t.Errorf("the browser says %q, want %q", got, exp)
	}
}
