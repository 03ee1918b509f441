// Package wsplugin writes a Wireshark dissector, in Lua, for the RPC-over-RDMA
// version 1 CM private data of RFC 8797 (rdmacm-pd wireshark-plugin).
//
// Everything the dissector knows of the wire comes from the Go tables the
// tool decodes with: the message's fields, names and keys (package layers'
// RPCRDMAPrivateData and its Fields), where each field sits (found by
// encoding one field at a time), the size encoding (DecodeInlineSize), the
// private data offset and size of every CM message (layers' CM table), the
// MAD and MPA header sizes, and the findings' codes, severities and
// references (package finding). So it cannot disagree with the tool.
//
// Wireshark decodes the carriers; the dissector is a postdissector that
// reads their fields: infiniband.mad.attributeid (RoCEv2, RoCEv1, native
// InfiniBand from ERF, and link type 247 where Wireshark reads it) locates
// the MAD and so the CM private data; on TCP it follows the first octets
// of each direction itself (tcp.payload and tcp.seq_raw), since Wireshark
// 4.0 misses an MPA Request split over segments. It looks for the Format
// Identifier at every offset of the private data, as the tool does.
package wsplugin

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// field is one field of the message as the dissector declares it.
type field struct {
	Key    string // the JSON key, and the field's name after "rpcrdma_cm."
	Name   string // as RFC 8797 spells it
	Type   string // the ProtoField constructor
	Base   string
	Offset int    // octet in the message
	Mask   uint64 // bits of the octets (0: all)
	Width  int    // octets
	Size   bool   // the value is a size in octets, decoded from the octet
}

// cmMessage is where a CM message's private data sits in the MAD data.
type cmMessage struct {
	Attr         uint16
	Name         string
	Offset, Size int
}

// expert is a finding the dissector raises as Wireshark expert info.
type expert struct {
	Var, Code, Severity, Reference string
}

type data struct {
	Version          string
	FormatIdentifier uint32
	IDOctets         string // as a Lua string literal's escapes
	MsgVersion       int
	Len              int
	SizeBase         int
	SizeStep         int
	Fields           []field
	CM               []cmMessage
	MADHeaderLen     int
	AttrInMAD        int
	MgmtClassCM      int
	MPAHeaderLen     int
	MPAKeys          []string
	MPAMaxPD         int
	VersionUnknown   expert
	Truncated        expert
	ReservedNonzero  expert
}

// Lua returns the dissector; version names the build that wrote it.
func Lua(version string) string {
	d := data{
		Version:          version,
		FormatIdentifier: layers.RPCRDMAFormatID,
		MsgVersion:       layers.RPCRDMAVersion,
		Len:              layers.RPCRDMALen,
		SizeBase:         layers.DecodeInlineSize(0),
		SizeStep:         layers.DecodeInlineSize(1) - layers.DecodeInlineSize(0),
		Fields:           fields(),
		MADHeaderLen:     layers.MADHeaderLen,
		AttrInMAD:        16,
		MgmtClassCM:      layers.MgmtClassCM,
		MPAHeaderLen:     layers.MPAHeaderLen,
		MPAKeys:          []string{string(layers.MPARequestKey[:]), string(layers.MPAReplyKey[:])},
		MPAMaxPD:         0xffff,
		VersionUnknown:   expertOf("version_unknown", finding.RPCRDMAVersionUnknown),
		Truncated:        expertOf("truncated", finding.RPCRDMATruncated),
		ReservedNonzero:  expertOf("reserved_nonzero", finding.RPCRDMAReservedNonzero),
	}
	for v := 0; v < 256; v++ { // the template decodes sizes as base + step * octet
		if layers.DecodeInlineSize(uint8(v)) != d.SizeBase+d.SizeStep*v {
			panic("wsplugin: the size encoding is not linear")
		}
	}
	var id [4]byte
	m := layers.RPCRDMAPrivateData{FormatIdentifier: layers.RPCRDMAFormatID}
	var b [layers.RPCRDMALen]byte
	m.Encode(b[:])
	copy(id[:], b[:4])
	for _, o := range id {
		d.IDOctets += fmt.Sprintf("\\x%02x", o)
	}
	for attr := uint16(layers.AttrREQ); ; attr++ {
		cm := layers.NewCMMessage(attr)
		if cm == nil {
			break
		}
		d.CM = append(d.CM, cmMessage{attr, layers.CMMessageName(attr), cm.PrivateDataOffset(), cm.PrivateDataSize()})
	}
	var out bytes.Buffer
	if err := luaTemplate.Execute(&out, d); err != nil {
		panic(err)
	}
	return out.String()
}

func expertOf(name string, c finding.Code) expert {
	e := c.Check()
	sev := map[finding.Severity]string{finding.Info: "NOTE", finding.Warning: "WARN", finding.Error: "ERROR"}[e.Severity]
	return expert{Var: name, Code: c.String(), Severity: sev, Reference: e.Reference}
}

// fields are the message's fields, in Fields' order, each placed by
// encoding a message with only that field set; the sizes get their encoded
// octet as a field of its own after them.
func fields() []field {
	var zero layers.RPCRDMAPrivateData
	set := map[string]func(*layers.RPCRDMAPrivateData){
		"format_identifier": func(m *layers.RPCRDMAPrivateData) { m.FormatIdentifier = ^uint32(0) },
		"version":           func(m *layers.RPCRDMAPrivateData) { m.Version = 0xff },
		"reserved":          func(m *layers.RPCRDMAPrivateData) { m.Reserved = 0x7f },
		"remote_invalidate": func(m *layers.RPCRDMAPrivateData) { m.RemoteInvalidate = true },
		"send_size":         func(m *layers.RPCRDMAPrivateData) { m.SendSizeEncoded = 0xff },
		"receive_size":      func(m *layers.RPCRDMAPrivateData) { m.ReceiveSizeEncoded = 0xff },
	}
	var out, encoded []field
	for _, lf := range zero.Fields() {
		s, ok := set[lf.Key]
		if !ok {
			panic("wsplugin: no way to place field " + lf.Key)
		}
		var m layers.RPCRDMAPrivateData
		s(&m)
		var b [layers.RPCRDMALen]byte
		m.Encode(b[:])
		first, last := -1, -1
		for i, o := range b {
			if o != 0 {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		f := field{Key: lf.Key, Name: lf.Name, Offset: first, Width: last - first + 1}
		if f.Width == 1 && b[first] != 0xff {
			f.Mask = uint64(b[first])
		}
		switch {
		case lf.Kind == layers.Bool:
			f.Type, f.Base = "bool", "8"
		case strings.HasSuffix(lf.Key, "_size"):
			f.Type, f.Base, f.Size = "uint32", "base.DEC", true
			f.Name += " (octets)"
			encoded = append(encoded, field{Key: lf.Key + "_encoded", Name: lf.Name + " (encoded)", Type: "uint8", Base: "base.HEX",
				Offset: first, Width: 1})
		case lf.Kind == layers.Hex:
			f.Type, f.Base = fmt.Sprintf("uint%d", 8*f.Width), "base.HEX"
		default:
			f.Type, f.Base = fmt.Sprintf("uint%d", 8*f.Width), "base.DEC"
		}
		out = append(out, f)
	}
	return append(out, encoded...)
}
