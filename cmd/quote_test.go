package cmd

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCommandLineQuoting: the command line the Markdown report shows gives
// back every argument when bash reads it, also one with quotes,
// backslashes, a newline, escape sequences and octets that are not UTF-8;
// and the line has no control character in it.
func TestCommandLineQuoting(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, name := range []string{"plain.pcap", "it's here.pcap", "a'b\\c\nd\x1b[2J\xff\u009b\u202e.pcap"} {
		line := commandLine([]string{"dissect", name}, nil)
		if strings.ContainsAny(line, "\n\x1b\u009b\u202e") {
			t.Errorf("%q: control characters in %q", name, line)
		}
		arg := strings.TrimPrefix(line, "rdmacm-pd dissect ")
		out, err := exec.Command(bash, "-c", "printf %s "+arg).Output()
		if err != nil || string(out) != name {
			t.Errorf("%q: bash reads %s as %q (%v)", name, arg, out, err)
		}
	}
}
