package cmd

import (
	"context"
	"errors"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// dissectOptions are the flags of `rdmacm-pd dissect`.
type dissectOptions struct {
	Files          []string
	Format         string
	Verbose        bool
	Hex            bool
	Color          string
	FailOn         string
	RoCEPorts      []uint
	TCP            decode.TCPLimits
	MaxConnections int
	SHA256         bool
	Args           []string // the command line (after the program name), for the Markdown report

	// Live capture.
	Interfaces []string
	NoPromisc  bool
	Ports      []uint
	Hosts      []string
	Expr       string
	Count      int
	Duration   time.Duration
	Write      string
	ListIfaces bool
}

func newDissectCmd(s *IOStreams) *cobra.Command {
	opts := &dissectOptions{}
	reads := &readFlag{}
	c := &cobra.Command{
		Use:   "dissect [flags] [FILE...]",
		Short: "Find and check every RDMA connection message in capture files",
		Long: `Reads pcap, pcapng and gzip-compressed capture files ("-" is standard
input), finds every InfiniBand CM message (RoCEv2, RoCEv1, native InfiniBand)
and every iWARP MPA Request and Reply (on any TCP port, reassembled), locates
the RPC-over-RDMA version 1 private data of RFC 8797 at any offset, decodes
and checks it.`,
		Example: `  rdmacm-pd dissect capture.pcap
  rdmacm-pd dissect -V -x capture.pcapng.gz
  rdmacm-pd dissect -T json capture.pcap | jq .rpcrdma
  tcpdump -w - udp port 4791 | rdmacm-pd dissect -
  rdmacm-pd dissect -i eth0 -w setup.pcapng        # live, until Ctrl-C
  rdmacm-pd dissect -i eth0 --port 20049 --duration 30s -T json`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Files = reads.merge(args)
			opts.Args = s.Args
			return runDissect(c.Context(), s, opts)
		},
	}
	f := c.Flags()
	reads.set = f
	f.VarP(reads, "read", "r", "capture file to read (repeatable; like tshark -r); read in command-line order with the other files")
	f.StringVarP(&opts.Format, "format", "T", "text", "output format: text, json or markdown")
	f.BoolVarP(&opts.Verbose, "verbose", "V", false, "text: show every decoded layer and field")
	f.BoolVarP(&opts.Hex, "hex", "x", false, "text: hex dump of the private data, RFC 8797 octets marked")
	f.StringVar(&opts.Color, "color", "auto", "colour the text output: auto, always or never")
	f.StringVar(&opts.FailOn, "fail-on", "never", "exit 1 when a finding reaches this severity: never, info, warning or error")
	f.UintSliceVar(&opts.RoCEPorts, "roce-port", nil, "also decode this UDP destination port as RoCEv2 (repeatable)")
	f.IntVar(&opts.TCP.StreamBytes, "max-stream-bytes", 65555, "iWARP: octets buffered per TCP direction for its MPA frame")
	f.IntVar(&opts.TCP.TotalBytes, "max-buffer-bytes", decode.DefaultTCPBuffer, "iWARP: octets buffered for all TCP directions together")
	f.IntVar(&opts.TCP.Flows, "max-tcp-flows", decode.DefaultTCPFlows, "iWARP: TCP directions followed at once (those that least recently brought new octets are given up first)")
	f.IntVar(&opts.MaxConnections, "max-connections", conn.DefaultMaxConnections, "connection attempts tracked at once, about 1 KB each (the oldest is reported early beyond it)")
	f.BoolVar(&opts.SHA256, "sha256", false, "put each input's SHA-256 in the JSON summary (the Markdown report always has it); costs about 0.7 s per GiB")

	f.StringArrayVarP(&opts.Interfaces, "interface", "i", nil, "capture live on this interface (repeatable)")
	f.BoolVar(&opts.NoPromisc, "no-promisc", false, "live: do not put the interface in promiscuous mode")
	f.UintSliceVar(&opts.Ports, "port", nil, "live: keep only TCP segments from or to this port (repeatable)")
	f.StringArrayVar(&opts.Hosts, "host", nil, "live: keep only traffic from or to this address (repeatable)")
	f.StringVarP(&opts.Expr, "filter", "f", "", "live: a tcpdump filter expression instead of the built-in one (libpcap build only)")
	f.IntVarP(&opts.Count, "count", "c", 0, "live: stop after this many captured frames")
	f.DurationVar(&opts.Duration, "duration", 0, "live: stop after this long (e.g. 30s, 5m)")
	f.StringVarP(&opts.Write, "write", "w", "", "live: also write every captured frame to this file (pcapng, or pcap for a .pcap name)")
	f.BoolVarP(&opts.ListIfaces, "list-interfaces", "D", false, "list the interfaces live capture can use, and exit")
	return c
}

// readFlag is -r: its values, each with the number of FILE arguments that
// came before it on the command line, so that the inputs are read in the
// order they were given (pflag hands positional arguments over apart).
type readFlag struct {
	set  *pflag.FlagSet
	vals []string
	pos  []int
}

func (r *readFlag) String() string { return strings.Join(r.vals, ",") }
func (r *readFlag) Type() string   { return "FILE" }

func (r *readFlag) Set(v string) error {
	r.vals = append(r.vals, v)
	r.pos = append(r.pos, len(r.set.Args())) // the positional arguments parsed so far
	return nil
}

