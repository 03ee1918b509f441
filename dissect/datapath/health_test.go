package datapath

import (
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The health tracker (health.go) packet by packet, on the rig of
// follower_test.go: the initiator's requests start at PSN 1000, the
// responder's at 5000.

func (r *rig) health() *record.Health {
	h := r.chk().hl.figures()
	return &h
}

// TestHealthWindow: a gap that a NAK names and a retransmission fills is
// no missing packet; one the capture put out of order is neither missing
// nor retransmitted; one nothing fills is missing; a PSN seen before is a
// retransmission, timed from the NAK or from its first copy.
func TestHealthWindow(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 1000, 5000, true)
	w := func(psn uint32) { r.pkt(0, layers.OpWriteOnly, psn, make([]byte, 16), -1, nil) }
	w(1000)
	w(1002) // 1001 lost on the wire
	r.pkt(1, layers.OpAcknowledge, 1001, nil, -1, aeth(0x60))
	w(1001) // filled after the NAK: a retransmission
	w(1002) // seen before: a retransmission
	w(1004) // 1003: the capture puts it later
	w(1003)
	w(1006) // 1005: never seen, no NAK
	h := r.health()
	if h.Retransmitted != [2]int{2, 0} || h.Missing != [2]int{1, 0} || h.NAKs[1][record.NAKPSNSequenceError] != 1 ||
		!h.HasRetransmitDelay[0] || h.RetransmitMin[0] != 0 && h.RetransmitMin[0] > h.RetransmitMax[0] {
		t.Errorf("%+v", h)
	}
	if h.Octets[0][record.OctetsWrite] != 16*6 {
		t.Errorf("octets %v: retransmissions count once", h.Octets[0])
	}
	// A gap wider than the window: missing at once, as it leaves.
	w(1006 + 1 + psnWindow + 10)
	if h := r.health(); h.Missing[0] != 1+psnWindow+10 {
		t.Errorf("missing %d", h.Missing[0])
	}
}

// TestHealthDelay: the delay is from the NAK when one came after the first
// copy, else from the first copy.
func TestHealthDelay(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 1000, 5000, true)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	send := func(psn uint32, us int) {
		r.pkt(0, layers.OpSendOnly, psn, make([]byte, 28), -1, func(p *Packet) { p.Time = at.Add(time.Duration(us) * time.Microsecond) })
	}
	send(1000, 0)
	send(1000, 500) // a timeout: 500 µs after the first copy
	r.pkt(1, layers.OpAcknowledge, 1000, nil, -1, func(p *Packet) {
		p.Syndrome, p.HasAETH, p.Time = 0x20|0x0e, true, at.Add(600*time.Microsecond) // an RNR NAK
	})
	send(1001, 700)
	send(1001, 800) // the RNR NAK came before its first copy: 100 µs from that
	h := r.health()
	if h.Retransmitted[0] != 2 || h.RetransmitMin[0] != 100*time.Microsecond || h.RetransmitMax[0] != 500*time.Microsecond {
		t.Errorf("%+v", h)
	}
}

// TestHealthReadResponses: a READ Response at or before the last the
// responder sent is sent again; the octets count once.
func TestHealthReadResponses(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 1000, 5000, true)
	r.pkt(0, layers.OpReadRequest, 1000, nil, -1, dma(512))
	r.pkt(1, layers.OpReadResponseFirst, 1000, make([]byte, 256), -1, aeth(0x1f))
	r.pkt(1, layers.OpReadResponseLast, 1001, make([]byte, 256), -1, aeth(0x1f))
	r.pkt(1, layers.OpReadResponseLast, 1001, make([]byte, 256), -1, aeth(0x1f))
	h := r.health()
	if h.Retransmitted != [2]int{0, 1} || h.Octets[1][record.OctetsReadResponse] != 512 || h.ACKs != [2]int{} {
		t.Errorf("%+v", h)
	}
}

// TestHealthCongestion: CE marks and FECN count by sender, CNPs by the
// side that sent them, with their DSCP apart.
func TestHealthCongestion(t *testing.T) {
	r := newRig(t, ModeFindings, Limits{}, 1000, 5000, true)
	mark := func(dscp, ecn uint8) func(*Packet) {
		return func(p *Packet) { p.DSCP, p.ECN, p.HasTClass = dscp, ecn, true }
	}
	r.pkt(0, layers.OpWriteOnly, 1000, make([]byte, 16), -1, mark(26, 2))
	r.pkt(0, layers.OpWriteOnly, 1001, make([]byte, 16), -1, mark(26, 3))
	r.pkt(1, layers.OpCNP, 0, make([]byte, 16), -1, func(p *Packet) { mark(48, 0)(p); p.BECN = true })
	r.pkt(1, layers.OpAcknowledge, 1001, nil, -1, func(p *Packet) { mark(26, 2)(p); aeth(0x1f)(p) })
	h := r.health()
	if h.ECNCE != [2]int{1, 0} || h.CNPs != [2]int{0, 1} || h.DSCP != [2]uint8{26, 26} || h.CNPDSCP != 48 || h.BECN != [2]int{} ||
		h.ACKs != [2]int{0, 1} {
		t.Errorf("%+v", h)
	}
	fs := r.chk().healthFindings()
	if len(fs) != 1 || fs[0].Code.String() != "roce-congestion" {
		t.Errorf("%v", fs)
	}
}

// FuzzHealth: any sequence of packets keeps the tracker's counts sane and
// its state within its window, and never panics.
func FuzzHealth(f *testing.F) {
	f.Add([]byte{0, 0x0a, 0, 0, 0, 0x0a, 2, 0, 1, 0x11, 1, 0x60, 0, 0x0a, 1, 0})
	f.Add([]byte{0, 0x04, 0, 0, 1, 0x11, 0, 0x2e, 0, 0x04, 0, 0, 1, 0x81, 0, 0, 0, 0x0c, 9, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newRig(t, ModeFindings, Limits{}, 1000, 5000, true)
		sent := 0
		for ; len(b) >= 4; b = b[4:] {
			side, op, d, x := int(b[0]&1), b[1], uint32(b[2]), b[3]
			psn := uint32(1000) + d*uint32(1+x%3)
			if side == 1 {
				psn = 5000 + d
			}
			r.pkt(side, op, psn, make([]byte, int(x%64)), -1, func(p *Packet) {
				p.Syndrome, p.HasAETH, p.DMALength = x, x&0x80 == 0, uint32(x)*40
				p.ECN, p.HasTClass, p.FECN, p.BECN = x&3, true, x&4 != 0, x&8 != 0
			})
			sent++
		}
		if r.fl.byConn[1] == nil || r.chk() == nil {
			return
		}
		h := r.health()
		for side := range 2 {
			if h.Retransmitted[side] > sent || h.Missing[side] < 0 || h.ACKs[side]+h.NAKTotal(side) > sent ||
				h.HasRetransmitDelay[side] && (h.RetransmitMin[side] < 0 || h.RetransmitMin[side] > h.RetransmitMax[side]) {
				t.Fatalf("side %d: %+v", side, h)
			}
		}
		_ = r.chk().healthFindings()
	})
}
