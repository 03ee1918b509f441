package datapath

// A side lost for good. Lost says that some of a side's messages went
// unseen, and the Checker then stops judging what needs them all; after
// LostForGood none of the side's later messages will be seen either (the
// iWARP FPDU framing of the direction was lost at a hole, a DDP or RDMAP
// version it cannot read, a bad marker or length, or the direction was
// given up), and what needs both halves of the conversation is no longer
// judged at all:
//
//   - credits-exceeded: a forward Call counts against the grant until its
//     Reply retires it; with the responder's Replies unread every Call would
//     stay outstanding. A Call whose Reply would come from the side lost is
//     not tracked at all (no credits, no STags, nothing held against
//     CallsPerConnection or CallBudget).
//   - rdma-read-limit-exceeded: a Read stays outstanding until the other
//     side's Read Response ends it; with that side lost, Reads are still
//     counted in the figures but not judged against the limit.
//   - invalidate-stag-unknown: judged only against a Call that was seen
//     (and after Lost a Reply without its Call is not judged), so a Send
//     With Invalidate from the side still read is checked against the Calls
//     seen before the loss and no others.
//
// What one Send shows by itself is still judged on the side still read:
// its header (rpcrdma-header-invalid, rpcrdma-error-reply), its length
// against the inline threshold the setup agreed, and whether it may use
// Send With Invalidate at all (send-with-invalidate-not-allowed: the opcode
// and the R bits of the setup, nothing of the other side's traffic).

// LostForGood says that no more of side's traffic will be seen: Lost, and
// what depends on both sides' messages is no longer judged.
func (c *Checker) LostForGood(side int) {
	c.gone[side] = true
	c.Lost(side)
}
