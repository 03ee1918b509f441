// Package reassembly follows TCP directions and hands their octets, in
// order, to a reader per direction. It knows nothing of what the octets
// mean: a Protocol says which segments can start a direction whose start
// was not captured and opens a Reader for each direction followed; the
// Reader says how far it wants octets (Need) and when it has seen enough.
// The MPA framer of dissect/mpa is one.
//
// # A direction's life
//
// Every direction (source address and port to destination address and
// port) is in the flow table, exactly: entries are found by their whole
// 4-tuple, never by a hash alone. A direction is in one of these states:
//
//		          SYN, or a segment the Protocol Starts
//		(none) ─────────────────────────────────────────────► anchored
//		   │                                                    ▲  │
//		   │ other data                         SYN, or a       │  │ Reader done (Data says Done), FIN, RST,
//		   ▼                                    segment that    │  │ a new SYN or a far start, age, end of input
//		unanchored ──────────────────────────── Starts ─────────┘  ▼
//		   │  more than the early window held, no start            decided
//		   └──────────────────────────────────────────────────────►  (start known or not)
//		   │  a limit (flows, buffers, segments), or age
//		   └──────────────────────────────────────────────────────► lost
//
//		(none) ── a first segment longer than the early window, ──► decided
//		          while EarlyFlows are unanchored (or than StreamBytes)
//
//	  - unanchored: segments arrived but neither a SYN nor a segment that
//	    Starts (the capture began mid-connection, or reordered the start).
//	    Their octets are kept by sequence number, as far as the Protocol's
//	    EarlyWindow spans from the lowest one, in case they are the later
//	    part of a first message whose start arrives next. When EarlyFlows
//	    directions are unanchored already, a direction whose first segment
//	    is longer than the early window (or than StreamBytes, at any time) is
//	    decided at once instead, without holding anything: its segment would
//	    be the later part of a first message only if that message broke the
//	    Protocol's limit (RFC 5044: 532 octets of MPA frame), and it does
//	    not make a direction that waits for its start give way. A start
//	    that arrives below a direction the early window decided is counted
//	    (Stats.EarlyMissed). Octets kept when a
//	    SYN then arrives are provisional ("soft"): a later copy replaces them,
//	    and they are delivered only when nothing replaced them by the end.
//	  - anchored: the start is known (the octet after the SYN, or the first
//	    octet of the segment that Starts). Octets are delivered in order from
//	    there; out-of-order ones are held, up to what the Reader Needs and the
//	    per-direction limit, in a buffer indexed by sequence number modulo its
//	    size, so that no segment order ever makes the buffer be rebuilt.
//	    Octets that arrive again after delivery go to Reader.Again (a
//	    retransmission); held octets carried again differently go to
//	    Reader.Differ. The first copy of an octet wins. A segment that
//	    Starts strongly, more than ReuseWindow outside the sequence space
//	    seen, ends it (EndReplaced) and anchors a new one: a connection that
//	    reuses the 4-tuple without a captured SYN, which matters for one
//	    whose Reader follows data traffic (Following) and so never ages.
//	  - decided: no more octets are wanted. Only the start (when known), the
//	    highest sequence number and whether a FIN or RST ended it are kept,
//	    32 octets with an IPv4 key. A SYN with another initial sequence number
//	    starts it afresh (a new connection on the same ports); one repeating
//	    the start is a retransmission. A segment that Starts strongly, at a
//	    point outside the old connection's sequence space (more than
//	    ReuseWindow away from it, or after its FIN or RST), is a new
//	    connection that reuses the 4-tuple without a captured SYN.
//	  - lost: given up at a limit before its Reader saw anything of interest.
//	    Only a SYN or a segment that Starts takes it up again; the Reader is
//	    then told (Dir.Lost), so that it can flag what it shows.
//
// # Where each state is handled
//
// Segment (assembler.go) finds a segment's direction in the flow table
// (table.go) and hands the segment to the handler of its state:
//
//   - (none): segmentNew, in assembler.go. It also takes a segment that
//     starts a direction afresh: a decided or lost one taken up again, a
//     followed one that a new connection on the same 4-tuple replaced. A
//     direction decided at its first segment is made by decideEarly, in
//     decided.go.
//   - unanchored: segmentUnanchored, in unanchored.go; keepEarly keeps the
//     octets, anchorSYN and anchorAt anchor the direction.
//   - anchored: segmentAnchored, in anchored.go; add delivers, holds or
//     tells again the octets, drain delivers those held that became
//     contiguous.
//   - decided: segmentDecided, in decided.go.
//   - lost: segmentLost, in decided.go.
//
// A direction followed (unanchored or anchored) is a stream (stream.go),
// whose octets held sit in a ring buffer (ring.go); after each of its
// segments, ending (assembler.go) ends it at a limit, an RST or its FIN.
// A followed direction also counts what its segments show of TCP's own
// work (health.go: segments sent again, holes the capture lost, zero
// windows, an RST), which its reader gets with End.
// A decided or lost direction is only its entry in the flow table. The
// types other packages use are in api.go; the limits, the ageing and the
// memory accounting in limits.go.
//
// # Limits
//
// Options bound everything: octets held per direction (StreamBytes) and in
// all (TotalBytes, which also pays for held ranges and for what Readers
// Charge), directions followed at once (Flows), segments kept before a
// direction's start (MaxEarlySegs), holes per direction (64), and
// directions remembered once decided (Remembered, about a million: the
// least recently seen are forgotten beyond it). Reaching a limit gives a
// direction up: its Reader gets End with EndLimit and says what it lost;
// one whose Reader saw nothing of interest is counted in Stats.Keyless.
//
// # Time
//
// Directions that go quiet are given up by capture time: QuietUnknown for
// unanchored ones, QuietNoData for anchored ones of no interest yet,
// QuietBegun for those whose Reader is in the middle of something; those
// whose Reader follows a connection's data traffic (Following) are not
// aged at all, only given up at a limit. Capture
// timestamps are not trusted to be monotonic: the ageing clock advances by
// how far each segment moves the latest timestamp forward, at most a
// second, so one frame stamped an hour ahead ages nothing; and after 64
// segments in a row stamped well before the latest timestamp, that one is
// taken for a fluke and the clock follows the segments again. Sweeps run
// when the clock advanced 10 s and at least an eighth as many segments as
// directions followed came since, and after as many new directions as are
// followed: each segment pays for a bounded number of looks.
package reassembly
