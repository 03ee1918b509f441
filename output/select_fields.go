package output

import (
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The fields of a selection (select.go): those it may name, the values
// each kind of record has for them, and how a field's values compare with
// those given.

// SelectFields lists the fields a selection may name, with what each is.
var SelectFields = []struct{ Name, Meaning string }{
	{"addr", "an address of the message (src or dst) or connection (initiator or responder); a host matches with any port"},
	{"src", "the message's source, the connection's initiator"},
	{"dst", "the message's destination, the connection's responder"},
	{"msg", "the message: REQ, REP, REJ, RTU, MRA, DREQ, DREP, SIDR_REQ, SIDR_REP, LAP, APR, MPA_REQ, MPA_REP, RPC (a data-path rpc record)"},
	{"code", "a finding code of the message or connection"},
	{"severity", "the highest severity of its findings: none, info, warning, error"},
	{"conn", "the connection number (a message's or rpc record's: the connection it belongs to)"},
	{"state", "the connection's state: established, rejected, no-reply, cut"},
	{"transport", "rocev2, rocev1, infiniband, iwarp"},
	{"frame", "a frame of the message, the connection's request or reply frame"},
	{"file", "the input, by its name as given or its base name"},
	{"prog", "an rpc record's RPC program, by name (NFS, MOUNT, NLM, ...) or number"},
	{"proc", "an rpc record's RPC procedure, by name (READ, COMPOUND, CB_COMPOUND, ...) or number"},
	{"op", "an operation of an rpc record's NFSv4 COMPOUND or CB_COMPOUND (SEQUENCE, READ, CB_RECALL, ...)"},
	{"xid", "an rpc record's RPC XID (decimal, or hex with 0x)"},
	{"rpc_status", "an rpc record's Reply status: its reply, accept, reject, auth or NFS status (PROC_UNAVAIL, NFS3ERR_STALE, NFS4_OK, ...)"},
	{"nak", "a NAK a connection's RC traffic carried: psn_sequence_error, invalid_request, remote_access_error, remote_operational_error, invalid_rd_request, rnr_nak (alone: any)"},
	{"retransmission", "the packets a connection's RC traffic sent again, both ways (alone: any)"},
}

// fieldAliases are the tshark spellings taken for fields.
var fieldAliases = map[string]string{"ip.addr": "addr", "ip.src": "src", "ip.dst": "dst", "finding": "code",
	"connection": "conn", "message": "msg", "kind": "msg"}

// A record is what a selection looks at: the values of a field, or
// ok false when the record has no such field.
type fieldRecord interface {
	values(field string) (vals []value, ok bool)
}

// value is one value of a field: a word (compared as the field says) or
// a number (conn, frame, severity, retransmission, xid).
type value struct {
	s string
	n int
}

type msgRecord struct{ m *record.Message }

func (r msgRecord) values(field string) ([]value, bool) {
	m := r.m
	switch field {
	case "addr":
		return []value{{s: m.Src.String()}, {s: m.Dst.String()}}, true
	case "src":
		return []value{{s: m.Src.String()}}, true
	case "dst":
		return []value{{s: m.Dst.String()}}, true
	case "msg":
		return []value{{s: m.Name()}}, true
	case "code":
		return codeValues(m.Findings)
	case "severity":
		return []value{{n: int(finding.Max(m.Findings))}}, true
	case "conn":
		if m.Conn == 0 {
			return nil, false
		}
		return []value{{n: m.Conn}}, true
	case "transport":
		return []value{{s: string(m.Transport)}}, true
	case "frame":
		vs := []value{{n: m.Frame}}
		for _, f := range m.Frames {
			vs = append(vs, value{n: f})
		}
		return vs, true
	case "file":
		return []value{{s: m.File}}, true
	}
	return nil, false
}

// rpcRecord is an rpc record: its msg is "RPC"; its conn is that of its
// connection, none when the setup was not seen.
type rpcRecord struct{ r *record.RPC }

func (r rpcRecord) values(field string) ([]value, bool) {
	x := r.r
	if m := x.Message; m != nil {
		if vs, ok := rpcMessageValues(m, field); ok || isRPCField(field) {
			return vs, ok
		}
	}
	switch field {
	case "xid": // no RPC message (RDMA_NOMSG, RDMA_ERROR): the transport header's
		if x.Header == nil {
			return nil, false
		}
		return []value{{n: int(x.Header.XID)}}, true
	case "conn":
		if x.Conn == 0 {
			return nil, false
		}
		return []value{{n: x.Conn}}, true
	case "addr":
		return []value{{s: x.Src.String()}, {s: x.Dst.String()}}, true
	case "src":
		return []value{{s: x.Src.String()}}, true
	case "dst":
		return []value{{s: x.Dst.String()}}, true
	case "msg":
		return []value{{s: "RPC"}}, true
	case "code":
		return codeValues(x.Findings)
	case "severity":
		return []value{{n: int(finding.Max(x.Findings))}}, true
	case "transport":
		return []value{{s: string(x.Transport)}}, true
	case "frame":
		vs := []value{{n: x.Frame}}
		for _, f := range x.Frames {
			vs = append(vs, value{n: f})
		}
		return vs, true
	case "file":
		return []value{{s: x.File}}, true
	}
	return nil, false
}

type connRecord struct{ c *record.Connection }

func (r connRecord) values(field string) ([]value, bool) {
	c := r.c
	switch field {
	case "addr":
		return []value{{s: c.Initiator.String()}, {s: c.Responder.String()}}, true
	case "src":
		return []value{{s: c.Initiator.String()}}, true
	case "dst":
		return []value{{s: c.Responder.String()}}, true
	case "code":
		return codeValues(c.Findings)
	case "severity":
		return []value{{n: int(finding.Max(c.Findings))}}, true
	case "conn":
		return []value{{n: c.Number}}, true
	case "state":
		return []value{{s: string(c.State)}}, true
	case "transport":
		return []value{{s: string(c.Transport)}}, true
	case "frame":
		vs := []value{{n: c.RequestFrame}}
		if c.ReplyFrame != 0 {
			vs = append(vs, value{n: c.ReplyFrame})
		}
		return vs, true
	case "file":
		return []value{{s: c.File}}, true
	case "nak", "retransmission":
		return healthValues(c, field)
	}
	return nil, false
}

// isRPCField reports whether a field is the RPC message's.
func isRPCField(field string) bool {
	switch field {
	case "prog", "proc", "op", "xid", "rpc_status":
		return true
	}
	return false
}

// rpcMessageValues are the values of an RPC message's fields.
func rpcMessageValues(m *record.RPCMessage, field string) ([]value, bool) {
	var vs []value
	named := func(name string, n uint32) {
		if name != "" {
			vs = append(vs, value{s: name})
		}
		vs = append(vs, value{s: strconv.FormatUint(uint64(n), 10)})
	}
	switch field {
	case "xid":
		return []value{{n: int(m.XID)}}, true
	case "prog":
		if m.HasProgram {
			named(m.ProgramName, m.Program)
		}
	case "proc":
		if m.HasProgram {
			named(m.ProcedureName, m.Procedure)
		}
	case "op":
		for _, op := range m.Operations {
			vs = append(vs, value{s: op})
		}
	case "rpc_status":
		for _, st := range []string{m.ReplyStatus, m.AcceptStatus, m.RejectStatus, m.AuthStatus, m.NFSStatus} {
			if st != "" {
				vs = append(vs, value{s: st})
			}
		}
	default:
		return nil, false
	}
	return vs, len(vs) > 0
}

func codeValues(fs []finding.Finding) ([]value, bool) {
	if len(fs) == 0 {
		return nil, false
	}
	vs := make([]value, len(fs))
	for i, f := range fs {
		vs[i] = value{s: f.Code.String()}
	}
	return vs, true
}

// compare tells whether v, a value of field, stands in relation op to w,
// one given: numbers in order (conn, frame, severity, retransmission) or
// equal (xid), addresses as sameAddr says, a file by its name or base
// name, names (msg, prog, proc, op, rpc_status, nak) in any case, other
// words exactly.
func compare(field, op string, v, w value) bool {
	switch field {
	case "conn", "frame", "severity", "retransmission":
		switch op {
		case "==":
			return v.n == w.n
		case "<":
			return v.n < w.n
		case "<=":
			return v.n <= w.n
		case ">":
			return v.n > w.n
		case ">=":
			return v.n >= w.n
		}
		return false
	case "addr", "src", "dst":
		return sameAddr(v.s, w.s)
	case "file":
		return v.s == w.s || filepath.Base(v.s) == w.s
	case "msg", "prog", "proc", "op", "rpc_status", "nak":
		return strings.EqualFold(v.s, w.s)
	case "xid":
		return v.n == w.n
	}
	return v.s == w.s
}

// sameAddr compares an address as shown (IP, "[IPv6]:port", "IP:port",
// GID, "LID n") with one given: equal, or the same host when the one given
// has no port; an IPv4 address matches its IPv4-mapped GID.
func sameAddr(shown, given string) bool {
	if strings.EqualFold(shown, given) {
		return true
	}
	host := shown
	if ap, err := netip.ParseAddrPort(shown); err == nil {
		host = ap.Addr().String()
	}
	a, err1 := netip.ParseAddr(host)
	b, err2 := netip.ParseAddr(given)
	return err1 == nil && err2 == nil && a.Unmap() == b.Unmap()
}
