package decode

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/privdata"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// A CM candidate is decoded once, from where the classifier found its
// layers: the IP and UDP headers of RoCEv2 with gopacket's layers, then the
// InfiniBand layers (LRH, GRH, BTH, DETH, MAD, the CM message, the IP CM
// header) with a DecodingLayerParser that starts at the first of them. The
// link layers the classifier stepped over are not decoded again.

// layerSet records which layers in front of the InfiniBand ones the last
// decode produced (those are in the Decoder's IBStack).
type layerSet struct {
	ip4, ip6, udp, erf bool
	err                error // the decoding error that stopped the decode, or nil
}

// decodeLayers decodes a CM candidate's layers. It does not allocate.
func (d *Decoder) decodeLayers(f *capture.Frame, fi *frameInfo) {
	d.has = layerSet{}
	d.ib.Has, d.ib.CM, d.ibOctets = layers.IBLayers{}, nil, nil
	b := f.Data
	d.lens = lengthsOf(b, fi)
	// A capture cut short inside the IB packet holds no ICRC at its end.
	end := d.lens.end
	fi.ibEnd = end
	d.noICRC = end > len(b) || end < fi.bth+layers.BTHLen+layers.ICRCLen
	if f.LinkType == linkERF {
		if d.has.err = d.erf.DecodeFromBytes(b, gopacket.NilDecodeFeedback); d.has.err != nil {
			return
		}
		d.has.erf = true
	}
	var ib []byte
	d.ibFirst = layers.LayerTypeBTH
	switch {
	case fi.lrh >= 0:
		ib, d.ibFirst = b[fi.lrh:], layers.LayerTypeLRH
	case fi.transport == record.RoCEv1:
		ib, d.ibFirst = b[fi.grh:], layers.LayerTypeGRH
	default: // RoCEv2: the IP and UDP headers first
		if ib = d.decodeIPUDP(b, fi); ib == nil {
			return
		}
	}
	d.ib.Decode(d.ibFirst, ib, d.noICRC)
	d.has.err, d.ibOctets = d.ib.Err, ib
}

// decodeIPUDP decodes the IP and UDP headers of a RoCEv2 candidate and
// returns the UDP payload, or nil when decoding stops before it.
func (d *Decoder) decodeIPUDP(b []byte, fi *frameInfo) []byte {
	df := gopacket.NilDecodeFeedback
	ipEnd := len(b)
	if fi.ipv6 {
		if d.has.err = d.ip6.DecodeFromBytes(b[fi.l3:], df); d.has.err != nil {
			return nil
		}
		d.has.ip6 = true
		if n := int(d.ip6.Length); n != 0 {
			ipEnd = min(ipEnd, fi.l3+ipv6HeaderLen+n)
		}
	} else {
		if d.has.err = d.ip4.DecodeFromBytes(b[fi.l3:], df); d.has.err != nil {
			return nil
		}
		d.has.ip4 = true
		ipEnd = fi.l3 + len(d.ip4.Contents) + len(d.ip4.Payload)
	}
	if ipEnd <= fi.l4 {
		return nil // nothing after the IP header
	}
	if d.has.err = d.udp.DecodeFromBytes(b[fi.l4:ipEnd], df); d.has.err != nil {
		return nil
	}
	d.has.udp = true
	if len(d.udp.Payload) == 0 {
		return nil
	}
	return d.udp.Payload
}

