package mpa

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// A Terminate (rdmap-terminate) names the last Send its sender's peer sent
// before it: the message a Terminate about an untagged buffer (a Send too
// long for the receive buffer posted) most likely refuses. The connection
// keeps the last Send of each side, a few integers. When the peer's FPDUs
// could not be read to the Terminate (fpdu-framing-lost), none is named.

// sendSeen is what a Terminate says of the peer's last Send.
type sendSeen struct {
	frame, length int32
	opcode        uint8
	complete      bool
}

// peerSend names the last Send the peer of side sent before side's
// Terminate ("" when none was read): the message a Terminate about an
// untagged buffer most likely refuses.
func (c *iwConn) peerSend(side int) string {
	p := c.lastSend[1-side]
	if o := c.readers[1-side]; p.frame == 0 || o != nil && o.fol != nil && o.fol.done {
		return "" // none, or the peer's FPDUs could no longer be read: its last Send is not known
	}
	n := fmt.Sprintf("%d octets", p.length)
	if !p.complete {
		n = fmt.Sprintf("at least %d octets, not seen whole", p.length)
	}
	return fmt.Sprintf("; the %s's last Send before it: %s, %s, frame %d", sideName(1-side), layers.RDMAPOpcodeName(p.opcode), n, p.frame)
}
