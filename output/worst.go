package output

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// worstFindings keeps, for the connections a renderer lists, the worst
// finding of their messages (by connection number) and of their rpc
// records (by input and request frame, as an rpc record names its
// connection), for the worst column and the verdict: at most max of each.
type worstFindings struct {
	max    int
	byConn map[int]finding.Finding
	byRPC  map[rpcConn]finding.Finding
}

// message notes a finding of a message of connection n (0: none).
func (w *worstFindings) message(n int, f finding.Finding) {
	if n == 0 || n > w.max {
		return
	}
	if w.byConn == nil {
		w.byConn = map[int]finding.Finding{}
	}
	if old, ok := w.byConn[n]; !ok || f.Severity > old.Severity {
		w.byConn[n] = f
	}
}

// rpc notes a finding of an rpc record of the connection k names.
func (w *worstFindings) rpc(k rpcConn, f finding.Finding) {
	if k.frame == 0 {
		return
	}
	if w.byRPC == nil {
		w.byRPC = map[rpcConn]finding.Finding{}
	}
	if old, ok := w.byRPC[k]; ok && f.Severity > old.Severity || !ok && len(w.byRPC) < w.max {
		w.byRPC[k] = f
	}
}

// of is a connection's worst finding, its own, its messages' and its rpc
// records' (its own win a tie); ok is false when it has none.
func (w *worstFindings) of(c *record.Connection) (worst finding.Finding, ok bool) {
	consider := func(f finding.Finding) {
		if !ok || f.Severity > worst.Severity {
			worst, ok = f, true
		}
	}
	for _, f := range c.Findings {
		consider(f)
	}
	if f, found := w.byConn[c.Number]; found {
		consider(f)
	}
	if f, found := w.byRPC[rpcConn{c.File, c.RequestFrame}]; found {
		consider(f)
	}
	return worst, ok
}
