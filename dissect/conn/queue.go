package conn

import (
	"slices"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
)

// The attempts held, in request order, and their hand-on. Offline every
// attempt waits for the end of its input, so that the records come out in
// the order of their requests; live, each goes as soon as its state is
// known. The limit (Tracker.max) and the memory budget may need the room
// first: finished attempts are handed on early, which loses nothing, then
// the oldest unfinished ones, each with a state-limit-reached finding.

// maxDone bounds the attempts a live tracker still recognises after it
// handed them on, so that a CM retry of a REQ that was answered, or a REJ
// of a REP, joins its attempt rather than opening a new one.
const maxDone = 4096

// attemptBase is an attempt's cost without what varies, replyCost what an
// accepting reply adds (TestAttemptCost holds the estimates to what the
// heap shows).
const (
	attemptBase = 560
	replyCost   = 300
)

// attemptCost estimates what an attempt holds, for the budget: the attempt
// and its index entries, its addresses, and what its upper layer decoded
// of the request.
func attemptCost(c *attempt) int {
	n := attemptBase + c.Initiator.Len() + c.Responder.Len()
	if u := c.InitiatorULP; u != nil {
		n += 160 + len(u.Name) + len(u.Summary) + len(u.Problem)
		for _, f := range u.Fields {
			n += 96 + len(f.Bytes)
		}
	}
	return n
}

// add queues a new attempt. Beyond the limit, or when the budget has no
// room for it, it first hands on the finished attempts (offline), which
// loses nothing; only when more than the limit are unfinished, or the
// budget is still full, does it hand on the oldest ones still held, as far
// as they are known, each with a state-limit-reached finding.
func (t *Tracker) add(c *attempt) {
	t.seq++
	c.seq = t.seq
	t.open = append(t.open, c)
	c.inOpen = true
	t.held++
	c.cost = attemptCost(c)
	fits := t.budget.Charge(budget.Attempts, c.cost)
	if t.held <= t.max && fits {
		return
	}
	t.handOnFinished()
	if !fits {
		fits = t.budget.Charge(budget.Attempts, c.cost)
	}
	for t.held > t.max || !fits {
		t.dropEmitted()
		if t.open[0] == c {
			t.budget.Force(budget.Attempts, c.cost) // the newest alone is over the budget: it stays
			break
		}
		t.handedOn(t.dropOldest(t.held > t.max))
		if !fits {
			fits = t.budget.Charge(budget.Attempts, c.cost)
		}
	}
}

// dropOldest hands on the oldest attempt still held, before its end, with
// a state-limit-reached finding: for the --max-connections limit (count)
// or for the memory budget.
func (t *Tracker) dropOldest(count bool) *attempt {
	old := t.open[0]
	old.inOpen = false
	t.open[0] = nil // the backing array must not keep it alive
	t.open = t.open[1:]
	t.held--
	t.dropped++
	t.unindex(old)
	t.budget.Release(budget.Attempts, old.cost)
	if count {
		old.Findings = append(old.Findings, finding.New(finding.StateLimitReached,
			"more than %d unfinished connection attempts were held at once: this one is reported before its end, as far as it is known", t.max))
	} else {
		t.budget.Lost(budget.Attempts)
		old.Findings = append(old.Findings, finding.New(finding.StateLimitReached,
			"%s: this unfinished connection attempt, the oldest held, is reported before its end, as far as it is known", t.budget.Full()))
	}
	old.emitted = true
	return old
}

// Shed makes room in a full budget (budget.Over), between two messages:
// it hands on the finished attempts, which loses nothing, then the oldest
// unfinished ones while the budget is still over, an eighth of those held
// at most. The events are valid until the next call.
func (t *Tracker) Shed() []Event {
	t.begin()
	if !t.budget.Over() {
		return nil
	}
	t.handOnFinished()
	for n := t.held / 8; n > 0 && t.budget.Over(); n-- {
		t.dropEmitted()
		if len(t.open) == 0 {
			break
		}
		t.handedOn(t.dropOldest(false))
	}
	return t.events
}

// handOnFinished hands on the finished attempts not yet handed on, in
// request order. They stay recognised for a while, as a live tracker's do.
func (t *Tracker) handOnFinished() {
	if len(t.finished) == 0 {
		return
	}
	q := t.finished
	t.finished = nil
	slices.SortFunc(q, func(a, b *attempt) int { return a.seq - b.seq })
	for _, c := range q {
		if !c.emitted {
			t.handedOn(t.handOn(c))
		}
	}
}

// emit marks c finished, and hands it on in live mode; offline it waits
// for the end of the input in request order, unless the limit needs its
// room first (add).
func (t *Tracker) emit(c *attempt) {
	if c.emitted || c.finished {
		return
	}
	c.finished = true
	if !t.live {
		t.finished = append(t.finished, c)
		return
	}
	t.handedOn(t.handOn(c))
}

// handOn takes c out of the queue. The tracker still recognises it for a
// while, so that its RTU, a CM retry or a late REJ does not open a new
// attempt.
func (t *Tracker) handOn(c *attempt) *attempt {
	c.emitted = true
	t.held--
	// Its charge goes back: recognising the last maxDone handed on (about
	// 2.5 MB at most) is part of the program's own needs, so that handing
	// on a finished attempt makes room at once.
	t.budget.Release(budget.Attempts, c.cost)
	t.dropEmitted()
	t.done = append(t.done, c)
	c.inDone = true
	if len(t.done) > maxDone {
		t.forgetDone()
	}
	return c
}

// forgetDone stops recognising the oldest attempt handed on.
func (t *Tracker) forgetDone() {
	old := t.done[0]
	t.unindex(old)
	old.inDone = false
	t.done[0] = nil // the backing array must not keep it alive
	t.done = t.done[1:]
}

// dropEmitted removes handed-on attempts from the front of the queue, and
// compacts it when they pile up behind an old attempt still held.
func (t *Tracker) dropEmitted() {
	i := 0
	for i < len(t.open) && t.open[i].emitted {
		t.open[i].inOpen = false
		i++
	}
	clear(t.open[:i]) // handed on: the backing array must not keep them alive
	t.open = t.open[i:]
	// Attempts handed on behind an old one still held stay on the heap
	// (their charge was given back): at most a quarter more than are held.
	if len(t.open) > t.held+t.held/4+64 {
		kept := t.open[:0]
		for _, c := range t.open {
			if !c.emitted {
				kept = append(kept, c)
			} else {
				c.inOpen = false
			}
		}
		clear(t.open[len(kept):])
		t.open = kept
	}
}
