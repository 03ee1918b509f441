package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/conn"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/ipfrag"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/reassembly"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// dissectOptions are the flags of `rdmacm-pd dissect`, grouped by what they
// configure, so that each part of the run is handed only the group it reads.
type dissectOptions struct {
	Input  inputOptions // what is read, and what is decoded in it
	Show   showOptions  // what is shown, and how
	Limits limitOptions // the bounds of the dissector's state
	Live   liveOptions  // live capture

	FailOn finding.Severity // 0: never
	Args   []string         // the command line (after the program name), for the Markdown report

	// Changed says whether a flag was given (nil: none was).
	Changed func(name string) bool
}

// inputOptions say what is read, and what is decoded in it.
type inputOptions struct {
	Files     []string
	Count     int    // stop after this many frames (0: no limit)
	Write     string // -w: files: the frames of the messages shown; live: every frame
	Annotate  bool   // --annotate: -w writes every frame, the findings as packet comments
	RoCEPorts []uint16
	Datapath  datapath.Mode
	SHA256    bool
}

// showOptions say what is shown, and how.
type showOptions struct {
	Format   output.Format
	Verbose  bool
	Hex      bool
	Color    output.ColorMode
	Quiet    bool
	Select   string // -Y; Changed("display-filter") says it was given
	Time     output.TimeMode
	Width    int // 0: no wrapping
	Details  output.Details
	Budget   int // 0: no limit
	Basename bool
	// FullPaths keeps the inputs' paths in a Markdown report, which names
	// them by their base names by default (a report goes into public bugs).
	FullPaths bool
	// Anonymize puts names in place of addresses in the output (host1,
	// gid1, guid1); the -w file keeps them.
	Anonymize bool
	// Stats are the -z tables asked for (rpc,programs, rpc,srt,...).
	Stats []string
	// Progress is --progress: auto, always or never.
	Progress string
}

// limitOptions bound the state the dissector holds: TCP reassembly, IP
// fragments, connection attempts and the data path.
type limitOptions struct {
	TCP            reassembly.Options
	IPFrag         ipfrag.Options
	MaxConnections int
	Datapath       datapath.Limits
}

// liveOptions are the flags of live capture.
type liveOptions struct {
	Interfaces []string
	NoPromisc  bool
	Ports      []uint16
	Hosts      []netip.Addr
	Expr       string
	Duration   time.Duration
	List       bool // -D: list the interfaces and exit
}

// liveInput is what runLive reads: the live capture flags, and the -w file and
// -c count, which apply to capture files too.
type liveInput struct {
	*liveOptions
	Write string
	Count int
}

// Defaults of dissect's own flags.
const (
	defaultWidth  = output.DefaultWidth
	defaultBudget = output.DefaultBudget
)

// newDissectCmd is `rdmacm-pd dissect`, which runs runDissect.
func newDissectCmd(s *IOStreams) *cobra.Command { return dissectCmd(s, runDissect) }

