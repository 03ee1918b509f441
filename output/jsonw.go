package output

import (
	"encoding/hex"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// jw builds one JSON document by appending. Keys come out in the order they
// are written, so records are stable byte for byte, and nothing goes through
// reflection.
type jw struct {
	b     []byte
	stack []jframe
}

type jframe struct{ arr, has bool }

// elem writes the separator before a value inside an array.
func (j *jw) elem() {
	if n := len(j.stack); n > 0 && j.stack[n-1].arr {
		if j.stack[n-1].has {
			j.b = append(j.b, ',')
		}
		j.stack[n-1].has = true
	}
}

func (j *jw) key(k string) {
	f := &j.stack[len(j.stack)-1]
	if f.has {
		j.b = append(j.b, ',')
	}
	f.has = true
	j.b = appendJSONString(j.b, k)
	j.b = append(j.b, ':')
}

func (j *jw) obj() {
	j.elem()
	j.b = append(j.b, '{')
	j.stack = append(j.stack, jframe{})
}

func (j *jw) arr() {
	j.elem()
	j.b = append(j.b, '[')
	j.stack = append(j.stack, jframe{arr: true})
}

func (j *jw) end() {
	f := j.stack[len(j.stack)-1]
	j.stack = j.stack[:len(j.stack)-1]
	if f.arr {
		j.b = append(j.b, ']')
	} else {
		j.b = append(j.b, '}')
	}
}

func (j *jw) str(s string) { j.elem(); j.b = appendJSONString(j.b, s) }

// hex writes octets as a string of hex digits, without a copy of them as
// a string first (private data may be 64 KiB).
func (j *jw) hex(b []byte) {
	j.elem()
	j.b = append(hex.AppendEncode(append(j.b, '"'), b), '"')
}
func (j *jw) int(n int64)   { j.elem(); j.b = strconv.AppendInt(j.b, n, 10) }
func (j *jw) uint(n uint64) { j.elem(); j.b = strconv.AppendUint(j.b, n, 10) }
func (j *jw) null()         { j.elem(); j.b = append(j.b, "null"...) }

// seconds writes a duration as seconds, as short as it reads back exactly.
func (j *jw) seconds(d time.Duration) {
	j.elem()
	j.b = strconv.AppendFloat(j.b, d.Seconds(), 'f', -1, 64)
}
func (j *jw) bool(v bool) { j.elem(); j.b = strconv.AppendBool(j.b, v) }

// Shorthands for a key and its value.
func (j *jw) kstr(k, v string) { j.key(k); j.str(v) }

// kaddr writes an endpoint as a string: its text (digits, letters, dots,
// colons, brackets, spaces) never needs escaping.
func (j *jw) kaddr(k string, e record.Endpoint) {
	j.key(k)
	j.b = append(e.Append(append(j.b, '"')), '"')
}
func (j *jw) kint(k string, v int64)   { j.key(k); j.int(v) }
func (j *jw) kuint(k string, v uint64) { j.key(k); j.uint(v) }
func (j *jw) kbool(k string, v bool)   { j.key(k); j.bool(v) }

const hexDigits = "0123456789abcdef"

// jsonPlain marks the ASCII octets appendJSONString copies unchanged.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Copy the longest run that needs no escaping in one append: most
		// strings (names, addresses, hex) are plain ASCII.
		j := i
		for j < len(s) && jsonPlain[s[j]] {
			j++
		}
		if j > i {
			b = append(b, s[i:j]...)
			if i = j; i == len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendHex appends v in lower-case hex, in at least digits digits.
func appendHex(b []byte, v uint64, digits int) []byte {
	var d [16]byte
	n := len(d)
	for v != 0 || n > len(d)-digits {
		n--
		d[n] = hexDigits[v&0xf]
		v >>= 4
	}
	return append(b, d[n:]...)
}
