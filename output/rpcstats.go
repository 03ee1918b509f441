package output

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/oncrpc"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The -z statistics, as tshark users type them: -z rpc,programs (every RPC
// program and version: Calls, Replies, errors, response times) and -z
// rpc,srt,PROGRAM,VERSION[,FILTER] (the procedures of one program and
// version). They are taken from the connections' RPC figures
// (rpc_procedures), over the whole capture; FILTER is a -Y expression
// that chooses the connections counted. -Y itself does not change them,
// as tshark's -Y does not change its -z tables.

// RPCStat is one -z table asked for.
type RPCStat struct {
	spec     string
	programs bool // -z rpc,programs; else rpc,srt
	program  uint32
	version  uint32
	filter   *Selection
}

// ParseRPCStat reads a -z argument: rpc,programs or
// rpc,srt,PROGRAM,VERSION[,FILTER] (PROGRAM by number or name).
func ParseRPCStat(spec string) (*RPCStat, error) {
	parts := strings.SplitN(spec, ",", 5)
	switch {
	case len(parts) == 2 && parts[0] == "rpc" && parts[1] == "programs":
		return &RPCStat{spec: spec, programs: true}, nil
	case len(parts) >= 2 && parts[0] == "rpc" && parts[1] == "srt":
		if len(parts) < 4 {
			return nil, fmt.Errorf("-z %s: rpc,srt needs the program and the version, as tshark's: rpc,srt,100003,3[,FILTER]", spec)
		}
		st := &RPCStat{spec: spec}
		prog, err := strconv.ParseUint(parts[2], 10, 32)
		if err != nil {
			if prog = uint64(programNumber(parts[2])); prog == 0 {
				return nil, fmt.Errorf("-z %s: %q is not a program number or name (NFS, MOUNT, NLM, NSM, NFSACL, RQUOTA, PORTMAP)", spec, parts[2])
			}
		}
		vers, err := strconv.ParseUint(parts[3], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("-z %s: %q is not a version number", spec, parts[3])
		}
		st.program, st.version = uint32(prog), uint32(vers)
		if len(parts) == 5 && strings.TrimSpace(parts[4]) != "" {
			if st.filter, err = ParseSelection(parts[4]); err != nil {
				return nil, fmt.Errorf("-z %s: the filter: %v", spec, err)
			}
		}
		return st, nil
	}
	return nil, fmt.Errorf("-z %s: rdmacm-pd knows rpc,programs and rpc,srt,PROGRAM,VERSION[,FILTER]", spec)
}

// programNumber is the number of a program named, 0 when none has that
// name.
func programNumber(name string) uint32 {
	for _, p := range []uint32{oncrpc.ProgPortmap, oncrpc.ProgNFS, oncrpc.ProgMount, oncrpc.ProgRquota, oncrpc.ProgNLM,
		oncrpc.ProgNSM, oncrpc.ProgNFSACL} {
		if strings.EqualFold(oncrpc.ProgramName(p), name) {
			return p
		}
	}
	return 0
}

// maxStatConns bounds the connections whose figures the statistics keep
// apart, to take a later update's figures in place of its record's; past
// it, a connection's figures are added as they come.
const maxStatConns = 4096

// StatsSink gathers the -z tables from the connection records going by
// (to next), and writes them after the summary.
type StatsSink struct {
	next   record.Sink
	out    io.Writer
	format Format
	width  int // of the text (-1: no wrapping)
	stats  []*RPCStat
	// last are the figures counted of each connection kept apart (its
	// record's, then its update's); added the others'.
	last  map[int]statConn
	added []statConn
}

type statConn struct {
	conn  *record.Connection // for the filter: endpoints, state, number
	procs []record.RPCProcedure
}

// NewStatsSink writes the stats in format to out after next got the
// summary; text wraps at width (-1: none).
func NewStatsSink(stats []*RPCStat, format Format, width int, out io.Writer, next record.Sink) *StatsSink {
	return &StatsSink{next: next, out: out, format: format, width: width, stats: stats, last: map[int]statConn{}}
}

