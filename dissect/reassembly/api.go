package reassembly

import (
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
)

// Flow names one direction of a TCP connection. IPv4 addresses sit in the
// last 4 octets of Src and Dst.
type Flow struct {
	Src, Dst         [16]byte
	SrcPort, DstPort uint16
	V6               bool
}

// Segment is one TCP segment. Payload points into the frame and is only
// read during the call.
type Segment struct {
	Flow          Flow
	Seq           uint32
	SYN, FIN, RST bool
	// ACK: the segment acknowledges the reverse direction up to Ack (the
	// next sequence number its sender expects).
	ACK bool
	Ack uint32
	// Window is the receive window the sender advertised, as the header
	// carries it (not scaled): 0 is a zero window whatever the scale.
	Window  uint16
	Payload []byte // the octets captured
	WireLen int    // octets of payload on the wire, by the IP and TCP headers (more than len(Payload) when the capture cut it)
	Frame   int    // 1-based frame number
	Time    time.Time
}

// Defaults of Options.
const (
	DefaultStreamBytes  = 20 + 0xffff // an MPA frame with the largest PD_Length fits
	DefaultTotalBytes   = 16 << 20
	DefaultFlows        = 32768
	DefaultMaxEarlySegs = 1024
	DefaultEarlyFlows   = 4096
	DefaultRemembered   = 1 << 20
	DefaultReuseWindow  = 1 << 20
	DefaultQuietUnknown = 2 * time.Second
	DefaultQuietNoData  = 10 * time.Second
	DefaultQuietBegun   = 60 * time.Second
)

// Options bound what an Assembler keeps. Zero fields take the defaults.
type Options struct {
	StreamBytes  int // octets held for one direction
	TotalBytes   int // octets held for all directions together, with what readers charge
	Flows        int // directions followed at once
	MaxEarlySegs int // segments kept from a direction whose start is not known
	// EarlyFlows bounds the directions followed at once whose start is not
	// known (captured mid-stream): octets kept before a start matter only
	// if the start comes soon after them. At the limit, a new direction
	// whose first segment is longer than the early window is decided at
	// once; another gives up the oldest of them.
	EarlyFlows int
	Remembered int // directions remembered once decided
	// ReuseWindow is how far from an old connection's sequence numbers a
	// segment that Starts must lie to be taken for a new connection on the
	// same 4-tuple.
	ReuseWindow  int
	QuietUnknown time.Duration // an unanchored direction quiet this long is given up
	QuietNoData  time.Duration // an anchored one of no interest yet
	QuietBegun   time.Duration // one whose reader is in the middle of something
	// Budget, when set, is the run's memory budget: the octets held (and
	// what readers charge) are charged to it too, and when it is full
	// directions are given up as when TotalBytes is.
	Budget *budget.Budget
}

// WithDefaults fills the zero fields.
func (o Options) WithDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.StreamBytes, DefaultStreamBytes)
	def(&o.TotalBytes, DefaultTotalBytes)
	def(&o.Flows, DefaultFlows)
	def(&o.MaxEarlySegs, DefaultMaxEarlySegs)
	def(&o.EarlyFlows, DefaultEarlyFlows)
	def(&o.Remembered, DefaultRemembered)
	def(&o.ReuseWindow, DefaultReuseWindow)
	o.Remembered = min(o.Remembered, maxEntries)
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defd(&o.QuietUnknown, DefaultQuietUnknown)
	defd(&o.QuietNoData, DefaultQuietNoData)
	defd(&o.QuietBegun, DefaultQuietBegun)
	return o
}

// Protocol is what the assembler asks of the layer above.
type Protocol interface {
	// Starts says whether a segment whose payload is p can be the first
	// of a direction whose start was not captured; strong when it shows
	// enough to start one above octets already kept.
	Starts(p []byte) (ok, strong bool)
	// EarlyWindow is how many octets, from the lowest sequence number
	// seen, are kept of a direction before its start is known: the span
	// of the protocol's first message.
	EarlyWindow() int
	// Open returns the reader of a direction the assembler starts to
	// deliver. The reader may keep d.
	Open(d *Dir) Reader
}

// Interest is how much giving a direction up would lose.
type Interest uint8

// Interests, in increasing order.
const (
	// Nothing: the reader has seen nothing of its protocol.
	Nothing Interest = iota
	// Begun: it has seen the first octets of something it reads.
	Begun
	// Shown: it has seen enough that it will show what it read.
	Shown
	// Following: it follows a stream with no end in view (a connection's
	// data traffic, after its setup): it is never given up for being
	// quiet, only at a limit.
	Following
)

// Status is what a reader says after octets were delivered.
type Status uint8

