package output

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// textRenderer writes one line per message with its findings beneath, and
// with -V the layer tree, with -x a hex dump of the private data. Lines of
// free text wrap at the layout width.
type textRenderer struct {
	w        *bufio.Writer
	opts     Options
	p        *palette
	width    int
	clock    *clock
	lastFile string
	// headerFile is the input whose "== file" line was written last.
	headerFile string
	wrote      bool                 // a line was written: the summary is set off from it by a blank line
	conns      []*record.Connection // the first MaxTableRows
	keptAt     map[int]int          // their places in conns, by number
	worst      worstFindings        // of the connections' messages and rpc records
	nConns     int
	groups     findingGroups // -q: the findings, grouped (textgroups.go)
	line       []byte        // the message line being built (messageLine)
	num        [20]byte
}

func newText(w *bufio.Writer, opts Options) *textRenderer {
	return &textRenderer{w: w, opts: opts, p: newPalette(opts.Color), width: opts.width(), worst: worstFindings{max: MaxTableRows},
		clock: newClock(opts.Time, opts.Location, TimeRelative)}
}

const indent = "       "

// input notes the input of the next record: the time deltas start again
// with each.
func (r *textRenderer) input(file string) {
	if file != r.lastFile {
		r.clock.prev = time.Time{}
	}
	r.lastFile = file
}

// header writes the "== file" line of the input before its first line (with
// several inputs), never for an input that shows none.
func (r *textRenderer) header() {
	r.wrote = true
	if r.opts.MultiFile && r.lastFile != r.headerFile {
		fmt.Fprintf(r.w, "%s\n", r.p.bold.Sprintf("== %s", record.EscapeControl(r.lastFile)))
	}
	r.headerFile = r.lastFile
}

func (r *textRenderer) Message(m *record.Message) error {
	w := r.w
	r.input(m.File)
	for _, f := range m.Findings {
		r.worst.message(m.Conn, f)
	}
	if r.opts.Quiet {
		// Only the findings, grouped by code and connection.
		for _, f := range m.Findings {
			r.quietFinding(m.File, m.Conn, m.Frame, f)
		}
		return w.Flush()
	}
	r.header()
	if !r.messageLine(m) {
		r.messageParts(m)
	}
	r.findings(m.Findings)
	if r.opts.Verbose {
		r.tree(m)
	}
	if r.opts.Hex {
		r.hexDump(m.PrivateData, m.RPCRDMA, m.AddressesZeroed)
	}
	return w.Flush()
}

// messageLine writes the line of a message whose line has one part, its
// RFC 8797 summary, without colour, when it fits in the width: the common
// case, built in one buffer. It reports false, having written nothing,
// for messageParts to write any other line.
func (r *textRenderer) messageLine(m *record.Message) bool {
	if r.opts.Color || m.Kind == record.KindREJ || m.Kind.IsMPA() || m.RPCRDMA == nil && m.ULP != nil {
		return false
	}
	b := r.line[:0]
	b = appendPadded(b, strconv.AppendInt(r.num[:0], int64(m.Frame), 10), 5, true)
	b = append(b, "  "...)
	b = r.clock.append(b, m.Time, m.InputStart)
	b = append(b, "  "...)
	b = appendPadded(b, []byte(m.Transport), 6, false)
	b = append(b, ' ')
	b = appendPadded(b, []byte(m.Name()), 7, false)
	b = append(b, "  "...)
	b = append(m.Dst.Append(append(m.Src.Append(b), " → "...)), "  "...)
	if rp := m.RPCRDMA; rp == nil {
		b = append(b, "no RPC-over-RDMA data"...)
	} else {
		b = append(b, "R="...)
		b = strconv.AppendInt(b, int64(bit(rp.RemoteInvalidate)), 10)
		b = strconv.AppendInt(append(b, " send="...), int64(rp.SendSize), 10)
		b = strconv.AppendInt(append(b, " recv="...), int64(rp.ReceiveSize), 10)
		if rp.Offset != m.ExpectedOffset {
			b = strconv.AppendInt(append(b, " @"...), int64(rp.Offset), 10)
		}
	}
	r.line = b
	if utf8.RuneCount(b) > r.width {
		return false
	}
	r.w.Write(append(b, '\n'))
	return true
}

