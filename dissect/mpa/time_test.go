package mpa

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// Timestamps that jump back and forth by more than the sweep period do not
// cost a sweep of every open direction per segment: sweeps go by the
// capture time's high-water mark, and by segments since the last one.
func TestTCPSweepTimestampsBackAndForth(t *testing.T) {
	r := newSegRun(reassembly.Options{})
	at := craft.DefaultStart
	hdr := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 100)}).Bytes()[:20]
	const dirs = 2000
	for i := range dirs {
		r.at(i, 999, true, nil, 2*i+1, at)
		r.at(i, 1000, false, hdr, 2*i+2, at)
	}
	before := r.a.Stats().Sweeps
	for j := range 4000 {
		when := at
		if j%2 == 1 {
			when = at.Add(20 * time.Second)
		}
		r.at(dirs+j%7, 5, false, nil, 2*dirs+j+1, when)
	}
	if n := r.a.Stats().Sweeps - before; n > 2 {
		t.Fatalf("%d sweeps for 4000 segments whose time alternates", n)
	}
	if n := r.a.Stats().Followed; n != dirs {
		t.Fatalf("%d directions followed, want %d (20 s is younger than a frame's 60 s)", n, dirs)
	}
}

// One frame of another flow stamped 11 s ahead does not decide that a
// direction with a SYN and nothing since is not MPA: its Request, stamped
// 1 ms after the SYN, is still decoded, whole and without a finding.
func TestTCPTimeJumpKeepsSYNDirection(t *testing.T) {
	req := rpcRequest(2)
	at := craft.DefaultStart
	r := newSegRun(reassembly.Options{})
	r.seg(1, 999, true, nil, at)
	r.seg(2, 7, false, []byte("x"), at.Add(11*time.Second))
	r.seg(1, 1000, false, req, at.Add(time.Millisecond))
	// A retransmission of the Request (and of the SYN) changes nothing.
	r.seg(1, 1000, false, req, at.Add(2*time.Millisecond))
	r.seg(1, 999, true, nil, at.Add(3*time.Millisecond))
	r.seg(1, 1000, false, req, at.Add(4*time.Millisecond))
	if !r.whole(t, len(req)-20) || r.got[0].Frame != 3 {
		t.Fatal("want the Request once, frame 3, whole, no finding")
	}
}

// Without a handshake, the tail of a Request kept before its key: one
// frame with a jumped timestamp does not age it (the ageing clock moves a
// second a segment), so the head that arrives next completes it; after a
// real quiet spell it is given up, and the head that arrives then is shown
// cut short, with state-limit-reached, and counted once.
func TestTCPTimeJumpEarlyTailCounted(t *testing.T) {
	req := (&craft.MPA{Request: true, Rev: 1, Data: make([]byte, 8)}).Bytes()
	for _, quiet := range []bool{false, true} {
		at := craft.DefaultStart
		r := newSegRun(reassembly.Options{})
		r.at(1, 5011, false, req[10:], 1, at)
		frame := 2
		if quiet {
			for k := range 20 { // 20 s of other traffic, a second apart
				r.at(2, 7, false, []byte("y"), frame, at.Add(time.Duration(k+1)*time.Second))
				frame++
			}
		} else {
			r.at(2, 7, false, []byte("y"), frame, at.Add(time.Hour))
			frame++
		}
		r.at(1, 5001, false, req[:10], frame, at.Add(time.Millisecond))
		r.flush()
		got := r.got
		if len(got) != 1 {
			t.Fatalf("quiet=%v: %d messages", quiet, len(got))
		}
		limited := slices.Contains(findingCodes(got[0]), "state-limit-reached")
		if limited != quiet || r.f.Dropped() != map[bool]int{false: 0, true: 1}[quiet] {
			t.Errorf("quiet=%v: findings %s, dropped %d", quiet, findingsText(got[0]), r.f.Dropped())
		}
		if quiet && !strings.Contains(findingsText(got[0]), "given up") {
			t.Errorf("findings %s", findingsText(got[0]))
		}
	}
}

