package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCraftHealth: craft --health writes each case, which dissect flags,
// and so does craft --tcp-health on iWARP;
// --snaplen cuts the same traffic as tcpdump -s does; the flags refuse
// what they cannot write.
func TestCraftHealth(t *testing.T) {
	dir := t.TempDir()
	for c, code := range map[string]string{"nak": "rc-nak", "rnr": "rc-rnr-nak", "invalid-request": "rc-nak",
		"access-error": "rc-nak", "congestion": "roce-congestion", "missed": "rc-packets-missing"} {
		f := filepath.Join(dir, c+".pcap")
		if code, _, errOut := run(t, nil, nil, false, "craft", "--health", c, "-w", f); code != 0 {
			t.Fatalf("craft --health %s: %d %s", c, code, errOut)
		}
		_, out, _ := run(t, nil, nil, false, "dissect", "-q", "-T", "json", f)
		if !strings.Contains(out, `"code":"`+code+`"`) {
			t.Errorf("--health %s: no %s in\n%s", c, code, out)
		}
	}
	for c, code := range map[string]string{"retransmit": "tcp-retransmission", "missing": "tcp-segments-missing", "reset": "tcp-reset",
		"zero-window": `"tcp_zero_windows":{"initiator_to_responder":0,"responder_to_initiator":1}`} {
		f := filepath.Join(dir, "tcp-"+c+".pcap")
		if code, _, errOut := run(t, nil, nil, false, "craft", "--transport", "iwarp", "--tcp-health", c, "-w", f); code != 0 {
			t.Fatalf("craft --tcp-health %s: %d %s", c, code, errOut)
		}
		_, out, _ := run(t, nil, nil, false, "dissect", "-q", "-T", "json", f)
		if !strings.HasPrefix(code, `"`) {
			code = `"code":"` + code + `"`
		}
		if !strings.Contains(out, code) {
			t.Errorf("--tcp-health %s: no %s in\n%s", c, code, out)
		}
	}
	cut := filepath.Join(dir, "cut.pcap")
	if code, _, errOut := run(t, nil, nil, false, "craft", "--traffic", "--snaplen", "128", "-w", cut); code != 0 {
		t.Fatalf("craft --snaplen: %d %s", code, errOut)
	}
	if _, out, _ := run(t, nil, nil, false, "dissect", "-q", cut); !strings.Contains(out, "capture-truncated") {
		t.Errorf("--snaplen 128: nothing cut?\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--health", "lost"}, `--health: unknown case "lost"`},
		{[]string{"--health", "nak", "--transport", "iwarp"}, "--health writes RC traffic"},
		{[]string{"--health", "nak", "--finding", "credits-exceeded"}, "give one of them"},
		{[]string{"--transport", "iwarp", "--tcp-health", "lost"}, `--tcp-health: unknown case "lost"`},
		{[]string{"--tcp-health", "reset"}, "--tcp-health writes iWARP traffic"},
		{[]string{"--transport", "iwarp", "--tcp-health", "reset", "--health", "nak"}, "--health writes RC traffic"},
		{[]string{"--traffic", "--snaplen", "20"}, "--snaplen: 20"},
		{[]string{"--transport", "iwarp", "--snaplen", "128"}, "--snaplen applies to"},
	} {
		code, _, errOut := run(t, nil, nil, false, append(append([]string{"craft"}, tc.args...), "-w", filepath.Join(dir, "x.pcap"))...)
		if code == 0 || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errOut, tc.err)
		}
	}
}
