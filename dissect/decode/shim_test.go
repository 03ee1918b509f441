package decode

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// testDecoder is a Decoder whose messages go to the emit function of the
// call that produced them.
type testDecoder struct {
	*Decoder
	out func(*record.Message)
}

// NewDecoder makes a testDecoder.
func NewDecoder(name string, cfg Config) *testDecoder {
	td := &testDecoder{}
	td.Decoder = New(name, cfg, func(m *record.Message) {
		if td.out != nil {
			td.out(m)
		}
	})
	return td
}

func (td *testDecoder) Decode(f *capture.Frame, emit func(*record.Message)) {
	td.out = emit
	td.Decoder.Decode(f)
}

func (td *testDecoder) Flush(emit func(*record.Message)) {
	td.out = emit
	td.Decoder.Flush()
}
