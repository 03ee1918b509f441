package record

import (
	"slices"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
)

// Input describes one capture file (or live interface) after it was read.
type Input struct {
	Name        string   // as given
	Format      string   // "pcap", "pcapng" or "live"; "" when unreadable
	Compressed  bool     // gzip, zstd or lz4
	Compression string   // the compression as a file suffix: "gz", "zst", "lz4"; "" when not compressed
	LinkTypes   []uint16 // link types of its interfaces
	Size        int64    // octets of the file as stored (compressed if it is)
	SHA256      string   // of the file as stored; "" when not computed
	Frames      int      // frames read
	Skipped     int      // frames of link types that cannot carry RDMA
	First, Last time.Time
	Err         error // what stopped reading early, or nil
}

// Describe is a short label for an input's content, such as "pcapng.gz"
// or "pcap.zst".
func (in *Input) Describe() string {
	s := in.Format
	switch {
	case in.Compression != "":
		s += "." + in.Compression
	case in.Compressed:
		s += ".gz"
	}
	if s == "" {
		return "unreadable"
	}
	return s
}

// Summary totals a run.
type Summary struct {
	Frames       int
	Messages     int
	Connections  map[State]int
	Findings     map[finding.Code]int // by code: messages, connections and the run together
	DecodeErrors int                  // inputs that could not be read to their end
	StateDrops   int                  // what state limits gave up: the sum of Drops
	// Drops counts what each holder of state gave up at a limit (Drop).
	Drops [NDropHolders]int
	// KeylessEvictions counts TCP directions given up at a state limit
	// before they showed any octet of an MPA key (no finding: nothing of an
	// MPA frame was lost; counted if the key arrives later).
	KeylessEvictions int
	// RPCMessages counts the RPC-over-RDMA messages the data path saw;
	// DatapathOrphanFrames the RC frames that belong to no connection whose
	// setup was seen.
	RPCMessages          int
	DatapathOrphanFrames int
	Inputs               []Input
	// Traffic is what the frames held besides connection messages, so
	// that an empty or thin result can say what the capture was.
	Traffic Traffic
	// Notes are findings about the run itself, not about one message or
	// connection: state limits that dropped what no record can show.
	Notes []finding.Finding
}

// DropHolder names what a state limit made the run give up, for the
// summary's count by holder (state_limit_drops_by_holder). Each holder's
// drops are also said by findings: on the records they touch, and in one
// summary warning per holder.
type DropHolder uint8

// The holders of state that give something up at a limit.
const (
	DropTCPDirections DropHolder = iota // TCP directions with an MPA frame begun
	DropTunnels                         // frames nested deeper than the tunnel limit
	DropEarlyWindow                     // MPA frames that began after the early window decided
	DropIWARPTraffic                    // TCP directions whose FPDUs were not followed
	DropAttempts                        // connection attempts handed on before their end
	DropReconnections                   // reconnections not compared: the previous one was forgotten
	DropRCDirections                    // RC directions without a setup given up
	DropRCConnections                   // connections whose traffic was given up
	DropCalls                           // Calls not tracked
	DropSendBuffers                     // multi-packet Sends whose first octets were not kept
	DropRDMAReads                       // RDMA Reads over the outstanding cap
	DropReadLists                       // read lists cut at the octets kept
	DropOrphanPackets                   // SEND Middle and Last packets without their First
	DropChunkSegments                   // chunk segments of outstanding Calls not tracked
	DropLongMessages                    // long messages not put together for the budget
	NDropHolders
)

var dropHolderNames = [NDropHolders]string{"tcp-directions", "tunnels", "tcp-early-window", "iwarp-traffic",
	"connection-attempts", "reconnections", "rc-directions", "rc-connections", "calls", "send-buffers",
	"rdma-reads", "read-lists", "orphan-packets", "chunk-segments", "long-messages"}

func (h DropHolder) String() string {
	if h < NDropHolders {
		return dropHolderNames[h]
	}
	return "unknown"
}

// Drop counts n things holder h gave up at a state limit.
func (s *Summary) Drop(h DropHolder, n int) {
	s.Drops[h] += n
	s.StateDrops += n
}

// Traffic counts the frames that carried no connection message, by what
// they were.
type Traffic struct {
	// Data frames of the InfiniBand family that are not CM MADs: RDMA
	// traffic whose connection setup is not in the capture.
	RoCEv2, RoCEv1, InfiniBand int
	// The same frames by transport (the BTH opcode's top three bits):
	// Reliable and Unreliable Connected, Extended Reliable Connected, DC
	// (Mellanox's Dynamically Connected transport, which sends with the
	// Reliable Datagram opcodes no adapter otherwise uses) and UD other
	// than management datagrams. DC and UD never use CM.
	RC, UC, XRC, DC, UD int
	// OutOfBand counts the RC, UC and XRC frames whose hosts exchanged no
	// CM MAD, in an input that holds a TCP connection on port 18515
	// (perftest's), or whose hosts a TCP connection on any port joined
	// before their first such frame: connected out of band (dissect/decode,
	// hosts.go). OutOfBandPorts are the TCP ports of those connections,
	// ascending.
	OutOfBand      int
	OutOfBandPorts []uint16
	// TCPSegments counts the TCP segments the reassembler looked at (with
	// payload, or SYN, FIN or RST), whether or not they were MPA.
	TCPSegments int
}

// Add adds o's counts to t.
func (t *Traffic) Add(o Traffic) {
	t.RoCEv2 += o.RoCEv2
	t.RoCEv1 += o.RoCEv1
	t.InfiniBand += o.InfiniBand
	t.RC += o.RC
	t.UC += o.UC
	t.XRC += o.XRC
	t.DC += o.DC
	t.UD += o.UD
	t.OutOfBand += o.OutOfBand
	for _, p := range o.OutOfBandPorts {
		if !slices.Contains(t.OutOfBandPorts, p) {
			t.OutOfBandPorts = append(t.OutOfBandPorts, p)
		}
	}
	slices.Sort(t.OutOfBandPorts)
	t.TCPSegments += o.TCPSegments
}

// NewSummary returns an empty summary.
func NewSummary() *Summary {
	return &Summary{Connections: map[State]int{}, Findings: map[finding.Code]int{}}
}

// Note adds a run-level finding and counts it.
func (s *Summary) Note(f finding.Finding) {
	s.Notes = append(s.Notes, f)
	s.Findings[f.Code]++
}

// Count counts findings of messages or connections.
func (s *Summary) Count(fs []finding.Finding) {
	for _, f := range fs {
		s.Findings[f.Code]++
	}
}
