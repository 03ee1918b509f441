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
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
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
	var buf bytes.Buffer
	counts, err := (craft.IWARPWorkload{Size: 6 << 20, Seed: 5, Conns: 12, ReadSize: 16 << 10}).Write(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	spoiled := spoilCRCs(b)
	if spoiled < 100 {
		t.Fatalf("only %d FPDUs spoiled", spoiled)
	}
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
