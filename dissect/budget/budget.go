// Package budget is the one memory budget of a run. Every part of the
// pipeline that holds state for later (TCP directions, connection
// attempts, replies waiting for their request, the data path's
// connections, the reader's record buffers, the Markdown report's details)
// charges what it holds to the same Budget and releases it when it lets go.
//
// A charge that would take the total over the limit is refused, and the
// holder then does what it does at its own limit: it hands on or gives up
// its oldest state (and says so), or stops keeping more. So the limits of
// the holders bound each alone, and the budget bounds them all at once: a
// capture that fills every holder still stays within the limit. A few
// charges cannot be refused (a record has to be read to be skipped): Force
// takes them over the limit, and the other holders then find less room.
//
// The charges are each holder's measured cost (tests compare them with
// the heap a holder really takes: TestAttemptCost, TestResultCost, TestParkCost),
// never the heap the garbage collector last found live: a budget that
// followed the collector would decide by its timing, and the same input
// would give different output from run to run. Over tells the run loop
// when its largest holders should make room between two frames (dissect's
// shed). A holder that charges on every segment does it through an
// Account, which takes the budget in slices.
//
// The limit is well below the runtime's soft memory limit (SoftLimit), so
// that the state held never crowds the garbage collector: with the state
// at its limit the heap still has room for a cycle's garbage, and time stays
// linear in the input.
//
// A nil *Budget is no budget: every charge is granted. Charges are atomic;
// each Account belongs to one goroutine (the run loop's).
package budget

import (
	"fmt"
	"sync/atomic"
)

// Holder names what a charge is for.
type Holder uint8

// The holders of state.
const (
	TCP      Holder = iota // TCP directions: their octets and per-flow state
	Attempts               // connection attempts held until they end, with their messages
	Orphans                // replies held for a request that may come later
	Datapath               // the data path's connections, directions and Sends in progress
	Records                // the buffer of a large record
	Report                 // the Markdown report's message details
	Excerpt                // the frames -w holds until it can write them in order
	nHolders
)

var holderNames = [nHolders]string{"TCP reassembly", "connection attempts", "orphan replies", "data path", "record buffers", "report details", "frames for -w"}

func (h Holder) String() string {
	if h < nHolders {
		return holderNames[h]
	}
	return fmt.Sprintf("holder %d", h)
}

// DefaultLimit is the state a run holds at most by default. With the
// program's own needs on top (SoftLimit) it keeps a run within 100 MB of
// resident memory.
const DefaultLimit = 32 << 20

// overhead is what the program needs besides the state it holds: the
// code, the stacks, tables of fixed size, the output's buffers, and the
// garbage the decoders make between two collections.
const overhead = 42 << 20

// Budget is the memory budget of one run.
type Budget struct {
	limit   int64
	used    atomic.Int64
	peak    atomic.Int64
	held    [nHolders]atomic.Int64
	refused [nHolders]atomic.Int64
	lost    [nHolders]atomic.Int64

	// Split (see there): what each side holds (used is then their sum),
	// and what it takes the other side to hold (view[Front] is the
	// front's view of the data path's side, with viewHeld its view of the
	// data path's own share). The back's view is what the front holds now
	// unless backViews is set (BackViews).
	split     bool
	side      [2]atomic.Int64
	view      [2]atomic.Int64
	viewHeld  atomic.Int64
	backViews atomic.Bool
}

// The two sides of a split budget: the run loop's goroutine (every holder
// but the data path's and the report's), and the data path's worker.
const (
	Front = 0
	Back  = 1
)

// SideOf is the side whose goroutine charges holder h in a split budget.
func SideOf(h Holder) int {
	if h == Datapath || h == Report {
		return Back
	}
	return Front
}

// Split makes each side's decisions (a charge granted or refused, Over,
// Fits, Largest) on what the side itself holds, exactly, plus what it
// takes the other side to hold: a view that the run loop sets at points
// of its own choosing (SetView), which are the same on every run. The
// data path can then run on a goroutine of its own, charging the budget
// while the run loop goes on, and no decision depends on which of the two
// ran ahead: the limit still bounds the total, up to what the other side
// took since its view was set. Call before any charge.
func (b *Budget) Split() {
	if b != nil {
		b.split = true
	}
}

// Held is what holder h holds now (0 for a nil budget).
func (b *Budget) Held(h Holder) int64 {
	if b == nil {
		return 0
	}
	return b.held[h].Load()
}

