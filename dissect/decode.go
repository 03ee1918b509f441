package dissect

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// Config tunes decoding.
type Config struct {
	// RoCEPorts are UDP destination ports decoded as RoCEv2 besides 4791.
	RoCEPorts []uint16
	// TCP bounds the reassembly of MPA frames.
	TCP TCPLimits
	// Live hands each connection attempt on as soon as its state is known
	// (else all at the end, in the order of their requests).
	Live bool
	// MaxConnections bounds the attempts tracked at once (0: 65536).
	MaxConnections int
	// Hash computes each input's SHA-256 for the summary.
	Hash bool
}

// MemoryBudget is the heap the state limits allow, with room for the rest
// of the program: a soft memory limit for the Go runtime. With the default
// limits it is under 100 MB.
func (c Config) MemoryBudget() int64 {
	l := c.TCP.withDefaults()
	conns := c.MaxConnections
	if conns <= 0 {
		conns = DefaultMaxConnections
	}
	const base, perConn, perFlow = 40 << 20, 400, 400
	return base + int64(l.TotalBytes) + perConn*int64(conns) + perFlow*int64(l.ActiveFlows)
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
	rocePorts portSet

	eth   golayers.Ethernet
	dot1q golayers.Dot1Q
	sll   golayers.LinuxSLL
	sll2  golayers.LinuxSLL2
	loop  golayers.Loopback
	ip4   golayers.IPv4
	ip6   golayers.IPv6
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
}

// layerSet records which layers the last decode produced.
type layerSet struct {
	lrh, grh, bth, deth, mad, ip4, ip6, udp, ipcm bool
	cm                                            layers.CMMessage
}

// NewDecoder makes a decoder for the input named file.
func NewDecoder(file string, cfg Config) *Decoder {
	d := &Decoder{file: file, parsers: map[gopacket.LayerType]*gopacket.DecodingLayerParser{}, tcp: newTCPState(cfg.TCP)}
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

// parser returns the decoding-layer parser that starts at first.
func (d *Decoder) parser(first gopacket.LayerType) *gopacket.DecodingLayerParser {
	if p, ok := d.parsers[first]; ok {
		return p
	}
	all := []gopacket.DecodingLayer{&d.eth, &d.dot1q, &d.sll, &d.sll2, &d.loop, &d.ip4, &d.ip6, &d.udp,
		&d.erf, &d.lrh, &d.grh, &d.bth, &d.deth, &d.mad, &d.ipcm, &d.rpc}
	for _, cm := range d.cms {
		all = append(all, cm)
	}
	p := gopacket.NewDecodingLayerParser(first, all...)
	p.IgnoreUnsupported = true
	d.parsers[first] = p
	return p
}

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

// Decode looks at one frame and calls emit for each message it completes.
func (d *Decoder) Decode(f *Frame, emit func(*Message)) {
	fi := d.classify(f.LinkType, f.Data)
	switch fi.kind {
	case kindCM:
		d.decodeLayers(f, &fi)
		emit(d.cmMessage(f, &fi))
	case kindTCP:
		if parseTCP(f.Data, &fi, &d.seg) {
			d.seg.frame, d.seg.time = f.Index, f.Time
			d.segment(&d.seg, emit)
		}
	}
}

// Flush reports what is still pending at the end of the input: MPA frames
// whose stream never completed them.
func (d *Decoder) Flush(emit func(*Message)) { d.flushTCP(emit) }

// Dropped counts TCP directions given up because of a state limit.
func (d *Decoder) Dropped() int { return d.tcp.dropped }

// SilentDrops counts the TCP directions given up at a state limit before
// they showed an MPA key: no message carries a finding for them.
func (d *Decoder) SilentDrops() int { return d.tcp.silentDrops }

// decodeLayers runs gopacket's decoding-layer parser over a CM candidate.
// It does not allocate.
func (d *Decoder) decodeLayers(f *Frame, fi *frameInfo) {
	d.has = layerSet{}
	// A capture cut short inside the IB packet holds no ICRC at its end.
	d.bth.NoICRC = fi.ibEnd > len(f.Data) || fi.ibEnd < fi.bth+layers.BTHLen+layers.ICRCLen
	p := d.parser(firstLayer(f.LinkType, f.Data))
	_ = p.DecodeLayers(f.Data, &d.decoded) // errors show as missing layers
	d.note(d.decoded)
	// RoCEv2 on a port gopacket does not know: go on from the UDP payload.
	if d.has.udp && !d.has.bth {
		_ = d.parser(layers.LayerTypeBTH).DecodeLayers(d.udp.Payload, &d.decoded)
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
		default:
			// The CM layer types are registered in attribute order.
			if t >= layers.LayerTypeCMReq && t <= layers.LayerTypeCMApr {
				d.has.cm = d.cms[t-layers.LayerTypeCMReq]
			}
		}
	}
}

// cmMessage builds the message of a decoded CM candidate and checks it.
func (d *Decoder) cmMessage(f *Frame, fi *frameInfo) *Message {
	b := f.Data
	m := &Message{
		File:      d.file,
		Frame:     f.Index,
		Time:      f.Time.UTC(),
		Transport: fi.transport,
		IB:        &IBHeaders{},
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
		m.Name = layers.CMMessageName(d.mad.AttributeID)
	}
	switch {
	case !d.has.mad:
		m.Name = "CM" // the capture cut the MAD header: which message is unknown
	case m.Name == "":
		m.Name = fmt.Sprintf("CM attribute 0x%04x", m.AttributeID)
	}
	// How much of the MAD the capture holds, against its 256 octets.
	madStart := fi.bth + layers.BTHLen + layers.DETHLen
	madHave := min(len(b), fi.ibEnd-layers.ICRCLen) - madStart
	if madHave < layers.MADLen && len(b) < fi.ibEnd {
		c.cut = fmt.Sprintf("the capture holds %d of the MAD's %d octets", max(madHave, 0), layers.MADLen)
	} else if d.bth.NoICRC {
		c.cut = "the capture ends before the ICRC"
	}

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
			m.RPCRDMA = NewRPCRDMA(&c.search.Message, c.search.Offset)
		}
	}
	m.Findings = runRules(messageRules, c)
	return m
}

// addresses names the two ends of an IB-family message.
func (d *Decoder) addresses(fi *frameInfo) (string, string) {
	switch {
	case fi.transport == RoCEv2 && d.has.ip4:
		return ipString(d.ip4.SrcIP), ipString(d.ip4.DstIP)
	case fi.transport == RoCEv2 && d.has.ip6:
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
	case fi.transport == RoCEv2:
		crc = layers.ICRCRoCEv2(b[fi.l3:fi.l4], b[fi.l4:fi.l4+8], ib)
	case fi.grh >= 0:
		crc = layers.ICRCGRH(b[fi.grh:fi.grh+layers.GRHLen], ib)
	case fi.lrh >= 0:
		crc = layers.ICRCLRH(b[fi.lrh:fi.lrh+layers.LRHLen], ib)
	default:
		return
	}
	c.m.IB.ICRC = &CRCCheck{Value: d.bth.ICRC, Computed: crc, Valid: crc == d.bth.ICRC}
	if fi.lrh >= 0 && d.has.lrh && d.lrh.HasVCRC {
		v := layers.VCRC(b[fi.lrh:fi.ibEnd])
		c.m.IB.VCRC = &CRCCheck{Value: uint32(d.lrh.VCRC), Computed: uint32(v), Valid: v == d.lrh.VCRC}
	}
}
