package decode

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Config tunes decoding.
type Config struct {
	// RoCEPorts are UDP destination ports decoded as RoCEv2 besides 4791.
	RoCEPorts []uint16
	// TCP bounds the reassembly of MPA frames.
	TCP TCPLimits
}

// Frame is one captured frame handed to a Decoder. Data is only read during
// the call.
type Frame struct {
	Data     []byte
	WireLen  int
	Time     time.Time
	LinkType uint16
	Index    int // 1-based frame number within its input
}

// Decoder turns the frames of one input into messages. It keeps its layers
// between frames so that the decoding itself allocates nothing; a Decoder is
// not safe for concurrent use.
type Decoder struct {
	file      string
	emit      func(*record.Message)
	rocePorts portSet

	eth   golayers.Ethernet
	dot1q golayers.Dot1Q
	sll   golayers.LinuxSLL
	sll2  golayers.LinuxSLL2
	loop  golayers.Loopback
	ip4   golayers.IPv4
	ip6   golayers.IPv6
	ip6x  [2]ipv6Ext // Routing and Destination Options headers (Hop-by-Hop is gopacket's IPv6)
	udp   golayers.UDP
	erf   layers.ERF
	lrh   layers.LRH
	grh   layers.GRH
	bth   layers.BTH
	deth  layers.DETH
	mad   layers.MAD
	cms   [11]layers.CMMessage
	ipcm  layers.IPCMHeader
	rpc   layers.RPCRDMAPrivateData

	parsers map[gopacket.LayerType]*gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	has     layerSet

	tcp *tcpState
	seg tcpSeg

	// CM candidates whose headers did not decode as far as the MAD: how
	// many, and the first one's frame and why.
	undecodable      int
	undecodableFirst int
	undecodableWhy   string

	// First IP fragments that hold the start of a CM MAD or an MPA frame:
	// how many, and the first one's frame.
	fragments     int
	fragmentFirst int
}

// layerSet records which layers the last decode produced.
type layerSet struct {
	lrh, grh, bth, deth, mad, ip4, ip6, udp, ipcm, erf bool
	cm                                                 layers.CMMessage
	err                                                error // the decoding error that stopped the parser, or nil
}

// New makes a decoder for the input named file; emit receives each message
// as soon as it is complete.
func New(file string, cfg Config, emit func(*record.Message)) *Decoder {
	d := &Decoder{file: file, emit: emit, parsers: map[gopacket.LayerType]*gopacket.DecodingLayerParser{}, tcp: newTCPState(cfg.TCP)}
	d.rocePorts.add(layers.RoCEv2Port)
	for _, p := range cfg.RoCEPorts {
		d.rocePorts.add(p)
	}
	for i := range d.cms {
		d.cms[i] = layers.NewCMMessage(uint16(layers.AttrREQ + i))
	}
	d.decoded = make([]gopacket.LayerType, 0, 16)
	return d
}

// SetFile names the input of the frames that follow (live capture: the
// interface each frame came from).
func (d *Decoder) SetFile(name string) { d.file = name }

// parser returns the decoding-layer parser that starts at first.
func (d *Decoder) parser(first gopacket.LayerType) *gopacket.DecodingLayerParser {
	if p, ok := d.parsers[first]; ok {
		return p
	}
	d.ip6x[0].typ, d.ip6x[1].typ = golayers.LayerTypeIPv6Routing, golayers.LayerTypeIPv6Destination
	all := []gopacket.DecodingLayer{&d.eth, &d.dot1q, &d.sll, &d.sll2, &d.loop, &d.ip4, &d.ip6, &d.ip6x[0], &d.ip6x[1], &d.udp,
		&d.erf, &d.lrh, &d.grh, &d.bth, &d.deth, &d.mad, &d.ipcm, &d.rpc}
	for _, cm := range d.cms {
		all = append(all, cm)
	}
	p := gopacket.NewDecodingLayerParser(first, all...)
	p.IgnoreUnsupported = true
	d.parsers[first] = p
	return p
}

// ipv6Ext steps over an IPv6 extension header of the generic form (Next
// Header, Hdr Ext Len in 8-octet units beyond the first 8) without
// decoding its options, as the fast filter does, so that RoCEv2 behind a
// Routing or Destination Options header still decodes. It does not
// allocate.
type ipv6Ext struct {
	typ     gopacket.LayerType
	next    golayers.IPProtocol
	payload []byte
}