// SideUsed is what side holds now (0 for a nil budget).
func (b *Budget) SideUsed(side int) int64 {
	if b == nil {
		return 0
	}
	return b.side[side].Load()
}

// BackViews makes the back decide on the view SetView(Back, ...) gives it
// (on), or on what the front holds now (off, the default): the back's
// goroutine turns it on while it runs beside the front's, which then makes
// no decision of the back's.
func (b *Budget) BackViews(on bool) {
	if b != nil {
		b.backViews.Store(on)
	}
}

// SetView sets what side takes the other side to hold (used), and, for
// the front, the data path's own share of it (held).
func (b *Budget) SetView(side int, used, held int64) {
	if b == nil {
		return
	}
	b.view[side].Store(used)
	if side == Front {
		b.viewHeld.Store(held)
	}
}

// seen is the total side's decisions go by: all that is held, or in a
// split budget what side holds plus its view of the other.
func (b *Budget) seen(side int) int64 {
	switch {
	case !b.split:
		return b.used.Load()
	case side == Back && !b.backViews.Load():
		return b.side[Back].Load() + b.side[Front].Load()
	}
	return b.side[side].Load() + b.view[side].Load()
}

// total is all that is held.
func (b *Budget) total() int64 {
	if b.split {
		return b.side[Front].Load() + b.side[Back].Load()
	}
	return b.used.Load()
}

// add counts n octets more (or fewer) held by h.
func (b *Budget) add(h Holder, n int64) {
	b.held[h].Add(n)
	if b.split {
		b.side[SideOf(h)].Add(n)
	} else {
		b.used.Add(n)
	}
}

// New makes a budget of limit octets (0 or less: DefaultLimit).
func New(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Budget{limit: limit}
}

// Limit is the budget's size in octets (0 for a nil budget).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// SoftLimit is the soft memory limit for the Go runtime that goes with the
// budget: the limit plus what the program needs besides (0 for a nil
// budget).
func (b *Budget) SoftLimit() int64 {
	if b == nil {
		return 0
	}
	return b.limit + overhead
}

// Charge takes n octets for h, and reports whether they fit: when they do
// not, nothing is taken and the refusal is counted. A nil budget grants
// everything.
func (b *Budget) Charge(h Holder, n int) bool { return b.ChargeOver(h, n, 0) }

// Force takes n octets for h even beyond the limit: for what must be held
// whatever it costs (the record being read).
func (b *Budget) Force(h Holder, n int) {
	if b == nil || n <= 0 {
		return
	}
	b.add(h, int64(n))
	b.notePeak()
}

// ChargeOver takes n octets for h when they fit within the limit plus
// slack: for state worth more than what other holders can give back (the
// run loop then has the largest of them make room, Over), within a bound.
// A refusal is counted as Charge's is.
func (b *Budget) ChargeOver(h Holder, n int, slack int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	if b.seen(SideOf(h))+int64(n) > b.limit+slack {
		b.refused[h].Add(1)
		return false
	}
	b.add(h, int64(n))
	b.notePeak()
	return true
}

// Release gives back n octets h no longer holds.
func (b *Budget) Release(h Holder, n int) {
	if b == nil || n <= 0 {
		return
	}
	b.add(h, -int64(n))
}

// Lost counts something a holder gave up for the budget that shows in
// the output (a connection attempt reported before its end, a TCP
// direction with an MPA frame begun, a connection's traffic): what a
// refusal cost. Handing on finished state first, which loses nothing, is
// not counted.
func (b *Budget) Lost(h Holder) {
	if b != nil {
		b.lost[h].Add(1)
	}
}

// Fits reports whether n more octets would be granted now to a holder
// of the front (Split).
func (b *Budget) Fits(n int) bool {
	return b == nil || b.seen(Front)+int64(n) <= b.limit
}

// Over reports whether what is held is over the limit, as the front sees
// it (Split): the holders should make room.
func (b *Budget) Over() bool { return b.OverFor(TCP) }

// OverFor is Over as holder h's side sees it.
func (b *Budget) OverFor(h Holder) bool {
	return b != nil && b.seen(SideOf(h)) > b.limit
}

// Largest is the holder among hs that holds the most now, as the front
// sees it (Split: the data path's share is its view), the first of them
// when none holds anything.
func (b *Budget) Largest(hs ...Holder) Holder {
	best, most := hs[0], b.heldSeen(hs[0])
	for _, h := range hs[1:] {
		if n := b.heldSeen(h); n > most {
			best, most = h, n
		}
	}
	return best
}

