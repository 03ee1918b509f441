package craft

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// IWARPMessage is one RDMAP message of an iWARP connection's traffic,
// after the MPA exchange.
type IWARPMessage struct {
	FromResponder bool
	Opcode        uint8  // layers.RDMAPOp*
	Payload       []byte // a Send's message; the data of an RDMA Write or Read Response
	// InvalidateSTag of a Send with Invalidate.
	InvalidateSTag uint32
	// STag and TO of a Write or Read Response (its data sink).
	STag uint32
	TO   uint64
	// Read is the body of a Read Request; Term of a Terminate.
	Read *layers.RDMAPReadRequest
	Term *layers.RDMAPTerminate
	// MaxSegment bounds the payload of each DDP segment: a longer message
	// goes in several; 0 puts it in one.
	MaxSegment int
	// MSN overrides the message sequence number (0: the next on its queue).
	MSN uint32
	// BadCRC, ZeroCRC: the CRC of the message's first FPDU is wrong, or
	// zero although CRC is in use. BadMarker: a marker inside it points
	// elsewhere.
	BadCRC, ZeroCRC, BadMarker bool
	// DDPVersion overrides the DDP version of the message's segments (0:
	// version 1, the only one RFC 5041 defines).
	DDPVersion uint8
}

// units are the DDP segments of the message.
func (m *IWARPMessage) units(msn *[3]uint32) ([]FPDUUnit, error) {
	d := layers.DDP{Opcode: m.Opcode, Version: m.DDPVersion}
	var body []byte
	switch m.Opcode {
	case layers.RDMAPOpWrite, layers.RDMAPOpReadResponse:
		d.Tagged, d.STag, d.TaggedOffset = true, m.STag, m.TO
		body = m.Payload
	case layers.RDMAPOpReadRequest:
		if m.Read == nil {
			return nil, fmt.Errorf("craft: a Read Request needs its body")
		}
		d.QN = layers.QNReadRequest
		body = make([]byte, layers.RDMAPReadRequestLen)
		r := m.Read
		binary.BigEndian.PutUint32(body[0:], r.SinkSTag)
		binary.BigEndian.PutUint64(body[4:], r.SinkTO)
		binary.BigEndian.PutUint32(body[12:], r.Size)
		binary.BigEndian.PutUint32(body[16:], r.SourceSTag)
		binary.BigEndian.PutUint64(body[20:], r.SourceTO)
	case layers.RDMAPOpTerminate:
		if m.Term == nil {
			return nil, fmt.Errorf("craft: a Terminate needs its control field")
		}
		d.QN = layers.QNTerminate
		t := m.Term
		body = []byte{t.Layer<<4 | t.EType&0x0f, t.ErrorCode, 0, 0}
		if t.M {
			body[2] |= 0x80
		}
		if t.D {
			body[2] |= 0x40
		}
		if t.R {
			body[2] |= 0x20
		}
		body = append(body, m.Payload...)
	case layers.RDMAPOpSend, layers.RDMAPOpSendInvalidate, layers.RDMAPOpSendSE, layers.RDMAPOpSendSEInvalidate:
		d.QN = layers.QNSend
		if layers.RDMAPInvalidates(m.Opcode) {
			d.InvalidateSTag = m.InvalidateSTag
		}
		body = m.Payload
	default:
		return nil, fmt.Errorf("craft: RDMAP opcode %d", m.Opcode)
	}
	if !d.Tagged {
		msn[d.QN]++
		d.MSN = msn[d.QN]
		if m.MSN != 0 {
			d.MSN = m.MSN
		}
	}
	// Only Sends and tagged messages are cut into segments.
	step := len(body)
	if m.MaxSegment > 0 && (d.Tagged || d.QN == layers.QNSend) {
		step = m.MaxSegment
	}
	var out []FPDUUnit
	for off := 0; ; off += step {
		end := min(len(body), off+step)
		u := FPDUUnit{DDP: d, Payload: body[off:end]}
		if d.Tagged {
			u.DDP.TaggedOffset = d.TaggedOffset + uint64(off)
		} else {
			u.DDP.MO = uint32(off)
		}
		u.DDP.Last = end == len(body)
		if len(out) == 0 {
			u.BadCRC, u.ZeroCRC, u.BadMarker = m.BadCRC, m.ZeroCRC, m.BadMarker
		}
		out = append(out, u)
		if end == len(body) {
			return out, nil
		}
	}
}

// traffic builds the data segments of the exchange: the FPDUs of each
// side, from sequence numbers seq on.
func (x *IWARPExchange) traffic(ep [2]Endpoint, seq [2]uint32) ([]TCP, error) {
	if len(x.Traffic) == 0 {
		return nil, nil
	}
	// Each side's FPDUs, framed as one stream (markers run across
	// messages), with where each message's octets lie.
	var units [2][]FPDUUnit
	var msn [2][3]uint32
	first := make([]int, len(x.Traffic)) // index of the message's first unit on its side
	count := make([]int, len(x.Traffic))
	for i := range x.Traffic {
		m := &x.Traffic[i]
		side := sideOf(m.FromResponder)
		us, err := m.units(&msn[side])
		if err != nil {
			return nil, err
		}
		first[i], count[i] = len(units[side]), len(us)
		units[side] = append(units[side], us...)
	}
	// Markers go to the receiver that asked for them; CRC is used both
	// ways when either frame asked (craft sets both or neither).
	asked := [2]bool{x.ResponderMarkers, x.InitiatorMarkers}
	var streams [2][]byte
	var starts [2][]int
	for side := range 2 {
		streams[side], starts[side] = FPDUStream(units[side], asked[side], !x.NoCRC)
	}
	bound := func(side, u int) int {
		switch {
		case u == 0:
			return 0 // with the marker that opens the stream
		case u < len(starts[side]):
			// A marker right before the FPDU goes with it.
			if o := starts[side][u] - layers.MarkerLen; asked[side] && o%layers.MarkerInterval == 0 {
				return o
			}
			return starts[side][u]
		}
		return len(streams[side])
	}
	var out []TCP
	for i := 0; i < len(x.Traffic); {
		// A run of messages from one side.
		side := sideOf(x.Traffic[i].FromResponder)
		j := i
		for j < len(x.Traffic) && sideOf(x.Traffic[j].FromResponder) == side {
			j++
		}
		lo, hi := bound(side, first[i]), bound(side, first[j-1]+count[j-1])
		var cuts []int
		if x.TCPSegment > 0 {
			for o := lo; o < hi; o += x.TCPSegment {
				cuts = append(cuts, o)
			}
		} else {
			for u := first[i]; u < first[j-1]+count[j-1]; u++ {
				cuts = append(cuts, bound(side, u))
			}
		}
		cuts = append(cuts, hi)
		for k := 0; k+1 < len(cuts); k++ {
			p := streams[side][cuts[k]:cuts[k+1]]
			out = append(out, TCP{Src: ep[side], Dst: ep[1-side], Seq: seq[side] + uint32(cuts[k]), Ack: seq[1-side],
				ACK: true, PSH: true, Payload: p})
		}
		i = j
	}
	// Reorder, then retransmit (indexes of the segments as built).
	for _, r := range slices.Backward(slices.Sorted(slices.Values(x.Reorder))) {
		if r+1 < len(out) {
			out[r], out[r+1] = out[r+1], out[r]
		}
	}
	for _, r := range slices.Backward(slices.Sorted(slices.Values(x.Retransmit))) {
		if r < len(out) {
			out = slices.Insert(out, r+1, out[r])
		}
	}
	return out, nil
}

func sideOf(fromResponder bool) int {
	if fromResponder {
		return 1
	}
	return 0
}
