// Package hexdump reads octets written as text: plain hex as logs print
// it ("f6ab0e18 01 01 03 03", "0xf6,0xab", "f6:ab:0e:18"), and the dumps of
// xxd, hexdump -C (and rdmacm-pd -x), tcpdump -x/-X and tshark -x, whose
// offsets and ASCII columns are skipped (hexdump's "*" lines repeated).
package hexdump

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxOctets bounds the octets a dump may hold (its "*" lines could
// otherwise ask for any number): far more than the largest private data.
const MaxOctets = 1 << 20

// Error is a problem with the text, at a line when it is a dump.
type Error struct {
	Line int // 1-based; 0 for plain hex
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Parse reads the octets of text. A text is a dump when a line starts with
// an offset: "00000010:" (xxd), "0x0010:" (tcpdump), or a run of hex digits
// followed by a line holding "|...|" (hexdump -C) or by the offsets of the
// following lines (tshark -x). Otherwise it is plain hex: digits in pairs,
// with spaces, colons, dashes, commas and 0x prefixes between them.
func Parse(text string) ([]byte, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if isDump(lines) {
		return parseDump(lines)
	}
	return parsePlain(text)
}

// parsePlain reads hex digits, ignoring white space, colons, dashes, commas
// and 0x prefixes.
func parsePlain(s string) ([]byte, error) {
	var out []byte
	var pending byte
	half := false
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ':' || r == '-' || r == ','
	}) {
		t := strings.TrimPrefix(strings.TrimPrefix(tok, "0x"), "0X")
		for i := 0; i < len(t); i++ {
			v, ok := nibble(t[i])
			if !ok {
				return nil, &Error{Msg: fmt.Sprintf("%q is not hex (%q at %d)", tok, t[i:i+1], len(tok)-len(t)+i+1)}
			}
			if half {
				out = append(out, pending<<4|v)
			} else {
				pending = v
			}
			half = !half
		}
	}
	switch {
	case half:
		return nil, &Error{Msg: fmt.Sprintf("odd number of hex digits (%d): each octet is two", len(out)*2+1)}
	case len(out) == 0:
		return nil, &Error{Msg: "no hex digits"}
	}
	return out, nil
}

func nibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// offsetOf reads the offset a dump line starts with: its value, where the
// octets start, and whether it is one ("0010", "00000010:", "0x0010:").
func offsetOf(line string) (off int, rest string, colon bool, ok bool) {
	t := strings.TrimLeft(line, " \t")
	end := strings.IndexAny(t, " \t")
	if end < 0 {
		end = len(t)
	}
	tok := t[:end]
	colon = strings.HasSuffix(tok, ":")
	tok = strings.TrimSuffix(tok, ":")
	hadPrefix := strings.HasPrefix(tok, "0x")
	tok = strings.TrimPrefix(tok, "0x")
	if len(tok) < 4 || (!colon && !hadPrefix && len(tok)%2 != 0) {
		return 0, line, false, false
	}
	v, err := strconv.ParseUint(tok, 16, 40)
	if err != nil {
		return 0, line, false, false
	}
	return int(v), t[end:], colon, true
}

// isDump tells a dump from plain hex.
func isDump(lines []string) bool {
	var offs []int
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		off, rest, colon, ok := offsetOf(l)
		if ok && (colon || strings.Contains(rest, "|")) {
			return true
		}
		if ok {
			offs = append(offs, off)
		} else if t := strings.TrimSpace(l); t != "*" && !isMarks(t) && !isHeading(t) {
			return false
		}
	}
	// tshark -x: offsets without colons, 0 first, growing.
	if len(offs) < 2 || offs[0] != 0 {
		return false
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] <= offs[i-1] {
			return false
		}
	}
	return true
}

// isHeading reports whether a line is the heading rdmacm-pd -x writes
// above its dump.
func isHeading(t string) bool { return strings.HasPrefix(t, "Private Data") }

// isMarks reports whether a line is rdmacm-pd -x's line of ^^ marks.
func isMarks(t string) bool {
	return strings.Trim(t, "^ ") == "" && strings.Contains(t, "^^")
}

// parseDump reads the octets of a dump, checking each line's offset
// against the octets before it.
func parseDump(lines []string) ([]byte, error) {
	var out, last []byte
	repeat := false
	for i, l := range lines {
		n := i + 1
		t := strings.TrimSpace(l)
		switch {
		case t == "" || isMarks(t) || isHeading(t):
			continue
		case t == "*":
			repeat = true
			continue
		}
		off, rest, _, ok := offsetOf(l)
		if !ok {
			return nil, &Error{Line: n, Msg: fmt.Sprintf("%q does not start with an offset, as the dump's other lines do", t)}
		}
		if off > MaxOctets {
			return nil, &Error{Line: n, Msg: fmt.Sprintf("offset 0x%x is beyond %d octets: too long for private data", off, MaxOctets)}
		}
		if repeat {
			// hexdump: the line before repeats up to this offset.
			if len(last) == 0 || (off-len(out))%len(last) != 0 || off < len(out) {
				return nil, &Error{Line: n, Msg: fmt.Sprintf("offset 0x%x does not follow the repeated line before it", off)}
			}
			for len(out) < off {
				out = append(out, last...)
			}
			repeat = false
		}
		if off != len(out) {
			return nil, &Error{Line: n, Msg: fmt.Sprintf("offset 0x%x, but the lines before hold 0x%x octets", off, len(out))}
		}
		b, err := dumpOctets(rest)
		if err != nil {
			return nil, &Error{Line: n, Msg: err.Error()}
		}
		out = append(out, b...)
		if len(b) > 0 {
			last = b
		}
	}
	if len(out) == 0 {
		return nil, &Error{Msg: "the dump holds no octets"}
	}
	return out, nil
}

// dumpOctets reads the octets of a dump line after its offset: groups of
// hex digits up to the ASCII column, which starts at a "|" (hexdump -C) or
// after two spaces and the last group (xxd, tcpdump -X, tshark -x).
func dumpOctets(s string) ([]byte, error) {
	if i := strings.IndexByte(s, '|'); i >= 0 {
		s = s[:i]
	} else {
		s = strings.TrimLeft(s, " \t")
		// The groups are one space apart; two or more end them (hexdump
		// -C's gap after 8 octets has a "|" column and was cut above).
		if i := strings.Index(s, "  "); i >= 0 {
			s = s[:i]
		}
	}
	var out []byte
	for gi, g := range strings.Fields(s) {
		b, ok := octets(g)
		if !ok {
			if gi > 0 && !allHex(g) {
				break // the ASCII column, its spacing lost (a line split by the shell)
			}
			return nil, fmt.Errorf("%q is not hex octets", g)
		}
		out = append(out, b...)
	}
	return out, nil
}

func allHex(g string) bool {
	for i := 0; i < len(g); i++ {
		if _, ok := nibble(g[i]); !ok {
			return false
		}
	}
	return true
}

// octets reads a group of hex digit pairs.
func octets(g string) ([]byte, bool) {
	if len(g)%2 != 0 {
		return nil, false
	}
	out := make([]byte, 0, len(g)/2)
	for i := 0; i < len(g); i += 2 {
		hi, ok1 := nibble(g[i])
		lo, ok2 := nibble(g[i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		out = append(out, hi<<4|lo)
	}
	return out, true
}