// appendPadded appends s padded to w columns with spaces, on the left
// (right-aligned) or the right; s is ASCII.
func appendPadded(b, s []byte, w int, right bool) []byte {
	pad := max(0, w-len(s))
	if !right {
		b = append(b, s...)
	}
	for range pad {
		b = append(b, ' ')
	}
	if right {
		b = append(b, s...)
	}
	return b
}

// messageParts writes a message's line: its head, then its parts (the
// reject reason, the RFC 8797 summary or the upper layer's, the MPA
// revision and frames) beside it when they fit, else beneath.
func (r *textRenderer) messageParts(m *record.Message) {
	w, p := r.w, r.p
	ts := r.clock.show(m.Time, m.InputStart)
	name := m.Name()
	head := fmt.Sprintf("%5d  %s  %-6s %s%s  %s → %s", m.Frame, ts, m.Transport,
		p.name.Sprint(name), strings.Repeat(" ", max(0, 7-runes(name))), m.Src, m.Dst)
	headWidth := runes(fmt.Sprintf("%5d  %s  %-6s %-7s  %s → %s", m.Frame, ts, m.Transport, name, m.Src, m.Dst))
	var parts []span
	if why := rejectSummary(m); why != "" {
		parts = append(parts, plain(why))
	}
	parts = append(parts, r.rpcSpan(m))
	if s := mpaSummary(m); s != "" {
		parts = append(parts, span{text: s, style: p.dim})
	}
	if r.width > 0 && headWidth > r.width {
		// The endpoints do not fit beside the rest: they go beneath.
		head = fmt.Sprintf("%5d  %s  %-6s %s\n%s%s → %s", m.Frame, ts, m.Transport, p.name.Sprint(name), indent, m.Src, m.Dst)
		headWidth = r.width + 1 // the parts go beneath too
	}
	w.WriteString(head)
	if headWidth+partsWidth(parts) <= r.width {
		w.WriteString(joinParts(parts))
		w.WriteByte('\n')
	} else {
		// The rest goes beneath, where the findings start: on one line
		// if it fits there, else each part on a line of its own.
		w.WriteString("\n" + indent)
		if len(indent)+partsWidth(parts)-2 <= r.width {
			w.WriteString(strings.TrimPrefix(joinParts(parts), "  "))
		} else {
			for i, sp := range parts {
				if i > 0 {
					w.WriteString("\n" + indent)
				}
				w.WriteString(wrapSpans(r.width, len(indent), len(indent), sp))
			}
		}
		w.WriteByte('\n')
	}
}

// partsWidth is the width of parts written after a line's head, two
// spaces before each.
func partsWidth(parts []span) int {
	n := 0
	for _, sp := range parts {
		n += 2 + runes(sp.text)
	}
	return n
}

// joinParts writes parts, two spaces before each.
func joinParts(parts []span) string {
	var b strings.Builder
	for _, sp := range parts {
		b.WriteString("  ")
		b.WriteString(sp.String())
	}
	return b.String()
}

func (r *textRenderer) Close() error { return r.w.Flush() }

// findings writes a message's findings beneath it.
func (r *textRenderer) findings(fs []finding.Finding) {
	for _, f := range fs {
		fmt.Fprintf(r.w, "%s%s\n", indent, r.finding(f, len(indent)))
	}
}

// finding is one finding as a line starting at column start, wrapped
// beneath its explanation: severity, code, explanation, reference.
func (r *textRenderer) finding(f finding.Finding, start int) string {
	sev := fmt.Sprintf("%-7s", f.Severity)
	hang := start + len(sev) + 1
	return r.severity(f.Severity) + " " + wrapSpans(r.width, hang, hang,
		span{text: f.Code.String() + ":", style: r.p.bold}, plain(record.EscapeControl(f.Message)), span{text: "[" + f.Reference + "]", style: r.p.dim, keep: true})
}

