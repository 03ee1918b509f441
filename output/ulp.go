package output

import (
	"fmt"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// How the renderers show the upper layer of messages and connections.

// summary is the short form of what a message's private data says: its RFC
// 8797 message, else its upper layer's, else that there is no RFC 8797
// data.
func (r *textRenderer) summary(m *record.Message) string {
	if u := m.ULP; m.RPCRDMA == nil && u != nil {
		s := u.Summary
		if len(u.Fields) == 0 && u.Problem != "" {
			s += ": " + u.Problem
		}
		if len(u.Fields) > 0 {
			s += fmt.Sprintf(" @%d", u.Offset)
		}
		return s
	}
	return r.rpcSummary(m.RPCRDMA)
}

// ulpTree writes the upper layer's fields under the names its
// specification gives them.
func (r *textRenderer) ulpTree(u *record.ULP) {
	if u == nil || len(u.Fields) == 0 {
		return
	}
	r.layer(fmt.Sprintf("%s (offset %d)", u.Name, u.Offset), u.Fields)
}

// appendULP writes a message's "ulp" object: protocol, offset, then each
// field under its key, and after a coded value with a name its name under
// "<key>_name".
func appendULP(j *jw, u *record.ULP) {
	if u == nil {
		j.null()
		return
	}
	j.obj()
	j.kstr("protocol", string(u.Protocol))
	j.kint("offset", int64(u.Offset))
	for _, f := range u.Fields {
		j.key(f.Key)
		fieldValue(j, f)
		if f.Note != "" {
			j.kstr(f.Key+"_name", f.Note)
		}
	}
	j.end()
}

// strOrNull writes a string, or null when it is empty.
func strOrNull(j *jw, key, s string) {
	j.key(key)
	if s == "" {
		j.null()
	} else {
		j.str(s)
	}
}

// ulpCell is a connection's upper layer in a table: its name, or "-".
func ulpCell(c *record.Connection) string {
	if c.ULP == "" {
		return "-"
	}
	return string(c.ULP)
}

// remoteInvCell says whether the responder may use Send With Invalidate, for
// the upper layers that negotiate it (RPC-over-RDMA, iSER); "-" for the
// others, which agree nothing about it when they connect.
func remoteInvCell(c *record.Connection) string {
	if !c.RPCRDMARules && c.ULP != record.ULPISER || c.TrafficNotRPCRDMA() || c.PrivateDataCut {
		return "-" // not RPC-over-RDMA, or what the sides advertised was cut away
	}
	return yesNo(c.RemoteInvalidation)
}
