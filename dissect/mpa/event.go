package mpa

import (
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The framer's calls of a connection's Traffic, as values: the decoder
// records them as events, in order with the messages, instead of acting on
// them at once, and after each frame the run loop replays them into the data
// path, after the messages the frame completed before them have reached the
// tracker. So the framer never calls into the data path, and the data path
// learns a connection from the tracker before its first FPDU, as if the
// calls had been made at once.

// TrafficKind names a Traffic call.
type TrafficKind uint8

// The calls, and the link that gives a connection its Traffic.
const (
	TrafficLink TrafficKind = iota + 1 // the framer's link: Pair says which connection
	TrafficFrame
	TrafficSend
	TrafficReadRequest
	TrafficReadDone
	TrafficTagged
	TrafficLost
	TrafficFinding
	TrafficClose
)

// TrafficEvent is one call of a connection's Traffic. Conn numbers the
// connection (from 1 in the order they were linked); Pair, Send, Read (a
// Read Request's fields, without its layer's octets), Tagged, Finding and
// TCP are the call's argument. What Send, Read, Finding and TCP point at,
// and the octets of Send.Head and Tagged.Data, are the recorder's until its
// next frame: lent by the frame, or copies. The most frequent call, Tagged,
// is held in the event, the rarer ones behind pointers, so that recording
// a tagged piece writes a few cache lines, not seven.
type TrafficEvent struct {
	Kind    TrafficKind
	Conn    int
	Side    int
	Frame   int
	Time    time.Time
	Pair    *Pair
	Send    *Send
	Read    *layers.RDMAPReadRequest
	Tagged  Tagged
	Finding *finding.Finding
	TCP     *[2]TCPHealth
}

// Replay makes the call e recorded on t.
func (e *TrafficEvent) Replay(t Traffic) {
	switch e.Kind {
	case TrafficFrame:
		t.Frame(e.Frame)
	case TrafficSend:
		t.Send(e.Send)
	case TrafficReadRequest:
		t.ReadRequest(e.Side, e.Frame, e.Time, e.Read)
	case TrafficTagged:
		t.Tagged(&e.Tagged)
	case TrafficReadDone:
		t.ReadDone(e.Side)
	case TrafficLost:
		t.Lost(e.Side)
	case TrafficFinding:
		t.Finding(*e.Finding)
	case TrafficClose:
		t.Close(e.TCP)
	}
}