// merge interleaves the -r values with the FILE arguments in command-line
// order.
func (r *readFlag) merge(args []string) []string {
	out := make([]string, 0, len(r.vals)+len(args))
	j := 0
	for i, v := range r.vals {
		for ; j < r.pos[i] && j < len(args); j++ {
			out = append(out, args[j])
		}
		out = append(out, v)
	}
	return append(out, args[j:]...)
}

// severityCounter passes messages on and keeps the highest severity seen.
type severityCounter struct {
	next output.Renderer
	max  finding.Severity
}

func (s *severityCounter) Message(m *record.Message) error {
	s.see(m.Findings)
	return s.next.Message(m)
}

func (s *severityCounter) Connection(c *record.Connection) error {
	s.see(c.Findings)
	return s.next.Connection(c)
}

// Summary counts the findings of the run as a whole (a state limit hit by
// TCP directions that never showed an MPA key, say) before passing it on.
func (s *severityCounter) Summary(sum *record.Summary) error {
	s.see(sum.Notes)
	return s.next.Summary(sum)
}

func (s *severityCounter) see(fs []finding.Finding) {
	if v := finding.Max(fs); v > s.max {
		s.max = v
	}
}

func runDissect(ctx context.Context, s *IOStreams, opts *dissectOptions) error {
	if opts.ListIfaces {
		return listInterfaces(s)
	}
	live := len(opts.Interfaces) > 0
	switch {
	case len(opts.Files) == 0 && !live:
		return usageError("no input: name capture files, - for standard input, or -i IFACE to capture live")
	case len(opts.Files) > 0 && live:
		return usageError("give capture files or -i interfaces, not both")
	case !live && (opts.Count > 0 || opts.Duration > 0 || opts.Write != "" || opts.Expr != "" || len(opts.Ports) > 0 ||
		len(opts.Hosts) > 0 || opts.NoPromisc):
		return usageError("-c, --duration, -w, -f, --port, --host and --no-promisc apply to live capture (-i)")
	case opts.Count < 0 || opts.Duration < 0:
		return usageError("-c and --duration cannot be negative")
	}
	format, err := output.ParseFormat(opts.Format)
	if err != nil {
		return usageError("--format: %v", err)
	}
	mode := output.ColorMode(opts.Color)
	if mode != output.ColorAuto && mode != output.ColorAlways && mode != output.ColorNever {
		return usageError("--color: unknown mode %q (want auto, always or never)", opts.Color)
	}
	var failOn finding.Severity
	if opts.FailOn != "never" {
		if failOn, err = finding.ParseSeverity(opts.FailOn); err != nil {
			return usageError("--fail-on: unknown value %q (want never, info, warning or error)", opts.FailOn)
		}
	}
	ports, err := rocePorts(opts.RoCEPorts)
	if err != nil {
		return err
	}
	if opts.TCP.StreamBytes < 20 || opts.TCP.TotalBytes < opts.TCP.StreamBytes || opts.TCP.Flows < 1 || opts.MaxConnections < 1 {
		return usageError("--max-stream-bytes must be at least 20, --max-buffer-bytes at least that, --max-tcp-flows and --max-connections at least 1")
	}
	stdin := 0
	for _, f := range opts.Files {
		if f == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usageError("standard input (-) can be read only once")
	}
	r, err := output.New(s.Out, output.Options{
		Format:    format,
		Verbose:   opts.Verbose,
		Hex:       opts.Hex,
		Color:     format == output.Text && output.UseColor(mode, s.OutTerminal, s.Getenv),
		MultiFile: len(opts.Files) > 1,
		Version:   ToolVersion(),
		Command:   commandLine(opts.Args),
		Live:      live,
	})
	if err != nil {
		return usageError("%v", err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	counter := &severityCounter{next: r}
	cfg := dissect.Config{RoCEPorts: ports, TCP: opts.TCP, MaxConnections: opts.MaxConnections,
		Hash: opts.SHA256 || format == output.Markdown}
	// Keep the garbage collector close to the state limits, so that memory
	// stays bounded whatever the input (unless GOMEMLIMIT says otherwise).
	if s.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cfg.MemoryBudget())
	}
	var runErr error
	if live {
		runErr = runLive(ctx, s, opts, cfg, counter)
	} else {
		_, runErr = dissect.Run(ctx, opts.Files, s.In, cfg, counter)
	}
	if err := r.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if errors.Is(runErr, context.Canceled) {
		runErr = nil // interrupted: what was read has been written, and --fail-on applies to it
	}
	if runErr != nil {
		return failure(runErr)
	}
	if failOn != 0 && counter.max >= failOn {
		return &exitError{code: ExitFindings}
	}
	return nil
}

func rocePorts(in []uint) ([]uint16, error) {
	var out []uint16
	for _, p := range in {
		if p == 0 || p > 65535 {
			return nil, usageError("--roce-port: %d is not a UDP port", p)
		}
		if !slices.Contains(out, uint16(p)) {
			out = append(out, uint16(p))
		}
	}
	return out, nil
}

// commandLine shows the command as a shell would take it back.
func commandLine(args []string) string {
	var b strings.Builder
	b.WriteString("rdmacm-pd")
	for _, a := range args {
		b.WriteByte(' ')
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == ',' || r == '+' ||
				r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) < 0 {
			b.WriteString(a)
		} else {
			b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
		}
	}
	return b.String()
}