// dissectCmd wires dissect's flags into its options and calls runF with
// them: a test passes its own runF to see what the flags became.
func dissectCmd(s *IOStreams, runF func(context.Context, *IOStreams, *dissectOptions) error) *cobra.Command {
	opts := &dissectOptions{}
	reads := &readFlag{}
	c := &cobra.Command{
		Use:   "dissect [flags] [FILE...]",
		Short: "Find and check every RDMA connection message in capture files",
		Long: `Reads pcap and pcapng capture files, plain or compressed with gzip, zstd
or lz4 ("-" is standard input), finds every InfiniBand CM message (RoCEv2,
RoCEv1, native InfiniBand) and every iWARP MPA Request and Reply (on any TCP
port, reassembled), locates the RPC-over-RDMA version 1 private data of RFC
8797 at any offset, decodes and checks it, and pairs requests with replies
into connections: what each agreed (the inline threshold each way, remote
invalidation), or why not.

The text output is laid out for 80 columns: one line per message with its
findings beneath, then the connections, their findings and the totals.
-T markdown writes a report that fits in a GitHub comment; -T json is NDJSON.

As with tshark: -c stops after N frames, -q shows only the connections,
findings and totals, -Y selects what is shown (fields addr, src, dst, msg,
code, severity, conn, state, transport, frame and file; see docs/cli.md), -t
sets the time format, and -w with capture files writes the frames behind
the records shown (their connection's setup and traffic with them): a small
attachment for a bug, which dissects to the same findings.`,
		Example: `  rdmacm-pd dissect capture.pcap
  rdmacm-pd dissect -V -x capture.pcapng.gz
  rdmacm-pd dissect -q --fail-on warning capture.pcap
  rdmacm-pd dissect -Y 'msg == REJ or severity >= warning' capture.pcap
  rdmacm-pd dissect -T markdown --basename capture.pcap > report.md
  rdmacm-pd dissect -T markdown --anonymize capture.pcap   # host1, gid1, guid1 in place of addresses
  rdmacm-pd dissect -Y 'severity >= warning' -w evidence.pcapng capture.pcap
  rdmacm-pd dissect --annotate -w annotated.pcapng capture.pcap   # every frame, findings as comments
  rdmacm-pd dissect --datapath all capture.pcap     # and every RPC-over-RDMA message after it
  rdmacm-pd dissect -T json capture.pcap | jq -c 'select(.record == "connection") | .inline_threshold'
  tcpdump -r capture.pcap -w - udp port 4791 | rdmacm-pd dissect -
  rdmacm-pd dissect -i lo --duration 1s              # live, for a second
  rdmacm-pd dissect -i eth0 -w live.pcapng           # live, until Ctrl-C`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Input.Files = reads.merge(args)
			opts.Args = s.Args
			opts.Changed = c.Flags().Changed
			return runF(c.Context(), s, opts)
		},
	}
	f := c.Flags()
	reads.set = f
	f.VarP(reads, "read", "r", "capture file to read (repeatable; like tshark -r); read in command-line order with the other files")
	f.VarP(formatFlag(&opts.Show.Format, output.Text, output.JSON, output.Markdown), "format", "T", "output format: text, json or markdown")
	f.BoolVarP(&opts.Show.Verbose, "verbose", "V", false, "text: show every decoded layer and field")
	f.BoolVarP(&opts.Show.Hex, "hex", "x", false, "text: hex dump of the private data, RFC 8797 octets marked")
	f.Var(colorFlag(&opts.Show.Color), "color", "colour the text output: auto, always or never")
	f.Var(failOnFlag(&opts.FailOn), "fail-on", "exit 1 when a finding reaches this severity: never, info, warning or error")
	f.BoolVarP(&opts.Show.Quiet, "quiet", "q", false, "only the connections, the findings and the totals (json: no message records; markdown: no message details)")
	f.StringVar(&opts.Show.Progress, "progress", string(progressAuto), "a progress line on standard error when it is a terminal: auto (after a second, not with -q or CI set), always, never")
	f.StringArrayVarP(&opts.Show.Stats, "statistics", "z", nil, "after the output, a table as tshark -z gives it: rpc,programs or rpc,srt,PROGRAM,VERSION[,FILTER] (FILTER: a -Y expression on the connections counted; repeatable)")
	f.StringVarP(&opts.Show.Select, "display-filter", "Y", "", "show only the messages and connections this expression selects, as tshark -Y does (e.g. 'addr == 192.0.2.1 and severity >= warning')")
	f.VarP(oneOf(&opts.Show.Time, output.TimeRelative, "time format", output.TimeModes...), "time-format", "t",
		"time as tshark -t shows it: r (since the first frame), d (since the line before), a, ad (local), u, ud (UTC), e (epoch)")
	sizeVar(f, &opts.Show.Width, "width", defaultWidth, "text: wrap lines at this many columns (0: do not wrap; default: the terminal's width, else 80)")
	f.Var(oneOf(&opts.Show.Details, output.DetailsFindings, "value", output.DetailsNone, output.DetailsFindings, output.DetailsAll),
		"details", "markdown: the messages shown in full: none, findings (those with one, or the first few) or all")
	sizeVar(f, &opts.Show.Budget, "budget", defaultBudget, "markdown: keep the report within this many characters, saying what was cut (GitHub's limit; 0: no limit)")
	f.BoolVar(&opts.Show.Basename, "basename", false, "name the inputs by their base names, not their paths (paths leak into public bugs)")
	f.BoolVar(&opts.Show.FullPaths, "full-paths", false, "markdown: name the inputs by their paths, not their base names (the default there)")
	f.BoolVar(&opts.Show.Anonymize, "anonymize", false, "put names in place of IP addresses, GIDs and GUIDs in every format (host1, gid1, guid1; the same address the same name); the -w file is not anonymized")
	f.Var(&portsFlag{&opts.Input.RoCEPorts, "UDP"}, "roce-port", "also decode this UDP destination port as RoCEv2 (repeatable)")
	sizeVar(f, &opts.Limits.TCP.StreamBytes, "max-stream-bytes", reassembly.DefaultStreamBytes, "iWARP: octets buffered per TCP direction for its MPA frame")
	sizeVar(f, &opts.Limits.TCP.TotalBytes, "max-buffer-bytes", reassembly.DefaultTotalBytes, "iWARP: octets buffered for all TCP directions together")
	sizeVar(f, &opts.Limits.TCP.Flows, "max-tcp-flows", reassembly.DefaultFlows, "iWARP: TCP directions followed at once (those that least recently brought new octets are given up first)")
	sizeVar(f, &opts.Limits.IPFrag.Fragments, "max-ip-fragments", ipfrag.DefaultFragments, "IP fragments held for reassembly, all datagrams together (the oldest datagrams are given up first)")
	sizeVar(f, &opts.Limits.IPFrag.Bytes, "max-ip-fragment-bytes", ipfrag.DefaultBytes, "octets of IP fragments held for reassembly, all datagrams together")
	f.DurationVar(&opts.Limits.IPFrag.Timeout, "ip-fragment-timeout", ipfrag.DefaultTimeout, "capture time an IP datagram may wait for its missing fragments")
	sizeVar(f, &opts.Limits.MaxConnections, "max-connections", conn.DefaultMaxConnections, "connection attempts tracked at once, about 1 KB each (the oldest is reported early beyond it)")
	f.Var(datapathFlag(&opts.Input.Datapath), "datapath", "RC traffic after each CM exchange: all (a record for every RPC-over-RDMA message), findings (only for those with a finding) or off")
	datapathLimitFlags(f, &opts.Limits.Datapath)
	f.BoolVar(&opts.Input.SHA256, "sha256", false, "put each input's SHA-256 in the JSON summary (the Markdown report always has it); costs about 0.7 s per GiB")
	sizeVarP(f, &opts.Input.Count, "count", "c", 0, "stop after this many frames")
	f.StringVarP(&opts.Input.Write, "write", "w", "", "files: write the frames behind the records shown (reads the inputs twice); live: every captured frame (pcapng, or pcap for a .pcap name)")

	f.BoolVar(&opts.Input.Annotate, "annotate", false, "with -w FILE.pcapng: write every frame of the inputs, each finding a packet comment on its frame (Wireshark: frame.comment, Expert Information)")

	f.StringArrayVarP(&opts.Live.Interfaces, "interface", "i", nil, "capture live on this interface (repeatable)")
	f.BoolVar(&opts.Live.NoPromisc, "no-promisc", false, "live: do not put the interface in promiscuous mode")
	f.Var(&portsFlag{&opts.Live.Ports, "TCP"}, "port", "live: keep only TCP segments from or to this port (repeatable)")
	f.Var(hostsFlag{&opts.Live.Hosts}, "host", "live: keep only traffic from or to this address (repeatable)")
	f.StringVarP(&opts.Live.Expr, "filter", "f", "", "live: a tcpdump filter expression instead of the built-in one (libpcap build only)")
	f.DurationVar(&opts.Live.Duration, "duration", 0, "live: stop after this long (e.g. 30s, 5m)")
	f.BoolVarP(&opts.Live.List, "list-interfaces", "D", false, "list the interfaces live capture can use, and exit")
	completeDissect(c)
	return c
}

