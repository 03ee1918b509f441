package decode

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// testDecoder is a Decoder whose messages go to the emit function of the
// call that produced them.
type testDecoder struct{ *Decoder }

// NewDecoder makes a testDecoder.
func NewDecoder(name string, cfg Config) *testDecoder { return &testDecoder{New(name, cfg)} }

func (td *testDecoder) Decode(f *capture.Frame, emit func(*record.Message)) {
	messages(td.Decoder.Decode(f), emit)
}

func (td *testDecoder) Flush(emit func(*record.Message)) { messages(td.Decoder.Flush(), emit) }

// messages hands the messages among the events to emit.
func messages(evs []Event, emit func(*record.Message)) {
	for _, e := range evs {
		if e.Message != nil && emit != nil {
			emit(e.Message)
		}
	}
}