// Statuses.
const (
	More Status = iota // deliver more
	Done               // the reader has seen all it wants: the direction is decided
)

// Reader reads one direction. Offsets are stream offsets: 0 is the first
// octet after the start.
type Reader interface {
	// Seen says that the segment of frame carried octets [lo, hi) of the
	// stream (lo may be negative for octets before the start), whether it
	// added any octet not seen before, and whether the capture cut the
	// segment just after hi. It comes before the octets are delivered.
	Seen(lo, hi int, frame int, at time.Time, added, cut bool)
	// Data delivers the next octets in order, at off. For a reader that
	// accepts gaps (Dir.AcceptGaps), off may lie past the octets delivered
	// before: those between were lost (b may then be empty).
	Data(off int, b []byte) Status
	// Again gives octets already delivered that a later segment (frame)
	// carried again.
	Again(off int, b []byte, frame int)
	// Differ says that frame carried octet off again, with other contents,
	// while it was held before delivery; the first copy is delivered.
	Differ(off, frame int)
	// Need is the stream offset up to which octets are worth holding.
	Need() int
	// Interest says how much giving the direction up would lose.
	Interest() Interest
	// End is the last call: the direction ends, or is given up.
	End(e End)
}

// EndKind says why a direction ended.
type EndKind uint8

// End kinds.
const (
	EndInput    EndKind = iota // the input ended
	EndFIN                     // the stream ended at its FIN, every octet before it delivered
	EndRST                     // the connection was reset
	EndReplaced                // a SYN with another initial sequence number started a new connection
	EndQuiet                   // nothing more arrived for a while (Quiet): given up
	EndLimit                   // a state limit (Detail): given up
	EndIdle                    // quiet, and the reader's Interest was Nothing: no loss
)

// End tells a reader why its direction ends.
type End struct {
	Kind   EndKind
	Detail string        // EndLimit: which limit
	Quiet  time.Duration // EndQuiet: how long nothing arrived
	// EndInput: a FIN was seen with octets missing before it.
	FINMissing bool
	// The last segment seen of the direction.
	Frame int
	Time  time.Time
	// Health is what the direction's segments showed of TCP's own work
	// while it was followed (health.go).
	Health Health
}

// GivenUp reports whether the end is a give-up at a limit (or by age).
func (e End) GivenUp() bool { return e.Kind == EndLimit || e.Kind == EndQuiet }

// Dir is what a reader knows of its direction and may ask of the assembler.
type Dir struct {
	Flow Flow
	// SYN: the start is the octet after a SYN (else the first octet of a
	// segment the Protocol Starts).
	SYN bool
	// Lost: octets of this direction were given up at a limit before its
	// start was known.
	Lost bool
	s    *stream
	a    *Assembler
}

// Charge accounts n more octets held by the reader (negative to release),
// within the total limit. When the total is full it reports false; the
// octets are accounted all the same, and the direction is given up once the
// current delivery returns.
func (d *Dir) Charge(n int) bool { return d.a.charge(d.s, n) }

// Limit gives the direction up at a limit of the reader's own, once the
// current delivery returns.
func (d *Dir) Limit(detail string) {
	if d.s.capped == "" {
		d.s.capped = detail
	}
}

// Fits reports whether n more octets fit in the total (and the budget)
// without giving anything up.
func (d *Dir) Fits(n int) bool { return d.a.held+n <= d.a.opt.TotalBytes && d.a.acct.Fits(n) }

// Last is the frame and capture time of the direction's latest segment:
// the one being taken, during a delivery.
func (d *Dir) Last() (frame int, at time.Time) { return d.s.lastFrame, d.s.lastTime }

// StreamBytes is the per-direction limit.
func (d *Dir) StreamBytes() int { return d.a.opt.StreamBytes }

// Stats counts what an assembler did.
type Stats struct {
	Segments   int // segments taken
	Followed   int // directions followed now
	Remembered int // directions in the flow table
	Held       int // octets held now, with what readers charged
	Keyless    int // directions given up at a limit (or by age) whose reader had seen nothing of interest
	Forgotten  int // decided directions forgotten at the Remembered limit, or for the budget (tables.go)
	Ended      int // decided directions forgotten when their connection ended (FIN or RST)
	Sweeps     int // age sweeps run
	Reused     int // decided directions started afresh by a segment that Starts, without a SYN
	// EarlyMissed counts the directions decided by the early window (more
	// octets before any start than the Protocol's EarlyWindow) whose start
	// then came, below those octets: a first message lost to reordering.
	// EarlyMissedFrame is the frame of the first such start.
	EarlyMissed      int
	EarlyMissedFrame int
}