func (b *Budget) heldSeen(h Holder) int64 {
	if b.split && h == Datapath {
		return b.viewHeld.Load()
	}
	return b.held[h].Load()
}

func (b *Budget) notePeak() {
	u := b.total()
	for {
		v := b.peak.Load()
		if u <= v || b.peak.CompareAndSwap(v, u) {
			return
		}
	}
}

// Stats is what a budget was charged.
type Stats struct {
	Limit int64
	Used  int64 // now
	Peak  int64 // the most held at once
	// Held is each holder's share now; Refused how many of its charges
	// were refused; Lost what it gave up for them (Budget.Lost).
	Held    [nHolders]int64
	Refused [nHolders]int64
	Lost    [nHolders]int64
}

// Stats reports the budget's figures (zero for a nil budget).
func (b *Budget) Stats() Stats {
	var s Stats
	if b == nil {
		return s
	}
	s.Limit, s.Used, s.Peak = b.limit, b.total(), b.peak.Load()
	for h := range nHolders {
		s.Held[h], s.Refused[h], s.Lost[h] = b.held[h].Load(), b.refused[h].Load(), b.lost[h].Load()
	}
	return s
}

// Losses lists the holders that gave something up for the budget, with
// how many, in holder order.
func (s Stats) Losses() []Loss {
	var out []Loss
	for h := range nHolders {
		if s.Lost[h] > 0 {
			out = append(out, Loss{Holder: h, Count: s.Lost[h]})
		}
	}
	return out
}

// Loss is how many things a holder gave up for the budget.
type Loss struct {
	Holder Holder
	Count  int64
}

// Full is how a holder says that the budget made it let something go.
func (b *Budget) Full() string {
	return fmt.Sprintf("the memory budget of %d MiB for all state is full", b.Limit()>>20)
}

// Account is one holder's share of a budget, taken from it in slices so
// that a holder charging on every segment touches the shared counters
// once every slice, not every time: it holds up to two slices the holder
// has not used, which other holders cannot have meanwhile. One goroutine
// uses an Account; the zero Account (or one of a nil budget) grants
// everything.
type Account struct {
	b      *Budget
	h      Holder
	credit int // taken from the budget and not used
}

// accountSlice is how much an Account takes from the budget at a time.
const accountSlice = 64 << 10

// NewAccount opens an account of holder h on b.
func (b *Budget) NewAccount(h Holder) Account { return Account{b: b, h: h} }

// Charge takes n octets, and reports whether they fit.
func (a *Account) Charge(n int) bool {
	if a.b == nil || n <= 0 {
		return true
	}
	if n <= a.credit {
		a.credit -= n
		return true
	}
	need := n - a.credit
	take := max(need, accountSlice)
	if !a.b.Charge(a.h, take) {
		if take == need || !a.b.Charge(a.h, need) {
			return false
		}
		take = need
	}
	a.credit += take - n
	return true
}

// Force takes n octets even beyond the limit.
func (a *Account) Force(n int) {
	if a.b == nil || n <= 0 {
		return
	}
	if n <= a.credit {
		a.credit -= n
		return
	}
	a.b.Force(a.h, n-a.credit)
	a.credit = 0
}

// Release gives back n octets; beyond two slices unused, the rest goes
// back to the budget.
func (a *Account) Release(n int) {
	if a.b == nil || n <= 0 {
		return
	}
	a.credit += n
	if a.credit > 2*accountSlice {
		a.b.Release(a.h, a.credit-accountSlice)
		a.credit = accountSlice
	}
}

// Fits reports whether n more octets would be granted now.
func (a *Account) Fits(n int) bool { return n <= a.credit || a.b.Fits(n-a.credit) }

// Close gives back what the account holds unused.
func (a *Account) Close() {
	if a.b != nil && a.credit > 0 {
		a.b.Release(a.h, a.credit)
		a.credit = 0
	}
}

// Lost is Budget.Lost for the account's holder.
func (a *Account) Lost() { a.b.Lost(a.h) }

// Share is a budget seen as one holder's: what a consumer that knows
// nothing of the other holders (a renderer keeping a report's details)
// charges to.
type Share struct {
	b *Budget
	h Holder
}

// For is b seen as holder h's.
func (b *Budget) For(h Holder) Share { return Share{b, h} }

// Charge takes n octets for the holder, and reports whether they fit.
func (s Share) Charge(n int) bool { return s.b.Charge(s.h, n) }

// Release gives back n octets the holder took.
func (s Share) Release(n int) { s.b.Release(s.h, n) }
