package budget

import (
	"testing"
)

// TestBudget: charges are granted up to the limit and refused beyond it
// (counted), Force takes them anyway, Release gives them back, Lost is
// what the note reports; a nil budget grants everything.
func TestBudget(t *testing.T) {
	type step struct {
		op   string // charge, force, release, lost
		h    Holder
		n    int
		want bool // charge: granted
	}
	for _, tc := range []struct {
		name  string
		limit int64
		steps []step
		used  int64
		over  bool
		stats func(Stats) bool
	}{
		{"within", 100, []step{{"charge", TCP, 60, true}, {"charge", Attempts, 40, true}}, 100, false,
			func(s Stats) bool { return s.Held[TCP] == 60 && s.Held[Attempts] == 40 && s.Peak == 100 }},
		{"refused", 100, []step{{"charge", TCP, 60, true}, {"charge", Attempts, 41, false}, {"charge", Attempts, 40, true}}, 100, false,
			func(s Stats) bool { return s.Refused[Attempts] == 1 && s.Refused[TCP] == 0 && s.Held[Attempts] == 40 }},
		{"released", 100, []step{{"charge", TCP, 100, true}, {"release", TCP, 30, false}, {"charge", Datapath, 30, true}}, 100, false,
			func(s Stats) bool { return s.Held[TCP] == 70 && s.Held[Datapath] == 30 }},
		{"forced", 100, []step{{"charge", Attempts, 90, true}, {"force", Records, 50, false}, {"charge", Report, 1, false}}, 140, true,
			func(s Stats) bool { return s.Held[Records] == 50 && s.Peak == 140 && s.Refused[Report] == 1 }},
		{"nothing", 100, []step{{"charge", TCP, 0, true}, {"charge", TCP, -5, true}, {"release", TCP, 0, false}}, 0, false,
			func(s Stats) bool { return s.Held[TCP] == 0 }},
		{"lost", 100, []step{{"lost", Attempts, 0, false}, {"lost", Attempts, 0, false}, {"lost", TCP, 0, false}}, 0, false,
			func(s Stats) bool {
				l := s.Losses()
				return len(l) == 2 && l[0] == Loss{TCP, 1} && l[1] == Loss{Attempts, 2}
			}},
	} {
		b := New(tc.limit)
		for i, st := range tc.steps {
			switch st.op {
			case "charge":
				if got := b.Charge(st.h, st.n); got != st.want {
					t.Errorf("%s: step %d: Charge(%v, %d) = %v", tc.name, i, st.h, st.n, got)
				}
			case "force":
				b.Force(st.h, st.n)
			case "release":
				b.Release(st.h, st.n)
			case "lost":
				b.Lost(st.h)
			}
		}
		s := b.Stats()
		if s.Used != tc.used || b.Over() != tc.over || !tc.stats(s) {
			t.Errorf("%s: used %d (want %d), over %v (want %v), stats %+v", tc.name, s.Used, tc.used, b.Over(), tc.over, s)
		}
	}

	var none *Budget
	if !none.Charge(TCP, 1<<40) || !none.Fits(1<<40) || none.Over() || none.Limit() != 0 || none.SoftLimit() != 0 {
		t.Error("a nil budget refused something")
	}
	none.Force(TCP, 1)
	none.Release(TCP, 1)
	none.Lost(TCP)
	if s := none.Stats(); s != (Stats{}) {
		t.Errorf("nil budget stats %+v", s)
	}
	if b := New(0); b.Limit() != DefaultLimit || b.SoftLimit() != DefaultLimit+overhead {
		t.Errorf("default limit %d, soft %d", b.Limit(), b.SoftLimit())
	}
}

// TestAccount: an account takes the budget in slices, grants from what it
// took without touching the budget, takes only what it needs when less than
// a slice is left, refuses when even that does not fit, gives back beyond
// two slices unused, and everything at Close.
func TestAccount(t *testing.T) {
	const S = accountSlice
	b := New(4 * S)
	a := b.NewAccount(TCP)
	used := func() int64 { return b.Stats().Used }
	if !a.Charge(100) || used() != S {
		t.Fatalf("first charge: used %d", used())
	}
	if !a.Charge(S-100) || used() != S {
		t.Fatalf("within the slice: used %d", used())
	}
	b.Force(Attempts, 2*S+S/2) // half a slice left
	if !a.Charge(S/4) || used() != 3*S+S/2+S/4 {
		t.Fatalf("a quarter slice with half a slice left: used %d", used())
	}
	if a.Charge(S) || used() != 3*S+S/2+S/4 {
		t.Fatalf("a charge beyond the budget was granted: used %d", used())
	}
	a.Release(S + S/4) // all it holds: kept as credit (under two slices)
	if used() != 3*S+S/2+S/4 {
		t.Fatalf("after release: used %d", used())
	}
	a.Close()
	b.Release(Attempts, 2*S+S/2)
	if used() != 0 {
		t.Fatalf("after close: used %d", used())
	}

	b = New(10 * S)
	a = b.NewAccount(Datapath)
	a.Charge(3 * S)
	a.Release(3 * S)
	if used() != S {
		t.Fatalf("three slices released: used %d, want one slice kept", used())
	}
	a.Close()
	if used() != 0 || b.Stats().Held[Datapath] != 0 {
		t.Fatalf("after close: used %d", used())
	}

	var none Account
	if !none.Charge(1<<40) || !none.Fits(1<<40) {
		t.Error("the zero account refused")
	}
	none.Force(1)
	none.Release(1)
	none.Close()
}
