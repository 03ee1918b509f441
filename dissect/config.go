package dissect

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
)

// Config tunes a run.
type Config struct {
	// RoCEPorts are UDP destination ports decoded as RoCEv2 besides 4791.
	RoCEPorts []uint16
	// TCP bounds the reassembly of MPA frames.
	TCP decode.TCPLimits
	// Live hands each connection attempt on as soon as its state is known
	// (else all at the end, in the order of their requests).
	Live bool
	// MaxConnections bounds the attempts tracked at once (0: 65536).
	MaxConnections int
	// Hash computes each input's SHA-256 for the summary.
	Hash bool
}

func (c Config) decoder() decode.Config { return decode.Config{RoCEPorts: c.RoCEPorts, TCP: c.TCP} }

// MemoryBudget is the heap the state limits allow, with room for the rest
// of the program: a soft memory limit for the Go runtime. With the default
// limits it is under 100 MB.
func (c Config) MemoryBudget() int64 {
	l := c.TCP.WithDefaults()
	conns := c.MaxConnections
	if conns <= 0 {
		conns = conn.DefaultMaxConnections
	}
	const base, perConn, perFlow = 40 << 20, 400, 400
	return base + int64(l.TotalBytes) + perConn*int64(conns) + perFlow*int64(l.Flows)
}
