package output

import (
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The transport's health in each format: the keys of a connection's
// "datapath" object (RC: ACKs, NAKs, retransmissions, missing packets,
// congestion, octets, DSCP; iWARP: the TCP stream's), and the Transport
// table of the text and Markdown reports (healthtable.go).

// directions are the keys of a per-direction object, by side.
var directions = [2]string{"initiator_to_responder", "responder_to_initiator"}

// appendHealth writes the health keys of a "datapath" object.
func appendHealth(j *jw, h *record.Health) {
	if h == nil {
		return
	}
	perSide := func(key string, v [2]int) {
		j.key(key)
		j.obj()
		for i, d := range directions {
			j.kint(d, int64(v[i]))
		}
		j.end()
	}
	if h.Kind == record.HealthTCP {
		perSide("tcp_retransmitted_segments", h.TCPRetransmitted)
		perSide("tcp_missing_segments", h.TCPMissing)
		perSide("tcp_zero_windows", h.TCPZeroWindows)
		perSide("tcp_resets", h.TCPResets)
		return
	}
	perSide("acks", h.ACKs)
	j.key("naks")
	j.obj()
	for i, d := range directions {
		j.key(d)
		j.obj()
		for code, n := range h.NAKs[i] {
			if n > 0 {
				j.kint(record.NAKCodes[code], int64(n))
			}
		}
		j.end()
	}
	j.end()
	perSide("rnr_naks", h.RNRNAKs)
	perSide("retransmitted_packets", h.Retransmitted)
	perSide("missing_packets", h.Missing)
	perSide("cnps", h.CNPs)
	perSide("ecn_ce", h.ECNCE)
	j.key("octets")
	j.obj()
	for i, d := range directions {
		j.key(d)
		j.obj()
		for k, name := range record.OctetKinds {
			j.kint(name, h.Octets[i][k])
		}
		j.end()
	}
	j.end()
	j.key("retransmit_delay")
	j.obj()
	for i, d := range directions {
		j.key(d)
		if !h.HasRetransmitDelay[i] {
			j.null()
			continue
		}
		j.obj()
		j.key("min")
		j.seconds(h.RetransmitMin[i])
		j.key("max")
		j.seconds(h.RetransmitMax[i])
		j.end()
	}
	j.end()
	j.key("dscp")
	j.obj()
	for i, d := range directions {
		j.key(d)
		if h.HasDSCP[i] {
			j.int(int64(h.DSCP[i]))
		} else {
			j.null()
		}
	}
	j.key("cnp")
	if h.HasCNPDSCP {
		j.int(int64(h.CNPDSCP))
	} else {
		j.null()
	}
	j.end()
	perSide("fecn", h.FECN)
	perSide("becn", h.BECN)
}

// healthValues are a connection's values of the -Y fields nak (the NAK
// codes its traffic carried, rnr_nak for RNR NAKs) and retransmission (the
// packets sent again, both ways). A connection without any has no value.
func healthValues(c *record.Connection, field string) ([]value, bool) {
	if c.Datapath == nil || c.Datapath.Health == nil {
		return nil, false
	}
	h := c.Datapath.Health
	var vs []value
	switch field {
	case "nak":
		for code, name := range record.NAKCodes {
			if h.NAKs[0][code]+h.NAKs[1][code] > 0 {
				vs = append(vs, value{s: name})
			}
		}
		if h.RNRNAKs[0]+h.RNRNAKs[1] > 0 {
			vs = append(vs, value{s: "rnr_nak"})
		}
	case "retransmission":
		if n := h.Retransmitted[0] + h.Retransmitted[1]; n > 0 {
			vs = append(vs, value{n: n})
		}
	}
	return vs, len(vs) > 0
}

// knownNAK reports whether s names a NAK code for -Y (any case).
func knownNAK(s string) bool {
	if strings.EqualFold(s, "rnr_nak") {
		return true
	}
	for _, name := range record.NAKCodes {
		if strings.EqualFold(s, name) {
			return true
		}
	}
	return false
}
