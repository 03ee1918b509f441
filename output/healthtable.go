package output

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The Transport table of the text and Markdown reports: a row per
// connection and direction whose RC traffic the data path followed, with
// what the AETHs said, the packets sent again and missing, the congestion
// marks. The JSON has the rest (octets, DSCP, delays). An iWARP
// connection's rows say the same of its TCP in the same columns: no ACKs
// counted, its RSTs where the NAKs go, the segments sent again and the gaps
// the capture lost, its zero windows where the congestion goes; the legend
// says so when such a row is there.

// healthHead heads the Transport table; healthLegend explains it.
var healthHead = []string{"#", "sent by", "ACKs", "NAKs", "resent", "missing", "congestion"}

const healthLegend = "ACKs, NAKs: the Acknowledges each side sent (NAKs by code: seq PSN sequence error, inv invalid request," +
	" acc remote access error, op remote operational error, rd invalid RD request; rnr RNR NAK);" +
	" resent: packets sent again; missing: packets the capture lost;" +
	" congestion: packets marked CE (RoCEv2) or FECN, CNPs and BECNs sent back." +
	" -T json adds the octets, the DSCP and the retransmission delays."

// tcpLegend is added to the legend when an iWARP connection has rows.
const tcpLegend = " iWARP (TCP): no ACKs counted; NAKs: the RSTs that side sent; resent: segments sent again;" +
	" missing: gaps in the sequence the capture lost; congestion: segments advertising a zero window."

// nakShort are the NAK codes as the table names them.
var nakShort = [record.NAKCodeCount]string{"seq", "inv", "acc", "op", "rd"}

// healthRows are the Transport table's rows of the connections, and its
// legend.
func healthRows(conns []*record.Connection) ([][]string, string) {
	var rows [][]string
	legend := healthLegend
	for _, c := range conns {
		if c.Datapath == nil || c.Datapath.Health == nil {
			continue
		}
		h := c.Datapath.Health
		switch h.Kind {
		case record.HealthRC:
			for side, by := range [2]string{"initiator", "responder"} {
				rows = append(rows, []string{fmt.Sprint(number(c)), by, fmt.Sprint(h.ACKs[side]), nakCell(h, side),
					fmt.Sprint(h.Retransmitted[side]), fmt.Sprint(h.Missing[side]), congestionCell(h, side)})
			}
		case record.HealthTCP:
			if legend == healthLegend {
				legend += tcpLegend
			}
			for side, by := range [2]string{"initiator", "responder"} {
				rows = append(rows, []string{fmt.Sprint(number(c)), by, "-", countCell(h.TCPResets[side], "RST", "RSTs"),
					fmt.Sprint(h.TCPRetransmitted[side]), fmt.Sprint(h.TCPMissing[side]),
					countCell(h.TCPZeroWindows[side], "zero window", "zero windows")})
			}
		}
	}
	return rows, legend
}

// countCell is "-", or n with its noun: "1 RST", "3 zero windows".
func countCell(n int, one, many string) string {
	switch n {
	case 0:
		return "-"
	case 1:
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// nakCell counts the NAKs a side sent by code: "-", or "2 seq, 1 rnr".
func nakCell(h *record.Health, side int) string {
	var parts []string
	for code, n := range h.NAKs[side] {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, nakShort[code]))
		}
	}
	if n := h.RNRNAKs[side]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d rnr", n))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// congestionCell says the congestion marks of a side's packets: those that
// arrived marked, and what the other side sent back.
func congestionCell(h *record.Health, side int) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(h.ECNCE[side], "CE")
	add(h.FECN[side], "FECN")
	add(h.CNPs[1-side], "CNP back")
	add(h.BECN[1-side], "BECN back")
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// healthTable writes the text Transport table.
func (r *textRenderer) healthTable(conns []*record.Connection) {
	body, legend := healthRows(conns)
	if len(body) == 0 {
		return
	}
	w, p := r.w, r.p
	fmt.Fprintf(w, "\n%s\n", p.bold.Sprint("Transport"))
	rows := append([][]string{healthHead}, body...)
	width, numeric := colWidths(rows), numericCols(rows)
	if r.width > 0 && tableWidth(width) > r.width { // too narrow for the columns: each row by name
		for _, row := range body {
			fmt.Fprintf(w, "  %s\n", row[0])
			r.narrowCells(healthHead[1:], row[1:])
		}
	} else {
		for ri, row := range rows {
			writeRow(w, row, width, numeric, func(_ int, cell string) string {
				if ri == 0 {
					return p.bold.Sprint(cell)
				}
				return cell
			})
		}
	}
	if !r.opts.Quiet {
		fmt.Fprintf(w, "  %s\n", wrapSpans(r.width, 2, 2, span{text: legend, style: p.dim}))
	}
}

// healthTable writes the Markdown Transport table.
func (m *markdownRenderer) healthTable(w reportWriter, conns []*record.Connection) {
	rows, legend := healthRows(conns)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Transport\n\n")
	for _, row := range rows {
		row[3], row[6] = cell(row[3]), cell(row[6])
	}
	mdTable(w, healthHead, "--:|---|--:|---|--:|--:|---", rows)
	fmt.Fprintf(w, "%s\n\n", cell(legend))
}
