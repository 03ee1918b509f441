package mpa

import (
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// A direction whose Request was shown is remembered exactly: after other
// flows came and went, a retransmission of the Request (and of its SYN) is
// not shown a second time; a SYN with another ISN is a new connection, whose
// Request is shown. (The old reassembler kept a lossy cache of flow hashes,
// where another flow could take the direction's slot; the flow table now
// compares whole 4-tuples.)
func TestTCPRetransmittedRequestOnce(t *testing.T) {
	req := rpcRequest(2)
	at := craft.DefaultStart
	r := newSegRun(reassembly.Options{})
	r.at(1, 1000, true, nil, 1, at)
	r.at(1, 1001, false, req, 2, at)
	for i := range 5000 {
		r.at(100+i, 5000, true, nil, 3, at)
		r.at(100+i, 5001, false, []byte("GET / HTTP/1.1\r\n"), 4, at)
	}
	r.at(1, 1001, false, req, 5, at.Add(200*time.Millisecond))
	r.at(1, 1000, true, nil, 6, at.Add(300*time.Millisecond))
	r.flush()
	if len(r.got) != 1 || r.got[0].Frame != 2 {
		t.Fatalf("%d messages for one MPA Request", len(r.got))
	}
	// A SYN with another ISN is a new connection: its Request is shown.
	r.at(1, 7000, true, nil, 7, at.Add(time.Second))
	r.at(1, 7001, false, req, 8, at.Add(time.Second))
	if len(r.got) != 2 || r.got[1].Frame != 8 {
		t.Fatalf("%d messages after a new connection", len(r.got))
	}
}
