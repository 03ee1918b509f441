package decode

import (
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/mpa"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// What a frame gave, as events in the order it gave them: the connection
// messages it completed (a CM message, MPA frames), an RC frame for the
// data path, and the calls the MPA framer made of the Traffic of the
// iWARP connections whose FPDUs it follows. The decoder calls nobody: the
// run loop takes the events after each call and hands each on, so that a
// message reaches the tracker before the traffic that came after it.

// Event is one thing a frame gave: a Message, an RC frame (RC: its key and
// packet are the decoder's, read through it until the next frame), or a
// Traffic call of the framer.
type Event struct {
	Message *record.Message
	RC      datapath.RCFrame
	Traffic *mpa.TrafficEvent
}

// events is what the call under way gave; the traffic calls are kept in
// traffic (and Event.Traffic points there), with what their arguments
// point at in the arenas sends, reads, findings and tcp, and the octets
// and frames their Sends and tagged pieces lend in heads and frames, until
// the next call. Octets that lie in lent, the frame being decoded, are not
// copied: the events are replayed before the next frame is read.
type events struct {
	out      []Event
	traffic  []mpa.TrafficEvent
	sends    []mpa.Send
	reads    []layers.RDMAPReadRequest
	findings []finding.Finding
	heads    []byte
	frames   []int
	tcp      [][2]mpa.TCPHealth // what Close calls lend
	conns    int                // connections linked
	lent     []byte             // the octets of the frame being decoded (nil: none)
}

// reset forgets what the last call gave; lent is the frame the next call
// decodes (nil: it decodes none).
func (e *events) reset(lent []byte) {
	clear(e.out) // the messages are the run's, once handed on
	e.out, e.traffic, e.heads, e.frames, e.tcp = e.out[:0], e.traffic[:0], e.heads[:0], e.frames[:0], e.tcp[:0]
	e.sends, e.reads, e.findings = e.sends[:0], e.reads[:0], e.findings[:0]
	e.lent = lent
}

// keep returns b, or a copy of it in heads when it does not lie in the
// frame being decoded (octets a reassembler held, which it may reuse
// before the events are replayed). An arena that append moves leaves the
// earlier copies where they were, intact.
func (e *events) keep(b []byte) []byte {
	if b == nil || capture.Lends(e.lent, b) {
		return b
	}
	at := len(e.heads)
	e.heads = append(e.heads, b...)
	return e.heads[at:len(e.heads):len(e.heads)]
}

// message adds a message.
func (e *events) message(m *record.Message) { e.out = append(e.out, Event{Message: m}) }

// take is what the call gave: the traffic events point into their slice,
// complete now.
func (e *events) take() []Event {
	t := 0
	for i := range e.out {
		if e.out[i].Traffic != nil {
			e.out[i].Traffic = &e.traffic[t]
			t++
		}
	}
	return e.out
}

// link is the framer's link (mpa.Framer.Follow): the Traffic of a
// connection about to be followed, which records its calls.
func (e *events) link(p *mpa.Pair) mpa.Traffic {
	e.conns++
	t := &recorded{e: e, conn: e.conns}
	t.add(mpa.TrafficLink).Pair = p
	return t
}

// recorded is the Traffic of one connection, which records its calls.
type recorded struct {
	e    *events
	conn int
}

// add records a call of kind k and returns it, its other fields zero, to
// be filled in. Event.Traffic is set to the call's place in e.traffic when
// the events are taken: the slice may still move.
func (t *recorded) add(k mpa.TrafficKind) *mpa.TrafficEvent {
	e := t.e
	e.traffic = append(e.traffic, mpa.TrafficEvent{Kind: k, Conn: t.conn})
	e.out = append(e.out, Event{Traffic: &e.traffic[len(e.traffic)-1]})
	return &e.traffic[len(e.traffic)-1]
}

func (t *recorded) Frame(frame int) { t.add(mpa.TrafficFrame).Frame = frame }

// Send records a Send with what it lends for the call only (its first
// octets and its frames): the octets where the frame holds them, else
// copies.
func (t *recorded) Send(s *mpa.Send) {
	e := t.e
	e.sends = append(e.sends, *s)
	c := &e.sends[len(e.sends)-1]
	c.Head = e.keep(s.Head)
	at := len(e.frames)
	e.frames = append(e.frames, s.Frames...)
	c.Frames = e.frames[at:len(e.frames):len(e.frames)]
	t.add(mpa.TrafficSend).Send = c
}

// ReadRequest records a Read Request's fields (not its layer's octets).
func (t *recorded) ReadRequest(side, frame int, at time.Time, rr *layers.RDMAPReadRequest) {
	e := t.e
	var c layers.RDMAPReadRequest
	if rr != nil {
		c = layers.RDMAPReadRequest{SinkSTag: rr.SinkSTag, SinkTO: rr.SinkTO, Size: rr.Size, SourceSTag: rr.SourceSTag,
			SourceTO: rr.SourceTO}
	}
	e.reads = append(e.reads, c)
	ev := t.add(mpa.TrafficReadRequest)
	ev.Side, ev.Frame, ev.Time, ev.Read = side, frame, at, &e.reads[len(e.reads)-1]
}

// Tagged records a piece of a tagged segment with the octets it lends (at
// most mpa.TaggedKeep of a message): where the frame holds them, else a
// copy.
func (t *recorded) Tagged(g *mpa.Tagged) {
	ev := t.add(mpa.TrafficTagged)
	ev.Side, ev.Frame, ev.Tagged = g.Side, g.Frame, *g
	ev.Tagged.Data = t.e.keep(g.Data)
}

func (t *recorded) ReadDone(side int) { t.add(mpa.TrafficReadDone).Side = side }
func (t *recorded) Lost(side int)     { t.add(mpa.TrafficLost).Side = side }
func (t *recorded) Finding(f finding.Finding) {
	e := t.e
	e.findings = append(e.findings, f)
	t.add(mpa.TrafficFinding).Finding = &e.findings[len(e.findings)-1]
}

// Close records the end with a copy of the TCP health it lends, in an
// arena the next call empties (an arena that append moves leaves the
// earlier copies where they were, intact).
func (t *recorded) Close(tcp *[2]mpa.TCPHealth) {
	ev := t.add(mpa.TrafficClose)
	if tcp != nil {
		e := t.e
		e.tcp = append(e.tcp, *tcp)
		ev.TCP = &e.tcp[len(e.tcp)-1]
	}
}