// cmMessage builds the message of a decoded CM candidate. Its findings are
// raised as each layer is checked: the lengths and CRCs of the packet, the
// MAD header and addressing, the IP CM header, then the RFC 8797 step.
func (d *Decoder) cmMessage(f *capture.Frame, fi *frameInfo) *record.Message {
	m := d.msgs.next()
	m.File, m.Frame, m.Time, m.Transport = d.file, f.Index, f.Time.UTC(), fi.transport
	m.IB = d.msgs.ibHeaders()
	m.Src, m.Dst = d.addresses(fi)
	if d.ibOctets != nil {
		m.Octets = record.Octets{IB: d.msgs.octets(d.ibOctets), IBFirst: d.ibFirst, NoICRC: d.noICRC}
	}
	fs := d.checkLengths(f, fi, m.Findings)
	d.checkCRCs(f, fi, m)
	if k := m.IB.ICRC; k != nil && !k.Valid {
		fs = append(fs, finding.New(finding.ICRCMismatch, "ICRC is 0x%08x, the packet gives 0x%08x", k.Value, k.Computed))
	}
	if k := m.IB.VCRC; k != nil && !k.Valid {
		fs = append(fs, finding.New(finding.VCRCMismatch, "VCRC is 0x%04x, the packet gives 0x%04x", k.Value, k.Computed))
	}
	fs = d.madHeader(m, fs)
	carrier := privdata.Carrier{Where: "its carrier"}
	var pd []byte
	if cm := d.ib.CM; cm != nil {
		pd, carrier, fs = d.cmBody(m, cm, fs)
		if a := cm.AttributeID(); (a == layers.AttrREQ || a == layers.AttrREP) && len(pd) < m.PrivateDataSize && d.captureCut(f) {
			m.PrivateDataCut = true // what it advertised is not known
		}
	} else if d.ib.Has.MAD && d.captureCut(f) {
		switch d.ib.MAD.AttributeID {
		case layers.AttrREQ:
			d.cutREQ(m, d.ib.MAD.Payload)
		case layers.AttrREP:
			d.cutREP(m, d.ib.MAD.Payload)
		}
	}
	carrier.Expected = m.ExpectedOffset
	carrier.Into = d.msgs.rpcrdma()
	res := privdata.Examine(pd, carrier, d.ulpContext(m, fi))
	m.RPCRDMA, m.ULP = res.RPCRDMA, res.ULP
	res.Hold(m, len(fs))
	m.Findings = append(fs, res.Findings...)
	if req, ok := d.ib.CM.(*layers.CMReq); ok && m.RPCRDMA != nil {
		m.Findings = notRC(m.Findings, req.TransportServiceType)
	}
	d.annotate(m, f, fi)
	return m
}

// cutREQ takes what a REQ the capture's snap length cut short still holds
// (at 128 octets of a RoCEv2 frame: its Communication ID, Service ID and
// QPN, not its Starting PSN): enough to pair it with its REP and follow its
// traffic, the rest marked unknown (record.CMInfo.Cut). Its private data
// is gone; capture-truncated says so.
func (d *Decoder) cutREQ(m *record.Message, b []byte) {
	if len(b) < 4 {
		return
	}
	m.LocalCommID = binary.BigEndian.Uint32(b[0:4])
	if len(b) >= 16 {
		m.ServiceID, m.HasServiceID = binary.BigEndian.Uint64(b[8:16]), true
	}
	info := record.CMInfo{Cut: record.CutQPN | record.CutDepths | record.CutStartingPSN | record.CutPathMTU}
	if len(b) >= 36 {
		info.LocalQPN, info.ResponderResources = uint32(b[32])<<16|uint32(b[33])<<8|uint32(b[34]), b[35]
		info.Cut &^= record.CutQPN
	}
	if len(b) >= 40 {
		info.InitiatorDepth = b[39]
		info.Cut &^= record.CutDepths
	}
	if len(b) >= 47 {
		info.StartingPSN = uint32(b[44])<<16 | uint32(b[45])<<8 | uint32(b[46])
		info.Cut &^= record.CutStartingPSN
	}
	if len(b) >= 51 {
		info.PathMTU = b[50] >> 4
		info.Cut &^= record.CutPathMTU
	}
	m.CMInfo = d.msgs.cmInfo(info)
	m.PrivateDataCut = true
	if d.ib.Has.LRH {
		m.CMInfo.SLID, m.CMInfo.DLID = d.ib.LRH.SLID, d.ib.LRH.DLID
	}
}

// cutREP takes what a REP the capture cut short still holds (over RoCEv1
// at 128 octets: its Communication IDs, QPN, Starting PSN and depths).
func (d *Decoder) cutREP(m *record.Message, b []byte) {
	if len(b) < 8 {
		return
	}
	m.LocalCommID, m.RemoteCommID = binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8])
	info := record.CMInfo{Cut: record.CutQPN | record.CutDepths | record.CutStartingPSN}
	if len(b) >= 15 {
		info.LocalQPN = uint32(b[12])<<16 | uint32(b[13])<<8 | uint32(b[14])
		info.Cut &^= record.CutQPN
	}
	if len(b) >= 23 {
		info.StartingPSN = uint32(b[20])<<16 | uint32(b[21])<<8 | uint32(b[22])
		info.Cut &^= record.CutStartingPSN
	}
	if len(b) >= 26 {
		info.ResponderResources, info.InitiatorDepth = b[24], b[25]
		info.Cut &^= record.CutDepths
	}
	m.CMInfo = d.msgs.cmInfo(info)
	m.PrivateDataCut = true
	if d.ib.Has.LRH {
		m.CMInfo.SLID, m.CMInfo.DLID = d.ib.LRH.SLID, d.ib.LRH.DLID
	}
}

