package dissect_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// ipv4Fragment turns the IPv4 packet of an Ethernet frame (header at 14,
// 20 octets) into a fragment: the fragment offset in octets (a multiple of
// 8) and More Fragments; keep is how many octets of IP payload it carries.
func ipv4Fragment(f []byte, offset int, more bool, keep int) []byte {
	c := slices.Clone(f[:14+20+keep])
	v := uint16(offset / 8)
	if more {
		v |= 0x2000
	}
	binary.BigEndian.PutUint16(c[14+6:], v)
	binary.BigEndian.PutUint16(c[14+2:], uint16(20+keep))
	return c
}

// ipv6Fragment puts an IPv6 Fragment header between the IPv6 header (at 14,
// 40 octets) of an Ethernet frame and its payload.
func ipv6Fragment(f []byte, offset int, more bool, keep int) []byte {
	nh := f[14+6]
	v := uint16(offset)
	if more {
		v |= 1
	}
	fh := []byte{nh, 0, byte(v >> 8), byte(v), 0, 0, 0, 7}
	c := slices.Concat(f[:14+40], fh, f[14+40:14+40+keep])
	c[14+6] = 44
	binary.BigEndian.PutUint16(c[14+4:], uint16(8+keep))
	return c
}

// TestIPFragments: IP fragments are reassembled; a datagram that never
// completes is counted at the end of the input only when its offset-0
// fragment showed the start of a CM MAD or an MPA frame, and nothing else
// is: later fragments, and first fragments of other traffic.
func TestIPFragments(t *testing.T) {
	cm4, _ := cmFrame(t, craft.CM{Msg: rep(rpc(1, 0, 3, 3))})
	a6, b6 := craft.Endpoints(0, true)
	cm6, _ := cmFrame(t, craft.CM{Src: a6, Dst: b6, Msg: rep(rpc(1, 0, 3, 3))})
	other4, _ := cmFrame(t, craft.CM{Msg: rep(nil), DstPort: 4000})
	mpa := mpaBytes(craft.MPA{Request: true, Rev: 2, Data: rpc(1, 0, 3, 3)})
	tcp4 := tcpFrames(t, false, []seg{{fromA: true, payload: mpa}})[0]
	tcp6 := tcpFrames(t, true, []seg{{fromA: true, payload: mpa}})[0]
	http4 := tcpFrames(t, false, []seg{{fromA: true, payload: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")}})[0]
	for _, tc := range []struct {
		name  string
		frame []byte
		want  int
	}{
		{"IPv4 first fragment of a CM MAD", ipv4Fragment(cm4, 0, true, 96), 1},
		{"IPv4 later fragment of a CM MAD", ipv4Fragment(cm4, 96, false, 96), 0},
		{"IPv4 first fragment to another UDP port", ipv4Fragment(other4, 0, true, 96), 0},
		{"IPv6 first fragment of a CM MAD", ipv6Fragment(cm6, 0, true, 96), 1},
		{"IPv6 later fragment of a CM MAD", ipv6Fragment(cm6, 96, false, 96), 0},
		{"IPv4 first fragment of an MPA Request", ipv4Fragment(tcp4, 0, true, 40), 1},
		{"IPv4 first fragment cut inside the key prefix", ipv4Fragment(tcp4, 0, true, 24), 0},
		{"IPv6 first fragment of an MPA Request", ipv6Fragment(tcp6, 0, true, 40), 1},
		{"IPv4 first fragment of other TCP", ipv4Fragment(http4, 0, true, 40), 0},
		// DF alone is not a fragment: the frame decodes as usual.
		{"IPv4 whole packet", cm4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := 0
			d := newDecoder("t", decode.Config{}, func(*record.Message) { msgs++ })
			// The same fragment twice: one datagram, never complete.
			for i := 1; i <= 2; i++ {
				d.Decode(&capture.Frame{Data: tc.frame, WireLen: len(tc.frame), LinkType: 1, Index: i, Time: craft.DefaultStart})
			}
			d.Flush()
			n, first := d.Fragments()
			wantFirst, wantMsgs := 0, 0
			if tc.want > 0 {
				wantFirst = 1
			}
			if tc.name == "IPv4 whole packet" {
				wantMsgs = 2
			}
			if n != tc.want || first != wantFirst || msgs != wantMsgs {
				t.Errorf("fragments %d (first %d), messages %d; want %d (first %d), %d", n, first, msgs, tc.want, wantFirst, wantMsgs)
			}
		})
	}

	// In a run, the count becomes one run-level finding for the input; the
	// two fragments of frames 2 and 3 make a datagram (cut short by its own
	// IP length: length-mismatch), the one of frame 4 never completes.
	p := filepath.Join(t.TempDir(), "frag.pcap")
	frames := []craft.Frame{
		{Data: cm4, LinkType: 1, Time: craft.DefaultStart},
		{Data: ipv4Fragment(cm4, 0, true, 96), LinkType: 1, Time: craft.DefaultStart},
		{Data: ipv4Fragment(cm4, 96, false, 96), LinkType: 1, Time: craft.DefaultStart},
		{Data: ipv4Fragment(tcp4, 0, true, 40), LinkType: 1, Time: craft.DefaultStart},
	}
	if err := craft.WriteFile(p, frames); err != nil {
		t.Fatal(err)
	}
	var c collect
	sum, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c)
	if err != nil {
		t.Fatal(err)
	}
	want := p + ": 1 IP datagram whose first fragment holds the start of a CM MAD or an MPA frame was not reassembled (first at frame 4): " +
		"1 incomplete at the end of the input (fragments missing from the capture); no message is shown for them"
	if len(c.msgs) != 2 || c.msgs[1].Frame != 3 || !slices.Equal(c.msgs[1].Frames, []int{2, 3}) ||
		!hasFinding(c.msgs[1].Findings, finding.LengthMismatch) || len(sum.Notes) != 1 || sum.Notes[0].Code != finding.IPFragmentSkipped || sum.Notes[0].Message != want ||
		sum.Notes[0].Severity != finding.Warning || sum.Findings[finding.IPFragmentSkipped] != 1 {
		t.Errorf("%d messages, notes %+v", len(c.msgs), sum.Notes)
	}
}
