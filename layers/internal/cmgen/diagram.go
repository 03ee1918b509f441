package cmgen

import (
	"fmt"
	"strings"
)

// diagram draws a layout for its doc comment, a row per 32-bit word and a row
// for each field longer than that:
//
//	octet  0  Local Communication ID (4)
//	       8  Remote EECN (3) | Remote CM Response Timeout:5 Transport Service Type:2 End-to-End Flow Control:1
//
// A field of whole octets shows its size in octets, any other its width in
// bits. Fields are apart by " | " where an octet ends between them. Bits that
// no field claims are reserved.
func (m *Message) diagram() []string {
	var rows []string
	row := func(octet int, text string) {
		prefix := "     "
		if len(rows) == 0 {
			prefix = "octet"
		}
		rows = append(rows, fmt.Sprintf("%s%3d  %s", prefix, octet, text))
	}
	for pos := 0; pos < m.Fixed; {
		if f, ok := m.longAt(pos); ok {
			row(pos, label(f))
			for _, in := range m.Fields {
				if p, ok := m.inPath(in); ok && p == f {
					row(in.Octet, fmt.Sprintf("%s:%d (mask 0x%02x), within the %s path",
						in.Name, in.Bits, (1<<in.Bits-1)<<(8-in.Bit-in.Bits), strings.ToLower(f.Name)))
				}
			}
			pos += f.Bits / 8
			continue
		}
		end := min(pos-pos%4+4, m.Fixed)
		for _, f := range m.Fields {
			if f.long() && f.Octet > pos {
				end = min(end, f.Octet)
			}
		}
		text, endBit := m.words(8*pos, 8*end)
		row(pos, text)
		pos = (endBit + 7) / 8
	}
	if !m.part() {
		row(m.Fixed, fmt.Sprintf("Private Data (%d)", MADDataLen-m.Fixed))
	}
	return rows
}

// longAt returns the long field that starts at an octet, if any.
func (m *Message) longAt(octet int) (Field, bool) {
	for _, f := range m.Fields {
		if f.long() && f.start() == 8*octet {
			return f, true
		}
	}
	return Field{}, false
}

// words describes the bits from start to end: each field that starts there,
// and the reserved runs between them. A field that runs past end is shown
// whole; the returned end is after it.
func (m *Message) words(start, end int) (string, int) {
	var b strings.Builder
	bit := start
	for bit < end {
		if bit > start {
			b.WriteString(map[bool]string{true: " | ", false: " "}[bit%8 == 0])
		}
		if f, ok := m.startingAt(bit); ok {
			b.WriteString(label(f))
			bit = f.end()
			continue
		}
		next := end
		for _, f := range m.Fields {
			if f.start() > bit && f.start() < next {
				next = f.start()
			}
		}
		b.WriteString(label(Field{Bit: bit % 8, Bits: next - bit, Name: "reserved"}))
		bit = next
	}
	return b.String(), bit
}

// startingAt returns the field that starts at a bit, unless it lies within a
// path's octets.
func (m *Message) startingAt(bit int) (Field, bool) {
	for _, f := range m.Fields {
		if _, in := m.inPath(f); f.start() == bit && !in {
			return f, true
		}
	}
	return Field{}, false
}

// label names a field in the diagram with its size.
func label(f Field) string {
	name := f.Name
	if f.Show == Path {
		name += " path"
	}
	if f.whole() {
		return fmt.Sprintf("%s (%d)", name, f.Bits/8)
	}
	return fmt.Sprintf("%s:%d", name, f.Bits)
}