// madHeader takes what the MAD header says of the message (which it is,
// its Transaction ID) and checks it and the addressing: a CM MAD goes to
// QP1 with the GSI's Q_Key.
func (d *Decoder) madHeader(m *record.Message, fs []finding.Finding) []finding.Finding {
	if mad := &d.ib.MAD; d.ib.Has.MAD {
		m.AttributeID, m.TransactionID = mad.AttributeID, mad.TransactionID
		m.Kind = record.KindOfAttribute(mad.AttributeID)
		if mad.BaseVersion != 1 || mad.ClassVersion != 2 {
			fs = append(fs, finding.New(finding.MADUnexpectedHeader, "CM MAD with Base Version %d and Class Version %d (expected 1 and 2)",
				mad.BaseVersion, mad.ClassVersion))
		}
	} else {
		m.Kind = record.KindCM // the capture cut the MAD header: which message is unknown
	}
	qp := d.ib.Has.BTH && d.ib.BTH.DestQP != 1
	qkey := d.ib.Has.DETH && d.ib.DETH.QKey != layers.GSIQKey
	switch {
	case qp && qkey:
		fs = append(fs, finding.New(finding.CMNotGSI, "CM MAD sent to QP 0x%06x, not QP1 and Q_Key 0x%08x, not 0x80010000",
			d.ib.BTH.DestQP, d.ib.DETH.QKey))
	case qp:
		fs = append(fs, finding.New(finding.CMNotGSI, "CM MAD sent to QP 0x%06x, not QP1", d.ib.BTH.DestQP))
	case qkey:
		fs = append(fs, finding.New(finding.CMNotGSI, "CM MAD Q_Key 0x%08x, not 0x80010000", d.ib.DETH.QKey))
	}
	return fs
}

// cmBody takes what the CM message's body says: its Communication IDs,
// its private data, the fields pairing and the data path read, and the IP
// CM header when the Service ID announces one. It returns the private data
// and how its carrier puts the RFC 8797 message.
func (d *Decoder) cmBody(m *record.Message, cm layers.CMMessage, fs []finding.Finding) ([]byte, privdata.Carrier, []finding.Finding) {
	m.LocalCommID, m.RemoteCommID = cm.CommIDs()
	pd := cm.PrivateDataBytes()
	m.PrivateData = d.msgs.privateData(pd)
	m.PrivateDataSize = cm.PrivateDataSize()
	switch v := cm.(type) {
	case *layers.CMReq:
		m.ServiceID, m.HasServiceID = v.ServiceID, true
		m.CMInfo = d.msgs.cmInfo(record.CMInfo{LocalQPN: v.LocalQPN, StartingPSN: v.StartingPSN, ResponderResources: v.ResponderResources,
			InitiatorDepth: v.InitiatorDepth, PathMTU: v.PathPacketPayloadMTU})
	case *layers.CMRep:
		m.CMInfo = d.msgs.cmInfo(record.CMInfo{LocalQPN: v.LocalQPN, StartingPSN: v.StartingPSN, ResponderResources: v.ResponderResources,
			InitiatorDepth: v.InitiatorDepth})
	case *layers.CMRej:
		m.CMInfo = d.msgs.cmInfo(record.CMInfo{RejectReason: v.Reason})
		m.CMInfo.ARI = d.msgs.ari(v.ARI[:min(int(v.RejectInfoLength), len(v.ARI))])
	case *layers.CMSidrReq:
		m.ServiceID, m.HasServiceID = v.ServiceID, true
	case *layers.CMSidrRep:
		m.ServiceID, m.HasServiceID = v.ServiceID, true
	}
	if m.CMInfo != nil && d.ib.Has.LRH { // native IB: the data path matches on the LIDs
		m.CMInfo.SLID, m.CMInfo.DLID = d.ib.LRH.SLID, d.ib.LRH.DLID
	}
	carrier := privdata.Carrier{Name: m.Name(), Where: theMessage(m), Size: m.PrivateDataSize}
	attr := cm.AttributeID()
	carrier.AbsentMatters = attr == layers.AttrREQ || attr == layers.AttrREP || attr == layers.AttrREJ
	if m.HasServiceID && layers.IsIPCMServiceID(m.ServiceID) && (attr == layers.AttrREQ || attr == layers.AttrSIDRREQ) {
		m.ExpectedOffset = layers.IPCMHeaderLen
		carrier.Where = "an IP CM header"
		switch {
		case d.ib.Has.IPCM:
			if p := d.ib.IPCM.Problem(); p != "" {
				fs = append(fs, finding.New(finding.CMIPHeaderInvalid, "IP CM header: %s", p))
			}
		case len(pd) >= m.PrivateDataSize: // else the capture cut it: capture-truncated says so
			fs = append(fs, finding.New(finding.CMIPHeaderInvalid, "IP CM Service ID but only %d octets of private data", len(pd)))
		}
	}
	return pd, carrier, fs
}

