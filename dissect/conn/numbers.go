package conn

import "github.com/rdmacm-pd/rdmacm-pd/dissect/record"

// Connection numbers: each attempt gets the next number of the run when its
// request opens it, and each message taken learns the number of the
// attempt it belongs to (Message.Conn), so that the messages of a
// connection can be told before the connection is handed on.

// attemptOf is the attempt a message just taken belongs to, or nil.
func (t *Tracker) attemptOf(m *record.Message) *attempt {
	switch m.Kind {
	case record.KindMPARequest:
		return t.byTCP[tcpConnKey{m.Src, m.Dst}]
	case record.KindMPAReply:
		return t.byTCP[tcpConnKey{m.Dst, m.Src}]
	case record.KindREQ:
		return t.byReq[reqKey{m.Src, m.Dst, m.LocalCommID}]
	case record.KindMRA, record.KindREJ, record.KindREP, record.KindRTU, record.KindDREQ, record.KindDREP,
		record.KindLAP, record.KindAPR:
		c, _ := t.byLocal(m)
		return c
	}
	return nil // SIDR has no connection
}

// number gives a new attempt its Number.
func (t *Tracker) number(c *attempt) {
	t.numbers++
	c.Number = t.numbers
}
