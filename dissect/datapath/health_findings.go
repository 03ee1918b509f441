package datapath

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// The health tracker's figures and findings: each finding once per
// connection and direction, with its counts and first frames, and the NIC
// counter it lines up with (Linux mlx5 hw_counters) where there is one.

// healthFigures adds the transport's health to a connection's figures.
func (c *Checker) healthFigures(f *record.Datapath) {
	switch {
	case c.hl != nil:
		h := c.hl.figures()
		f.Health = &h
	case c.tcp != nil:
		f.Health = c.tcp.figures()
	}
}

// nakNames are the NAK codes as the findings say them.
var nakNames = [record.NAKCodeCount]string{"PSN sequence error", "invalid request", "remote access error",
	"remote operational error", "invalid RD request"}

// healthFindings are the connection findings of the transport's health.
func (c *Checker) healthFindings() []finding.Finding {
	h := c.hl
	if h == nil {
		return c.tcpFindings()
	}
	fig := h.figures()
	var out []finding.Finding
	for side := range 2 {
		if f, ok := c.nakFinding(side, &fig); ok {
			out = append(out, f)
		}
		if f, ok := c.rnrFinding(side, &fig); ok {
			out = append(out, f)
		}
	}
	for side := range 2 {
		s := &h.sides[side]
		if n := fig.Retransmitted[side]; n > 0 {
			msg := fmt.Sprintf("the %s sent %s again (%s): %s", c.who(side), nOf(n, "packet", "packets"), frameList(s.retxFrames, n),
				retxWhy(n, int(s.retxNAK)))
			if lo, hi := fig.RetransmitMin[side], fig.RetransmitMax[side]; fig.HasRetransmitDelay[side] && lo == hi {
				msg += fmt.Sprintf("; %s after the NAK or the first copy", seconds(lo))
			} else if fig.HasRetransmitDelay[side] {
				msg += fmt.Sprintf("; %s to %s after the NAK or the first copy", seconds(lo), seconds(hi))
			}
			msg += fmt.Sprintf(" (mlx5: duplicate_request at the %s; local_ack_timeout_err at the %s for those after a timeout)",
				c.who(1-side), c.who(side))
			out = append(out, finding.New(finding.RCRetransmission, "%s", msg))
		}
	}
	for side := range 2 {
		if n := fig.Missing[side]; n > 0 {
			out = append(out, finding.New(finding.RCPacketsMissing,
				"%s of the %s's requests %s not in the capture, and no NAK named %s%s: the capture lost %s, not the wire, so every count of this connection is a lower bound",
				nOf(n, "packet", "packets"), c.who(side), isAre(n), plural(n, "it", "them"), c.gapWhere(side), plural(n, "it", "them")))
		}
	}
	for side := range 2 {
		if f, ok := c.congestion(side, &fig); ok {
			out = append(out, f)
		}
	}
	return out
}

// nakFinding is rc-nak for the NAKs side sent.
func (c *Checker) nakFinding(side int, fig *record.Health) (finding.Finding, bool) {
	s := &c.hl.sides[side]
	total := 0
	for _, n := range fig.NAKs[side] {
		total += n
	}
	if total == 0 {
		return finding.Finding{}, false
	}
	var parts []string
	for code, n := range fig.NAKs[side] {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", n, nakNames[code], c.nakDetail(side, code, n)))
		}
	}
	return finding.New(finding.RCNAK, "the %s sent %s (%s): %s", c.who(side), nOf(total, "NAK", "NAKs"),
		frameList(s.nakFrames, total), strings.Join(parts, "; ")), true
}

// nakDetail says what the first NAK of a code that side sent answered,
// and the NIC counters it shows in.
func (c *Checker) nakDetail(side, code, count int) string {
	s := &c.hl.sides[side]
	req, peer := c.who(1-side), c.who(side)
	at := fmt.Sprintf("PSN 0x%06x", s.nakPSN[code])
	if count > 1 {
		at = fmt.Sprintf("the first in frame %d, PSN 0x%06x", s.nakFrame[code], s.nakPSN[code])
	}
	switch code {
	case record.NAKPSNSequenceError:
		return fmt.Sprintf("%s: packets from the %s were lost on the wire, and it sent them again from there; mlx5: out_of_sequence at the %s, packet_seq_err at the %s",
			at, req, peer, req)
	case record.NAKInvalidRequest:
		n := &s.refused
		what := "no Send of the " + req + " seen holds that PSN"
		if n.found {
			what = fmt.Sprintf("it refused the Send of frame %d, %d octets", n.what.frame, n.what.val)
			if n.over > 0 {
				what += fmt.Sprintf(", over the inline threshold of %d", n.over)
			}
		}
		return fmt.Sprintf("%s: %s; mlx5: req_remote_invalid_request at the %s", at, what, req)
	case record.NAKRemoteAccessError:
		n := &s.denied
		what := "no RDMA Write or Read of the " + req + " seen holds that PSN"
		if n.found {
			what = fmt.Sprintf("it answers the %s of frame %d, R_Key 0x%08x", opName(n.what.op), n.what.frame, n.what.val)
			if n.invOK {
				what += fmt.Sprintf(", which the Send With Invalidate of frame %d had invalidated", n.inval.frame)
			}
			if c.violatedAt(n.what.frame) {
				what += ", outside every chunk the Calls offered (chunk-violation)"
			}
		}
		return fmt.Sprintf("%s: %s; mlx5: req_remote_access_errors at the %s", at, what, req)
	}
	return at
}