// severityStyle is the colour of a severity.
func (r *textRenderer) severityStyle(s finding.Severity) *color.Color {
	switch s {
	case finding.Info:
		return r.p.info
	case finding.Warning:
		return r.p.warning
	case finding.Error:
		return r.p.error
	}
	return nil
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

// rpcSummary is the long form of what a message says about RPC-over-RDMA
// (decode's first line, the Markdown details' titles).
func (r *textRenderer) rpcSummary(rp *record.RPCRDMA) string {
	if rp == nil {
		return r.p.dim.Sprint("no RPC-over-RDMA data")
	}
	return fmt.Sprintf("RPC-over-RDMA v%d R=%d send=%d recv=%d @%d", rp.Version, bit(rp.RemoteInvalidate),
		rp.SendSize, rp.ReceiveSize, rp.Offset)
}

// rpcSpan is the short form on a message line: R, Send Size and Receive
// Size, and the offset when it is not where the carrier puts the message.
func (r *textRenderer) rpcSpan(m *record.Message) span {
	rp := m.RPCRDMA
	if rp == nil && m.ULP != nil {
		return plain(r.summary(m)) // another upper layer's private data
	}
	if rp == nil {
		return span{text: "no RPC-over-RDMA data", style: r.p.dim}
	}
	s := fmt.Sprintf("R=%d send=%d recv=%d", bit(rp.RemoteInvalidate), rp.SendSize, rp.ReceiveSize)
	if rp.Offset != m.ExpectedOffset {
		s += fmt.Sprintf(" @%d", rp.Offset)
	}
	return plain(s)
}

// rejectSummary names a REJ's reason and its Additional Reject
// Information, or says that an MPA Reply rejects; "" for other messages.
func rejectSummary(m *record.Message) string {
	switch {
	case m.Kind == record.KindREJ && m.CMInfo != nil:
		s := fmt.Sprintf("reason %d", m.CMInfo.RejectReason)
		if name := layers.RejectReasonName(m.CMInfo.RejectReason); name != "" {
			s += " (" + name + ")"
		}
		if len(m.CMInfo.ARI) > 0 {
			s += ", ARI " + groupHex(m.CMInfo.ARI)
		}
		return s
	case m.Kind == record.KindMPAReply && m.MPAInfo != nil && m.MPAInfo.HasFlags && m.MPAInfo.Reject:
		return "rejects (R set)"
	}
	return ""
}

// groupHex writes octets in hex, four to a group, so that a long blob can
// wrap.
func groupHex(b []byte) string {
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		if i > 0 {
			s.WriteByte(' ')
		}
		s.WriteString(hex.EncodeToString(b[i:min(i+4, len(b))]))
	}
	return s.String()
}

// mpaSummary is an MPA frame's revision and, when it was spread over
// several segments, their frames.
func mpaSummary(m *record.Message) string {
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
	return "(" + s + ")"
}

// tree writes every decoded layer with its fields.
func (r *textRenderer) tree(m *record.Message) {
	r.tunnelTree(m.Tunnel)
	l := m.Layers()
	if ib := m.IB; ib != nil {
		r.layer("LRH", l.LRH)
		r.layer("GRH", l.GRH)
		r.layer("BTH", l.BTH)
		r.layer("DETH", l.DETH)
		r.crc("ICRC", ib.ICRC, 8)
		r.crc("VCRC", ib.VCRC, 4)
	}
	r.layer("MAD", l.MAD)
	if l.CM != nil {
		r.layer("CM "+m.Name(), l.CM)
	}
	r.layer("IP CM Header", l.IPCM)
	r.layer("MPA "+mpaKind(m.Kind), l.MPA)
	if m.PrivateDataSize > 0 || len(m.PrivateData) > 0 {
		fmt.Fprintf(r.w, "%s%s: %d octets", indent, r.p.bold.Sprint("Private Data"), len(m.PrivateData))
		if len(m.PrivateData) < m.PrivateDataSize {
			fmt.Fprintf(r.w, " of %d (the rest is not in the capture)", m.PrivateDataSize)
		}
		fmt.Fprintln(r.w)
	}
	r.rpcTree(m.RPCRDMA)
	r.ulpTree(m.ULP)
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
