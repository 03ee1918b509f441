package dissect_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// What the data path gives up, as a run reports it: counted by holder in
// the summary, and said in one summary warning per holder.

// dataPathHolders are the holders of the data path, with the words of
// their summary warning.
var dataPathHolders = map[record.DropHolder]string{
	record.DropRCDirections:  "of RC traffic without",
	record.DropRCConnections: "RC traffic was given up",
	record.DropCalls:         " not followed: more than",
	record.DropSendBuffers:   "(--max-send-buffers)",
	record.DropRDMAReads:     "came while 256 of the same side",
	record.DropReadLists:     "chunk lists that run past",
	record.DropOrphanPackets: "came without the SEND First",
	record.DropChunkSegments: "chunk segments of outstanding Calls were not tracked",
	record.DropLongMessages:  "were not put together for their decode",
}

// checkDrops checks a run's drops: exactly want by holder (none for any
// other holder), their sum in StateDrops, and for each data-path holder one
// state-limit-reached warning on the run that says its count.
func checkDrops(t *testing.T, sum *record.Summary, want map[record.DropHolder]int) {
	t.Helper()
	total := 0
	for h := range record.NDropHolders {
		if sum.Drops[h] != want[h] {
			t.Errorf("drops of %v: %d, want %d", h, sum.Drops[h], want[h])
		}
		total += want[h]
	}
	if sum.StateDrops != total {
		t.Errorf("state_limit_drops %d, want %d", sum.StateDrops, total)
	}
	said := map[record.DropHolder]int{}
	for _, n := range sum.Notes {
		for h, words := range dataPathHolders {
			if n.Code != finding.StateLimitReached || !strings.Contains(n.Message, words) {
				continue
			}
			if _, dup := said[h]; dup {
				t.Errorf("a second warning for %v: %s", h, n.Message)
			}
			var count int
			if _, err := fmt.Sscanf(n.Message[strings.Index(n.Message, ": ")+2:], "%d", &count); err != nil {
				t.Errorf("warning %q: %v", n.Message, err)
			}
			said[h] = count
		}
	}
	for h, n := range want {
		if _, ok := dataPathHolders[h]; ok && said[h] != n {
			t.Errorf("the warnings say %d of %v, want %d", said[h], h, n)
		}
	}
	for h, n := range said {
		if want[h] == 0 {
			t.Errorf("a warning for %v (%d), which dropped nothing", h, n)
		}
	}
}