func (s *StatsSink) Message(m *record.Message) error { return s.next.Message(m) }
func (s *StatsSink) RPC(r *record.RPC) error         { return s.next.RPC(r) }

// Connection counts a connection's RPC figures.
func (s *StatsSink) Connection(c *record.Connection) error {
	if d := c.Datapath; d != nil && len(d.RPCProcedures) > 0 {
		x := c.Clone()
		x.Findings = nil
		s.keep(c.Number, statConn{x, d.RPCProcedures})
	}
	return s.next.Connection(c)
}

// Update takes a connection's figures as they ended.
func (s *StatsSink) Update(u *record.ConnectionUpdate) error {
	if d := u.Datapath; d != nil && len(d.RPCProcedures) > 0 {
		c := &record.Connection{Number: u.Number, File: u.File, Transport: u.Transport, Initiator: u.Initiator,
			Responder: u.Responder, RequestFrame: u.RequestFrame}
		if old, ok := s.last[u.Number]; ok {
			c = old.conn
		}
		s.keep(u.Number, statConn{c, d.RPCProcedures})
	}
	return s.next.Update(u)
}

func (s *StatsSink) keep(n int, sc statConn) {
	if _, ok := s.last[n]; ok || len(s.last) < maxStatConns {
		s.last[n] = sc
		return
	}
	s.added = append(s.added, statConn{procs: sc.procs, conn: sc.conn})
}

// Summary passes the summary on, then writes the tables.
func (s *StatsSink) Summary(sum *record.Summary) error {
	if err := s.next.Summary(sum); err != nil {
		return err
	}
	bw := bufio.NewWriter(s.out)
	for _, st := range s.stats {
		s.write(bw, st)
	}
	return bw.Flush()
}

// statRow is a row of a table: a program and version, or a procedure.
type statRow struct {
	program, version, procedure uint32
	name                        string
	calls, replies, errors      int
	timed                       int
	min, max, sum               time.Duration
}

func (r *statRow) add(p *record.RPCProcedure) {
	r.calls += p.Calls
	r.replies += p.Replies
	r.errors += p.Errors
	if p.Timed > 0 {
		if r.timed == 0 || p.MinResponse < r.min {
			r.min = p.MinResponse
		}
		r.max = max(r.max, p.MaxResponse)
		r.sum += p.MeanResponse * time.Duration(p.Timed)
		r.timed += p.Timed
	}
}

func (r *statRow) mean() time.Duration {
	if r.timed == 0 {
		return 0
	}
	return r.sum / time.Duration(r.timed)
}

// rows gathers the rows of a table over the connections its filter
// chooses.
func (s *StatsSink) rows(st *RPCStat) []*statRow {
	type key struct{ a, b, c uint32 }
	by := map[key]*statRow{}
	take := func(sc statConn) {
		if st.filter != nil && (sc.conn == nil || !st.filter.Connection(sc.conn)) {
			return
		}
		for i := range sc.procs {
			p := &sc.procs[i]
			var k key
			name := ""
			if st.programs {
				k, name = key{p.Program, p.Version, 0}, p.ProgramName
			} else {
				if p.Program != st.program || p.Version != st.version {
					continue
				}
				k, name = key{p.Program, p.Version, p.Procedure}, p.ProcedureName
			}
			r := by[k]
			if r == nil {
				r = &statRow{program: k.a, version: k.b, procedure: k.c, name: name}
				by[k] = r
			}
			r.add(p)
		}
	}
	for _, sc := range s.last {
		take(sc)
	}
	for _, sc := range s.added {
		take(sc)
	}
	rows := make([]*statRow, 0, len(by))
	for _, r := range by {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *statRow) int {
		return cmp.Or(cmp.Compare(a.program, b.program), cmp.Compare(a.version, b.version), cmp.Compare(a.procedure, b.procedure))
	})
	return rows
}

