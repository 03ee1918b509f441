package cmgen

import (
	"bytes"
	"go/format"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.Name] {
			t.Errorf("%s written twice", f.Name)
		}
		seen[f.Name] = true
		if !bytes.HasPrefix(f.Src, []byte(header)) {
			t.Errorf("%s does not start with the generated-code header", f.Name)
		}
		if src, err := format.Source(f.Src); err != nil || !bytes.Equal(src, f.Src) {
			t.Errorf("%s is not gofmt'd: %v", f.Name, err)
		}
	}
	if len(files) != 11 { // one per message, SIDR_REQ and SIDR_REP sharing one, and the path's
		t.Errorf("%d files", len(files))
	}
}

// TestCheck breaks a copy of a good layout in the ways check must catch.
func TestCheck(t *testing.T) {
	good := func() Message {
		m := Messages[2] // REJ: numbers, a note, a counted blob
		m.Fields = append([]Field(nil), m.Fields...)
		return m
	}
	m := good()
	if err := m.check(); err != nil {
		t.Fatalf("the REJ as it is: %v", err)
	}
	cases := []struct {
		name  string
		spoil func(m *Message)
		want  string
	}{
		{"overlap", func(m *Message) { m.Fields[3].Bits = 9 }, "overlaps"},
		{"order", func(m *Message) { m.Fields[0], m.Fields[1] = m.Fields[1], m.Fields[0] }, "not after"},
		{"beyond the fixed part", func(m *Message) { m.Fixed = 80 }, "do not fit"},
		{"wide flag", func(m *Message) { m.Fields[2].Show = Flag }, "a flag is one bit"},
		{"uncounted blob", func(m *Message) { m.Fields[5].Len = "Nothing" }, "counted by a number"},
		{"number over five octets", func(m *Message) { m.Fields[5].Show = Dec; m.Fields[5].Bits = 40 }, "a number of 40 bits"},
		{"key twice", func(m *Message) { m.Fields[1].Key = m.Fields[0].Key }, "named twice"},
		{"no such Comm ID field", func(m *Message) { m.Remote = "Nothing" }, "not a uint32 field"},
		{"Service ID of the wrong type", func(m *Message) { m.IPCM = "Reason" }, "not a uint64 field"},
	}
	for _, c := range cases {
		m := good()
		c.spoil(&m)
		err := m.check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	p := PathLayout
	if err := p.check(); err != nil {
		t.Errorf("the path as it is: %v", err)
	}
	p.Fixed = 88
	p.Fields = append(append([]Field(nil), p.Fields...), octets(44, 44, Path, "Inner", "Inner", "inner"))
	if err := p.check(); err == nil || !strings.Contains(err.Error(), "not within a path") {
		t.Errorf("a path inside the path: %v", err)
	}
}

func TestDiagram(t *testing.T) {
	m := Message{
		Type: "T", Name: "T", Article: "a", File: "t.go", Attr: "AttrT", Layer: "LayerTypeT", Fixed: 64,
		Fields: []Field{
			field(0, 0, 32, Hex, "A", "Alpha", "a"),
			field(5, 3, 20, Hex, "B", "Beta", "b"),
			field(8, 0, 64, ID64, "C", "Gamma", "c"),
			octets(16, 44, Path, "D", "Delta", "d"),
			field(59, 6, 1, Flag, "E", "Epsilon", "e"),
			field(60, 0, 3, Dec, "F", "Zeta", "f"),
		},
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"octet  0  Alpha (4)",
		"       4  reserved:11 Beta:20 reserved:1",
		"       8  Gamma (8)",
		"      16  Delta path (44)",
		"      59  Epsilon:1 (mask 0x02), within the delta path",
		"      60  Zeta:3 reserved:29",
		"      64  Private Data (168)",
	}
	if got := m.diagram(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagram:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEncodeUnits checks the encoder's statements where numbers share octets
// in ways the CM messages do not use: a flag in a unit of two octets, a
// number in the middle of a 16-bit word.
func TestEncodeUnits(t *testing.T) {
	m := Message{Type: "T", Fixed: 4, Fields: []Field{
		field(0, 0, 3, Dec, "A", "A", "a"),
		field(0, 3, 6, Dec, "B", "B", "b"),
		field(1, 1, 1, Flag, "C", "C", "c"),
		field(2, 4, 8, Hex, "D", "D", "d"),
	}}
	var b bytes.Buffer
	m.writeEncode(&b, "m", "d")
	want := "binary.BigEndian.PutUint16(d[0:2], uint16(m.A)<<13 | uint16(m.B&0x3f)<<7 | uint16(bit(m.C, 1))<<6)\n" +
		"binary.BigEndian.PutUint16(d[2:4], uint16(m.D)<<4)\n"
	if b.String() != want {
		t.Errorf("encode:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	m.writeDecode(&b, "m", "d")
	want = "m.A = d[0] >> 5\n" +
		"m.B = uint8(binary.BigEndian.Uint16(d[0:2]) >> 7 & 0x3f)\n" +
		"m.C = d[1]&0x40 != 0\n" +
		"m.D = uint8(binary.BigEndian.Uint16(d[2:4]) >> 4 & 0xff)\n"
	if b.String() != want {
		t.Errorf("decode:\n%s\nwant:\n%s", b.String(), want)
	}
}
