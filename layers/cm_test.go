package layers

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
)

// cmCase is one CM message with a hand-built body and what every message
// must agree on: its attribute, layout and layer type.
type cmCase struct {
	name   string
	attr   uint16
	body   []byte
	pdOff  int
	pdSize int
	lt     gopacket.LayerType
	local  uint32 // Communication IDs (SIDR: the Request ID and 0)
	remote uint32
}

var cmCases = []cmCase{
	{"REQ", AttrREQ, reqBody, 140, 92, LayerTypeCMReq, 0x0badcafe, 0},
	{"MRA", AttrMRA, mraBody, 10, 222, LayerTypeCMMra, 0x1a2b3c4d, 0x5e6f7081},
	{"REJ", AttrREJ, rejBody, 84, 148, LayerTypeCMRej, 0x5a6b7c8d, 0x9eafb0c1},
	{"REP", AttrREP, repBody, 36, 196, LayerTypeCMRep, 0x3c4d5e6f, 0x0badcafe},
	{"RTU", AttrRTU, rtuBody, 8, 224, LayerTypeCMRtu, 0xc1d2e3f4, 0x05162738},
	{"DREQ", AttrDREQ, dreqBody, 12, 220, LayerTypeCMDreq, 0x495a6b7c, 0x8d9eafb0},
	{"DREP", AttrDREP, drepBody, 8, 224, LayerTypeCMDrep, 0xd1e2f304, 0x15263748},
	{"SIDR_REQ", AttrSIDRREQ, sidrReqBody, 16, 216, LayerTypeCMSidrReq, 0x2468ace0, 0},
	{"SIDR_REP", AttrSIDRREP, sidrRepBody, 96, 136, LayerTypeCMSidrRep, 0x13579bdf, 0},
	{"LAP", AttrLAP, lapBody, 64, 168, LayerTypeCMLap, 0x31425364, 0x758697a8},
	{"APR", AttrAPR, aprBody, 84, 148, LayerTypeCMApr, 0xe1d2c3b4, 0xa5968778},
}

// layerName is the name each message's errors carry.
func (c cmCase) layerName() string {
	return map[string]string{"REQ": "cm req", "MRA": "cm mra", "REJ": "cm rej", "REP": "cm rep", "RTU": "cm rtu",
		"DREQ": "cm dreq", "DREP": "cm drep", "SIDR_REQ": "cm sidr_req", "SIDR_REP": "cm sidr_rep",
		"LAP": "cm lap", "APR": "cm apr"}[c.name]
}

func TestCMMessageTable(t *testing.T) {
	for _, c := range cmCases {
		m := NewCMMessage(c.attr)
		if m == nil {
			t.Fatalf("%s: NewCMMessage(%#x) = nil", c.name, c.attr)
		}
		if m.AttributeID() != c.attr || m.PrivateDataOffset() != c.pdOff || m.PrivateDataSize() != c.pdSize {
			t.Errorf("%s: attribute %#x, private data %d/%d; want %#x, %d/%d", c.name,
				m.AttributeID(), m.PrivateDataOffset(), m.PrivateDataSize(), c.attr, c.pdOff, c.pdSize)
		}
		if c.pdOff+c.pdSize != MADDataLen {
			t.Errorf("%s: fixed part and private data make %d octets", c.name, c.pdOff+c.pdSize)
		}
		l := m.(gopacket.Layer)
		if l.LayerType() != c.lt || m.CanDecode() != c.lt {
			t.Errorf("%s: layer type %v, can decode %v; want %v", c.name, l.LayerType(), m.CanDecode(), c.lt)
		}
		if got := CMMessageName(c.attr); got != c.name {
			t.Errorf("CMMessageName(%#x) = %q, want %q", c.attr, got, c.name)
		}
		if lt, ok := cmLayerType(c.attr); !ok || lt != c.lt {
			t.Errorf("%s: cmLayerType %v %v", c.name, lt, ok)
		}
		decodeOK(t, m, c.body)
		if local, remote := m.CommIDs(); local != c.local || remote != c.remote {
			t.Errorf("%s: CommIDs %#x %#x, want %#x %#x", c.name, local, remote, c.local, c.remote)
		}
		if !bytes.Equal(m.PrivateDataBytes(), c.body[c.pdOff:]) {
			t.Errorf("%s: PrivateDataBytes differ", c.name)
		}
	}
	for _, attr := range []uint16{0, AttrClassPortInfo, 0x000f, 0x001b, 0x0110, 0xffff} {
		if m := NewCMMessage(attr); m != nil {
			t.Errorf("NewCMMessage(%#x) = %T, want nil", attr, m)
		}
		if n := CMMessageName(attr); n != "" {
			t.Errorf("CMMessageName(%#x) = %q", attr, n)
		}
	}
}

