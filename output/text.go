package output

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// textRenderer writes one line per message with its findings beneath, and
// with -V the layer tree, with -x a hex dump of the private data.
type textRenderer struct {
	w        *bufio.Writer
	opts     Options
	p        *palette
	lastFile string
	wrote    bool                 // a message line was written: the summary is set off from it by a blank line
	conns    []*record.Connection // the first MaxTableRows
	nConns   int
}

const indent = "       "

func (r *textRenderer) Message(m *record.Message) error {
	w, p := r.w, r.p
	if r.opts.MultiFile && m.File != r.lastFile {
		fmt.Fprintf(w, "%s\n", p.bold.Sprintf("== %s", m.File))
	}
	r.lastFile = m.File
	r.wrote = true
	fmt.Fprintf(w, "%5d  %s  %s → %s  %s  %s  %s%s\n", m.Frame, textTime(m.Time),
		m.Src, m.Dst, m.Transport, p.name.Sprint(m.Name()), r.rpcSummary(m.RPCRDMA), r.mpaSummary(m))
	r.findings(m.Findings)
	if r.opts.Verbose {
		r.tree(m)
	}
	if r.opts.Hex {
		r.hexDump(m.PrivateData, m.RPCRDMA)
	}
	return w.Flush()
}

// textTime is a message's capture time, or "-" for a frame without a
// timestamp (a pcapng Simple Packet Block).
func textTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

func (r *textRenderer) Close() error { return r.w.Flush() }

func (r *textRenderer) findings(fs []finding.Finding) {
	for _, f := range fs {
		fmt.Fprintf(r.w, "%s%s %s: %s %s\n", indent, r.severity(f.Severity), r.p.bold.Sprint(f.Code), f.Message,
			r.p.dim.Sprintf("[%s]", f.Reference))
	}
}

func (r *textRenderer) severity(s finding.Severity) string {
	name := fmt.Sprintf("%-7s", s)
	switch s {
	case finding.Info:
		return r.p.info.Sprint(name)
	case finding.Warning:
		return r.p.warning.Sprint(name)
	case finding.Error:
		return r.p.error.Sprint(name)
	}
	return name
}

// rpcSummary is the short form of what a message says about RPC-over-RDMA.
func (r *textRenderer) rpcSummary(rp *record.RPCRDMA) string {
	if rp == nil {
		return r.p.dim.Sprint("no RPC-over-RDMA data")
	}
	return fmt.Sprintf("RPC-over-RDMA v%d R=%d send=%d recv=%d @%d", rp.Version, bit(rp.RemoteInvalidate),
		rp.SendSize, rp.ReceiveSize, rp.Offset)
}

// mpaSummary adds an MPA frame's revision and, when it was spread over
// several segments, their frames.
func (r *textRenderer) mpaSummary(m *record.Message) string {
	if !m.Kind.IsMPA() {
		return ""
	}
	s := "MPA"
	if h := m.MPAInfo; h != nil && h.HasRev {
		s += fmt.Sprintf(" rev %d", h.Rev) // not when the frame ended before its Rev octet
	}
	if len(m.Frames) > 1 {
		var fs []string
		for _, f := range m.Frames {
			fs = append(fs, fmt.Sprint(f))
		}
		s += "; frames " + strings.Join(fs, ", ")
	}
	return "  " + r.p.dim.Sprintf("(%s)", s)
}

// tree writes every decoded layer with its fields.
func (r *textRenderer) tree(m *record.Message) {
	r.tunnelTree(m.Tunnel)
	if ib := m.IB; ib != nil {
		r.layer("LRH", ib.LRH)
		r.layer("GRH", ib.GRH)
		r.layer("BTH", ib.BTH)
		r.layer("DETH", ib.DETH)
		r.crc("ICRC", ib.ICRC, 8)
		r.crc("VCRC", ib.VCRC, 4)
	}
	r.layer("MAD", m.MAD)
	if m.CM != nil {
		r.layer("CM "+m.Name(), m.CM)
	}
	r.layer("IP CM Header", m.IPCM)
	r.layer("MPA "+mpaKind(m.Kind), m.MPA)
	if m.PrivateDataSize > 0 || len(m.PrivateData) > 0 {
		fmt.Fprintf(r.w, "%s%s: %d octets", indent, r.p.bold.Sprint("Private Data"), len(m.PrivateData))
		if len(m.PrivateData) < m.PrivateDataSize {
			fmt.Fprintf(r.w, " of %d (the rest is not in the capture)", m.PrivateDataSize)
		}
		fmt.Fprintln(r.w)
	}
	r.rpcTree(m.RPCRDMA)
}

// rpcTree writes the RFC 8797 fields under the names the RFC gives them.
func (r *textRenderer) rpcTree(rp *record.RPCRDMA) {
	if rp == nil {
		return
	}
	fmt.Fprintf(r.w, "%s%s (offset %d)\n", indent, r.p.bold.Sprint("RPC-over-RDMA Version 1 CM Private Data"), rp.Offset)
	r.field("Format Identifier", fmt.Sprintf("0x%08x", rp.FormatIdentifier))
	r.field("Version", fmt.Sprint(rp.Version))
	r.field("Reserved", fmt.Sprintf("0x%02x", rp.Reserved))
	inv := "remote invalidation not supported"
	if rp.RemoteInvalidate {
		inv = "remote invalidation supported"
	}
	r.field("R", fmt.Sprintf("%d (%s)", bit(rp.RemoteInvalidate), inv))
	r.field("Send Size", fmt.Sprintf("%d (encoded 0x%02x)", rp.SendSize, rp.SendSizeEncoded))
	r.field("Receive Size", fmt.Sprintf("%d (encoded 0x%02x)", rp.ReceiveSize, rp.ReceiveSizeEncoded))
}

func (r *textRenderer) layer(name string, fs []layers.Field) {
	if fs == nil {
		return
	}
	fmt.Fprintf(r.w, "%s%s\n", indent, r.p.bold.Sprint(name))
	for _, f := range fs {
		v := f.Text()
		if v == "" {
			v = "(none)" // an empty blob, such as a REJ's Additional Reject Information
		}
		if f.Note != "" {
			v += " (" + f.Note + ")"
		}
		r.field(f.Name, v)
	}
}

func (r *textRenderer) field(name, value string) {
	fmt.Fprintf(r.w, "%s  %s: %s\n", indent, name, value)
}

func (r *textRenderer) crc(name string, c *record.CRCCheck, digits int) {
	if c == nil {
		return
	}
	state := r.p.good.Sprint("valid")
	if !c.Valid {
		state = r.p.bad.Sprintf("invalid, the packet gives 0x%0*x", digits, c.Computed)
	}
	fmt.Fprintf(r.w, "%s%s: 0x%0*x (%s)\n", indent, r.p.bold.Sprint(name), digits, c.Value, state)
}

func mpaKind(k record.Kind) string {
	if k == record.KindMPARequest {
		return "Request"
	}
	return "Reply"
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}
