package decode

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/craft"
)

// A direction whose Request was shown is remembered exactly: when another
// flow takes its slot in the lossy verdict cache, a retransmission of the
// Request is still not shown a second time.
func TestTCPVerdictCollisionNoDuplicate(t *testing.T) {
	req := rpcRequest(2)
	at := craft.DefaultStart
	r := newSegRun(Config{})
	d := r.d
	a := tcpSeg{seq: 1000, syn: true, frame: 1, time: at}
	binary.BigEndian.PutUint32(a.key.src[12:], 0xc0000201)
	binary.BigEndian.PutUint32(a.key.dst[12:], 0xc0000202)
	a.key.sport, a.key.dport = 40000, 20049
	slot := d.tcp.hash(&a.key) & (verdictSlots - 1)
	// Another flow whose hash falls in the same slot.
	b := a
	b.key.sport = 50000
	found := false
	for ip := uint32(0x0a000000); ip < 0x0a000000+1<<24; ip++ {
		binary.BigEndian.PutUint32(b.key.src[12:], ip)
		if d.tcp.hash(&b.key)&(verdictSlots-1) == slot {
			found = true
			break
		}
	}
	if !found {
		t.Fatal("no flow shares the slot")
	}
	feed := func(s tcpSeg, seq uint32, syn bool, p []byte, frame int, when time.Time) {
		s.seq, s.syn, s.payload, s.wirePayload, s.frame, s.time = seq, syn, p, len(p), frame, when
		d.segment(&s, r.emit)
	}
	feed(a, 1000, true, nil, 1, at)
	feed(a, 1001, false, req, 2, at)
	feed(b, 5000, true, nil, 3, at)
	feed(b, 5001, false, []byte("GET / HTTP/1.1\r\n"), 4, at)
	feed(a, 1001, false, req, 5, at.Add(200*time.Millisecond))
	feed(a, 1000, true, nil, 6, at.Add(300*time.Millisecond))
	d.Flush(r.emit)
	if len(r.got) != 1 || r.got[0].Frame != 2 {
		t.Fatalf("%d messages for one MPA Request", len(r.got))
	}
	// A SYN with another ISN is a new connection: its Request is shown.
	feed(a, 7000, true, nil, 7, at.Add(time.Second))
	feed(a, 7001, false, req, 8, at.Add(time.Second))
	if len(r.got) != 2 || r.got[1].Frame != 8 {
		t.Fatalf("%d messages after a new connection", len(r.got))
	}
}

// The flow hash is fixed: two decoders agree (a run is deterministic).
func TestTCPHashDeterministic(t *testing.T) {
	var k flowKey
	k.sport, k.dport = 1, 2
	if NewDecoder("a", Config{}).tcp.hash(&k) != NewDecoder("b", Config{}).tcp.hash(&k) {
		t.Fatal("the flow hash differs between decoders")
	}
}
