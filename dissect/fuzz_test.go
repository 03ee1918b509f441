package dissect

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// FuzzDissectFile runs the whole pipeline over arbitrary octets read as a
// capture file. No panic, no hang, and a summary at the end.
func FuzzDissectFile(f *testing.F) {
	for _, name := range []string{"../pcaps/rocev2-nfs.pcap", "../pcaps/rocev2-ipv6.pcapng", "../pcaps/iwarp-split-ipv6.pcapng",
		"../pcaps/infiniband.pcap", "../pcaps/rocev2-nvme-reject.pcap", "../pcaps/iwarp-iser.pcap",
		"../pcaps/rocev2-nfs-traffic.pcap", "../pcaps/iwarp-nfs-traffic.pcap"} { // the last two: the data path
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s fuzzSink
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sum, _ := Run(ctx, []string{"-"}, bytes.NewReader(data), Config{Hash: true}, &s)
		if ctx.Err() != nil {
			t.Fatalf("the run did not end within 10 s on %d octets", len(data))
		}
		if !s.summary || sum == nil || sum.Messages != s.messages {
			t.Fatalf("summary %v, %d messages handed on", sum, s.messages)
		}
		// The whole input is read (and counted) unless it is damaged.
		if size := sum.Inputs[0].Size; size < 0 || size > int64(len(data)) || (sum.DecodeErrors == 0 && size != int64(len(data))) {
			t.Fatalf("size %d of %d octets (decode errors %d)", size, len(data), sum.DecodeErrors)
		}
	})
}

type fuzzSink struct {
	NopSink
	messages int
	summary  bool
}

func (s *fuzzSink) Message(*record.Message) error       { s.messages++; return nil }
func (s *fuzzSink) Summary(*record.Summary) error       { s.summary = true; return nil }
func (s *fuzzSink) Connection(*record.Connection) error { return nil }

// The FuzzDissectFile corpus holds a gzip seed and an ERF seed.
func TestFuzzFileCorpus(t *testing.T) {
	files, err := os.ReadDir("testdata/fuzz/FuzzDissectFile")
	if err != nil {
		t.Fatal(err)
	}
	var gz, erf bool
	for _, e := range files {
		b, _ := os.ReadFile("testdata/fuzz/FuzzDissectFile/" + e.Name())
		body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(strings.Split(string(b), "\n")[1], "[]byte("), ")"))
		if err != nil {
			continue
		}
		gz = gz || strings.HasPrefix(body, "\x1f\x8b")
		erf = erf || len(body) >= 24 && body[1] == 0x3c && body[2] == 0xb2 && body[20] == layers.LinkTypeERF // little-endian pcap
	}
	if !gz || !erf {
		t.Errorf("FuzzDissectFile corpus: gzip seed %v, ERF seed %v", gz, erf)
	}
}

func (*fuzzSink) Update(*record.ConnectionUpdate) error { return nil }
