package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestRecordLengthIssues: a record whose captured length exceeds the snap
// length or its original length is read as captured, flagged, and the
// records after it are read too (pcap and pcapng); a captured length
// beyond the end of the input is still damage.
func TestRecordLengthIssues(t *testing.T) {
	snapNg := newNg(false).idb(1, 100).epb(0, 1, payload(60, 1), 0).epb(0, 2, payload(322, 2), 0).epb(0, 3, payload(50, 3), 0)
	wireNg := newNg(true).idb(1, 0).epb(0, 1, payload(40, 1), 20).epb(0, 2, payload(30, 2), 0)
	for _, tc := range []struct {
		name string
		file []byte
		want []RecordIssue // per frame
		snap []uint32
	}{
		{"pcap over the snap length", newPcap(false, false, 200, 1).rec(0, 0, payload(100, 1), 0).rec(0, 0, payload(322, 2), 0).
			rec(0, 0, payload(60, 3), 0).b, []RecordIssue{0, OverSnap, 0}, []uint32{200, 200, 200}},
		{"pcap over the original length", newPcap(false, true, 65535, 1).rec(0, 0, payload(100, 1), 60).rec(0, 0, payload(10, 2), 0).b,
			[]RecordIssue{OverWire, 0}, []uint32{65535, 65535}},
		{"pcap over both", newPcap(true, false, 50, 1).rec(0, 0, payload(100, 1), 60).b, []RecordIssue{OverSnap | OverWire}, []uint32{50}},
		{"pcapng over the interface snap length", snapNg.b, []RecordIssue{0, OverSnap, 0}, []uint32{100, 100, 100}},
		{"pcapng over the original length", wireNg.b, []RecordIssue{OverWire, 0}, []uint32{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.file), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var issues []RecordIssue
			var snaps []uint32
			for {
				f, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("after %d frames: %v", len(issues), err)
				}
				if f.Index != len(issues)+1 {
					t.Errorf("frame index %d, want %d", f.Index, len(issues)+1)
				}
				issues, snaps = append(issues, f.Issue), append(snaps, f.SnapLen)
			}
			if fmt.Sprint(issues) != fmt.Sprint(tc.want) || fmt.Sprint(snaps) != fmt.Sprint(tc.snap) {
				t.Errorf("issues %v snap lengths %v, want %v %v", issues, snaps, tc.want, tc.snap)
			}
		})
	}
	// Beyond the end of the input: damage, after the frames before it.
	cut := newPcap(false, false, 200, 1).rec(0, 0, payload(100, 1), 0).recHeader(0, 0, 322, 322).raw(payload(50, 2)).b
	_, frames, err := readBytes(cut, ReaderOptions{})
	if len(frames) != 1 || !errors.Is(err, ErrTruncated) || err.Error() != "frame 2 at offset 140: record cut short: 50 of 322 octets" {
		t.Errorf("%d frames, %v", len(frames), err)
	}
}
