package cmgen

import (
	"bytes"
	"fmt"
	"strings"
)

// The code a layout's decode, encode and fields are made of. r is the
// receiver's name (m or p), d the name of the octets.

// readers are how the decoder reads a number that touches n octets, and the
// type that gives.
var readers = map[int]struct{ read, typ string }{
	1: {"%s[%d]", "uint8"},
	2: {"binary.BigEndian.Uint16(%s[%d:%d])", "uint16"},
	3: {"uint24(%s[%d:%d])", "uint32"},
	4: {"binary.BigEndian.Uint32(%s[%d:%d])", "uint32"},
	8: {"binary.BigEndian.Uint64(%s[%d:%d])", "uint64"},
}

// writers are how the encoder writes n octets from a value of the reader's
// type.
var writers = map[int]string{
	1: "%s[%d] = %s",
	2: "binary.BigEndian.PutUint16(%s[%d:%d], %s)",
	3: "putUint24(%s[%d:%d], %s)",
	4: "binary.BigEndian.PutUint32(%s[%d:%d], %s)",
	8: "binary.BigEndian.PutUint64(%s[%d:%d], %s)",
}

// octetsExpr reads or writes n octets at o: the reader or writer format
// with the slice bounds filled in.
func octetsExpr(format, d string, o, n int, v ...any) string {
	args := []any{d, o}
	if n > 1 {
		args = append(args, o+n)
	}
	return fmt.Sprintf(format, append(args, v...)...)
}

// mask is a field's mask, in hex with at least two digits.
func mask(bits int) string {
	return fmt.Sprintf("0x%0*x", max(2, (bits+3)/4), uint64(1)<<bits-1)
}

// writeDecode writes the statements that set each field from d.
func (m *Message) writeDecode(b *bytes.Buffer, r, d string) {
	for _, f := range m.Fields {
		dst := r + "." + f.Go
		switch {
		case f.Show == Path:
			fmt.Fprintf(b, "%s.decode(%s[%d:%d])\n", dst, d, f.Octet, f.Octet+f.Bits/8)
		case f.Show == GID || f.Show == Blob:
			fmt.Fprintf(b, "copy(%s[:], %s[%d:%d])\n", dst, d, f.Octet, f.Octet+f.Bits/8)
		case f.Show == Flag:
			fmt.Fprintf(b, "%s = %s[%d]&0x%02x != 0\n", dst, d, f.Octet, 0x80>>f.Bit)
		default:
			fmt.Fprintf(b, "%s = %s\n", dst, f.read(d))
		}
	}
}

// read is the expression that decodes a number: the octets it touches, read
// as one big-endian value, shifted down and masked.
func (f Field) read(d string) string {
	n := f.span()
	rd := readers[n]
	e := octetsExpr(rd.read, d, f.Octet, n)
	if s := 8*n - f.Bit - f.Bits; s > 0 {
		e += fmt.Sprintf(" >> %d", s)
	}
	if f.Bit > 0 {
		e += " & " + mask(f.Bits)
	}
	if t := f.goType(); t != rd.typ {
		e = t + "(" + e + ")"
	}
	return e
}

// writeEncode writes the statements that set d from each field, into octets
// the caller has zeroed. Numbers that share octets are written together, so
// each octet is written once; a field inside a path's reserved bits (the
// REQ's SAP Supported) is ORed in after the path.
func (m *Message) writeEncode(b *bytes.Buffer, r, d string) {
	for _, u := range m.units() {
		f := u[0]
		src := r + "." + f.Go
		switch {
		case f.Show == Path:
			fmt.Fprintf(b, "%s.encode(%s[%d:%d])\n", src, d, f.Octet, f.Octet+f.Bits/8)
		case f.Show == GID || f.Show == Blob:
			fmt.Fprintf(b, "copy(%s[%d:%d], %s[:])\n", d, f.Octet, f.Octet+f.Bits/8, src)
		default:
			fmt.Fprintln(b, m.writeUnit(u, r, d))
		}
	}
}

// units groups the fields into what the encoder writes at once: numbers and
// flags that share an octet go together; anything else is alone.
func (m *Message) units() [][]Field {
	var us [][]Field
	last := -1 // the last octet of the open unit of numbers
	for _, f := range m.Fields {
		number := f.Show <= Flag
		if _, in := m.inPath(f); number && !in && len(us) > 0 && f.Octet <= last {
			us[len(us)-1] = append(us[len(us)-1], f)
		} else {
			us = append(us, []Field{f})
			last = -1
		}
		if number {
			last = max(last, f.Octet+f.span()-1)
		}
	}
	return us
}

// writeUnit is the statement that writes a unit of numbers.
func (m *Message) writeUnit(u []Field, r, d string) string {
	o := u[0].Octet
	n := 0
	for _, f := range u {
		n = max(n, f.Octet+f.span()-o)
	}
	typ := readers[n].typ
	var terms []string
	for _, f := range u {
		terms = append(terms, f.term(r, 8*(f.Octet-o)+f.Bit, 8*n, typ))
	}
	e := strings.Join(terms, " | ")
	if _, in := m.inPath(u[0]); in {
		return fmt.Sprintf("%s[%d] |= %s", d, o, e)
	}
	return octetsExpr(writers[n], d, o, n, e)
}

// term is one field's part of a unit's value: the field at bit start of a
// container of bits bits whose type is typ.
func (f Field) term(r string, start, bits int, typ string) string {
	v := r + "." + f.Go
	s := bits - start - f.Bits
	if f.Show == Flag {
		if bits == 8 {
			return fmt.Sprintf("bit(%s, 0x%02x)", v, 1<<s)
		}
		return fmt.Sprintf("%s(bit(%s, 1))<<%d", typ, v, s)
	}
	// The value needs masking unless its type holds only its bits, or it
	// is at the top of the container, where the shift drops the rest.
	t := f.goType()
	masked := start > 0 && typeBits(t) > f.Bits
	if masked {
		v += "&" + mask(f.Bits)
	}
	if t != typ {
		v = typ + "(" + v + ")"
	} else if masked && s > 0 {
		v = "(" + v + ")"
	}
	if s > 0 {
		v += fmt.Sprintf("<<%d", s)
	}
	return v
}

// writeFields writes the calls that list each field; label gives the
// expressions of a field's name and key.
func (m *Message) writeFields(b *bytes.Buffer, r string, label func(name, key string) (string, string)) {
	for _, f := range m.Fields {
		v := r + "." + f.Go
		name, key := label(f.Name, f.Key)
		num := v
		if f.goType() != "uint64" {
			num = "uint64(" + v + ")"
		}
		switch f.Show {
		case Dec:
			fmt.Fprintf(b, "f.dec(%s, %s, %s)\n", name, key, num)
		case Hex:
			fmt.Fprintf(b, "f.hex(%s, %s, %d, %s)\n", name, key, f.Bits, num)
		case ID64:
			fmt.Fprintf(b, "f.id64(%s, %s, %s)\n", name, key, v)
		case Flag:
			fmt.Fprintf(b, "f.flag(%s, %s, %s)\n", name, key, v)
		case GID:
			fmt.Fprintf(b, "f.gid(%s, %s, %s)\n", name, key, v)
		case Blob:
			fmt.Fprintf(b, "f.blob(%s, %s, %s[:min(int(%s.%s), len(%s))])\n", name, key, v, r, f.Len, v)
		case Path:
			fmt.Fprintf(b, "%s.fields(&f, %q, %q)\n", v, f.Name, f.Key)
		}
		if f.Note != "" {
			fmt.Fprintf(b, "f.note(%s(%s))\n", f.Note, v)
		}
	}
}