// theNames are "the REQ", "the REP", ... by message kind.
var theNames = func() (n [record.KindMPAReply + 1]string) {
	for k := range n {
		n[k] = "the " + record.Kind(k).String()
	}
	return n
}()

// theMessage is "the REQ", "the REP", ...: where a CM message's carrier
// puts its RFC 8797 message.
func theMessage(m *record.Message) string {
	if m.Kind == record.KindCMOther || int(m.Kind) >= len(theNames) {
		return "the " + m.Name()
	}
	return theNames[m.Kind]
}

// ulpContext is what the upper layer step needs to know of a CM message:
// what it is to the upper layers, the REQ's Service ID and IP CM header,
// and the frame's addresses.
func (d *Decoder) ulpContext(m *record.Message, fi *frameInfo) privdata.Context {
	c := privdata.Context{Consumer: m.ExpectedOffset}
	switch m.Kind {
	case record.KindREQ:
		c.Role, c.ServiceID, c.HasServiceID = privdata.RoleRequest, m.ServiceID, m.HasServiceID
		if d.ib.Has.IPCM && d.ib.IPCM.Problem() == "" {
			c.IPCMSrc, c.IPCMDst = d.ib.IPCM.Src(), d.ib.IPCM.Dst()
		}
	case record.KindREP:
		c.Role = privdata.RoleAccept
	case record.KindREJ:
		if m.CMInfo != nil && m.CMInfo.RejectReason == layers.RejReasonConsumerReject {
			c.Role = privdata.RoleReject
		}
	}
	switch {
	case fi.transport == record.RoCEv2 && d.has.ip4:
		c.Src, c.Dst = addr(d.ip4.SrcIP), addr(d.ip4.DstIP)
	case fi.transport == record.RoCEv2 && d.has.ip6:
		c.Src, c.Dst = addr(d.ip6.SrcIP), addr(d.ip6.DstIP)
	case d.ib.Has.GRH:
		c.Src, c.Dst = netip.AddrFrom16(d.ib.GRH.SGID).Unmap(), netip.AddrFrom16(d.ib.GRH.DGID).Unmap()
	}
	return c
}

func addr(ip []byte) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// addresses are the two ends of an IB-family message.
func (d *Decoder) addresses(fi *frameInfo) (record.Endpoint, record.Endpoint) {
	switch {
	case fi.transport == record.RoCEv2 && d.has.ip4:
		return record.IPEndpoint(d.ip4.SrcIP), record.IPEndpoint(d.ip4.DstIP)
	case fi.transport == record.RoCEv2 && d.has.ip6:
		return record.IPEndpoint(d.ip6.SrcIP), record.IPEndpoint(d.ip6.DstIP)
	case d.ib.Has.GRH:
		return record.GIDEndpoint(d.ib.GRH.SGID), record.GIDEndpoint(d.ib.GRH.DGID)
	case d.ib.Has.LRH:
		return record.LIDEndpoint(d.ib.LRH.SLID), record.LIDEndpoint(d.ib.LRH.DLID)
	}
	return record.Endpoint{}, record.Endpoint{}
}