func (e *ipv6Ext) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < 8 {
		df.SetTruncated()
		return fmt.Errorf("IPv6 extension header: %d octets, 8 needed", len(data))
	}
	n := (int(data[1]) + 1) * 8
	if len(data) < n {
		df.SetTruncated()
		return fmt.Errorf("IPv6 extension header: %d octets, %d needed", len(data), n)
	}
	e.next, e.payload = golayers.IPProtocol(data[0]), data[n:]
	return nil
}

func (e *ipv6Ext) CanDecode() gopacket.LayerClass    { return e.typ }
func (e *ipv6Ext) NextLayerType() gopacket.LayerType { return e.next.LayerType() }
func (e *ipv6Ext) LayerPayload() []byte              { return e.payload }

// firstLayer is where decoding of a link type starts.
func firstLayer(lt uint16, data []byte) gopacket.LayerType {
	switch lt {
	case linkEthernet:
		return golayers.LayerTypeEthernet
	case linkSLL:
		return golayers.LayerTypeLinuxSLL
	case linkSLL2:
		return golayers.LayerTypeLinuxSLL2
	case linkNull, linkLoop:
		return golayers.LayerTypeLoopback
	case linkIPv4:
		return golayers.LayerTypeIPv4
	case linkIPv6:
		return golayers.LayerTypeIPv6
	case linkRaw:
		if len(data) > 0 && data[0]>>4 == 6 {
			return golayers.LayerTypeIPv6
		}
		return golayers.LayerTypeIPv4
	case linkIB:
		return layers.LayerTypeLRH
	case linkERF:
		return layers.LayerTypeERF
	}
	return gopacket.LayerTypeZero
}

// Decode looks at one frame; the messages it completes go to the emit
// function given to New.
func (d *Decoder) Decode(f *Frame) {
	emit := d.emit
	fi := d.classify(f.LinkType, f.Data)
	switch fi.kind {
	case kindCM:
		d.decodeLayers(f, &fi)
		if !d.has.mad && !(d.has.deth && d.captureCut(f, &fi)) {
			// The fast filter took it for a CM MAD, but its headers do not
			// decode that far (and the capture did not cut it): no message,
			// counted for a run-level finding.
			d.undecodable++
			if d.undecodable == 1 {
				d.undecodableFirst = f.Index
				d.undecodableWhy = d.undecodableReason()
			}
			return
		}
		emit(d.cmMessage(f, &fi))
	case kindTCP:
		if parseTCP(f.Data, &fi, &d.seg) {
			d.seg.frame, d.seg.time = f.Index, f.Time
			d.segment(&d.seg, emit)
		}
	case kindFragment:
		d.fragments++
		if d.fragments == 1 {
			d.fragmentFirst = f.Index
		}
	}
}

// Flush reports what is still pending at the end of the input: MPA frames
// whose stream never completed them.
func (d *Decoder) Flush() { d.flushTCP(d.emit) }

// Notes are run-level findings: what an input's decoder saw
// but could not show as messages: CM candidates that do not decode, first IP
// fragments of a CM MAD or an MPA frame, and TCP directions given up at a
// state limit with too little of an MPA key to show.
func (d *Decoder) Notes() []finding.Finding {
	var out []finding.Finding
	name := d.file
	if n, first, why := d.Undecodable(); n > 0 {
		what := "frame looks like a CM MAD but its headers do"
		if n > 1 {
			what = "frames look like CM MADs but their headers do"
		}
		out = append(out, finding.New(finding.CMUndecodable,
			"%s: %d %s not decode as far as the MAD (first at frame %d: %s); not shown as messages",
			name, n, what, first, why))
	}
	if n, first := d.Fragments(); n > 0 {
		what := "fragment holds"
		if n > 1 {
			what = "fragments hold"
		}
		out = append(out, finding.New(finding.IPFragmentSkipped,
			"%s: %d first IP %s the start of a CM MAD or an MPA frame (first at frame %d); fragments are not reassembled, so no message is shown for them",
			name, n, what, first))
	}
	if n := d.SilentDrops(); n > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%s: %d TCP directions were given up at a state limit (--max-tcp-flows, --max-buffer-bytes, --max-stream-bytes) with too little of an MPA key to show",
			name, n))
	}
	return out
}

