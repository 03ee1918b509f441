package capture_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// truncator cuts its file short at the first message it gets, while the
// file is being read through its mapping.
type truncator struct {
	collect
	path string
	at   int64
	done bool
}

func (s *truncator) Message(m *record.Message) error {
	if !s.done {
		s.done = true
		if err := os.Truncate(s.path, s.at); err != nil {
			return err
		}
	}
	return s.collect.Message(m)
}

// A capture file truncated by another program while it is read through
// its mapping: the fault is the file's error, one line naming it, after
// what came before; no crash.
func TestMappedFileTruncated(t *testing.T) {
	var b bytes.Buffer // records of 2.8 KiB on average: read through a mapping
	if _, err := (craft.NFSWorkload{Size: 12 << 20, Seed: 3}).Write(&b); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, other := filepath.Join(dir, "cut.pcap"), filepath.Join(dir, "other.pcap")
	for _, p := range []string{path, other} {
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The first CM REQ is frame 1: cut the file at 500 000 octets, inside
	// the window being read.
	s := &truncator{path: path, at: 500000}
	sum, err := dissect.Run(context.Background(), []string{path, other}, nil, dissect.Config{}, s)
	if err == nil || !strings.Contains(err.Error(), "cut.pcap: the file changed while it was read (a memory fault at") {
		t.Fatalf("error %v", err)
	}
	if len(sum.Inputs) != 2 || sum.Inputs[0].Err == nil || sum.Inputs[1].Err != nil || sum.DecodeErrors != 1 {
		t.Fatalf("inputs %+v", sum.Inputs)
	}
	if sum.Inputs[0].Frames == 0 || sum.Inputs[1].Frames <= sum.Inputs[0].Frames {
		t.Errorf("frames %d then %d", sum.Inputs[0].Frames, sum.Inputs[1].Frames)
	}
}

// A file that became shorter before the next window is taken ends there
// with an error, without a fault.
func TestMappedFileShrankBetweenWindows(t *testing.T) {
	var b bytes.Buffer
	if _, err := (craft.NFSWorkload{Size: 20 << 20, Seed: 4}).Write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shrink.pcap")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &truncator{path: path, at: 5 << 20} // past the first windows
	_, err := dissect.Run(context.Background(), []string{path}, nil, dissect.Config{}, s)
	if err == nil || !strings.Contains(err.Error(), "became shorter while it was read") {
		t.Fatalf("error %v", err)
	}
}
