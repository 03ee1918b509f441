package cmgen

import (
	"errors"
	"fmt"
)

// check reports what is wrong with a layout: fields out of wire order,
// overlapping or beyond the fixed part, widths their Show cannot hold, names
// used twice, references to fields that are not there.
func (m *Message) check() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{m.Type}, args...)...))
	}
	if m.Fixed <= 0 || m.Fixed > MADDataLen {
		bad("fixed part of %d octets", m.Fixed)
	}
	goNames, keys := map[string]bool{}, map[string]bool{}
	used := make([]bool, 8*max(m.Fixed, 0))
	prev := -1
	for _, f := range m.Fields {
		if f.Go == "" || f.Name == "" || f.Key == "" || goNames[f.Go] || keys[f.Key] {
			bad("field %q (key %q) is unnamed or named twice", f.Go, f.Key)
		}
		goNames[f.Go], keys[f.Key] = true, true
		if f.start() <= prev {
			bad("%s is not after the field before it", f.Go)
		}
		prev = f.start()
		if f.Octet < 0 || f.Bit < 0 || f.Bit > 7 || f.Bits < 1 || f.end() > len(used) {
			bad("%s: bit %d, %d bits, do not fit the fixed part", f.Go, f.Bit, f.Bits)
			continue
		}
		if err := m.checkShow(f); err != nil {
			bad("%s: %v", f.Go, err)
		}
		if at, ok := m.claim(used, f); !ok {
			bad("%s overlaps another field at bit %d", f.Go, at)
		}
	}
	m.checkRefs(bad)
	return errors.Join(errs...)
}

// claim marks the bits a field occupies in used (a path's: those its own
// fields occupy). It reports the first bit already marked, if any.
func (m *Message) claim(used []bool, f Field) (int, bool) {
	mine := make([]bool, f.Bits)
	for i := range mine {
		mine[i] = true
	}
	if inner := PathLayout.covered(); f.Show == Path && !m.part() && len(inner) == f.Bits {
		mine = inner
	}
	for i, b := range mine {
		if b && used[f.start()+i] {
			return f.start() + i, false
		}
		used[f.start()+i] = used[f.start()+i] || b
	}
	return 0, true
}

// checkShow checks that a field's width suits how it is shown.
func (m *Message) checkShow(f Field) error {
	switch f.Show {
	case Dec, Hex:
		if s := f.span(); f.Bits > 64 || s == 5 || s == 6 || s == 7 || s > 8 {
			return fmt.Errorf("a number of %d bits over %d octets", f.Bits, s)
		}
	case ID64:
		if f.Bits != 64 || !f.whole() {
			return errors.New("an ID64 is 8 whole octets")
		}
	case Flag:
		if f.Bits != 1 {
			return errors.New("a flag is one bit")
		}
	case GID:
		if f.Bits != 128 || !f.whole() {
			return errors.New("a GID is 16 whole octets")
		}
	case Blob:
		n, ok := m.find(f.Len)
		if !f.whole() || !ok || n.Show > Hex {
			return errors.New("a blob is whole octets, counted by a number field")
		}
	case Path:
		if m.part() || f.Bits != 8*PathLayout.Fixed || !f.whole() {
			return fmt.Errorf("a path is %d whole octets, and not within a path", PathLayout.Fixed)
		}
	default:
		return fmt.Errorf("unknown Show %d", f.Show)
	}
	if _, in := m.inPath(f); in && f.span() != 1 {
		return errors.New("a field inside a path's octets must be within one octet")
	}
	return nil
}

// checkRefs checks what a message says about itself besides its fields.
func (m *Message) checkRefs(bad func(string, ...any)) {
	if m.part() {
		return
	}
	if m.Type == "" || m.Name == "" || m.Article == "" || m.File == "" || m.Layer == "" {
		bad("a message needs its type, name, article, file and layer type")
	}
	for _, ref := range []struct{ name, goType string }{{m.Local, "uint32"}, {m.Remote, "uint32"}, {m.IPCM, "uint64"}} {
		if ref.name == "" {
			continue
		}
		if f, ok := m.find(ref.name); !ok || f.goType() != ref.goType {
			bad("%s is not a %s field", ref.name, ref.goType)
		}
	}
}