// A Request split inside its first segments is not aged by timestamps that
// do not say its direction went quiet: one frame stamped an hour ahead (with
// enough new directions after it to force sweeps), an idle hour before the
// connection, a damaged first record from 1970 (the ageing clock moves a
// second for each), or 30 s of real quiet after the first octets of its key
// (a frame begun ages only at 60 s). It is shown whole. Splits at 6 octets
// (inside the key) and at 30 (inside the private data), in order and
// reversed (no handshake).
func TestTCPSplitNotAged(t *testing.T) {
	req := rpcRequest(2)
	for _, mode := range []string{"jump ahead", "idle hour", "1970 first", "quiet 30 s"} {
		for _, cut := range []int{6, 30} {
			for _, reversed := range []bool{false, true} {
				if mode == "quiet 30 s" && (cut != 6 || reversed) {
					continue // only a frame begun waits 60 s
				}
				at := craft.DefaultStart
				r := newSegRun(reassembly.Options{})
				switch mode {
				case "jump ahead":
					r.seg(5000, 1, false, []byte("z"), at.Add(time.Hour))
				case "idle hour":
					r.seg(5000, 1, false, []byte("z"), at.Add(-time.Hour))
				case "1970 first":
					r.seg(5000, 1, false, []byte("z"), time.Unix(0, 0))
				}
				first, second := req[:cut], req[cut:]
				firstSeq, secondSeq := uint32(1000), uint32(1000+cut)
				if reversed {
					first, second, firstSeq, secondSeq = second, first, secondSeq, firstSeq
				} else {
					r.seg(1, 999, true, nil, at)
				}
				r.seg(1, firstSeq, false, first, at.Add(time.Millisecond))
				later := at.Add(2 * time.Millisecond)
				if mode == "quiet 30 s" {
					for k := range 30 {
						r.seg(2, 7, false, []byte("y"), at.Add(time.Duration(k+1)*time.Second))
					}
					later = at.Add(31 * time.Second)
				} else {
					for i := range 1100 { // new directions: the tracker sweeps
						r.seg(2+i, 77, true, nil, later)
					}
				}
				r.seg(1, secondSeq, false, second, later)
				if !r.whole(t, len(req)-20) {
					t.Errorf("%s, cut at %d, reversed %v: want the Request whole", mode, cut, reversed)
				}
			}
		}
	}
}

// One frame stamped ahead (a skewed interface in an unsorted merge) does
// not stop ageing for the rest of the capture: after rebaseAfter frames
// stamped well before it, the clock follows them again. A 30 s SYN scan
// (33000 directions, more than the flow limit) then ages out as it goes, and
// a Request split around it is shown whole, nothing given up.
func TestTCPSkewedFrameDoesNotStopAgeing(t *testing.T) {
	req := rpcRequest(2)
	for _, ahead := range []time.Duration{45 * time.Second, time.Hour} {
		at := craft.DefaultStart
		r := newSegRun(reassembly.Options{})
		r.seg(60000, 1, false, []byte("z"), at.Add(ahead))
		r.seg(1, 999, true, nil, at)
		r.seg(1, 1000, false, req[:30], at.Add(2*time.Millisecond))
		for i := range 33000 {
			r.seg(2+i, 77, true, nil, at.Add(time.Duration(i)*time.Second/1100))
		}
		r.seg(1, 1030, false, req[30:], at.Add(31*time.Second))
		if !r.whole(t, len(req)-20) {
			t.Errorf("%s ahead: want the Request whole", ahead)
		}
	}
}

// A direction that showed nothing but its SYN, given up at the flow limit,
// lost nothing: its Request, when it comes, is shown whole and unflagged.
func TestTCPSYNOnlyEvictedLosesNothing(t *testing.T) {
	req := rpcRequest(1)
	at := craft.DefaultStart
	r := newSegRun(reassembly.Options{Flows: 16})
	r.seg(1, 999, true, nil, at)
	for i := range 40 {
		r.seg(2+i, 5, true, nil, at)
	}
	r.seg(1, 1000, false, req, at)
	// The 40 SYN-only directions given up at the limit are counted as
	// keyless evictions: check the Request by hand.
	r.flush()
	if len(r.got) != 1 || len(r.got[0].PrivateData) != len(req)-20 || len(r.got[0].Findings) != 0 || r.f.Dropped() != 0 {
		t.Fatalf("%d messages, dropped %d; want the Request, unflagged", len(r.got), r.f.Dropped())
	}
}
