package layers

import (
	"github.com/gopacket/gopacket"
)

// IBStack decodes the InfiniBand layers of a packet that carries a CM MAD:
// from its first header (an LRH, a GRH or a BTH) through the DETH, the MAD
// and the CM message to what starts the private data (the IP CM header, an
// RFC 8797 message). It keeps its layers and one DecodingLayerParser for
// each first header, so that decoding allocates nothing once those are
// made. The dissector decodes each candidate with one, and a renderer that
// shows a message's fields decodes the octets the message kept with
// another: both get the same layers from the same octets.
type IBStack struct {
	LRH  LRH
	GRH  GRH
	BTH  BTH
	DETH DETH
	MAD  MAD
	IPCM IPCMHeader
	RPC  RPCRDMAPrivateData

	// What the last Decode gave: which layers, the CM message (nil when
	// the decoding stopped before it), and the error that stopped it.
	Has IBLayers
	CM  CMMessage
	Err error

	cms     [len(cmTable)]CMMessage
	parsers [3]*gopacket.DecodingLayerParser // by first header: LRH, GRH, BTH
	decoded []gopacket.LayerType
}

// IBLayers says which layers a decode produced.
type IBLayers struct {
	LRH, GRH, BTH, DETH, MAD, IPCM bool
}

// NewIBStack makes a stack.
func NewIBStack() *IBStack {
	s := &IBStack{decoded: make([]gopacket.LayerType, 0, 16)}
	for i := range s.cms {
		s.cms[i] = NewCMMessage(uint16(AttrREQ + i))
	}
	return s
}

// firstHeaders are the layers a decode may start at, in the order of
// IBStack.parsers.
var firstHeaders = [...]gopacket.LayerType{LayerTypeLRH, LayerTypeGRH, LayerTypeBTH}

// parser returns the decoding-layer parser that starts at first.
func (s *IBStack) parser(first gopacket.LayerType) *gopacket.DecodingLayerParser {
	i := 0
	for i < len(firstHeaders)-1 && firstHeaders[i] != first {
		i++
	}
	if p := s.parsers[i]; p != nil {
		return p
	}
	all := []gopacket.DecodingLayer{&s.LRH, &s.GRH, &s.BTH, &s.DETH, &s.MAD, &s.IPCM, &s.RPC}
	for _, cm := range s.cms {
		all = append(all, cm)
	}
	p := gopacket.NewDecodingLayerParser(firstHeaders[i], all...)
	p.IgnoreUnsupported = true
	s.parsers[i] = p
	return p
}

// Decode decodes b from its first header, which first names (LRH, GRH or
// BTH; anything else is taken for a BTH). noICRC says that b does not end
// with an ICRC (the capture cut the packet, or its length fields say it
// holds none). What decodes is in the stack's layers, Has and CM; Err is
// what stopped the decoding, if anything did.
func (s *IBStack) Decode(first gopacket.LayerType, b []byte, noICRC bool) {
	s.Has, s.CM = IBLayers{}, nil
	s.BTH.NoICRC = noICRC
	s.Err = s.parser(first).DecodeLayers(b, &s.decoded) // errors show as missing layers
	for _, t := range s.decoded {
		switch t {
		case LayerTypeLRH:
			s.Has.LRH = true
		case LayerTypeGRH:
			s.Has.GRH = true
		case LayerTypeBTH:
			s.Has.BTH = true
		case LayerTypeDETH:
			s.Has.DETH = true
		case LayerTypeMAD:
			s.Has.MAD = true
		case LayerTypeIPCM:
			s.Has.IPCM = true
		default:
			// The CM layer types are registered in attribute order.
			if t >= LayerTypeCMReq && t <= LayerTypeCMApr {
				s.CM = s.cms[t-LayerTypeCMReq]
			}
		}
	}
}
