package layers

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
)

// This file holds the helpers the layer tests share: building octet strings
// field by field, comparing whole decoded layers, and checking errors.

// part is some octets to write at an offset; see octets.
type part struct {
	off int
	b   []byte
}

// at places octets at an offset.
func at(off int, b ...byte) part { return part{off, b} }

// octets builds n octets filled with fill (nil: zeros), then writes each
// part over them. A part that runs past n panics: that is a bug in a test.
func octets(n int, fill func(i int) byte, parts ...part) []byte {
	b := make([]byte, n)
	if fill != nil {
		for i := range b {
			b[i] = fill(i)
		}
	}
	for _, p := range parts {
		if p.off+len(p.b) > n {
			panic(fmt.Sprintf("part at %d with %d octets does not fit in %d", p.off, len(p.b), n))
		}
		copy(b[p.off:], p.b)
	}
	return b
}

// seq is a fill: octet i is start+i (mod 256). Distinct neighbours make a
// slice taken at the wrong offset show.
func seq(start byte) func(int) byte {
	return func(i int) byte { return start + byte(i) }
}

// cat concatenates octet strings into a new slice.
func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// feedback records what a layer tells its DecodeFeedback.
type feedback struct{ truncated bool }

func (f *feedback) SetTruncated() { f.truncated = true }

// decodeOK decodes data into l and fails the test on an error; it returns
// whether the layer said the data was truncated.
func decodeOK(t *testing.T, l gopacket.DecodingLayer, data []byte) bool {
	t.Helper()
	var df feedback
	if err := l.DecodeFromBytes(data, &df); err != nil {
		t.Fatalf("%T.DecodeFromBytes: %v", l, err)
	}
	return df.truncated
}

// wantTruncated checks that err is a *TruncatedError for layer with the
// given Need and Have.
func wantTruncated(t *testing.T, err error, layer string, need, have int) {
	t.Helper()
	var te *TruncatedError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want *TruncatedError", err, err)
	}
	if te.Layer != layer || te.Need != need || te.Have != have {
		t.Errorf("TruncatedError{Layer: %q, Need: %d, Have: %d}, want {%q, %d, %d}",
			te.Layer, te.Need, te.Have, layer, need, have)
	}
	if !strings.Contains(te.Error(), fmt.Sprintf("%d octets needed, %d present", need, have)) {
		t.Errorf("error text %q does not give the counts", te.Error())
	}
}

// checkLayer compares a decoded layer with the wanted one, field by field,
// including Contents and Payload. Both must be pointers to the same struct
// type.
func checkLayer(t *testing.T, got, want any) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	var diffs []string
	diffValues(&diffs, "", reflect.ValueOf(got), reflect.ValueOf(want))
	if len(diffs) == 0 {
		diffs = append(diffs, fmt.Sprintf("got %+v\nwant %+v", got, want))
	}
	t.Errorf("%T differs from want:\n\t%s", got, strings.Join(diffs, "\n\t"))
}

func diffValues(diffs *[]string, path string, g, w reflect.Value) {
	if g.Kind() == reflect.Pointer {
		if g.IsNil() || w.IsNil() {
			if g.IsNil() != w.IsNil() {
				*diffs = append(*diffs, fmt.Sprintf("%s: got %v, want %v", path, g, w))
			}
			return
		}
		diffValues(diffs, path, g.Elem(), w.Elem())
		return
	}
	switch g.Kind() {
	case reflect.Struct:
		for i := 0; i < g.NumField(); i++ {
			name := g.Type().Field(i).Name
			p := name
			if path != "" {
				p = path + "." + name
			}
			diffValues(diffs, p, g.Field(i), w.Field(i))
		}
	case reflect.Slice:
		if g.Type().Elem().Kind() == reflect.Uint8 {
			gb, wb := g.Bytes(), w.Bytes()
			if (gb == nil) != (wb == nil) || string(gb) != string(wb) {
				*diffs = append(*diffs, fmt.Sprintf("%s: got %d octets %x, want %d octets %x", path, len(gb), gb, len(wb), wb))
			}
			return
		}
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %v, want %v", path, g, w))
		}
	default:
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			*diffs = append(*diffs, fmt.Sprintf("%s: got %#v, want %#v", path, g.Interface(), w.Interface()))
		}
	}
}

// mapped is the IPv4-mapped IPv6 address (a RoCE GID) of a.b.c.d.
func mapped(a, b, c, d byte) [16]byte {
	return [16]byte{10: 0xff, 11: 0xff, 12: a, 13: b, 14: c, 15: d}
}

// ipv4Pad is an IPv4 address as the IP CM header holds it: 12 zero octets,
// then the address.
func ipv4Pad(a, b, c, d byte) [16]byte {
	return [16]byte{12: a, 13: b, 14: c, 15: d}
}

// docIPv6 is 2001:db8::n (the addresses craft gives its endpoints).
func docIPv6(n uint16) [16]byte {
	return [16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(n >> 8), 15: byte(n)}
}

// patch returns a copy of frame with parts written over it.
func patch(frame []byte, parts ...part) []byte {
	b := append([]byte(nil), frame...)
	for _, p := range parts {
		copy(b[p.off:], p.b)
	}
	return b
}

// roundTrip serializes l (with payload after it, and FixLengths off) and
// returns the octets.
func roundTrip(t *testing.T, l gopacket.SerializableLayer, payload []byte) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, l, gopacket.Payload(payload)); err != nil {
		t.Fatalf("SerializeLayers(%T): %v", l, err)
	}
	return buf.Bytes()
}
