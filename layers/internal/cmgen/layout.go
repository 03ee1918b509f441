// Package cmgen describes each InfiniBand Communication Manager message once,
// field by field, and writes package layers' code for the messages from that
// description: the struct, whose doc comment carries the octet diagram, and
// its DecodeFromBytes, SerializeTo and Fields methods.
//
// The descriptions are in messages.go. After changing one, run
//
//	go generate ./layers
//
// A test in package layers fails while the files there differ from what
// Generate writes.
package cmgen

import "fmt"

// MADDataLen is the size of a MAD's data, which a CM message fills: its fixed
// fields, then the private data.
const MADDataLen = 232

// Show is how the Fields method of package layers lists a field. It also
// decides the field's Go type: bool for a Flag, an array for a GID or Blob,
// CMPath for a Path, and the smallest unsigned integer that holds the bits
// for the others.
type Show int

// The ways to show a field; each but Path is a layers.FieldKind.
const (
	Dec  Show = iota // a number in decimal
	Hex              // a number in hex, as many digits as its bits need
	ID64             // a 64-bit identifier
	Flag             // one bit
	GID              // 16 octets, shown as an IPv6 address
	Blob             // opaque octets, shown in hex up to a count another field gives
	Path             // a path description, laid out by PathLayout
)

// Field is one field on the wire and in the struct.
type Field struct {
	Octet int  // its first octet, counted from the start of the message (or path)
	Bit   int  // its first bit within that octet, 0 being the most significant
	Bits  int  // its width in bits
	Show  Show // how Fields lists it, and so its Go type

	Go   string // the struct field's name
	Name string // the field's name as IBTA spells it, for Fields and the comments
	Key  string // its JSON key
	Doc  string // more for the struct field's comment, after the name
	Note string // a layers function that names the value, for Field.Note
	Len  string // for a Blob: the field that counts its meaningful octets
}

// Message is the layout of one CM message, or of the path description that a
// REQ carries twice (then Attr is "").
type Message struct {
	Type    string // the Go type
	Name    string // the message's name as IBTA spells it: REQ, SIDR_REQ
	Article string // "a" or "an", as said before Name
	File    string // the file of package layers the code goes to
	Attr    string // the constant of its attribute ID
	Layer   string // its layer type
	Doc     string // the struct's doc comment, up to the octet diagram
	Fixed   int    // octets of fixed fields; the private data fills the rest of the MAD data

	// Local and Remote are the fields CommIDs returns ("" returns 0).
	Local, Remote string
	// IPCM is the Service ID field whose IP CM prefix says that the private
	// data starts with the IP CM header ("" when the message has none).
	IPCM string

	Fields []Field
}

// field describes a number or flag; note, doc and count add what some need.
func field(octet, bit, bits int, show Show, goName, name, key string) Field {
	return Field{Octet: octet, Bit: bit, Bits: bits, Show: show, Go: goName, Name: name, Key: key}
}

// octets describes a field of whole octets that is not a number: a GID, a
// Blob or a Path.
func octets(octet, n int, show Show, goName, name, key string) Field {
	return field(octet, 0, 8*n, show, goName, name, key)
}

func (f Field) note(fn string) Field  { f.Note = fn; return f }
func (f Field) doc(s string) Field    { f.Doc = s; return f }
func (f Field) count(by string) Field { f.Len = by; return f }

// start and end are the field's first bit and the bit after its last.
func (f Field) start() int { return 8*f.Octet + f.Bit }
func (f Field) end() int   { return f.start() + f.Bits }

// span is how many octets the field touches.
func (f Field) span() int { return (f.Bit + f.Bits + 7) / 8 }

// whole reports whether the field is made of whole octets.
func (f Field) whole() bool { return f.Bit == 0 && f.Bits%8 == 0 }

// long reports whether the field gets a row of its own in the octet diagram:
// anything longer than a 32-bit word, and what is not a number.
func (f Field) long() bool { return f.Bits > 32 || f.Show >= GID }

// goType is the struct field's type.
func (f Field) goType() string {
	switch f.Show {
	case Flag:
		return "bool"
	case GID, Blob:
		return fmt.Sprintf("[%d]byte", f.Bits/8)
	case Path:
		return PathLayout.Type
	}
	return uintType(f.Bits)
}

// uintType is the smallest unsigned integer type of at least bits bits.
func uintType(bits int) string {
	for _, n := range []int{8, 16, 32} {
		if bits <= n {
			return fmt.Sprintf("uint%d", n)
		}
	}
	return "uint64"
}

// typeBits is the width of an unsigned integer type.
func typeBits(t string) int {
	var n int
	fmt.Sscanf(t, "uint%d", &n)
	return n
}

// part reports whether the layout is a part of messages (the path
// description) rather than a message.
func (m *Message) part() bool { return m.Attr == "" }

// find returns the field with a Go name.
func (m *Message) find(goName string) (Field, bool) {
	for _, f := range m.Fields {
		if f.Go == goName {
			return f, true
		}
	}
	return Field{}, false
}

// covered marks the bits a layout's fields occupy, each path's by its own
// fields, so that a field may sit in a path's reserved bits (as the REQ's SAP
// Supported does).
func (m *Message) covered() []bool {
	bits := make([]bool, 8*m.Fixed)
	for _, f := range m.Fields {
		if f.Show != Path {
			for i := f.start(); i < f.end() && i < len(bits); i++ {
				bits[i] = true
			}
			continue
		}
		for i, b := range PathLayout.covered() {
			if b && f.start()+i < len(bits) {
				bits[f.start()+i] = true
			}
		}
	}
	return bits
}

// inPath returns the path field whose octets hold field f, if any.
func (m *Message) inPath(f Field) (Field, bool) {
	for _, p := range m.Fields {
		if p.Show == Path && f.Show != Path && f.start() >= p.start() && f.end() <= p.end() {
			return p, true
		}
	}
	return Field{}, false
}
