package record

import (
	"reflect"
	"testing"
)

// TestFingerprintCoversEveryFigure: a change to any one figure (of the
// Datapath, of a procedure, of an operation, of the transport's health)
// changes the fingerprint, so that an update is written whenever the
// figures change; equal figures give equal fingerprints.
func TestFingerprintCoversEveryFigure(t *testing.T) {
	base := func() *Datapath {
		return &Datapath{RPCProcedures: []RPCProcedure{{NFSErrors: []StatusCount{{}}}}, NFSOperations: []NFSOperation{{}}, Health: &Health{}}
	}
	want := base().Fingerprint()
	if base().Fingerprint() != want {
		t.Fatal("equal figures, different fingerprints")
	}
	var walk func(path string, v reflect.Value, get func(*Datapath) reflect.Value)
	walk = func(path string, v reflect.Value, get func(*Datapath) reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				walk(path+"."+f.Name, v.Field(i), func(d *Datapath) reflect.Value { return get(d).Field(i) })
			}
		case reflect.Array:
			for i := range v.Len() {
				walk(path+"["+string(rune('0'+i))+"]", v.Index(i), func(d *Datapath) reflect.Value { return get(d).Index(i) })
			}
		case reflect.Slice:
			walk(path+"[0]", v.Index(0), func(d *Datapath) reflect.Value { return get(d).Index(0) })
		case reflect.Pointer:
			walk(path, v.Elem(), func(d *Datapath) reflect.Value { return get(d).Elem() })
		default:
			d := base()
			f := get(d)
			switch f.Kind() {
			case reflect.Bool:
				f.SetBool(true)
			case reflect.String:
				f.SetString("x")
			case reflect.Int, reflect.Int64:
				f.SetInt(1)
			case reflect.Uint8, reflect.Uint32:
				f.SetUint(1)
			default:
				t.Fatalf("%s: a %s", path, f.Kind())
			}
			if d.Fingerprint() == want {
				t.Errorf("%s changed, the fingerprint did not", path)
			}
		}
	}
	walk("Datapath", reflect.ValueOf(base()).Elem(), func(d *Datapath) reflect.Value { return reflect.ValueOf(d).Elem() })
	d := base()
	if testing.AllocsPerRun(10, func() { d.Fingerprint() }) != 0 {
		t.Error("Fingerprint allocates")
	}
}
