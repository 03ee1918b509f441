package mpa

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// FuzzReassembly drives the MPA reassembler with a script of segments cut
// from an MPA Request (or from arbitrary octets): each 4-octet step is an
// offset, a length and flags (SYN, FIN, RST, retransmission). Properties: no
// panic; memory accounting never goes negative nor above the limits; a
// completed frame is the original one when the input was a valid Request.
func FuzzReassembly(f *testing.F) {
	req := rpcRequest(2)
	f.Add(true, []byte{0, 0, 0, 1, 0, 7, 0, 0, 7, 25, 0, 0})
	f.Add(true, []byte{20, 12, 0, 0, 0, 20, 0, 0})
	f.Add(false, bytes.Repeat([]byte{3, 9, 1, 0}, 10))
	f.Add(true, []byte{0, 0, 1, 0, 0, 7, 0, 0, 7, 25, 0, 0, 0xff, 0xfb})                     // the ISN 4 octets before the wrap
	f.Add(true, []byte{0, 0, 1, 0, 0, 20, 0, 0, 0, 3, 9, 0, 0, 28, 0, 0, 0, 28, 2, 0, 0xf0}) // a new ISN mid-frame
	f.Add(true, []byte{20, 12, 2, 0, 0, 20, 0, 0, 0, 0, 4, 200, 0, 9, 0, 250})               // FIN first; an RST; time jumps
	f.Fuzz(func(t *testing.T, useReq bool, script []byte) {
		stream := req
		if !useReq {
			stream = script
		}
		lim := reassembly.Options{StreamBytes: 64, TotalBytes: 200, Flows: 2, MaxEarlySegs: 3}
		r := newSegRun(lim)
		// The octets after the last whole step choose the initial sequence
		// number (near the wrap when present); a SYN with flag 8 starts a new
		// connection, its ISN moved by the step's length octet.
		isn := uint32(999)
		if tail := script[len(script)&^3:]; len(tail) > 0 {
			isn = ^uint32(0)
			for _, b := range tail {
				isn = isn<<8 | uint32(b)
			}
		}
		var s reassembly.Segment
		for i := 0; i+4 <= len(script) && i < 400; i += 4 {
			off, n, fl := int(script[i]), int(script[i+1]), script[i+2]
			if fl&9 == 9 {
				isn += uint32(n)<<16 | 1
			}
			s = reassembly.Segment{Seq: isn + 1 + uint32(off), Frame: i/4 + 1, SYN: fl&1 != 0, FIN: fl&2 != 0, RST: fl&4 != 0,
				Time: craft.DefaultStart.Add(time.Duration(i) * time.Duration(script[i+3]) * time.Millisecond)}
			s.Flow.SrcPort, s.Flow.DstPort = 40000+uint16(script[i+3]%3), 20049
			binary.BigEndian.PutUint32(s.Flow.Src[12:], 0xc0000201)
			if s.SYN {
				s.Seq = isn
			} else if off < len(stream) {
				end := min(off+n, len(stream))
				s.Payload = stream[off:end]
				s.WireLen = len(s.Payload) + int(fl>>4)
			}
			r.a.Segment(&s)
			if st := r.a.Stats(); st.Held < 0 || st.Held > lim.TotalBytes || st.Followed > lim.Flows {
				t.Fatalf("state: %d octets held, %d flows", st.Held, st.Followed)
			}
		}
		r.flush()
		if st := r.a.Stats(); st.Held != 0 || st.Followed != 0 {
			t.Fatalf("after the flush: %d octets, %d flows", st.Held, st.Followed)
		}
		for _, m := range r.got {
			if useReq && m.Findings == nil && !bytes.Equal(m.PrivateData, req[20:]) {
				t.Fatalf("a complete, clean Request with private data %x, want %x", m.PrivateData, req[20:])
			}
		}
	})
}