// runDissect runs `rdmacm-pd dissect` as opts say; tests call it without
// cobra. It checks the flags, builds the dissector's configuration, the
// renderer and the sinks between them, runs, and turns what happened into
// the exit.
func runDissect(ctx context.Context, s *IOStreams, opts *dissectOptions) error {
	if opts.Live.List {
		return listInterfaces(s)
	}
	if opts.Changed == nil {
		opts.Changed = func(string) bool { return false }
	}
	live := len(opts.Live.Interfaces) > 0
	if err := checkDissect(opts, live); err != nil {
		return err
	}
	if opts.Show.Format == output.Markdown && !opts.Show.FullPaths {
		opts.Show.Basename = true // a report goes into public bugs: no paths unless asked
	}
	var sel *output.Selection
	if opts.Changed("display-filter") {
		sel, _ = output.ParseSelection(opts.Show.Select) // checkDissect refused one that does not parse
		if sel.NamesRPC() && opts.Input.Datapath != datapath.ModeAll {
			fmt.Fprintf(s.ErrOut, "rdmacm-pd: -Y names msg == RPC: add --datapath all to have a record of every "+
				"RPC-over-RDMA message (without it, only those with findings have one)\n")
		}
	}
	cfg := dissectConfig(s, &opts.Input, &opts.Limits, opts.Show.Format)
	ro := renderOptions(s, opts, live, sel, cfg.Budget)
	r, err := output.New(s.Out, ro)
	if err != nil {
		return usageError("%v", err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	parent := ctx
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var stats []*output.RPCStat
	for _, z := range opts.Show.Stats {
		st, _ := output.ParseRPCStat(z) // checkDissect refused one that does not parse
		stats = append(stats, st)
	}
	chain, err := newSinkChain(opts, live, sel, r, stats, s.Out, ro.Width)
	if err != nil {
		return err
	}
	if chain.ev != nil {
		chain.ev.command = ro.Command
	}
	if p := newProgress(s, progressMode(opts.Show.Progress), opts.Show.Quiet); p != nil {
		cfg.Progress = p.Update
		chain.head = p.sink(chain.head)
		defer p.Clear(true)
		es := *s
		es.ErrOut = p // what goes to standard error clears the line first
		s = &es
	}
	var sources []dissect.Source
	if !live {
		sources = chain.ev.sources(opts.Input.Files, s.In, cfg.Hash)
	}
	// Keep the garbage collector close to the state limits, so that memory
	// stays bounded whatever the input (unless GOMEMLIMIT says otherwise).
	if s.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cfg.Budget.SoftLimit()) // -w's frames are charged to the budget
	}
	frames, cut, runErr := dissectInputs(ctx, s, &opts.Input, &opts.Live, live, cfg, chain.head, sources)
	if chain.ev != nil {
		stop() // a second interrupt ends the writing
		chain.ev.write(parent, &opts.Input, cfg, frames)
	}
	err = finishDissect(s, &opts.Input, opts.Show.Basename, r, chain, runErr)
	if cut && exitCode(err) != ExitFailure {
		return interrupted() // the output said so (run-interrupted)
	}
	return err
}

