package record

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// EscapeControl returns s with what a terminal would act on written out
// instead: C0 and C1 control characters and DEL (\n, \r, \t, \x1b, \u009b),
// the bidirectional formatting characters (\u202e) and octets that are not
// UTF-8 (\xff). Names from inputs (file names) pass through it wherever text
// or Markdown output or an error shows them, so that a line stays one line
// and no escape sequence reaches the terminal. JSON escapes on its own.
func EscapeControl(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 && needsEscape(s[i:]) {
			break
		}
		if c < 0x80 {
			i++
		} else {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escapedRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether the rune at the start of s (at least one
// octet, the first not ASCII) is escaped.
func needsEscape(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && n == 1 || escapedRune(r)
}

// escapedRune: the C1 controls (U+0080 to U+009F, among them CSI U+009B),
// and the bidirectional formatting characters, which reorder what follows
// them on the line.
func escapedRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
