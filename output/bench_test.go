package output_test

import (
	"io"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// BenchmarkRender renders a decoded REQ (the largest CM message) in each
// format: the cost of a message record, which a capture full of connection
// setups pays per message.
func BenchmarkRender(b *testing.B) {
	x := craft.Exchange{Transport: craft.RoCEv2, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}
	frames, err := x.Frames()
	if err != nil {
		b.Fatal(err)
	}
	d := decode.New("bench.pcap", decode.Config{})
	req := d.Decode(&capture.Frame{Data: frames[0].Data, WireLen: len(frames[0].Data), LinkType: 1, Index: 1})[0].Message
	for _, f := range []output.Format{output.JSON, output.Text} {
		b.Run(string(f), func(b *testing.B) {
			r, err := output.New(io.Discard, output.Options{Format: f})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Message(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		f := &capture.Frame{Data: frames[0].Data, WireLen: len(frames[0].Data), LinkType: 1, Index: 1}
		for b.Loop() {
			d.Decode(f)
		}
	})
}