func TestCMTooShort(t *testing.T) {
	for _, c := range cmCases {
		for n := 0; n < c.pdOff; n++ {
			var df feedback
			m := NewCMMessage(c.attr)
			err := m.DecodeFromBytes(c.body[:n], &df)
			wantTruncated(t, err, c.layerName(), c.pdOff, n)
			if !df.truncated {
				t.Errorf("%s, %d octets: SetTruncated not called", c.name, n)
			}
		}
	}
}

// TestCMPrivateDataCut decodes each message with its private data cut short
// (as a capture's snap length does), and with octets after the MAD data (as
// the ICRC is, when a caller hands over the rest of the packet).
func TestCMPrivateDataCut(t *testing.T) {
	for _, c := range cmCases {
		full := NewCMMessage(c.attr)
		decodeOK(t, full, c.body)
		for _, keep := range []int{0, 1, 7, 8, c.pdSize - 1} {
			t.Run(c.name, func(t *testing.T) {
				data := c.body[:c.pdOff+keep]
				m := NewCMMessage(c.attr)
				if !decodeOK(t, m, data) {
					t.Errorf("%d octets of private data: SetTruncated not called", keep)
				}
				if pd := m.PrivateDataBytes(); len(pd) != keep || !bytes.Equal(pd, c.body[c.pdOff:c.pdOff+keep]) {
					t.Errorf("private data %x, want %x", pd, c.body[c.pdOff:c.pdOff+keep])
				}
				if p := m.LayerPayload(); len(p) != keep {
					t.Errorf("payload %d octets, want %d", len(p), keep)
				}
				if got := m.(gopacket.Layer).LayerContents(); !bytes.Equal(got, c.body[:c.pdOff]) {
					t.Errorf("contents %d octets, want the %d of the fixed part", len(got), c.pdOff)
				}
				if !sameFixedFields(m, full) {
					t.Errorf("fixed fields differ from the whole message's:\n%+v\n%+v", m, full)
				}
			})
		}
		t.Run(c.name+" with octets after", func(t *testing.T) {
			m := NewCMMessage(c.attr)
			if decodeOK(t, m, cat(c.body, []byte{0xde, 0xad, 0xbe, 0xef})) {
				t.Error("SetTruncated called")
			}
			if !bytes.Equal(m.PrivateDataBytes(), c.body[c.pdOff:]) || !bytes.Equal(m.LayerPayload(), c.body[c.pdOff:]) {
				t.Errorf("private data or payload not cut at %d octets", c.pdSize)
			}
		})
	}
}

// sameFixedFields compares two messages of one type, all but cmBase.
func sameFixedFields(a, b CMMessage) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := 0; i < va.NumField(); i++ {
		if va.Type().Field(i).Name == "cmBase" {
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return false
		}
	}
	return true
}

