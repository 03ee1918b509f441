package decode

import (
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/mpa"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
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
// traffic (and Event.Traffic points there), with the octets and frames
// their Sends lend in heads and frames, until the next call.
type events struct {
	out     []Event
	traffic []mpa.TrafficEvent
	heads   []byte
	frames  []int
	tcp     [][2]mpa.TCPHealth // what Close calls lend
	conns   int                // connections linked
}

// reset forgets what the last call gave.
func (e *events) reset() {
	clear(e.out) // the messages are the run's, once handed on
	e.out, e.traffic, e.heads, e.frames, e.tcp = e.out[:0], e.traffic[:0], e.heads[:0], e.frames[:0], e.tcp[:0]
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
	t.add(mpa.TrafficEvent{Kind: mpa.TrafficLink, Pair: p})
	return t
}

// recorded is the Traffic of one connection, which records its calls.
type recorded struct {
	e    *events
	conn int
}

// add records a call. Event.Traffic is set to the call's place in
// e.traffic when the events are taken: the slice may still move.
func (t *recorded) add(ev mpa.TrafficEvent) {
	ev.Conn = t.conn
	t.e.traffic = append(t.e.traffic, ev)
	t.e.out = append(t.e.out, Event{Traffic: &t.e.traffic[len(t.e.traffic)-1]})
}

func (t *recorded) Frame(frame int) { t.add(mpa.TrafficEvent{Kind: mpa.TrafficFrame, Frame: frame}) }

// Send records a Send with copies of what it lends for the call only (its
// first octets and its frames), in arenas the next call empties. An arena
// that append moves leaves the earlier copies where they were, intact.
func (t *recorded) Send(s *mpa.Send) {
	e := t.e
	ev := mpa.TrafficEvent{Kind: mpa.TrafficSend, Send: *s}
	at := len(e.heads)
	e.heads = append(e.heads, s.Head...)
	ev.Send.Head = e.heads[at:len(e.heads):len(e.heads)]
	at = len(e.frames)
	e.frames = append(e.frames, s.Frames...)
	ev.Send.Frames = e.frames[at:len(e.frames):len(e.frames)]
	t.add(ev)
}

// ReadRequest records a Read Request's fields (not its layer's octets).
func (t *recorded) ReadRequest(side, frame int, at time.Time, rr *layers.RDMAPReadRequest) {
	ev := mpa.TrafficEvent{Kind: mpa.TrafficReadRequest, Side: side, Frame: frame, Time: at}
	if rr != nil {
		ev.Read = layers.RDMAPReadRequest{SinkSTag: rr.SinkSTag, SinkTO: rr.SinkTO, Size: rr.Size, SourceSTag: rr.SourceSTag,
			SourceTO: rr.SourceTO}
	}
	t.add(ev)
}

// Tagged records a piece of a tagged segment with a copy of the octets
// it lends (at most mpa.TaggedKeep of a message), in the heads arena.
func (t *recorded) Tagged(g *mpa.Tagged) {
	e := t.e
	ev := mpa.TrafficEvent{Kind: mpa.TrafficTagged, Side: g.Side, Frame: g.Frame, Tagged: *g}
	if g.Data != nil {
		at := len(e.heads)
		e.heads = append(e.heads, g.Data...)
		ev.Tagged.Data = e.heads[at:len(e.heads):len(e.heads)]
	}
	t.add(ev)
}

func (t *recorded) ReadDone(side int) { t.add(mpa.TrafficEvent{Kind: mpa.TrafficReadDone, Side: side}) }
func (t *recorded) Lost(side int)     { t.add(mpa.TrafficEvent{Kind: mpa.TrafficLost, Side: side}) }
func (t *recorded) Finding(f finding.Finding) {
	t.add(mpa.TrafficEvent{Kind: mpa.TrafficFinding, Finding: f})
}

// Close records the end with a copy of the TCP health it lends, in an
// arena the next call empties (an arena that append moves leaves the
// earlier copies where they were, intact).
func (t *recorded) Close(tcp *[2]mpa.TCPHealth) {
	ev := mpa.TrafficEvent{Kind: mpa.TrafficClose}
	if tcp != nil {
		e := t.e
		e.tcp = append(e.tcp, *tcp)
		ev.TCP = &e.tcp[len(e.tcp)-1]
	}
	t.add(ev)
}
