package output_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// TestMarkdownBudgetLargePrivateData: 1000 MPA Requests with 60000 octets
// of private data each (a finding each, so every one is chosen for
// details, whose hex dump is some 300 KB): the report stays within the
// budget, says it left details out, and what it keeps of them is bounded
// by the budget, not by their number: the renderer allocates a few times
// the report, not the hundreds of MB all the details come to.
func TestMarkdownBudgetLargePrivateData(t *testing.T) {
	if testing.Short() {
		t.Skip("dissects 60 MB")
	}
	const n, size = 1000, 60000
	// No two lines of the hex dump alike: nothing is folded into "*".
	pd := make([]byte, size)
	for j := range pd {
		pd[j] = byte(j) ^ byte(j>>8)
	}
	var frames []craft.Frame
	for i := range n {
		x := craft.IWARPExchange{Rev: 1, Index: i, Initiator: craft.Peer{Data: pd},
			Start: craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)}
		fs, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, fs...)
	}
	path := writeCapture(t, "large-pd.pcap", frames)
	frames = nil

	// What dissecting costs without the report, to compare with.
	measure := func(sink dissect.Sink) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{}, sink); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	base := measure(dissect.NopSink{})
	for _, details := range []output.Details{output.DetailsFindings, output.DetailsAll} {
		var out bytes.Buffer
		r, err := output.New(&out, output.Options{Format: output.Markdown, Details: details, Version: testTool,
			Command: "rdmacm-pd dissect -T markdown large-pd.pcap"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		alloc := measure(r) - base
		r.Close()
		report := out.String()
		chars := utf8.RuneCountInString(report)
		if chars > output.DefaultBudget || !strings.Contains(report, "> This report was cut to stay within 65536 characters") ||
			!strings.Contains(report, "left out") {
			t.Errorf("%s: %d characters; %q", details, chars, report[:min(len(report), 400)])
		}
		// Details of n messages would be n × 300 KB; those kept are the
		// budget's worth and one more.
		if alloc > 64<<20 {
			t.Errorf("%s: the report allocated %d MB", details, alloc>>20)
		}
		t.Logf("%s: %d characters, %d MB allocated for the report, %v", details, chars, alloc>>20, time.Since(start))
	}
}