// TestCMRoundTrip serializes every decoded message and decodes it again.
// Reserved bits are not kept, so the comparison is of the decoded values;
// private data is zero-filled to its fixed size.
func TestCMRoundTrip(t *testing.T) {
	type vec struct {
		name string
		attr uint16
		data []byte
		// exact: the serialized octets must equal data (no reserved bits
		// set in it)
		exact bool
	}
	var vecs []vec
	for _, c := range cmCases {
		vecs = append(vecs, vec{c.name + " by hand", c.attr, c.body, false})
	}
	vecs = append(vecs,
		vec{"RoCEv2 REQ", AttrREQ, rocev2REQ[86:318], true},
		vec{"RoCEv2 REP", AttrREP, rocev2REP[86:318], true},
		vec{"RoCEv2 RTU", AttrRTU, rocev2RTU[86:318], true},
		vec{"RoCEv2 REJ", AttrREJ, rocev2REJ[86:318], true},
		vec{"RoCEv2 IPv6 REQ", AttrREQ, rocev2IPv6REQ[106:338], true},
	)
	for _, v := range vecs {
		t.Run(v.name, func(t *testing.T) {
			m := NewCMMessage(v.attr)
			decodeOK(t, m, v.data)
			out := roundTrip(t, m, nil)
			if len(out) != MADDataLen {
				t.Fatalf("serialized %d octets, want %d", len(out), MADDataLen)
			}
			if v.exact && !bytes.Equal(out, v.data) {
				t.Errorf("serialized\n%x\nwant\n%x", out, v.data)
			}
			again := NewCMMessage(v.attr)
			decodeOK(t, again, out)
			if v.exact {
				checkLayer(t, again, m)
				return
			}
			// Contents differ in the reserved bits; all else is equal.
			if !sameFixedFields(again, m) {
				t.Errorf("fixed fields differ:\n%+v\n%+v", again, m)
			}
			if !bytes.Equal(again.PrivateDataBytes(), m.PrivateDataBytes()) || !bytes.Equal(again.LayerPayload(), m.LayerPayload()) {
				t.Errorf("private data differs")
			}
		})
	}
	// Private data shorter than its size on the wire is zero-filled, longer
	// private data is cut.
	for _, c := range cmCases {
		t.Run(c.name+" zero fill", func(t *testing.T) {
			m := NewCMMessage(c.attr)
			decodeOK(t, m, c.body[:c.pdOff+5])
			out := roundTrip(t, m, nil)
			again := NewCMMessage(c.attr)
			decodeOK(t, again, out)
			if !sameFixedFields(again, m) {
				t.Errorf("fixed fields differ:\n%+v\n%+v", again, m)
			}
			want := cat(c.body[c.pdOff:c.pdOff+5], make([]byte, c.pdSize-5))
			if !bytes.Equal(again.PrivateDataBytes(), want) {
				t.Errorf("private data %x, want %x", again.PrivateDataBytes(), want)
			}
		})
		t.Run(c.name+" private data too long", func(t *testing.T) {
			m := NewCMMessage(c.attr)
			decodeOK(t, m, c.body)
			setPrivateData(m, cat(c.body[c.pdOff:], []byte{1, 2, 3}))
			out := roundTrip(t, m, nil)
			if len(out) != MADDataLen || !bytes.Equal(out[c.pdOff:], c.body[c.pdOff:]) {
				t.Errorf("serialized %d octets, private data %x", len(out), out[c.pdOff:])
			}
		})
	}
}

func setPrivateData(m CMMessage, pd []byte) {
	reflect.ValueOf(m).Elem().FieldByName("PrivateData").SetBytes(pd)
}

// TestCMDecodeResets decodes a message over one with every field set and
// checks nothing of the first survives.
func TestCMDecodeResets(t *testing.T) {
	for _, c := range cmCases {
		m := NewCMMessage(c.attr)
		decodeOK(t, m, c.body)
		decodeOK(t, m, make([]byte, MADDataLen))
		fresh := NewCMMessage(c.attr)
		decodeOK(t, fresh, make([]byte, MADDataLen))
		if !reflect.DeepEqual(m, fresh) {
			t.Errorf("%s: decoding zeros over a message left %+v", c.name, m)
		}
	}
}

// TestFieldsKeys checks that every layer lists its fields under distinct
// keys, and that the display of a decoded vector does not panic.
func TestFieldsKeys(t *testing.T) {
	type fielder interface{ Fields() []Field }
	var ls []fielder
	for _, c := range cmCases {
		m := NewCMMessage(c.attr)
		decodeOK(t, m, c.body)
		ls = append(ls, m)
	}
	var lrh LRH
	var grh GRH
	var bth BTH
	var deth DETH
	var mad MAD
	var ipcm IPCMHeader
	var rpc RPCRDMAPrivateData
	var erf ERF
	decodeOK(t, &lrh, ibREQ)
	decodeOK(t, &grh, rocev1REQ[14:])
	decodeOK(t, &bth, rocev2REQ[42:])
	decodeOK(t, &deth, rocev2REQ[54:])
	decodeOK(t, &mad, rocev2REQ[62:])
	decodeOK(t, &ipcm, rocev2REQ[226:318])
	decodeOK(t, &rpc, rocev2REQ[262:318])
	ls = append(ls, &lrh, &grh, &bth, &deth, &mad, &ipcm, &rpc, &erf)
	for _, l := range ls {
		seen := map[string]bool{}
		for _, f := range l.Fields() {
			if f.Key == "" || f.Name == "" || seen[f.Key] {
				t.Errorf("%T: field %q with key %q (empty or repeated)", l, f.Name, f.Key)
			}
			seen[f.Key] = true
			_ = f.Text()
		}
	}
}