// Undecodable counts the frames the fast filter took for CM MADs whose
// headers did not decode as far as the MAD; first is the first one's frame
// number and why the one that number names did not decode.
func (d *Decoder) Undecodable() (n, first int, why string) {
	return d.undecodable, d.undecodableFirst, d.undecodableWhy
}

// Fragments counts the first IP fragments that hold the start of a CM MAD
// or an MPA frame (fragments are not reassembled); first is the first one's
// frame number.
func (d *Decoder) Fragments() (n, first int) { return d.fragments, d.fragmentFirst }

// undecodableReason says where the decoding of the last candidate stopped.
func (d *Decoder) undecodableReason() string {
	if d.has.err != nil {
		return d.has.err.Error()
	}
	last := "the link header"
	switch {
	case d.has.deth:
		last = "the DETH"
	case d.has.bth:
		last = "the BTH"
	case d.has.grh:
		last = "the GRH"
	case d.has.lrh:
		last = "the LRH"
	case d.has.udp:
		last = "the UDP header"
	case d.has.ip4 || d.has.ip6:
		last = "the IP header"
	}
	return "nothing decodes after " + last
}

// Dropped counts TCP directions given up because of a state limit.
func (d *Decoder) Dropped() int { return d.tcp.dropped }

// SilentDrops counts the TCP directions given up at a state limit when they
// had shown too little of an MPA key for a message: no message carries a
// finding for them.
func (d *Decoder) SilentDrops() int { return d.tcp.silentDrops }

// KeylessEvictions counts the TCP directions given up at a state limit
// before they showed any octet of an MPA key.
func (d *Decoder) KeylessEvictions() int { return d.tcp.keyless }

// decodeLayers runs gopacket's decoding-layer parser over a CM candidate.
// It does not allocate.
func (d *Decoder) decodeLayers(f *Frame, fi *frameInfo) {
	d.has = layerSet{}
	// A capture cut short inside the IB packet holds no ICRC at its end.
	end, _ := d.packetEnd(f.Data, fi)
	fi.ibEnd = end
	d.bth.NoICRC = end > len(f.Data) || end < fi.bth+layers.BTHLen+layers.ICRCLen
	p := d.parser(firstLayer(f.LinkType, f.Data))
	d.has.err = p.DecodeLayers(f.Data, &d.decoded) // errors show as missing layers
	d.note(d.decoded)
	// RoCEv2 on a port gopacket does not know: go on from the UDP payload.
	if d.has.udp && !d.has.bth {
		d.has.err = d.parser(layers.LayerTypeBTH).DecodeLayers(d.udp.Payload, &d.decoded)
		d.note(d.decoded)
	}
}

func (d *Decoder) note(decoded []gopacket.LayerType) {
	for _, t := range decoded {
		switch t {
		case layers.LayerTypeLRH:
			d.has.lrh = true
		case layers.LayerTypeGRH:
			d.has.grh = true
		case layers.LayerTypeBTH:
			d.has.bth = true
		case layers.LayerTypeDETH:
			d.has.deth = true
		case layers.LayerTypeMAD:
			d.has.mad = true
		case golayers.LayerTypeIPv4:
			d.has.ip4 = true
		case golayers.LayerTypeIPv6:
			d.has.ip6 = true
		case golayers.LayerTypeUDP:
			d.has.udp = true
		case layers.LayerTypeIPCM:
			d.has.ipcm = true
		case layers.LayerTypeERF:
			d.has.erf = true
		default:
			// The CM layer types are registered in attribute order.
			if t >= layers.LayerTypeCMReq && t <= layers.LayerTypeCMApr {
				d.has.cm = d.cms[t-layers.LayerTypeCMReq]
			}
		}
	}
}

