package output

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkJSONString decodes what appendJSONString wrote with encoding/json and
// compares it with s, invalid UTF-8 octets replaced by U+FFFD one by one.
func checkJSONString(t *testing.T, s string) {
	t.Helper()
	out := appendJSONString([]byte("x"), s)
	if out[0] != 'x' {
		t.Fatalf("prefix overwritten: %q", out)
	}
	var got string
	if err := json.Unmarshal(out[1:], &got); err != nil {
		t.Fatalf("%q: invalid JSON %q: %v", s, out[1:], err)
	}
	var want strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		want.WriteRune(r) // RuneError for an invalid octet
		i += n
	}
	if got != want.String() {
		t.Fatalf("%q: round trip gave %q", s, got)
	}
	for _, c := range out[1:] {
		if c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f {
			t.Fatalf("%q: raw %q left in output %q", s, c, out[1:])
		}
	}
	if strings.Contains(string(out), "\u2028") || strings.Contains(string(out), "\u2029") {
		t.Fatalf("%q: raw line separator left in %q", s, out[1:])
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"REQ", `"REQ"`},
		{"192.0.2.1 → 192.0.2.2", `"192.0.2.1 → 192.0.2.2"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"l1\nl2\r\t", `"l1\nl2\r\t"`},
		{"<b>&", `"\u003cb\u003e\u0026"`},
		{"\x00\x1f\x7f", `"\u0000\u001f\u007f"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"plain run then \"quote\" then plain", `"plain run then \"quote\" then plain"`},
	} {
		if got := string(appendJSONString(nil, tc.in)); got != tc.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tc.in, got, tc.want)
		}
		checkJSONString(t, tc.in)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "REQ", "a\"b", "\xff\xfe", "\u2028x<y>&z", "\x00\x7f\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkJSONString(t, s) })
}
