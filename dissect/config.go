package dissect

import (
	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
)

// Config tunes a run.
type Config struct {
	// RoCEPorts are UDP destination ports decoded as RoCEv2 besides 4791.
	RoCEPorts []uint16
	// TCP bounds the reassembly of MPA frames.
	TCP reassembly.Options
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

	// ReuseRecords: the sink reads each message and connection record
	// during the call only, and keeps a Clone of any it needs later (as
	// the renderers of package output do), so the run builds later records
	// in the storage of those it handed on: a CM frame then costs no
	// allocation. Leave it off for a sink that keeps the records it gets.
	ReuseRecords bool

	// Count stops the run after this many frames (0: no limit).
	Count int
	// Writer, when set, receives every frame read, in the order they are
	// dissected.
	Writer FrameWriter
	// Progress, when set, is told how far the run is, every few thousand
	// frames and at each input's start (a terminal's progress line).
	Progress func(Progress)
	// Evidence, when set, is told which connection (by its Number) each
	// frame of the data-path traffic followed belongs to (see
	// datapath.Output.Evidence).
	Evidence func(conn, frame int)
	// Budget is the run's memory budget, which every holder of state
	// charges (nil: one of MemoryLimit). Share it with the sink to have
	// a Markdown report's details charged too.
	Budget *budget.Budget
}

func (c Config) decoder() decode.Config {
	tcp := c.TCP
	tcp.Budget = c.Budget
	return decode.Config{RoCEPorts: c.RoCEPorts, TCP: tcp, IPFrag: c.IPFrag, Datapath: c.Datapath != datapath.ModeOff,
		ReuseMessages: c.ReuseRecords}
}

// MemoryLimit is the size of the memory budget the state limits call
// for: budget.DefaultLimit with the default limits (every holder charges
// the one budget, so that they cannot all be full at once), more when a
// limit is raised beyond its default, by what it then allows.
func (c Config) MemoryLimit() int64 {
	total, flows, conns := c.TCP.TotalBytes, c.TCP.Flows, c.MaxConnections
	if total <= 0 {
		total = reassembly.DefaultTotalBytes
	}
	if flows <= 0 {
		flows = reassembly.DefaultFlows
	}
	if conns <= 0 {
		conns = conn.DefaultMaxConnections
	}
	const perConn, perFlow = 1000, 700
	extra := max(0, int64(total-reassembly.DefaultTotalBytes)) + perConn*max(0, int64(conns-conn.DefaultMaxConnections)) +
		perFlow*max(0, int64(flows-reassembly.DefaultFlows))
	// IP reassembly at its default limits (4 MiB) fits in the overhead;
	// raised limits add what they allow.
	frag := c.IPFrag.WithDefaults()
	extra += max(0, 2*int64(frag.Bytes-ipfrag.DefaultBytes)+64*int64(frag.Fragments-ipfrag.DefaultFragments))
	if c.Datapath != datapath.ModeOff {
		extra += c.DatapathLimits.ExtraMemory()
	}
	return budget.DefaultLimit + extra
}

// budget returns the run's memory budget: c.Budget, or a new one of
// MemoryLimit.
func (c Config) budget() *budget.Budget {
	if c.Budget != nil {
		return c.Budget
	}
	return budget.New(c.MemoryLimit())
}
