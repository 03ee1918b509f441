package dissect_test

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// emitDecoder is a Decoder whose messages go to emit as the run loop would
// hand them on (tests that look at the decoder alone).
type emitDecoder struct {
	*decode.Decoder
	emit func(*record.Message)
}

func newDecoder(name string, cfg decode.Config, emit func(*record.Message)) *emitDecoder {
	return &emitDecoder{decode.New(name, cfg), emit}
}

func (d *emitDecoder) Decode(f *capture.Frame) { d.messages(d.Decoder.Decode(f)) }

func (d *emitDecoder) Flush() { d.messages(d.Decoder.Flush()) }

func (d *emitDecoder) messages(evs []decode.Event) {
	for _, e := range evs {
		if e.Message != nil {
			d.emit(e.Message)
		}
	}
}