// opName names an RDMA Write or Read as the findings say it.
func opName(op uint8) string {
	if op == layers.OpReadRequest {
		return "RDMA Read Request"
	}
	return "RDMA Write"
}

// rnrFinding is rc-rnr-nak for the RNR NAKs side sent.
func (c *Checker) rnrFinding(side int, fig *record.Health) (finding.Finding, bool) {
	n := fig.RNRNAKs[side]
	if n == 0 {
		return finding.Finding{}, false
	}
	s := &c.hl.sides[side]
	req := c.who(1 - side)
	msg := fmt.Sprintf("the %s sent %s (%s): it had no receive buffer posted for a Send of the %s, which retried after the RNR timer",
		c.who(side), nOf(n, "RNR NAK", "RNR NAKs"), frameList(s.rnrFrames, n), req)
	if c.rule.IsRPCRDMA() && s.rnrCalls >= 0 {
		grant := "no Reply had granted credits yet (a requester counts on 1)"
		if s.rnrGrant > 0 {
			grant = fmt.Sprintf("the %d credits granted", s.rnrGrant)
		} else if side == 0 {
			grant = "no credits granted on the backchannel"
		}
		msg += fmt.Sprintf("; at the first, %s from the %s %s outstanding against %s", nOf(int(s.rnrCalls), "Call", "Calls"), req,
			wasWere(int(s.rnrCalls)), grant)
		if s.rnrMost > s.rnrCalls {
			msg += fmt.Sprintf(" (at most %d at an RNR NAK)", s.rnrMost)
		}
	}
	msg += fmt.Sprintf("; mlx5: rnr_nak_retry_err at the %s counts those whose retries ran out", req)
	return finding.New(finding.RCRNRNAK, "%s", msg), true
}

// congestion is roce-congestion for the traffic side sent: its packets
// marked CE or FECN, the CNPs and BECNs the other side sent back.
func (c *Checker) congestion(side int, fig *record.Health) (finding.Finding, bool) {
	other := 1 - side
	ce, cnp, fecn, becn := fig.ECNCE[side], fig.CNPs[other], fig.FECN[side], fig.BECN[other]
	if ce+cnp+fecn+becn == 0 {
		return finding.Finding{}, false
	}
	s, o := &c.hl.sides[side], &c.hl.sides[other]
	var parts []string
	if ce > 0 {
		parts = append(parts, fmt.Sprintf("%s marked CE (%s)", nOf(ce, "packet", "packets"), frameList(s.ceFrames, ce)))
	}
	if cnp > 0 {
		parts = append(parts, fmt.Sprintf("%s from the %s (%s)", nOf(cnp, "CNP", "CNPs"), c.who(other), frameList(o.cnpFrames, cnp)))
	}
	if fecn > 0 {
		parts = append(parts, fmt.Sprintf("%s with FECN (%s)", nOf(fecn, "packet", "packets"), frameList(s.fecnFrames, fecn)))
	}
	if becn > 0 {
		parts = append(parts, fmt.Sprintf("%s with BECN from the %s (%s)", nOf(becn, "packet", "packets"), c.who(other), frameList(o.becnFrames, becn)))
	}
	msg := fmt.Sprintf("the %s's traffic met congestion: %s", c.who(side), strings.Join(parts, ", "))
	if ce+cnp > 0 {
		msg += fmt.Sprintf("; mlx5: np_ecn_marked_roce_packets and np_cnp_sent at the %s, rp_cnp_handled at the %s", c.who(other), c.who(side))
	}
	return finding.New(finding.RoCECongestion, "%s", msg), true
}

// gapWhere says where the first gap still missing was seen.
func (c *Checker) gapWhere(side int) string {
	s := &c.hl.sides[side]
	for _, g := range s.gaps[:s.ngaps] {
		for i := range min(g.n, psnWindow) {
			q := (g.from + i) & psnMask
			if (s.next-q)&psnMask > psnWindow || !s.isSeen(q) && !s.isNAKd(q) {
				return fmt.Sprintf(" (the first gap, PSN 0x%06x, before frame %d)", q, g.frame)
			}
		}
	}
	return ""
}

// who names a side: the initiator or the responder, or the side that
// sent first when the setup was not seen.
func (c *Checker) who(side int) string {
	if c.neg.Known {
		return sideNames[side]
	}
	return [2]string{"first side", "second side"}[side]
}

// retxWhy says how many retransmissions came after a NAK.
func retxWhy(n, afterNAK int) string {
	switch afterNAK {
	case n:
		return "all after a NAK"
	case 0:
		return "none after a NAK: after a local ACK timeout, or a NAK the capture missed"
	}
	return fmt.Sprintf("%d after a NAK, %d without one (after a local ACK timeout, or a NAK the capture missed)", afterNAK, n-afterNAK)
}

// frameList names the first frames of n events: "frame 7", "frames 7, 9
// and 12", "first frames 7, 9, 12".
func frameList(fs frames3, n int) string {
	var s []string
	for _, f := range fs {
		if f != 0 {
			s = append(s, fmt.Sprint(f))
		}
	}
	switch {
	case len(s) == 0:
		return "frames not kept"
	case n == 1:
		return "frame " + s[0]
	case n <= len(s):
		return "frames " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
	}
	return "first frames " + strings.Join(s, ", ")
}

// nOf is n with the noun it counts: "1 packet", "3 packets".
func nOf(n int, one, many string) string { return fmt.Sprintf("%d %s", n, plural(n, one, many)) }

func seconds(d time.Duration) string { return fmt.Sprintf("%.6f s", d.Seconds()) }

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