// cmMessage builds the message of a decoded CM candidate and checks it.
func (d *Decoder) cmMessage(f *Frame, fi *frameInfo) *record.Message {
	m := &record.Message{
		File:      d.file,
		Frame:     f.Index,
		Time:      f.Time.UTC(),
		Transport: fi.transport,
		IB:        &record.IBHeaders{},
	}
	c := &msgCtx{m: m}
	m.Src, m.Dst = d.addresses(fi)
	if d.has.lrh {
		m.IB.LRH = d.lrh.Fields()
	}
	if d.has.grh {
		m.IB.GRH = d.grh.Fields()
	}
	if d.has.bth {
		m.IB.BTH = d.bth.Fields()
		c.bth = &d.bth
	}
	if d.has.deth {
		m.IB.DETH = d.deth.Fields()
		c.deth = &d.deth
	}
	d.checkCRCs(f, fi, c)

	if d.has.mad {
		c.mad = &d.mad
		m.MAD = d.mad.Fields()
		m.AttributeID = d.mad.AttributeID
		m.TransactionID = d.mad.TransactionID
		m.Kind = record.KindOfAttribute(d.mad.AttributeID)
	} else {
		m.Kind = record.KindCM // the capture cut the MAD header: which message is unknown
	}
	d.checkLengths(f, fi, c)

	if cm := d.has.cm; cm != nil {
		c.cm = cm
		m.CM = cm.Fields()
		m.LocalCommID, m.RemoteCommID = cm.CommIDs()
		pd := cm.PrivateDataBytes()
		m.PrivateData = append([]byte(nil), pd...)
		m.PrivateDataSize = cm.PrivateDataSize()
		c.pd = pd
		c.pdSize = cm.PrivateDataSize()
		switch v := cm.(type) {
		case *layers.CMReq:
			m.ServiceID, m.HasServiceID = v.ServiceID, true
			m.CMInfo = &record.CMInfo{LocalQPN: v.LocalQPN, StartingPSN: v.StartingPSN, ResponderResources: v.ResponderResources,
				InitiatorDepth: v.InitiatorDepth, PathMTU: v.PathPacketPayloadMTU}
		case *layers.CMRep:
			m.CMInfo = &record.CMInfo{LocalQPN: v.LocalQPN, StartingPSN: v.StartingPSN, ResponderResources: v.ResponderResources,
				InitiatorDepth: v.InitiatorDepth}
		case *layers.CMRej:
			m.CMInfo = &record.CMInfo{RejectReason: v.Reason, ARI: slices.Clone(v.ARI[:min(int(v.RejectInfoLength), len(v.ARI))])}
		case *layers.CMSidrReq:
			m.ServiceID, m.HasServiceID = v.ServiceID, true
		case *layers.CMSidrRep:
			m.ServiceID, m.HasServiceID = v.ServiceID, true
		}
		switch cm.AttributeID() {
		case layers.AttrREQ, layers.AttrREP, layers.AttrREJ:
			c.absentApplies = true
		}
		if m.HasServiceID && layers.IsIPCMServiceID(m.ServiceID) &&
			(cm.AttributeID() == layers.AttrREQ || cm.AttributeID() == layers.AttrSIDRREQ) {
			c.ipcmExpected = true
			m.ExpectedOffset = layers.IPCMHeaderLen
			if d.has.ipcm {
				c.ipcm = &d.ipcm
				m.IPCM = d.ipcm.Fields()
			}
		}
		c.search = layers.SearchRPCRDMA(pd)
		if c.search.Found {
			m.RPCRDMA = record.NewRPCRDMA(&c.search.Message, c.search.Offset)
		}
	}
	m.Findings = runRules(messageRules, c)
	return m
}

// addresses names the two ends of an IB-family message.
func (d *Decoder) addresses(fi *frameInfo) (string, string) {
	switch {
	case fi.transport == record.RoCEv2 && d.has.ip4:
		return ipString(d.ip4.SrcIP), ipString(d.ip4.DstIP)
	case fi.transport == record.RoCEv2 && d.has.ip6:
		return ipString(d.ip6.SrcIP), ipString(d.ip6.DstIP)
	case d.has.grh:
		return layers.AddrString(d.grh.SGID[:]), layers.AddrString(d.grh.DGID[:])
	case d.has.lrh:
		return fmt.Sprintf("LID %d", d.lrh.SLID), fmt.Sprintf("LID %d", d.lrh.DLID)
	}
	return "?", "?"
}

func ipString(ip []byte) string {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return "?"
	}
	return a.Unmap().String()
}