// checkCRCs computes the ICRC, and for native InfiniBand the VCRC, when the
// capture holds them.
func (d *Decoder) checkCRCs(f *capture.Frame, fi *frameInfo, m *record.Message) {
	b := f.Data
	if !d.ib.Has.BTH || !d.ib.BTH.HasICRC || fi.ibEnd > len(b) {
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
	m.IB.ICRC = d.msgs.crc(0, record.CRCCheck{Value: d.ib.BTH.ICRC, Computed: crc, Valid: crc == d.ib.BTH.ICRC})
	if fi.lrh >= 0 && d.ib.Has.LRH && d.ib.LRH.HasVCRC {
		v := layers.VCRC(b[fi.lrh:fi.ibEnd])
		m.IB.VCRC = d.msgs.crc(1, record.CRCCheck{Value: uint32(d.ib.LRH.VCRC), Computed: uint32(v), Valid: v == d.ib.LRH.VCRC})
	}
}

// lengthField is a header length field that sets where an IB-family
// packet ends. It is small and holds no pointer: every RC packet reads
// two of them.
type lengthField struct {
	kind  lengthKind
	value int32
	end   int // where it puts the end of the IB packet in the frame
}

// lengthKind says which header length field a lengthField is (0: none).
type lengthKind uint8

const (
	noLength lengthKind = iota
	udpLength
	ipv6PayloadLength
	ipv4TotalLength
	lrhPktLen
	grhPayLen
)

// lengthNames are the fields' names, and their units when not octets.
var lengthNames = [...]struct{ name, unit string }{
	udpLength:         {"UDP Length", ""},
	ipv6PayloadLength: {"IPv6 Payload Length", ""},
	ipv4TotalLength:   {"IPv4 Total Length", ""},
	lrhPktLen:         {"LRH PktLen", " (4-octet words)"},
	grhPayLen:         {"GRH PayLen", ""},
}

func (l lengthField) String() string {
	n := lengthNames[l.kind]
	return fmt.Sprintf("%s %d%s", n.name, l.value, n.unit)
}

// lengths are the length fields of a candidate's headers, read once: each
// with where it puts the end of the IB packet, and the smallest of them
// (end, set by field), which decides. A zero IPv4 Total Length (TSO) or
// IPv6 Payload Length (jumbogram) says nothing and is left out, as gopacket
// does.
type lengths struct {
	fields [2]lengthField
	n      int
	end    int
	field  lengthField
}

func lengthsOf(b []byte, fi *frameInfo) lengths {
	var l lengths
	add := func(k lengthKind, v, end int) {
		l.fields[l.n] = lengthField{kind: k, value: int32(v), end: end}
		l.n++
	}
	switch {
	case fi.transport == record.RoCEv2:
		v := int(binary.BigEndian.Uint16(b[fi.l4+4:]))
		add(udpLength, v, fi.l4+v)
		if fi.ipv6 {
			if v := int(binary.BigEndian.Uint16(b[fi.l3+4:])); v != 0 {
				add(ipv6PayloadLength, v, fi.l3+ipv6HeaderLen+v)
			}
		} else if v := int(binary.BigEndian.Uint16(b[fi.l3+2:])); v != 0 {
			add(ipv4TotalLength, v, fi.l3+v)
		}
	default:
		if fi.lrh >= 0 {
			v := int(binary.BigEndian.Uint16(b[fi.lrh+4:]) & 0x07ff)
			add(lrhPktLen, v, fi.lrh+v*4)
		}
		if fi.grh >= 0 {
			v := int(binary.BigEndian.Uint16(b[fi.grh+4:]))
			add(grhPayLen, v, fi.grh+layers.GRHLen+v)
		}
	}
	l.end = fi.ibEnd
	for _, f := range l.fields[:l.n] {
		if l.field.kind == noLength || f.end < l.end {
			l.end, l.field = f.end, f
		}
	}
	return l
}

// wireEnd is where a frame ends on the wire: its record's original length
// (which a snap length cuts in the capture, not on the wire), or the octets
// captured when the record says less.
func wireEnd(f *capture.Frame) int { return max(f.WireLen, len(f.Data)) }

// lies is the rule on a length field that claims more than the wire
// carried, which CM messages and RC packets share: the field puts the end
// of the packet beyond wire, the end of the frame on the wire, other than
// where the field that decides puts it when that is exactly the ICRC a
// capturing device stripped (icrc-absent).
func (l *lengths) lies(f lengthField, wire int) bool {
	return f.end > wire && !(f.end == l.end && l.end-wire == layers.ICRCLen)
}

// lie is the length field that claims most beyond wire, when one lies.
func (l *lengths) lie(wire int) (lengthField, bool) {
	var worst lengthField
	ok := false
	for _, f := range l.fields[:l.n] {
		if l.lies(f, wire) && (!ok || f.end > worst.end) {
			worst, ok = f, true
		}
	}
	return worst, ok
}

// beyond says how a field that lies claims more than the wire carried:
// where it puts the end of the packet, against the frame on the wire
// (wire) and what the capture kept of it (captured).
func beyond(f lengthField, wire, captured int) string {
	if wire <= captured {
		return fmt.Sprintf("%s puts the end of the packet %d octets beyond the end of the frame, which the capture did not cut", f, f.end-wire)
	}
	return fmt.Sprintf("%s puts the end of the packet %d octets beyond the end of the frame, which was %d octets on the wire (the capture kept %d)",
		f, f.end-wire, wire, captured)
}

// erfPacket returns, for a frame of link type ERF whose header decoded, where
// the packet starts after the ERF header and its wire length (wlen).
func (d *Decoder) erfPacket(f *capture.Frame) (start, wlen int, ok bool) {
	if f.LinkType != linkERF || !d.has.erf {
		return 0, 0, false
	}
	return len(d.erf.Contents), int(d.erf.WLen), true
}

// captureCut reports whether the capture holds fewer octets of the frame
// than the wire carried: the record's original length (or, in an ERF
// record, the ERF wire length) is larger than what was captured.
func (d *Decoder) captureCut(f *capture.Frame) bool {
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
func (d *Decoder) erfProblem(f *capture.Frame) string {
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
// octets captured and raises what is missing and why: the capture's snap
// length cut it (capture-truncated), a length field disagrees with the
// frame (length-mismatch: it claims more than the wire carried, the rule RC
// packets share, or too little), or the frame was captured without its
// ICRC (icrc-absent).
func (d *Decoder) checkLengths(f *capture.Frame, fi *frameInfo, fs []finding.Finding) []finding.Finding {
	b := f.Data
	end, lf := d.lens.end, d.lens.field
	wire := d.wireEnd(f)
	lie := d.lens.lies(lf, wire)
	var cut, noICRC string
	var bad []string
	if p := d.erfProblem(f); p != "" {
		bad = append(bad, p)
	}
	madStart := fi.bth + layers.BTHLen + layers.DETHLen
	madHave := min(len(b), end-layers.ICRCLen) - madStart
	switch {
	case end < fi.bth+layers.BTHLen+layers.ICRCLen:
		// Too small to mean anything: the parsers ignore it (UDP Length 0,
		// LRH PktLen under 2 words) or stop at it.
		bad = append(bad, fmt.Sprintf("%s is too small for the packet's headers: the rest of the frame was decoded, without an ICRC check", lf))
	case end > len(b) && d.captureCut(f):
		if madHave < layers.MADLen {
			cut = fmt.Sprintf("the capture holds %d of the MAD's %d octets", max(madHave, 0), layers.MADLen)
		} else {
			cut = "the capture ends before the ICRC"
		}
		if lie { // and the field claims more than the wire carried
			bad = append(bad, beyond(lf, wire, len(b)))
		}
	case lie:
		s := beyond(lf, wire, len(b))
		if madHave < layers.MADLen {
			s += fmt.Sprintf(": %d of the MAD's %d octets are present", max(madHave, 0), layers.MADLen)
		}
		bad = append(bad, s)
	case end > len(b) && end-len(b) == layers.ICRCLen && madHave >= layers.MADLen:
		noICRC = fmt.Sprintf("the frame is complete but ends where the ICRC would start (%s): it was captured without its ICRC, which is not checked", lf)
	case madHave < layers.MADLen:
		bad = append(bad, fmt.Sprintf("%s leaves room for %d of the MAD's %d octets: the message is cut short by its own headers",
			lf, max(madHave, 0), layers.MADLen))
	}
	// The smallest field decides where the packet ends; any other that
	// claims more than the wire carried is wrong too.
	if end >= fi.bth+layers.BTHLen+layers.ICRCLen {
		for _, o := range d.lens.fields[:d.lens.n] {
			if o.end > end && d.lens.lies(o, wire) {
				bad = append(bad, fmt.Sprintf("%s (%s ends it %d octets earlier)", beyond(o, wire, len(b)), lf, o.end-end))
			}
		}
	}
	if cut != "" {
		fs = append(fs, finding.New(finding.CaptureTruncated, "%s", cut))
	}
	if len(bad) > 0 {
		fs = append(fs, finding.New(finding.LengthMismatch, "%s", strings.Join(bad, "; ")))
	}
	if noICRC != "" {
		fs = append(fs, finding.New(finding.ICRCAbsent, "%s", noICRC))
	}
	return fs
}

// wireEnd is where the frame ends on the wire (wireEnd), or, in an ERF
// record whose header decoded, where its wire length puts the end when
// that is further.
func (d *Decoder) wireEnd(f *capture.Frame) int {
	w := wireEnd(f)
	if start, wlen, ok := d.erfPacket(f); ok {
		w = max(w, start+wlen)
	}
	return w
}