// write writes one table.
func (s *StatsSink) write(w *bufio.Writer, st *RPCStat) {
	rows := s.rows(st)
	if s.format == JSON {
		s.writeJSON(w, st, rows)
		return
	}
	title := "RPC programs (-z rpc,programs)"
	head := []string{"program", "version", "calls", "replies", "errors", "ms min/mean/max"}
	if !st.programs {
		prog := oncrpc.ProgramName(st.program)
		if prog == "" {
			prog = "program"
		}
		title = fmt.Sprintf("RPC response times of %s version %d, program %d (-z %s)", prog, st.version, st.program, st.spec)
		head = []string{"procedure", "calls", "replies", "errors", "ms min/mean/max"}
	}
	table := [][]string{head}
	for _, r := range rows {
		row := []string{orNum(r.name, r.procedure), fmt.Sprint(r.calls), fmt.Sprint(r.replies), fmt.Sprint(r.errors)}
		if st.programs {
			row = append([]string{orNum(r.name, r.program), fmt.Sprint(r.version)}, row[1:]...)
		}
		times := "-"
		if r.timed > 0 {
			times = fmt.Sprintf("%.3f/%.3f/%.3f", ms(r.min), ms(r.mean()), ms(r.max))
		}
		table = append(table, append(row, times))
	}
	if s.format == Markdown {
		fmt.Fprintf(w, "\n### %s\n\n", cell(title))
		if len(rows) == 0 {
			fmt.Fprintf(w, "No RPC Call was seen.\n")
			return
		}
		align := strings.Repeat("--:|", len(head)-1) + "--:"
		align = "---" + align[3:]
		md := make([][]string, len(table)-1)
		for i, row := range table[1:] {
			md[i] = make([]string, len(row))
			for j, c := range row {
				md[i][j] = cell(c)
			}
		}
		mdTable(w, head, align, md)
		return
	}
	fmt.Fprintf(w, "\n%s\n", wrapSpans(s.width, 0, 2, plain(title)))
	if len(rows) == 0 {
		fmt.Fprintf(w, "  No RPC Call was seen.\n")
		return
	}
	width, numeric := colWidths(table), numericCols(table)
	for _, row := range table {
		writeRow(w, row, width, numeric, func(_ int, c string) string { return c })
	}
}

func orNum(name string, n uint32) string {
	if name != "" {
		return name
	}
	return fmt.Sprint(n)
}

// writeJSON writes a table as one NDJSON record.
func (s *StatsSink) writeJSON(w *bufio.Writer, st *RPCStat, rows []*statRow) {
	var j jw
	j.obj()
	if st.programs {
		j.kstr("record", "rpc_programs")
	} else {
		j.kstr("record", "rpc_srt")
		j.kuint("program", uint64(st.program))
		optStr(&j, "program_name", oncrpc.ProgramName(st.program))
		j.kuint("version", uint64(st.version))
		if st.filter != nil {
			j.kstr("filter", st.filter.String())
		}
	}
	if st.programs {
		j.key("programs")
	} else {
		j.key("procedures")
	}
	j.arr()
	for _, r := range rows {
		j.obj()
		if st.programs {
			j.kuint("program", uint64(r.program))
			optStr(&j, "program_name", r.name)
			j.kuint("version", uint64(r.version))
		} else {
			j.kuint("procedure", uint64(r.procedure))
			optStr(&j, "procedure_name", r.name)
		}
		j.kint("calls", int64(r.calls))
		j.kint("replies", int64(r.replies))
		j.kint("errors", int64(r.errors))
		j.key("response_time")
		if r.timed == 0 {
			j.null()
		} else {
			j.obj()
			j.key("min")
			j.seconds(r.min)
			j.key("mean")
			j.seconds(r.mean())
			j.key("max")
			j.seconds(r.max)
			j.end()
		}
		j.end()
	}
	j.end()
	j.end()
	w.Write(j.b)
	w.WriteByte('\n')
}