// checkCRCs computes the ICRC, and for native InfiniBand the VCRC, when the
// capture holds them.
func (d *Decoder) checkCRCs(f *Frame, fi *frameInfo, c *msgCtx) {
	b := f.Data
	if !d.has.bth || !d.bth.HasICRC || fi.ibEnd > len(b) {
		return
	}
	icrcAt := fi.ibEnd - layers.ICRCLen
	ib := b[fi.bth:icrcAt]
	var crc uint32
	switch {
	case fi.transport == record.RoCEv2:
		crc = layers.ICRCRoCEv2(b[fi.l3:fi.l4], b[fi.l4:fi.l4+8], ib)
	case fi.grh >= 0:
		crc = layers.ICRCGRH(b[fi.grh:fi.grh+layers.GRHLen], ib)
	case fi.lrh >= 0:
		crc = layers.ICRCLRH(b[fi.lrh:fi.lrh+layers.LRHLen], ib)
	default:
		return
	}
	c.m.IB.ICRC = &record.CRCCheck{Value: d.bth.ICRC, Computed: crc, Valid: crc == d.bth.ICRC}
	if fi.lrh >= 0 && d.has.lrh && d.lrh.HasVCRC {
		v := layers.VCRC(b[fi.lrh:fi.ibEnd])
		c.m.IB.VCRC = &record.CRCCheck{Value: uint32(d.lrh.VCRC), Computed: uint32(v), Valid: v == d.lrh.VCRC}
	}
}

// lengthField names the header length field that sets where an IB-family
// packet ends.
type lengthField struct {
	name  string // "UDP Length", "IPv4 Total Length", ...
	value int
	unit  string // "" (octets) or " words"
	end   int    // where it puts the end of the IB packet in the frame
}

func (l lengthField) String() string { return fmt.Sprintf("%s %d%s", l.name, l.value, l.unit) }

// packetEnd is where the IB packet of a candidate ends (after its ICRC) by
// the length fields of its headers: the smallest of them, with the field
// that sets it. A zero IPv4 Total Length (TSO) or IPv6 Payload Length
// (jumbogram) says nothing and is passed over, as gopacket does.
func (d *Decoder) packetEnd(b []byte, fi *frameInfo) (int, lengthField) {
	end, lf := fi.ibEnd, lengthField{}
	fs, n := lengthFields(b, fi)
	for _, f := range fs[:n] {
		if lf.name == "" || f.end < end {
			end, lf = f.end, f
		}
	}
	return end, lf
}

// lengthFields are the length fields of a candidate's headers, each with
// where it puts the end of the IB packet; a zero IPv4 Total Length or IPv6
// Payload Length is left out.
func lengthFields(b []byte, fi *frameInfo) (fs [2]lengthField, n int) {
	add := func(f lengthField) { fs[n] = f; n++ }
	switch {
	case fi.transport == record.RoCEv2:
		v := int(binary.BigEndian.Uint16(b[fi.l4+4:]))
		add(lengthField{name: "UDP Length", value: v, end: fi.l4 + v})
		if fi.ipv6 {
			if v := int(binary.BigEndian.Uint16(b[fi.l3+4:])); v != 0 {
				add(lengthField{name: "IPv6 Payload Length", value: v, end: fi.l3 + 40 + v})
			}
		} else if v := int(binary.BigEndian.Uint16(b[fi.l3+2:])); v != 0 {
			add(lengthField{name: "IPv4 Total Length", value: v, end: fi.l3 + v})
		}
	default:
		if fi.lrh >= 0 {
			v := int(binary.BigEndian.Uint16(b[fi.lrh+4:]) & 0x07ff)
			add(lengthField{name: "LRH PktLen", value: v, unit: " (4-octet words)", end: fi.lrh + v*4})
		}
		if fi.grh >= 0 {
			v := int(binary.BigEndian.Uint16(b[fi.grh+4:]))
			add(lengthField{name: "GRH PayLen", value: v, end: fi.grh + layers.GRHLen + v})
		}
	}
	return fs, n
}

// erfPacket returns, for a frame of link type ERF whose header decoded, where
// the packet starts after the ERF header and its wire length (wlen).
func (d *Decoder) erfPacket(f *Frame) (start, wlen int, ok bool) {
	if f.LinkType != linkERF || !d.has.erf {
		return 0, 0, false
	}
	return len(d.erf.Contents), int(d.erf.WLen), true
}

