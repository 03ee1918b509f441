package output

import (
	"bufio"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// jsonRenderer writes one JSON object per line (NDJSON). The keys are a
// public contract: docs/json.md lists them.
type jsonRenderer struct {
	w    *bufio.Writer
	j    jw
	opts Options
}

func (r *jsonRenderer) Message(m *record.Message) error {
	if r.opts.Quiet {
		return nil // -q: the connections and the summary only
	}
	r.j.b = r.j.b[:0]
	appendMessage(&r.j, m)
	return r.line()
}

func (r *jsonRenderer) Close() error { return r.w.Flush() }

// TimeFormat is how times are written: RFC 3339 in UTC with nanoseconds.
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// appendMessage writes a "message" record.
func appendMessage(j *jw, m *record.Message) {
	j.obj()
	j.kstr("record", "message")
	j.kstr("file", m.File)
	j.kint("frame", int64(m.Frame))
	if len(m.Frames) > 0 {
		j.key("frames")
		j.arr()
		for _, f := range m.Frames {
			j.int(int64(f))
		}
		j.end()
	}
	timeOrNull(j, "time", m.Time) // null: the frame has no timestamp (pcapng Simple Packet Block)
	j.kstr("transport", string(m.Transport))
	j.kaddr("src", m.Src)
	j.kaddr("dst", m.Dst)
	j.kstr("message", m.Name())
	appendTunnel(j, m.Tunnel)
	l := m.Layers()
	if ib := m.IB; ib != nil {
		j.key("ib")
		j.obj()
		fieldsObj(j, "lrh", l.LRH)
		fieldsObj(j, "grh", l.GRH)
		fieldsObj(j, "bth", l.BTH)
		fieldsObj(j, "deth", l.DETH)
		crcObj(j, "icrc", ib.ICRC)
		crcObj(j, "vcrc", ib.VCRC)
		j.end()
	}
	fieldsObj(j, "mad", l.MAD)
	fieldsObj(j, "cm", l.CM)
	fieldsObj(j, "ip_cm", l.IPCM)
	fieldsObj(j, "mpa", l.MPA)
	j.key("private_data")
	j.obj()
	j.kint("length", int64(len(m.PrivateData)))
	j.key("hex")
	j.hex(m.PrivateData)
	j.end()
	j.key("rpcrdma")
	appendRPCRDMA(j, m.RPCRDMA)
	j.key("ulp")
	appendULP(j, m.ULP)
	j.key("warnings")
	appendFindings(j, m.Findings)
	j.end()
}

// fieldsObj writes a layer's fields as an object, or nothing when the layer
// is absent.
func fieldsObj(j *jw, key string, fs []layers.Field) {
	if fs == nil {
		return
	}
	j.key(key)
	j.obj()
	for _, f := range fs {
		j.key(f.Key)
		fieldValue(j, f)
	}
	j.end()
}

// fieldValue writes numbers of up to 32 bits as numbers, booleans as
// booleans, and 64-bit identifiers, GIDs, addresses and octets as strings.
func fieldValue(j *jw, f layers.Field) {
	switch f.Kind {
	case layers.Dec, layers.Hex:
		j.uint(f.Value)
	case layers.Bool:
		j.bool(f.Value != 0)
	default:
		j.str(f.Text())
	}
}

func crcObj(j *jw, key string, c *record.CRCCheck) {
	if c == nil {
		return
	}
	j.key(key)
	j.obj()
	j.kuint("value", uint64(c.Value))
	j.kbool("valid", c.Valid)
	j.end()
}

func appendRPCRDMA(j *jw, r *record.RPCRDMA) {
	if r == nil {
		j.null()
		return
	}
	j.obj()
	j.kint("offset", int64(r.Offset))
	j.kuint("format_identifier", uint64(r.FormatIdentifier))
	j.kuint("version", uint64(r.Version))
	j.kuint("reserved", uint64(r.Reserved))
	j.kbool("remote_invalidate", r.RemoteInvalidate)
	j.kint("send_size", int64(r.SendSize))
	j.kint("receive_size", int64(r.ReceiveSize))
	j.kuint("send_size_encoded", uint64(r.SendSizeEncoded))
	j.kuint("receive_size_encoded", uint64(r.ReceiveSizeEncoded))
	j.end()
}

func appendFindings(j *jw, fs []finding.Finding) {
	j.arr()
	for _, f := range fs {
		j.obj()
		j.kstr("code", f.Code.String())
		j.kstr("severity", f.Severity.String())
		j.kstr("message", f.Message)
		j.kstr("reference", f.Reference)
		j.end()
	}
	j.end()
}

func (r *jsonRenderer) Connection(c *record.Connection) error {
	r.j.b = r.j.b[:0]
	appendConnection(&r.j, c)
	return r.line()
}

// Update writes a "connection_update" record (also under -q, as the
// connection records are).
func (r *jsonRenderer) Update(u *record.ConnectionUpdate) error {
	j := &r.j
	j.b = j.b[:0]
	j.obj()
	j.kstr("record", "connection_update")
	j.kstr("file", u.File)
	j.kint("connection", int64(u.RequestFrame))
	j.key("datapath")
	appendDatapath(j, u.Datapath)
	j.key("warnings")
	appendFindings(j, u.Findings)
	j.end()
	return r.line()
}

func (r *jsonRenderer) Summary(s *record.Summary) error {
	r.j.b = r.j.b[:0]
	appendSummary(&r.j, s, r.opts.Version)
	return r.line()
}

func (r *jsonRenderer) line() error {
	r.j.b = append(r.j.b, '\n')
	if _, err := r.w.Write(r.j.b); err != nil {
		return err
	}
	return r.w.Flush()
}

// appendConnection writes a "connection" record.
func appendConnection(j *jw, c *record.Connection) {
	j.obj()
	j.kstr("record", "connection")
	j.kstr("file", c.File)
	j.kstr("transport", string(c.Transport))
	j.kaddr("initiator", c.Initiator)
	j.kaddr("responder", c.Responder)
	if c.HasPort {
		j.kuint("port", uint64(c.Port))
	}
	if c.HasServiceID {
		j.key("service_id")
		j.b = append(appendHex(append(j.b, `"0x`...), c.ServiceID, 16), '"')
	}
	j.kint("request_frame", int64(c.RequestFrame))
	j.key("reply_frame")
	if c.ReplyFrame == 0 {
		j.null()
	} else {
		j.int(int64(c.ReplyFrame))
	}
	j.kint("retries", int64(c.Retries))
	j.kstr("state", string(c.State))
	strOrNull(j, "ulp", string(c.ULP))
	strOrNull(j, "ulp_evidence", string(c.ULPEvidence))
	j.key("initiator_rpcrdma")
	appendRPCRDMA(j, c.InitiatorRPCRDMA)
	j.key("responder_rpcrdma")
	appendRPCRDMA(j, c.ResponderRPCRDMA)
	j.key("inline_threshold")
	if c.Inline == nil {
		j.null()
	} else {
		j.obj()
		j.kint("initiator_to_responder", int64(c.Inline.InitiatorToResponder))
		j.kint("responder_to_initiator", int64(c.Inline.ResponderToInitiator))
		j.end()
	}
	j.kbool("remote_invalidation", c.RemoteInvalidation)
	if c.PrivateDataCut {
		j.kbool("private_data_cut", true)
	}
	j.key("datapath")
	appendDatapath(j, c.Datapath)
	j.key("warnings")
	appendFindings(j, c.Findings)
	j.end()
}

// appendSummary writes the "summary" record.
func appendSummary(j *jw, s *record.Summary, tool string) {
	j.obj()
	j.kstr("record", "summary")
	j.kint("frames", int64(s.Frames))
	j.kint("messages", int64(s.Messages))
	j.key("connections")
	j.obj()
	for _, st := range []record.State{record.Established, record.Rejected, record.NoReply, record.Cut} {
		j.kint(string(st), int64(s.Connections[st]))
	}
	j.end()
	j.key("findings")
	j.obj()
	for _, code := range sortedCodes(s.Findings) {
		j.kint(code.String(), int64(s.Findings[code]))
	}
	j.end()
	j.kint("decode_errors", int64(s.DecodeErrors))
	j.kint("state_limit_drops", int64(s.StateDrops))
	j.key("state_limit_drops_by_holder")
	j.obj()
	for h, n := range s.Drops {
		if n > 0 {
			j.kint(record.DropHolder(h).String(), int64(n))
		}
	}
	j.end()
	j.kint("tcp_keyless_evictions", int64(s.KeylessEvictions))
	j.kint("rpc_messages", int64(s.RPCMessages))
	j.kint("datapath_frames_without_connection", int64(s.DatapathOrphanFrames))
	j.key("warnings")
	appendFindings(j, s.Notes)
	j.key("inputs")
	j.arr()
	for _, in := range s.Inputs {
		j.obj()
		j.kstr("name", in.Name)
		j.kstr("format", in.Describe())
		j.key("link_types")
		j.arr()
		for _, lt := range in.LinkTypes {
			j.uint(uint64(lt))
		}
		j.end()
		j.kint("size", in.Size)
		j.key("sha256")
		if in.SHA256 == "" {
			j.null()
		} else {
			j.str(in.SHA256)
		}
		j.kint("frames", int64(in.Frames))
		timeOrNull(j, "first", in.First)
		timeOrNull(j, "last", in.Last)
		j.key("error")
		if in.Err == nil {
			j.null()
		} else {
			j.str(in.Err.Error())
		}
		j.end()
	}
	j.end()
	j.kstr("tool", tool)
	j.end()
}

func timeOrNull(j *jw, key string, t time.Time) {
	j.key(key)
	if t.IsZero() {
		j.null()
	} else {
		j.str(formatTime(t))
	}
}

// sortedCodes lists the codes counted, in catalogue order.
func sortedCodes(m map[finding.Code]int) []finding.Code {
	var out []finding.Code
	for _, c := range finding.Catalogue() {
		if m[c.Code] > 0 {
			out = append(out, c.Code)
		}
	}
	return out
}
