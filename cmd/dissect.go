package cmd

import (
	"context"
	"errors"
	"net/netip"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// dissectOptions are the flags of `rdmacm-pd dissect`.
type dissectOptions struct {
	Files          []string
	Format         output.Format
	Verbose        bool
	Hex            bool
	Color          output.ColorMode
	FailOn         finding.Severity // 0: never
	RoCEPorts      []uint16
	TCP            decode.TCPLimits
	MaxConnections int
	Datapath       datapath.Mode
	DatapathLimits datapath.Limits
	SHA256         bool
	Args           []string // the command line (after the program name), for the Markdown report

	// Live capture.
	Interfaces []string
	NoPromisc  bool
	Ports      []uint16
	Hosts      []netip.Addr
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
	f.VarP(formatFlag(&opts.Format, output.Text, output.JSON, output.Markdown), "format", "T", "output format: text, json or markdown")
	f.BoolVarP(&opts.Verbose, "verbose", "V", false, "text: show every decoded layer and field")
	f.BoolVarP(&opts.Hex, "hex", "x", false, "text: hex dump of the private data, RFC 8797 octets marked")
	f.Var(colorFlag(&opts.Color), "color", "colour the text output: auto, always or never")
	f.Var(failOnFlag(&opts.FailOn), "fail-on", "exit 1 when a finding reaches this severity: never, info, warning or error")
	f.Var(&portsFlag{&opts.RoCEPorts, "UDP"}, "roce-port", "also decode this UDP destination port as RoCEv2 (repeatable)")
	sizeVar(f, &opts.TCP.StreamBytes, "max-stream-bytes", defaultStreamBytes, "iWARP: octets buffered per TCP direction for its MPA frame")
	sizeVar(f, &opts.TCP.TotalBytes, "max-buffer-bytes", decode.DefaultTCPBuffer, "iWARP: octets buffered for all TCP directions together")
	sizeVar(f, &opts.TCP.Flows, "max-tcp-flows", decode.DefaultTCPFlows, "iWARP: TCP directions followed at once (those that least recently brought new octets are given up first)")
	sizeVar(f, &opts.MaxConnections, "max-connections", conn.DefaultMaxConnections, "connection attempts tracked at once, about 1 KB each (the oldest is reported early beyond it)")
	f.Var(datapathFlag(&opts.Datapath), "datapath", "RC traffic after each CM exchange: all (a record for every RPC-over-RDMA message), findings (only for those with a finding) or off")
	datapathLimitFlags(f, &opts.DatapathLimits)
	f.BoolVar(&opts.SHA256, "sha256", false, "put each input's SHA-256 in the JSON summary (the Markdown report always has it); costs about 0.7 s per GiB")

	f.StringArrayVarP(&opts.Interfaces, "interface", "i", nil, "capture live on this interface (repeatable)")
	f.BoolVar(&opts.NoPromisc, "no-promisc", false, "live: do not put the interface in promiscuous mode")
	f.Var(&portsFlag{&opts.Ports, "TCP"}, "port", "live: keep only TCP segments from or to this port (repeatable)")
	f.Var(hostsFlag{&opts.Hosts}, "host", "live: keep only traffic from or to this address (repeatable)")
	f.StringVarP(&opts.Expr, "filter", "f", "", "live: a tcpdump filter expression instead of the built-in one (libpcap build only)")
	f.IntVarP(&opts.Count, "count", "c", 0, "live: stop after this many captured frames")
	f.DurationVar(&opts.Duration, "duration", 0, "live: stop after this long (e.g. 30s, 5m)")
	f.StringVarP(&opts.Write, "write", "w", "", "live: also write every captured frame to this file (pcapng, or pcap for a .pcap name)")
	f.BoolVarP(&opts.ListIfaces, "list-interfaces", "D", false, "list the interfaces live capture can use, and exit")
	return c
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
	if err := checkLimits(opts.TCP.StreamBytes, opts.TCP.TotalBytes, opts.TCP.Flows, opts.MaxConnections); err != nil {
		return err
	}
	if err := checkDatapathLimits(opts.DatapathLimits); err != nil {
		return err
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
		Format:    opts.Format,
		Verbose:   opts.Verbose,
		Hex:       opts.Hex,
		Color:     opts.Format == output.Text && output.UseColor(opts.Color, s.OutTerminal, s.Getenv),
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
	cfg := dissect.Config{RoCEPorts: opts.RoCEPorts, TCP: opts.TCP, MaxConnections: opts.MaxConnections,
		Hash: opts.SHA256 || opts.Format == output.Markdown, Datapath: opts.Datapath, DatapathLimits: opts.DatapathLimits}
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
	if errors.Is(runErr, context.Canceled) {
		runErr = nil // interrupted: what was read has been written, and --fail-on applies to it
	}
	if err := r.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return failure(runErr)
	}
	if opts.FailOn != 0 && counter.max >= opts.FailOn {
		return &exitError{code: ExitFindings}
	}
	return nil
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