// dissectConfig is the dissector's configuration: what it decodes, its
// limits, and one memory budget for the run, which the Markdown report's
// details charge too. format matters because the report always names each
// input's SHA-256.
func dissectConfig(s *IOStreams, in *inputOptions, l *limitOptions, format output.Format) dissect.Config {
	cfg := dissect.Config{RoCEPorts: in.RoCEPorts, TCP: l.TCP, IPFrag: l.IPFrag, MaxConnections: l.MaxConnections,
		Hash: in.SHA256 || format == output.Markdown, Count: in.Count, Datapath: in.Datapath, DatapathLimits: l.Datapath,
		ReuseRecords: true} // the sinks of the chain (newSinkChain) keep Clones of what they keep
	cfg.Budget = budget.New(cfg.MemoryLimit())
	return cfg
}

// renderOptions are the renderer's options: how the flags show what is
// found, and what identifies the run in a report.
func renderOptions(s *IOStreams, opts *dissectOptions, live bool, sel *output.Selection, mem *budget.Budget) output.Options {
	show := &opts.Show
	width, chars := show.Width, show.Budget
	if !opts.Changed("width") && s.OutTerminal && s.Columns > 0 {
		width = s.Columns // a terminal's own width, unless --width says otherwise
	}
	if width == 0 {
		width = -1 // no wrapping
	}
	if chars == 0 {
		chars = -1 // no limit
	}
	var paths []string // shown by their base names
	if show.Basename {
		paths = append(append(paths, opts.Input.Files...), opts.Input.Write)
	}
	return output.Options{
		Format:    show.Format,
		Verbose:   show.Verbose,
		Hex:       show.Hex,
		Color:     show.Format == output.Text && s.ColorOut(show.Color),
		MultiFile: len(opts.Input.Files) > 1,
		Version:   ToolVersion(),
		Command:   commandLine(opts.Args, paths),
		Live:      live,
		Quiet:     show.Quiet,
		Time:      timeMode(opts),
		Width:     width,
		Details:   show.Details,
		Budget:    chars,
		Selection: sel,
		Anonymize: show.Anonymize,
		Memory:    mem.For(budget.Report),
	}
}

