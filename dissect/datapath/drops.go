package datapath

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
)

// What the data path gives up: each holder of state that drops something
// at a limit counts it for the summary (Follower.Drops, by holder) and says
// it in one note for the run, how many and why (dropNotes), so that a drop
// is said even when no record shows it (--datapath findings, -q). Where a
// drop touches a record, that record says so too:
//
//   - directions of RC traffic without their setup given up at
//     Limits.Directions (or for the memory budget): the run only;
//   - connections whose traffic was given up at Limits.Connections (or for
//     the budget): each on its connection record; one given up before its
//     traffic began only once that traffic comes (tomb.go), and those
//     forgotten even as that: the run only;
//   - Calls not followed at Limits.CallsPerConnection or
//     Limits.CallBudget: each on its Call's "rpc" record, and on its
//     connection;
//   - multi-packet Sends begun while Limits.HeadBuffers were in use (or the
//     budget was full), whose first octets were not kept: on the Send's
//     "rpc" record when it has one;
//   - Read Requests that came when readsPerSide of their side were tracked
//     one by one already: on the connection record;
//   - headers whose chunk lists ran past the HeadLen octets kept of their
//     Send: on the Send's "rpc" record, which says how many segments were
//     read;
//   - SEND Middle and Last packets that came without the First of their
//     Send: the run only (there is no Send to show);
//   - chunk segments of outstanding Calls past maxSegs on a connection,
//     and long messages not put together because the budget was full:
//     on the connection record.

// counted is a count and the first frame counted.
type counted struct{ n, first int }

func (c *counted) add(frame int) {
	if c.n++; c.n == 1 {
		c.first = frame
	}
}

// dropNotes are the run's notes on what the data path gave up: one for
// each holder that gave up anything, naming the input, how many and why.
func (fl *Follower) dropNotes() []finding.Finding {
	var out []finding.Finding
	// note says n of what one (n is 1) or many names, then why.
	note := func(n int, one, many, why string, args ...any) {
		if n > 0 {
			out = append(out, finding.New(finding.StateLimitReached, "%s: %d %s"+why,
				append([]any{fl.out.File, n, plural(n, one, many)}, args...)...))
		}
	}
	lim := &fl.out.Limits
	note(fl.OrphanEvictions, "direction of RC traffic without its connection setup was", "directions of RC traffic without their connection setup were",
		" given up, the least recently active first, at the limit of %d followed at once (--max-rc-directions) or because the memory budget was full; Sends in progress were handed on as far as they came",
		lim.Directions)
	note(fl.ConnectionsRetired, "connection's RC traffic was", "connections' RC traffic was",
		" given up, the least recently active first, at the limit of %d followed at once (--max-rc-connections) or because the memory budget was full; each connection's record says from which frame",
		lim.Connections)
	note(fl.TombsForgotten, "connection set aside before its traffic began was", "connections set aside before their traffic began were",
		" forgotten (more than %d at once): their traffic, if any came after that, was counted as of no connection and not judged",
		maxTombs)
	note(fl.CallsUntracked(), "Call was", "Calls were",
		" not followed: more than %d were outstanding on the connection (--max-rpc-calls) or %d on all (--max-rpc-calls-total); Replies to them were not checked",
		lim.CallsPerConnection, lim.CallBudget)
	note(fl.HeadsRefused, "multi-packet Send", "multi-packet Sends",
		" began while %d were in progress already (--max-send-buffers) or the memory budget was full: first octets not kept, so RPC-over-RDMA headers not decoded",
		lim.HeadBuffers)
	note(fl.ReadsUntracked, "RDMA Read Request (or atomic)", "RDMA Read Requests (or atomics)",
		" came while %d of the same side were outstanding already, more than any connection setup allows: counted as outstanding, but responses not matched to them one by one",
		readsPerSide)
	note(fl.out.ListsCut, "RPC-over-RDMA header has", "RPC-over-RDMA headers have",
		" chunk lists that run past the %d octets kept of the Send: the lists were cut there, their further segments not read or checked",
		HeadLen)
	note(fl.OrphanPackets, "SEND Middle or Last packet", "SEND Middle and Last packets",
		" came without the SEND First of the Send (it is not in the capture): not reassembled or checked")
	note(fl.out.SegmentsUntracked, "chunk segment", "chunk segments",
		" of outstanding Calls were not tracked: more than %d at once on a connection; from then on its RDMA Reads and Writes were not matched to chunks or judged",
		maxSegs)
	note(fl.out.LongsRefused, "long message", "long messages",
		" (Long Calls, Long Replies) were not put together for their decode: the memory budget was full")
	return out
}
