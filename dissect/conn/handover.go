package conn

import "github.com/rdmacm-pd/rdmacm-pd/dissect/record"

// The hand-over to the data path. The tracker is the one that knows when a
// connection is established and when it ends; whoever follows the
// connections' data traffic (dissect/datapath) learns it from a Handover.
// The tracker calls it while it takes the message that decides, so the
// data path knows a connection before the first frame of its traffic, and
// forgets it at its end:
//
//   - Established when an accepting reply (a REP, an MPA Reply without R)
//     makes an attempt established, with what the REQ and the REP said
//     (QPNs, Starting PSNs, Responder Resources, Initiator Depth, path MTU,
//     LIDs) and the connection record (addresses, what was negotiated);
//   - Ended when a DREP completes its disconnection (frames still in
//     flight after the DREQ belong to it), or a REJ of the REP rejects it
//     after all.
//
// A reconnection is a new attempt, so a new Established, with its own
// QPNs and negotiation. The tracker never calls back into the data path
// otherwise: the records go on to the sink through the run loop, which lets
// the data path add what it saw of each connection (record.Datapath) first.

// Handover receives the connections the tracker establishes and ends.
type Handover interface {
	Established(*Setup)
	Ended(*record.Connection)
}

// Setup is an established connection as the tracker hands it over.
type Setup struct {
	// Conn is the attempt's record: its addresses, transport, service and
	// what the two sides negotiated. It is the same pointer the tracker
	// hands to the sink later.
	Conn *record.Connection
	// Request and Reply are the CM fields of the REQ and the REP
	// (InfiniBand family); nil for iWARP, or when the CM body did not
	// decode.
	Request, Reply *record.CMInfo
	// ReplyMPA is the accepting MPA Reply's header (iWARP): its IRD and
	// ORD bound the Reads of the data path.
	ReplyMPA *record.MPAHeader
	// Frame is the accepting reply's frame.
	Frame int
}

// SetHandover makes the tracker tell h about the connections it
// establishes and ends (nil: nobody).
func (t *Tracker) SetHandover(h Handover) { t.handover = h }

// established hands over an attempt an accepting reply m established.
func (t *Tracker) established(c *attempt, m *record.Message) {
	if t.handover != nil {
		t.handover.Established(&Setup{Conn: &c.Connection, Request: c.reqInfo, Reply: m.CMInfo, ReplyMPA: m.MPAInfo, Frame: m.Frame})
	}
}

// ended tells the data path that an established attempt ended.
func (t *Tracker) ended(c *attempt) {
	if t.handover != nil {
		t.handover.Ended(&c.Connection)
	}
}