// sinkChain is the way of the records from the run loop to the renderer:
// (the selection), (the -w file's Plan), (the base names), the --fail-on
// counter, then the renderer. The counter and the -w file are looked at
// again once the run is over.
type sinkChain struct {
	head    record.Sink
	counter *severityCounter
	ev      *evidence // nil: no -w file of a file input
}

// newSinkChain builds the sinks in front of the renderer r, and creates the
// -w file of a file input, whose Plan sees the records shown.
func newSinkChain(opts *dissectOptions, live bool, sel *output.Selection, r record.Sink, stats []*output.RPCStat,
	out io.Writer, width int) (*sinkChain, error) {
	ch := &sinkChain{counter: &severityCounter{next: r, threshold: opts.FailOn, multiFile: len(opts.Input.Files) > 1}}
	ch.head = ch.counter
	if opts.Show.Basename {
		ch.head = renamer{ch.head}
	}
	if opts.Input.Write != "" && !live {
		newWriter := newEvidence
		if opts.Input.Annotate {
			newWriter = newAnnotation
		}
		ev, err := newWriter(opts.Input.Write, opts.Show.Basename, ch.head)
		if err != nil {
			return nil, err
		}
		ch.head, ch.ev = ev.head(), ev
	}
	if sel != nil {
		ch.head = sel.Filter(ch.head)
	}
	if len(stats) > 0 { // every connection, whatever -Y shows
		ch.head = output.NewStatsSink(stats, opts.Show.Format, width, out, ch.head)
	}
	return ch, nil
}

// dissectInputs runs the inputs into sink. An interruption is no error:
// what was read has been written; reading files (or standard input), cut
// reports that the results are partial. A live capture ends so normally.
// frames counts the frames read of the files' sources.
func dissectInputs(ctx context.Context, s *IOStreams, in *inputOptions, lv *liveOptions, live bool, cfg dissect.Config,
	sink record.Sink, sources []dissect.Source) (frames int, cut bool, err error) {
	if live {
		err = runLive(ctx, s, liveInput{lv, in.Write, in.Count}, cfg, sink)
	} else {
		var sum *record.Summary
		sum, err = dissect.RunSources(ctx, sources, cfg, sink)
		if sum != nil {
			frames = sum.Frames
		}
	}
	if errors.Is(err, context.Canceled) {
		return frames, !live, nil
	}
	return frames, false, err
}

// finishDissect closes the -w file (saying what it holds) and the renderer,
// and turns the run into the exit: the first failure of the run or of the
// closing (its inputs by their base names with --basename), else what
// --fail-on says.
func finishDissect(s *IOStreams, in *inputOptions, basename bool, r output.Renderer, ch *sinkChain, runErr error) error {
	if ch.ev != nil {
		if err := ch.ev.close(s, in.Write); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := r.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		if basename {
			runErr = renameError(runErr, in.Files)
		}
		return failure(runErr)
	}
	return ch.counter.failOn(s)
}

// timeMode is the -t format given, or "" for each output's default.
func timeMode(opts *dissectOptions) output.TimeMode {
	if opts.Changed("time-format") {
		return opts.Show.Time
	}
	return ""
}
