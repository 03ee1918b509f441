package cmd

import (
	"strings"
	"testing"
)

// TestDissectRulesNameTheirFlag: every rule of dissect names the flag at
// fault, and its message names it too (the inputs, FILE, excepted: the
// message says "capture files"). Every flag is taken as given, so that
// every rule has its message.
func TestDissectRulesNameTheirFlag(t *testing.T) {
	opts := &dissectOptions{Changed: func(string) bool { return true }}
	opts.Input.Files = []string{"-", "-"}
	for _, live := range []bool{false, true} {
		for i, r := range dissectRules(opts, live) {
			if r.flag == "" || r.flag != fileArgs && !strings.Contains(r.msg, r.flag) {
				t.Errorf("live %v: rule %d names %q, its message %q", live, i, r.flag, r.msg)
			}
		}
	}
}

// TestFirstBroken: the first broken rule is the error, whatever follows.
func TestFirstBroken(t *testing.T) {
	err := firstBroken([]flagRule{{"--a", false, "a"}, {"--b", true, "b 100%"}, {"--c", true, "c"}})
	if err == nil || err.Error() != "b 100%" || exitCode(err) != ExitFailure {
		t.Errorf("got %v (exit %d)", err, exitCode(err))
	}
	if err := firstBroken([]flagRule{{"--a", false, "a"}}); err != nil {
		t.Errorf("no rule broken: %v", err)
	}
}

// TestCraftRulesNameTheirFlag: every rule of craft names the flag at fault,
// and its message names it too.
func TestCraftRulesNameTheirFlag(t *testing.T) {
	for i, r := range craftRules(&craftOptions{Workload: "lots"}) {
		if r.flag == "" || !strings.Contains(r.msg, r.flag) {
			t.Errorf("rule %d names %q, its message %q", i, r.flag, r.msg)
		}
	}
}
