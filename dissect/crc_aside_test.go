package dissect_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// inlineSource hides the file source's Releaser: the run loop then checks
// every FPDU's CRC at once, as before the checks aside.
type inlineSource struct{ dissect.Source }

// TestCRCAsideSameVerdicts spoils the CRC fields of many FPDUs of an iWARP
// workload (in connections with and without markers, some to a wrong
// value, some to zero) and requires the same records from a file whose
// whole FPDUs are checked on another goroutine as from the same file
// checked at once: the same connections, with the same mpa-crc-mismatch
// and mpa-crc-missing findings, which name the same first frames and
// count the same FPDUs, at GOMAXPROCS 1, 2 and 8 (on two cores or fewer
// the framer checks its batches itself, above them a worker does).
func TestCRCAsideSameVerdicts(t *testing.T) {
	b, counts := spoiledWorkload(t)
	path := filepath.Join(t.TempDir(), "crc.pcap")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(inline bool) *dpCollect {
		src := dissect.File(path, nil, false)
		if inline {
			src = inlineSource{src}
		}
		var c dpCollect
		if _, err := dissect.RunSources(context.Background(), []dissect.Source{src}, dissect.Config{}, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	inline := run(true)
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			sameVerdicts(t, run(false), inline, counts.Conns)
		})
	}
}

// summingSource counts the sums the read-ahead computes for the run, and
// spoils them when asked.
type summingSource struct {
	dissect.Source
	n     *atomic.Int64
	spoil bool
}

func (s summingSource) SetSummer(fn capture.Summer, wanted func() bool) {
	s.Source.(capture.Summed).SetSummer(func(link uint16, data []byte, out []capture.Sum) []capture.Sum {
		k := len(out)
		out = fn(link, data, out)
		s.n.Add(int64(len(out) - k))
		if s.spoil {
			for i := range out[k:] {
				out[k+i].Value ^= 1
			}
		}
		return out
	}, wanted)
}

// TestCRCSummedSameVerdicts: with the FPDU CRCs computed as the file is
// read ahead (decode.FPDUSums; the file comes through a pipe-like reader,
// which is read ahead, never mapped), the spoiled CRCs of
// TestCRCAsideSameVerdicts get the same verdicts as when checked at once,
// at GOMAXPROCS 1 (where none are computed ahead), 2 and 8. Sums spoiled
// on purpose change the verdicts: the framer takes them.
func TestCRCSummedSameVerdicts(t *testing.T) {
	b, counts := spoiledWorkload(t)
	run := func(src dissect.Source) *dpCollect {
		var c dpCollect
		if _, err := dissect.RunSources(context.Background(), []dissect.Source{src}, dissect.Config{}, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	piped := func() dissect.Source { return dissect.File("-", bytes.NewReader(b), false) }
	inline := run(inlineSource{piped()})
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var n atomic.Int64
			sameVerdicts(t, run(summingSource{piped(), &n, false}), inline, counts.Conns)
			// On one core the framer computes them all; above, the
			// read-ahead computes those of the chunks read after the
			// first connection with CRC was followed.
			switch {
			case procs == 1 && n.Load() != 0:
				t.Errorf("%d FPDUs summed ahead on one core", n.Load())
			case procs > 1 && n.Load() < int64(counts.Frames)/2:
				t.Errorf("%d FPDUs summed ahead of %d frames", n.Load(), counts.Frames)
			}
		})
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var n atomic.Int64
	spoilt := run(summingSource{piped(), &n, true})
	if reflect.DeepEqual(spoilt.conns, inline.conns) {
		t.Error("sums spoiled on purpose changed no verdict")
	}
}

// sameVerdicts compares the connections and rpc records of a run that
// checked CRCs aside with those of one that checked them at once.
func sameVerdicts(t *testing.T, aside, inline *dpCollect, conns int) {
	t.Helper()
	if len(aside.conns) != conns || len(inline.conns) != conns {
		t.Fatalf("%d and %d connections, want %d", len(aside.conns), len(inline.conns), conns)
	}
	found := map[string]int{}
	for i, c := range aside.conns {
		for _, f := range c.Findings {
			found[f.Code.String()]++
		}
		if !reflect.DeepEqual(c.Findings, inline.conns[i].Findings) || !reflect.DeepEqual(c.Datapath, inline.conns[i].Datapath) {
			t.Errorf("connection %d: checked aside %v, at once %v", i, c.Findings, inline.conns[i].Findings)
		}
	}
	if found["mpa-crc-mismatch"] == 0 || found["mpa-crc-missing"] == 0 {
		t.Fatalf("findings %v: the spoiled CRCs were not all seen", found)
	}
	if !reflect.DeepEqual(frameList(aside.rpcs), frameList(inline.rpcs)) {
		t.Errorf("rpc records differ")
	}
}

// spoiledWorkload is a 6 MiB iWARP workload (12 connections, with and
// without markers) whose CRCs spoilCRCs spoiled, and its counts.
func spoiledWorkload(t *testing.T) ([]byte, craft.IWARPWorkloadCounts) {
	t.Helper()
	var buf bytes.Buffer
	counts, err := (craft.IWARPWorkload{Size: 6 << 20, Seed: 5, Conns: 12, ReadSize: 16 << 10}).Write(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if spoiled := spoilCRCs(b); spoiled < 100 {
		t.Fatalf("only %d FPDUs spoiled", spoiled)
	}
	return b, counts
}

// spoilCRCs changes the last four octets of every 7th TCP segment that
// carries data after the MPA exchange (where an FPDU aligned with its
// segment keeps its CRC): every other one to zero, the rest flipped. It
// returns how many it changed.
func spoilCRCs(b []byte) int {
	n, seen := 0, 0
	for off := 24; off+16 <= len(b); {
		l := int(binary.LittleEndian.Uint32(b[off+8:]))
		fr := b[off+16 : off+16+l]
		off += 16 + l
		if len(fr) < 54 || binary.BigEndian.Uint16(fr[12:]) != 0x0800 || fr[23] != 6 {
			continue
		}
		ihl := int(fr[14]&0x0f) * 4
		doff := int(fr[14+ihl+12]>>4) * 4
		payload := fr[14+ihl+doff:]
		if len(payload) < 1000 { // the MPA frames and the handshake
			continue
		}
		if seen++; seen%7 != 0 {
			continue
		}
		crc := payload[len(payload)-4:]
		if n%2 == 0 {
			copy(crc, []byte{0, 0, 0, 0})
		} else {
			crc[0] ^= 0x5a
		}
		n++
	}
	return n
}
