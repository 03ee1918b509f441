package datapath

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/mpa"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The health of an iWARP connection's TCP, per direction: the reassembler
// counts, as each direction's segments pass, the segments sent again, the
// holes the capture lost, the zero windows and the resets
// (reassembly.Health), and the framer hands the counts of both on when
// the connection's traffic ends (mpa.Traffic.Close). The checker keeps them, a few integers
// a side, for the connection's figures and its findings: tcp-retransmission
// and tcp-segments-missing (info) and tcp-reset (warning), each once per
// direction.

// tcpHealth is what the directions of an iWARP connection showed of TCP.
type tcpHealth struct {
	sides [2]mpa.TCPHealth
	// calls are the Calls outstanding (of both sides) when the connection
	// a side's RST ended closed.
	calls [2]int
}

// tcpEnded keeps what the directions showed of TCP, at the connection's
// end (mpa.Traffic.Close).
func (c *Checker) tcpEnded(h *[2]mpa.TCPHealth) {
	if c.tcp == nil {
		c.tcp = &tcpHealth{} // once per connection
	}
	c.tcp.sides = *h
	for side := range h {
		if h[side].Resets > 0 {
			c.tcp.calls[side] = c.outstanding(0) + c.outstanding(1)
		}
	}
}

// cleanTCP is the figures of every connection whose TCP showed nothing:
// shared, as a record's Health is never changed once made (Clone shares it
// too), so that the many clean connections a capture holds until its end
// cost no Health of their own.
var cleanTCP = record.Health{Kind: record.HealthTCP}

// figures are the TCP figures of the connection.
func (t *tcpHealth) figures() *record.Health {
	f := record.Health{Kind: record.HealthTCP}
	for i, s := range t.sides {
		f.TCPRetransmitted[i], f.TCPMissing[i], f.TCPZeroWindows[i], f.TCPResets[i] = int(s.Retransmitted), int(s.Missing), int(s.ZeroWindows), int(s.Resets)
	}
	if f == cleanTCP {
		return &cleanTCP
	}
	return &f
}

// tcpFindings are the connection findings of its TCP's health.
func (c *Checker) tcpFindings() []finding.Finding {
	t := c.tcp
	if t == nil {
		return nil
	}
	var out []finding.Finding
	for side := range 2 {
		s := &t.sides[side]
		if n := int(s.Retransmitted); n > 0 {
			msg := fmt.Sprintf("the %s sent %s again (%s): every octet of %s had been seen before (a retransmission after a timeout or a fast retransmit)",
				c.who(side), nOf(n, "TCP segment", "TCP segments"), tcpFrames(s.RetransmittedFrames, n), plural(n, "it", "them"))
			if s.Missing > 0 {
				msg += "; the capture lost segments of this direction, so the count is a lower bound"
			}
			out = append(out, finding.New(finding.TCPRetransmission, "%s", msg))
		}
	}
	for side := range 2 {
		s := &t.sides[side]
		if n := int(s.Missing); n > 0 {
			out = append(out, finding.New(finding.TCPSegmentsMissing,
				"%s in the %s's TCP sequence %s never filled (the octets after %s came in %s): the capture lost those segments, not the wire (the peer acknowledged them, or the stream went on past them), so every count of this connection is a lower bound",
				nOf(n, "gap", "gaps"), c.who(side), wasWere(n), plural(n, "it", "them"), tcpFrames(s.MissingFrames, n)))
		}
	}
	for side := range 2 {
		s := &t.sides[side]
		if s.Resets == 0 {
			continue
		}
		msg := fmt.Sprintf("frame %d: the %s reset the TCP connection (RST) before it was closed with a FIN each way", s.ResetFrame, c.who(side))
		if n := t.calls[side]; n > 0 {
			msg += fmt.Sprintf(", with %s outstanding", nOf(n, "Call", "Calls"))
		}
		out = append(out, finding.New(finding.TCPReset, "%s", msg))
	}
	return out
}

// tcpFrames names the first frames of n events, as frameList does.
func tcpFrames(fs [3]int32, n int) string { return frameList(frames3(fs), n) }
