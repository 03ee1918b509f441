package record

import "testing"

func TestEscapeControl(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"capture.pcap", "capture.pcap"},
		{"", ""},
		{"café ☃.pcap", "café ☃.pcap"},
		{"two\nlines.pcap", `two\nlines.pcap`},
		{"cr\rtab\t", `cr\rtab\t`},
		{"\x1b[31mred\x1b[0m.pcap", `\x1b[31mred\x1b[0m.pcap`},
		{"del\x7f", `del\x7f`},
		{"nul\x00", `nul\x00`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"rtl\u202egnp.exe", `rtl\u202egnp.exe`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"cut\xe2\x98", `cut\xe2\x98`},
	} {
		if got := EscapeControl(tc.in); got != tc.want {
			t.Errorf("EscapeControl(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