// captureCut reports whether the capture holds fewer octets of the frame
// than the wire carried: the record's original length (or, in an ERF
// record, the ERF wire length) is larger than what was captured.
func (d *Decoder) captureCut(f *Frame, fi *frameInfo) bool {
	if f.WireLen > len(f.Data) {
		return true
	}
	if start, wlen, ok := d.erfPacket(f); ok && start+wlen > len(f.Data) {
		return true
	}
	return false
}

// erfProblem says how the ERF header of the frame disagrees with the
// record that holds it, or "". The record's length decides the frame's
// extent in any case: rlen is not trusted (docs/capture.md).
func (d *Decoder) erfProblem(f *Frame) string {
	start, wlen, ok := d.erfPacket(f)
	if !ok {
		return ""
	}
	rec := max(f.WireLen, len(f.Data))
	rlen := int(d.erf.RLen)
	var why []string
	switch {
	case rlen < start:
		why = append(why, fmt.Sprintf("ERF rlen %d is less than its %d-octet header", rlen, start))
	case rlen < rec:
		why = append(why, fmt.Sprintf("ERF rlen %d is less than the record's %d octets", rlen, rec))
	case rlen > rec+7 && f.WireLen <= len(f.Data):
		why = append(why, fmt.Sprintf("ERF rlen %d is more than the record's %d octets and their padding", rlen, rec))
	}
	// The record may keep the padding that rounds rlen up to 8.
	if have := len(f.Data) - start; wlen+7 < have {
		why = append(why, fmt.Sprintf("ERF wlen %d is less than the %d octets of the packet it holds", wlen, have))
	}
	return strings.Join(why, "; ")
}

// checkLengths compares the length fields of a CM candidate with the
// octets captured, and says what is missing and why: the capture's snap
// length (capture-truncated), a frame captured without its ICRC
// (icrc-absent), or a length field that disagrees with a complete frame
// (length-mismatch).
func (d *Decoder) checkLengths(f *Frame, fi *frameInfo, c *msgCtx) {
	b := f.Data
	end, lf := d.packetEnd(b, fi)
	if p := d.erfProblem(f); p != "" {
		c.lengths = append(c.lengths, p)
	}
	madStart := fi.bth + layers.BTHLen + layers.DETHLen
	madHave := min(len(b), end-layers.ICRCLen) - madStart
	switch {
	case end < fi.bth+layers.BTHLen+layers.ICRCLen:
		// Too small to mean anything: the parsers ignore it (UDP Length 0,
		// LRH PktLen under 2 words) or stop at it.
		c.lengths = append(c.lengths, fmt.Sprintf("%s is too small for the packet's headers: the rest of the frame was decoded, without an ICRC check", lf))
	case end > len(b) && d.captureCut(f, fi):
		if madHave < layers.MADLen {
			c.cut = fmt.Sprintf("the capture holds %d of the MAD's %d octets", max(madHave, 0), layers.MADLen)
		} else {
			c.cut = "the capture ends before the ICRC"
		}
	case end > len(b) && end-len(b) == layers.ICRCLen && madHave >= layers.MADLen:
		c.noICRC = fmt.Sprintf("the frame is complete but ends where the ICRC would start (%s): it was captured without its ICRC, which is not checked", lf)
	case end > len(b):
		s := fmt.Sprintf("%s puts the end of the packet %d octets beyond the end of the frame, which the capture did not cut", lf, end-len(b))
		if madHave < layers.MADLen {
			s += fmt.Sprintf(": %d of the MAD's %d octets are present", max(madHave, 0), layers.MADLen)
		}
		c.lengths = append(c.lengths, s)
	case madHave < layers.MADLen:
		c.lengths = append(c.lengths, fmt.Sprintf("%s leaves room for %d of the MAD's %d octets: the message is cut short by its own headers",
			lf, max(madHave, 0), layers.MADLen))
	}
	// The smallest field decides where the packet ends; any other that
	// reaches further, beyond a frame the capture did not cut, is wrong too.
	if d.captureCut(f, fi) || end < fi.bth+layers.BTHLen+layers.ICRCLen {
		return
	}
	fs, n := lengthFields(b, fi)
	for _, o := range fs[:n] {
		if o.end > len(b) && o.end > end {
			c.lengths = append(c.lengths, fmt.Sprintf("%s puts the end of the packet %d octets beyond the end of the frame, which the capture did not cut (%s ends it %d octets earlier)",
				o, o.end-len(b), lf, o.end-end))
		}
	}
}
