package decode

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// IP fragments go to the reassembler (dissect/ipfrag); a datagram made
// whole is decoded as a frame of its own: the offset-0 fragment's frame up
// to its fragmentable part (link and tunnel headers, the IP header, less
// the IPv6 Fragment header), with the IP length fixed and the fragment
// fields cleared, so that the IP header reads as the sender wrote it
// before the datagram was fragmented (the ICRC covers it), then the
// reassembled octets. It gets the number of the frame that completed it,
// and its message lists its fragments' frames.

// maxFragDepth bounds how deep a reassembled datagram may itself hold a
// fragment that completes another (an inner IP tunnelled in a fragmented
// outer one).
const maxFragDepth = 2

// fragment hands the IP fragment of f to the reassembler.
func (d *Decoder) fragment(f *capture.Frame, fi *frameInfo) {
	b := f.Data
	l3 := fi.l3
	var fr ipfrag.Fragment
	var start, ipEnd int
	if fi.ipv6 {
		fh := fi.l4
		copy(fr.Key.Src[:], b[l3+8:l3+24])
		copy(fr.Key.Dst[:], b[l3+24:l3+40])
		fr.Key.V6 = true
		fr.Key.ID = binary.BigEndian.Uint32(b[fh+4:])
		fo := binary.BigEndian.Uint16(b[fh+2:])
		fr.Offset, fr.More = int(fo&0xfff8), fo&1 != 0
		fr.FragHdr = fh
		start = fh + ipv6FragHdrLen
		plen := int(binary.BigEndian.Uint16(b[l3+4:]))
		if plen == 0 {
			return // a jumbogram cannot be fragmented
		}
		ipEnd = l3 + ipv6HeaderLen + plen
	} else {
		copy(fr.Key.Src[12:], b[l3+12:l3+16])
		copy(fr.Key.Dst[12:], b[l3+16:l3+20])
		fr.Key.ID = uint32(binary.BigEndian.Uint16(b[l3+4:]))
		fr.Key.Proto = b[l3+9]
		fo := binary.BigEndian.Uint16(b[l3+6:])
		fr.Offset, fr.More = int(fo&0x1fff)*8, fo&0x2000 != 0
		start = l3 + int(b[l3]&0x0f)*4
		ipEnd = l3 + int(binary.BigEndian.Uint16(b[l3+2:]))
	}
	if ipEnd < start || len(b) < start {
		fr.WireLen = -1 // malformed: counted by the reassembler
	} else {
		fr.WireLen = ipEnd - start
		fr.Data = b[start:min(ipEnd, len(b))]
	}
	fr.Header, fr.L3 = b[:min(start, len(b))], l3
	fr.Frame, fr.Time, fr.Flagged = f.Index, f.Time, fi.fragFirst
	if dg, ok := d.frag.Add(&fr); ok {
		d.reassembled(f, dg)
	}
}

// reassembled decodes a datagram made whole by the fragment in f.
func (d *Decoder) reassembled(f *capture.Frame, dg *ipfrag.Datagram) {
	if d.fragDepth >= maxFragDepth {
		return
	}
	h, l3 := dg.Header, dg.L3
	syn := d.syn[:0]
	if dg.Key.V6 {
		fh := dg.FragHdr
		syn = append(syn, h[:fh]...)
		syn[nextHeaderField(syn, l3, fh)] = h[fh] // the Fragment header's Next Header
		plen := fh - (l3 + ipv6HeaderLen) + dg.WireLen
		if plen > 0xffff {
			return
		}
		binary.BigEndian.PutUint16(syn[l3+4:], uint16(plen))
	} else {
		syn = append(syn, h...)
		tl := len(h) - l3 + dg.WireLen
		if tl > 0xffff {
			return
		}
		binary.BigEndian.PutUint16(syn[l3+2:], uint16(tl))
		syn[l3+6] &= 0xc0 // keep DF and the reserved bit; clear MF and the offset
		syn[l3+7] = 0
		syn[l3+10], syn[l3+11] = 0, 0
		binary.BigEndian.PutUint16(syn[l3+10:], ipv4Checksum(syn[l3:len(h)]))
	}
	syn = append(syn, dg.Payload...)
	wire := len(syn) + dg.WireLen - len(dg.Payload)
	if f.LinkType == linkERF {
		fixERFLengths(syn, wire)
	}
	d.syn = syn
	sf := capture.Frame{Data: syn, WireLen: wire, Time: f.Time, LinkType: f.LinkType, Index: f.Index}
	saved := d.fragFrames
	d.fragFrames = dg.Frames
	d.fragDepth++
	d.decode(&sf)
	d.fragDepth--
	d.fragFrames = saved
	if d.fragDepth == 0 && cap(d.syn) > 4*ipfrag.MaxDatagram {
		d.syn = nil
	}
}

// nextHeaderField is where, in an IPv6 header chain starting at l3, the
// Next Header field that names the header at target is.
func nextHeaderField(b []byte, l3, target int) int {
	at := l3 + 6
	nh := b[at]
	p := l3 + ipv6HeaderLen
	for p < target && p+2 <= len(b) {
		at = p
		n := (int(b[p+1]) + 1) * 8
		switch nh {
		case protoAH:
			n = (int(b[p+1]) + 2) * 4
		case protoFragment:
			n = ipv6FragHdrLen
		}
		nh = b[p]
		p += n
	}
	return at
}

// ipv4Checksum is the header checksum of an IPv4 header whose checksum
// field is zero.
func ipv4Checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// fixERFLengths sets the rlen and wlen of a reassembled ERF record.
func fixERFLengths(b []byte, wire int) {
	n, typ := erfHeader(b)
	if n == 0 {
		return
	}
	if layers.ERFEthernet(typ) {
		n += 2 // offset and pad
	}
	binary.BigEndian.PutUint16(b[10:12], uint16(min(wire, 0xffff)))
	binary.BigEndian.PutUint16(b[14:16], uint16(min(max(wire-n, 0), 0xffff)))
}

// reassemblyNotes are the run-level findings of IP reassembly: the
// datagrams whose first fragment held the start of a CM MAD or an MPA
// frame, and that were not reassembled.
func (d *Decoder) reassemblyNotes() []finding.Finding {
	s := d.frag.Stats()
	n := s.Lost()
	if n == 0 {
		return nil
	}
	var why []string
	add := func(k int, what string) {
		if k > 0 {
			why = append(why, fmt.Sprintf("%d %s", k, what))
		}
	}
	add(s.FlaggedLimit, "given up at a reassembly limit (--max-ip-fragments, --max-ip-fragment-bytes)")
	add(s.FlaggedAged, fmt.Sprintf("still incomplete %s after their first fragment", d.fragTimeout()))
	add(s.FlaggedIncomplete, "incomplete at the end of the input (fragments missing from the capture)")
	add(s.FlaggedMalformed, "malformed (beyond 65535 octets, or fragments disagreeing on the end)")
	what := "datagram whose first fragment holds"
	if n > 1 {
		what = "datagrams whose first fragment holds"
	}
	return []finding.Finding{finding.New(finding.IPFragmentSkipped,
		"%s: %d IP %s the start of a CM MAD or an MPA frame %s not reassembled (first at frame %d): %s; no message is shown for them",
		d.file, n, what, plural(n, "was", "were"), s.FlaggedFirst, joinList(why))}
}

func (d *Decoder) fragTimeout() string { return d.fragOpts.Timeout.String() }

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

func joinList(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
