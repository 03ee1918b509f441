package conn

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// ISERSendWithInvalidate is the data path's hook for iSER's counterpart of
// remote invalidation. Call it for each Send With Invalidate that the
// responder of c (the iSER target) sends on the connection: InfiniBand
// SEND Last or Only with Invalidate (BTH opcodes 0x16, 0x17), iWARP Send
// with Invalidate or Send with SE and Invalidate (RDMAP opcodes 4, 6); frame
// is the frame that carries it, stag the invalidated R_Key or STag. It
// returns iser-send-with-invalidate-unsupported when the initiator's iSER CM
// header said Send With Invalidate is not supported, and false otherwise (a
// connection of another upper layer, or an initiator that allowed it or sent
// no header).
func ISERSendWithInvalidate(c *record.Connection, frame int, stag uint32) (finding.Finding, bool) {
	if c == nil || c.ULP != record.ULPISER {
		return finding.Finding{}, false
	}
	u := c.InitiatorULP
	if u == nil || !u.HasISERFlags || !u.SendWithInvalidateNotSupported {
		return finding.Finding{}, false
	}
	return finding.New(finding.ISERSendWithInvalidateUnsupported,
		"frame %d: the target sent a Send With Invalidate of STag 0x%08x although the initiator's iSER CM header (frame %d) says it does not support Send With Invalidate",
		frame, stag, c.RequestFrame), true
}
