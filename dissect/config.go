package dissect

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
)

// Config tunes a run.
type Config struct {
	// RoCEPorts are UDP destination ports decoded as RoCEv2 besides 4791.
	RoCEPorts []uint16
	// TCP bounds the reassembly of MPA frames.
	TCP decode.TCPLimits
	// IPFrag bounds the reassembly of IP fragments.
	IPFrag ipfrag.Options
	// Live hands each connection attempt on as soon as its state is known
	// (else all at the end of their source, in the order of their
	// requests).
	Live bool
	// MaxConnections bounds the attempts tracked at once (0: 65536).
	MaxConnections int
	// Hash computes each input file's SHA-256 for the summary (Run).
	Hash bool
	// Datapath says what the data path writes: a record for each
	// RPC-over-RDMA message with a finding (the zero value), for every one,
	// or nothing (ModeOff: the RC traffic is not followed).
	Datapath datapath.Mode
	// DatapathLimits bound the data path's state (zero fields: defaults).
	DatapathLimits datapath.Limits

	// Count stops the run after this many frames (0: no limit).
	Count int
	// Writer, when set, receives every frame read, in the order they are
	// dissected.
	Writer FrameWriter
}

func (c Config) decoder() decode.Config {
	return decode.Config{RoCEPorts: c.RoCEPorts, TCP: c.TCP, IPFrag: c.IPFrag}
}

// MemoryBudget is the heap the state limits allow, with room for the rest
// of the program: a soft memory limit for the Go runtime. With the default
// limits it is under 100 MB.
func (c Config) MemoryBudget() int64 {
	total, flows, conns := c.TCP.TotalBytes, c.TCP.Flows, c.MaxConnections
	if total <= 0 {
		total = decode.DefaultTCPBuffer
	}
	if flows <= 0 {
		flows = decode.DefaultTCPFlows
	}
	if conns <= 0 {
		conns = conn.DefaultMaxConnections
	}
	const base, perConn, perFlow = 40 << 20, 400, 400
	// IP reassembly at its default limits (4 MiB) fits in the base; raised
	// limits add what they allow.
	frag := c.IPFrag.WithDefaults()
	fragBytes := max(0, 2*int64(frag.Bytes-ipfrag.DefaultBytes)+64*int64(frag.Fragments-ipfrag.DefaultFragments))
	extra := int64(0)
	if c.Datapath != datapath.ModeOff {
		extra = c.DatapathLimits.ExtraMemory()
	}
	return base + int64(total) + perConn*int64(conns) + perFlow*int64(flows) + fragBytes + extra
}
