package reassembly

// What the flow tables cost. Most directions of a busy capture are decided
// at once (ordinary TCP) and only their entries stay, so that their later
// segments cost a look-up. The tables exist only to decide, and never hold
// the budget against the directions being followed:
//
//   - a decided direction that ends (a FIN or an RST) is forgotten at once:
//     nothing is left to decide about it (a later start of the 4-tuple is
//     taken as a new direction, as it would be anyway);
//   - the tables take at most a share of the budget (tableShare) and only
//     what it grants: when an entry more would need more room than that, the
//     least recently seen eighth of the decided directions is forgotten
//     instead, and the new one takes an entry they freed;
//   - when the budget is full and a direction followed (or the MPA framer,
//     for the traffic of a connection: Dir.Room) needs room, the tables give
//     back first: an eighth of the decided directions is forgotten and the
//     tables are compacted (shrinkTables), before any direction followed is
//     given up.
//
// A forgotten direction that sends again is followed afresh, as one first
// seen: decided again by its first octets, or at worst by age.

// tableShare: the flow tables take at most 1/tableShare of the budget.
const tableShare = 4

// minShrink is the least the tables must hold for shrinkTables to be worth
// its pass over them.
const minShrink = 1 << 20

// tableFits reports whether adding the direction f to its table fits its
// share of the budget.
func (a *Assembler) tableFits(f *Flow) bool {
	n := a.t4.growth()
	if f.V6 {
		n = a.t6.growth()
	}
	if n == 0 || a.opt.Budget == nil {
		return true
	}
	return a.tables+n <= int(a.opt.Budget.Limit()/tableShare) && a.acct.Fits(n)
}

// chargeTables accounts what the flow tables grew or shrank by. Growth was
// granted (tableFits) or is bounded by the directions followed (when no
// decided one was left to forget): it is taken as it is.
func (a *Assembler) chargeTables() {
	switch n := a.t4.bytes + a.t6.bytes; {
	case n > a.tables:
		a.acct.Force(n - a.tables)
		a.tables = n
	case n < a.tables:
		a.acct.Release(a.tables - n)
		a.tables = n
	}
}

// removeEntry forgets the direction f (decided or lost, not followed).
func (a *Assembler) removeEntry(f *Flow) {
	if f.V6 {
		k := key6{f.Src, f.Dst, f.SrcPort, f.DstPort}
		a.t6.remove(&k, hash6(&k))
		return
	}
	k, h := key4Of(f)
	a.t4.remove(&k, h)
}

// ended forgets a decided or lost direction whose connection ended.
func (a *Assembler) ended(d *dirState, f *Flow) {
	if d.flags&flagEnded != 0 && d.kind != kindFollowed {
		a.removeEntry(f)
		a.st.Ended++
	}
}

// shrinkTables gives back what the flow tables hold: the least recently
// seen eighth of the decided directions is forgotten and the tables are
// compacted. It reports whether anything was given back. Entries move: a
// caller that holds one looks it up again.
func (a *Assembler) shrinkTables() bool {
	if a.tables < minShrink {
		return false
	}
	before := a.tables
	a.forget()
	moved := func(_, now *dirState) {
		if now.kind == kindFollowed {
			a.all[now.slot].ent = now
		}
	}
	a.t4.compact(moved)
	a.t6.compact(moved)
	a.chargeTables()
	return a.tables < before
}

// Room makes room in the budget for n octets that the reader is about to
// charge elsewhere (the MPA framer's connections), by giving back what the
// flow tables hold, never by giving up a direction followed. It reports
// whether n fit then.
func (d *Dir) Room(n int) bool {
	a := d.a
	for !a.acct.Fits(n) {
		if !a.shrinkTables() {
			return false
		}
	}
	return true
}
