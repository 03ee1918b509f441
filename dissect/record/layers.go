package record

import (
	"sync"

	"github.com/gopacket/gopacket"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// A message keeps the octets of its layers, not their field lists: the
// lists are built only when a renderer shows them (-V, the JSON message
// records, the Markdown details), from the same octets by the same
// decoding, so a run that shows none (-q, the connections of -T json -q)
// never builds one.

// Octets are what a message keeps of its layers, for Layers.
type Octets struct {
	// IB is the InfiniBand packet from its first header, IBFirst (an LRH,
	// a GRH or a BTH), to the end of what was captured; NoICRC says the
	// packet holds no ICRC (the capture cut it, or its length fields say
	// so).
	IB      []byte
	IBFirst gopacket.LayerType
	NoICRC  bool
	// MPA is the MPA frame's first octets, as far as they arrived (at most
	// layers.MPAFieldsLen).
	MPA []byte
	// Decoded, when set, are the fields already decoded and rewritten
	// (--anonymize puts names in place of addresses): Layers returns them,
	// and the octets above are not kept.
	Decoded *Layers
}

// Layers are the fields of a message's layers, each with the name its
// specification gives it and its JSON key; nil for a layer the message
// does not have.
type Layers struct {
	// The InfiniBand family's transport headers.
	LRH, GRH, BTH, DETH []layers.Field
	// The MAD header, the CM message body without its private data, and
	// the IP CM header when the Service ID announces one.
	MAD, CM, IPCM []layers.Field
	// iWARP: the MPA frame's header (and revision 2's IRD and ORD).
	MPA []layers.Field
}

// stacks are the IB decoders Layers uses, kept for the next message.
var stacks = sync.Pool{New: func() any { return layers.NewIBStack() }}

// Layers decodes the fields of the message's layers from its Octets.
func (m *Message) Layers() Layers {
	if m.Octets.Decoded != nil {
		return *m.Octets.Decoded
	}
	var l Layers
	if m.Kind.IsMPA() {
		l.MPA = layers.MPAFields(m.Octets.MPA)
		return l
	}
	if m.Octets.IB == nil {
		return l
	}
	s := stacks.Get().(*layers.IBStack)
	defer stacks.Put(s)
	s.Decode(m.Octets.IBFirst, m.Octets.IB, m.Octets.NoICRC)
	if s.Has.LRH {
		l.LRH = s.LRH.Fields()
	}
	if s.Has.GRH {
		l.GRH = s.GRH.Fields()
	}
	if s.Has.BTH {
		l.BTH = s.BTH.Fields()
	}
	if s.Has.DETH {
		l.DETH = s.DETH.Fields()
	}
	if s.Has.MAD {
		l.MAD = s.MAD.Fields()
	}
	if s.CM == nil {
		return l
	}
	l.CM = s.CM.Fields()
	if s.Has.IPCM && m.HasServiceID && layers.IsIPCMServiceID(m.ServiceID) &&
		(s.CM.AttributeID() == layers.AttrREQ || s.CM.AttributeID() == layers.AttrSIDRREQ) {
		l.IPCM = s.IPCM.Fields()
	}
	return l
}
