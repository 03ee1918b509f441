package decode

import (
	"encoding/binary"
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// What a message says of the frame that carried it beyond its own layers:
// the tunnels it travelled in, the fragments it was reassembled from, a
// zero IP length, an inconsistent capture record. A CM message is built
// from its frame; an MPA message is built by the framer, during the call
// that hands on the TCP segment completing it, so the decoder keeps a copy
// of what it needs of that frame (current) for the length of the call, and
// only when there is something to say: a plain segment costs nothing.

// current is the frame whose segment the assembler is being handed.
type current struct {
	on bool
	f  capture.Frame
	fi frameInfo
}

// segmentNoted hands the segment of f on with f noted as current.
func (d *Decoder) segmentNoted(f *capture.Frame, fi *frameInfo) {
	d.cur = current{on: true, f: *f, fi: *fi}
	d.asm.Segment(&d.seg)
	d.cur = current{}
}

// emitMPA is the framer's emit function: a message completed by the
// current frame says what that frame has to say.
func (d *Decoder) emitMPA(m *record.Message) {
	if d.cur.on && m.Frame == d.cur.f.Index {
		d.annotate(m, &d.cur.f, &d.cur.fi)
	}
	d.ev.message(m)
}

// annotate adds to m what its frame has to say.
func (d *Decoder) annotate(m *record.Message, f *capture.Frame, fi *frameInfo) {
	if fi.tunnels > 0 {
		m.Tunnel = d.tunnelRecord(f.Data, fi)
	}
	if d.fragFrames != nil {
		fs := append(slices.Clone(m.Frames), d.fragFrames...)
		slices.Sort(fs)
		m.Frames = slices.Compact(fs)
	}
	b := f.Data
	switch {
	case fi.lenZero && fi.ipv6:
		m.Findings = append(m.Findings, finding.New(finding.IPLengthZero,
			"IPv6 Payload Length is 0 (segmentation offload or a jumbogram): the TCP segment's end was taken from the frame"))
	case fi.lenZero:
		m.Findings = append(m.Findings, finding.New(finding.IPLengthZero,
			"IPv4 Total Length is 0 (segmentation offload): the TCP segment's end was taken from the frame"))
	case fi.kind == kindCM && fi.transport == record.RoCEv2 && fi.ipv6 && binary.BigEndian.Uint16(b[fi.l3+4:]) == 0:
		m.Findings = append(m.Findings, finding.New(finding.IPLengthZero,
			"IPv6 Payload Length is 0 (segmentation offload or a jumbogram): the packet's end was taken from the UDP Length"))
	case fi.kind == kindCM && fi.transport == record.RoCEv2 && !fi.ipv6 && binary.BigEndian.Uint16(b[fi.l3+2:]) == 0:
		m.Findings = append(m.Findings, finding.New(finding.IPLengthZero,
			"IPv4 Total Length is 0 (segmentation offload): the packet's end was taken from the UDP Length"))
	}
	if p := recordProblem(f); p != "" {
		m.Findings = append(m.Findings, finding.New(finding.RecordLengthInconsistent, "%s", p))
	}
	if f.Issue&capture.TimeOutOfRange != 0 {
		m.Findings = append(m.Findings, finding.New(finding.TimestampOutOfRange,
			"the capture record's timestamp is outside the years 1970 to 9999 (with the interface's if_tsresol and if_tsoffset): the frame is shown without a time"))
	}
}

// tunnelRecord describes the encapsulations of the frame b, outermost
// first.
func (d *Decoder) tunnelRecord(b []byte, fi *frameInfo) []record.Encapsulation {
	out := make([]record.Encapsulation, 0, fi.tunnels)
	for _, e := range d.tun[:fi.tunnels] {
		out = append(out, encapRecord(b, e))
	}
	return out
}

// encapRecord describes one encapsulation from the octets of its frame
// (the classifier checked that they are there).
func encapRecord(b []byte, e encap) record.Encapsulation {
	var r record.Encapsulation
	var fs []layers.Field
	num := func(name, key string, v uint64) {
		fs = append(fs, layers.Field{Name: name, Key: key, Kind: layers.Dec, Value: v})
	}
	hex := func(name, key string, bits int, v uint64) {
		fs = append(fs, layers.Field{Name: name, Key: key, Kind: layers.Hex, Bits: bits, Value: v})
	}
	flag := func(name, key string, v bool) {
		var n uint64
		if v {
			n = 1
		}
		fs = append(fs, layers.Field{Name: name, Key: key, Kind: layers.Bool, Bits: 1, Value: n})
	}
	if e.ip >= 0 {
		ip := int(e.ip)
		src, dst := b[ip+12:ip+16], b[ip+16:ip+20]
		if e.ipv6 {
			src, dst = b[ip+8:ip+24], b[ip+24:ip+40]
		}
		fs = append(fs, layers.Field{Name: "Outer Source Address", Key: "src", Kind: layers.Addr, Bytes: slices.Clone(src)},
			layers.Field{Name: "Outer Destination Address", Key: "dst", Kind: layers.Addr, Bytes: slices.Clone(dst)})
	}
	h := int(e.hdr)
	u16 := func(at int) uint64 { return uint64(binary.BigEndian.Uint16(b[at:])) }
	u24 := func(at int) uint64 { return uint64(b[at])<<16 | uint64(b[at+1])<<8 | uint64(b[at+2]) }
	u32 := func(at int) uint64 { return uint64(binary.BigEndian.Uint32(b[at:])) }
	switch e.kind {
	case encapVXLAN, encapVXLANGPE, encapGeneve:
		num("Source Port", "src_port", u16(h))
		num("Destination Port", "dst_port", u16(h+2))
		v := h + 8
		switch e.kind {
		case encapVXLAN:
			r.Type, r.Name = "vxlan", "VXLAN"
			hex("Flags", "flags", 8, uint64(b[v]))
		case encapVXLANGPE:
			r.Type, r.Name = "vxlan-gpe", "VXLAN-GPE"
			hex("Flags", "flags", 8, uint64(b[v]))
			num("Next Protocol", "next_protocol", uint64(b[v+3]))
		case encapGeneve:
			r.Type, r.Name = "geneve", "Geneve"
			num("Options Length", "options_length", uint64(b[v]&0x3f)*4)
			flag("OAM", "oam", b[v+1]&0x80 != 0)
			flag("Critical Options", "critical", b[v+1]&0x40 != 0)
			hex("Protocol Type", "protocol", 16, u16(v+2))
		}
		if e.kind == encapGeneve {
			num("Virtual Network Identifier", "vni", u24(v+4))
		} else {
			num("VXLAN Network Identifier", "vni", u24(v+4))
		}
	case encapGRE:
		r.Type, r.Name = "gre", "GRE"
		hex("Protocol Type", "protocol", 16, u16(h+2))
		p := h + greHeaderLen
		if b[h]&0x80 != 0 {
			hex("Checksum", "checksum", 16, u16(p))
			p += 4
		}
		if b[h]&0x20 != 0 {
			num("Key", "key", u32(p))
			p += 4
		}
		if b[h]&0x10 != 0 {
			num("Sequence Number", "seq", u32(p))
		}
	case encapERSPAN1:
		r.Type, r.Name = "erspan", "ERSPAN type I"
		num("ERSPAN Type", "erspan_type", 1)
	case encapERSPAN2, encapERSPAN3:
		r.Type = "erspan"
		w0 := u32(h)
		if e.kind == encapERSPAN2 {
			r.Name = "ERSPAN type II"
			num("ERSPAN Type", "erspan_type", 2)
		} else {
			r.Name = "ERSPAN type III"
			num("ERSPAN Type", "erspan_type", 3)
		}
		num("Version", "version", w0>>28)
		num("VLAN", "vlan", w0>>16&0x0fff)
		num("Class of Service", "cos", w0>>13&0x7)
		if e.kind == encapERSPAN2 {
			num("Encapsulation Type", "en", w0>>11&0x3)
		} else {
			num("Bad/Short/Oversized", "bso", w0>>11&0x3)
		}
		flag("Truncated", "truncated", w0>>10&1 != 0)
		num("Session ID", "session", w0&0x3ff)
		if e.kind == encapERSPAN2 {
			num("Index", "index", u32(h+4)&0xfffff)
			break
		}
		num("Timestamp", "timestamp", u32(h+4))
		num("Security Group Tag", "sgt", u16(h+8))
		w3 := u16(h + 10)
		num("Hardware ID", "hw_id", w3>>4&0x3f)
		num("Direction", "direction", w3>>3&1)
		num("Timestamp Granularity", "granularity", w3>>1&0x3)
		if w3&1 != 0 {
			fs = append(fs, layers.Field{Name: "Platform Specific Subheader", Key: "platform", Kind: layers.Blob,
				Bytes: slices.Clone(b[h+erspan3Len : h+erspan3Len+erspan3SubLen])})
		}
	case encapMPLS:
		r.Type, r.Name = "mpls", "MPLS"
		for p := h; p+4 <= int(e.inner); p += 4 {
			w := uint32(u32(p))
			r.Labels = append(r.Labels, record.MPLSLabel{Label: w >> 12, TC: uint8(w >> 9 & 7), TTL: uint8(w)})
			if w&0x100 != 0 {
				break
			}
		}
		if int(e.inner) > h+4*len(r.Labels) {
			hex("Pseudowire Control Word", "control_word", 32, u32(int(e.inner)-4))
		}
	case encapIPinIP:
		r.Type, r.Name = "ip-in-ip", "IP in IP"
		if e.ipv6 {
			r.Name = "IP in IPv6"
		}
		num("Inner IP Version", "inner_ip_version", uint64(b[h]>>4))
	}
	if e.ether {
		r.VLANs = vlanIDs(b, int(e.inner))
	}
	r.Fields = fs
	return r
}

// vlanIDs lists the VLAN IDs of the tags of the Ethernet frame at off.
func vlanIDs(b []byte, off int) []uint16 {
	if len(b) < off+14 {
		return nil
	}
	var ids []uint16
	et := binary.BigEndian.Uint16(b[off+12:])
	for p := off + 14; (et == etherDot1Q || et == etherQinQ || et == etherQinQ9100 || et == etherQinQ9200) && len(b) >= p+4; p += 4 {
		ids = append(ids, binary.BigEndian.Uint16(b[p:])&0x0fff)
		et = binary.BigEndian.Uint16(b[p+2:])
	}
	return ids
}
