package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDiagramBounds: a report of many connections draws at most
// output.MaxDiagrams ladder diagrams and says so; a tight budget leaves
// diagrams out and says how many.
func TestDiagramBounds(t *testing.T) {
	in := filepath.Join(t.TempDir(), "reqs.pcap")
	if code, _, errOut := run(t, nil, nil, false, "craft", "--flood", "reqs", "--count", "20", "-w", in); code != 0 {
		t.Fatalf("craft: %s", errOut)
	}
	_, md, _ := run(t, nil, nil, false, "dissect", "-T", "markdown", in)
	if n := strings.Count(md, "```mermaid\nsequenceDiagram\n"); n != 8 {
		t.Errorf("%d diagrams, want 8", n)
	}
	if !strings.Contains(md, "Only the first 8 connections get one.") {
		t.Errorf("the report does not say that only 8 connections get a diagram")
	}
	_, md, _ = run(t, nil, nil, false, "dissect", "-T", "markdown", "--budget", "9000", in)
	n := strings.Count(md, "```mermaid\n")
	if n >= 8 || !strings.Contains(md, "diagrams were left out for the budget") || !strings.Contains(md, "diagram") {
		t.Errorf("--budget 9000: %d diagrams, and no word of those left out:\n%s", n, md)
	}
	if len([]rune(md)) > 9000 {
		t.Errorf("--budget 9000: %d characters", len([]rune(md)))
	}
}
