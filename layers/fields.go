package layers

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
)

// FieldKind says how a Field's value is shown.
type FieldKind uint8

// Field kinds. Numbers of up to 32 bits stay numbers in JSON; 64-bit
// identifiers, GIDs and addresses become strings.
const (
	Dec  FieldKind = iota // decimal number
	Hex                   // number shown as 0x with Bits/4 digits
	ID64                  // 64-bit identifier: "0x" and 16 lowercase hex digits
	Bool                  // one bit shown as true or false
	GID                   // 16 octets in Bytes, shown as an IPv6 address
	Addr                  // IPv4 or IPv6 address in Bytes (4 or 16 octets)
	Blob                  // opaque octets in Bytes, shown as hex
	Text                  // printable text in Bytes (an MPA key), shown as is
)

// Field is one named wire field of a decoded layer. Layers list their fields
// with a Fields method so that every output format shows the same fields under
// the same names: Name as the specification spells it, Key for JSON.
type Field struct {
	Name  string
	Key   string
	Kind  FieldKind
	Bits  int // width on the wire, for Hex
	Value uint64
	Bytes []byte
	// Note names the value when it has a name (an opcode, a reject
	// reason, an IP CM service), for people; "" otherwise.
	Note string
}

// Text is the field's value as a person reads it.
func (f Field) Text() string {
	switch f.Kind {
	case Dec:
		return strconv.FormatUint(f.Value, 10)
	case Hex:
		digits := (f.Bits + 3) / 4
		if digits < 1 {
			digits = 1
		}
		return fmt.Sprintf("0x%0*x", digits, f.Value)
	case ID64:
		return fmt.Sprintf("0x%016x", f.Value)
	case Bool:
		return strconv.FormatBool(f.Value != 0)
	case GID, Addr:
		return AddrString(f.Bytes)
	case Blob:
		return hex.EncodeToString(f.Bytes)
	case Text:
		return printable(f.Bytes)
	}
	return strconv.FormatUint(f.Value, 10)
}

// AddrString shows 4 or 16 octets as an IP address; an IPv4-mapped IPv6
// address (as RoCE GIDs often are) keeps its IPv6 form, ::ffff:192.0.2.1.
func AddrString(b []byte) string {
	switch len(b) {
	case 4:
		return netip.AddrFrom4([4]byte(b)).String()
	case 16:
		return netip.AddrFrom16([16]byte(b)).String()
	}
	return hex.EncodeToString(b)
}

// fieldList builds a []Field with short calls; it exists only to keep the
// Fields methods readable.
type fieldList []Field

func (l *fieldList) dec(name, key string, v uint64) {
	*l = append(*l, Field{Name: name, Key: key, Kind: Dec, Value: v})
}

func (l *fieldList) hex(name, key string, bits int, v uint64) {
	*l = append(*l, Field{Name: name, Key: key, Kind: Hex, Bits: bits, Value: v})
}

func (l *fieldList) id64(name, key string, v uint64) {
	*l = append(*l, Field{Name: name, Key: key, Kind: ID64, Bits: 64, Value: v})
}

func (l *fieldList) flag(name, key string, v bool) {
	var n uint64
	if v {
		n = 1
	}
	*l = append(*l, Field{Name: name, Key: key, Kind: Bool, Bits: 1, Value: n})
}

func (l *fieldList) gid(name, key string, g [16]byte) {
	*l = append(*l, Field{Name: name, Key: key, Kind: GID, Bytes: append([]byte(nil), g[:]...)})
}

func (l *fieldList) blob(name, key string, b []byte) {
	*l = append(*l, Field{Name: name, Key: key, Kind: Blob, Bytes: append([]byte(nil), b...)})
}

// note names the value of the field added last.
func (l *fieldList) note(s string) {
	if len(*l) > 0 {
		(*l)[len(*l)-1].Note = s
	}
}

// ServiceIDNote names an IP CM Service ID ("IP CM, TCP port 20049"), or "".
func ServiceIDNote(id uint64) string {
	if !IsIPCMServiceID(id) {
		return ""
	}
	ps := IPCMPortSpace(id)
	name := PortSpaceName(ps)
	if name == "" {
		name = fmt.Sprintf("port space 0x%02x", ps)
	}
	return fmt.Sprintf("IP CM, %s port %d", name, IPCMPort(id))
}

// printable shows octets as text, with anything unprintable as \xNN.
func printable(b []byte) string {
	var s []byte
	for _, c := range b {
		if c >= 0x20 && c < 0x7f && c != '\\' {
			s = append(s, c)
		} else {
			s = append(s, fmt.Sprintf("\\x%02x", c)...)
		}
	}
	return string(s)
}
