package cmd

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

type craftOptions struct {
	Transport craft.Transport
	IPv6      bool
	Initiator craft.Peer
	Responder craft.Peer
	Reject    bool
	Write     string
	HexOnly   bool
	MPARev    int
	MPARevSet bool // --mpa-rev was given
	SplitAt   []int
	Workload  string
	Seed      uint64
	TCPFlows  int
	TCPSeg    int
	IWARPConn int
	IWARPCRC  int // --iwarp-crc-every
	Flood     string
	Count     int
	ULP       string
	Traffic   bool     // an NFS exchange after the setup
	Findings  []string // data-path and RPC findings to produce in it
	RPC       string   // --rpc: the NFS version of the traffic and the NFS workloads (rpcMix: both)
	Callback  bool     // --callback: a backchannel CB_COMPOUND in the traffic
	Long      bool     // --long: Long Calls and a Long Reply in the traffic
	Violation []string // --chunk-violation: kinds of chunk violation in the traffic
	NFS       bool     // --workload: the NFS/RDMA-like workload
	NoCM      string   // --no-cm: traffic set up without CM, of this kind
	OOBPort   uint16   // --oob-port: its out-of-band TCP exchange's port
	Health    []string // --health: transport cases to write (craft_health.go)
	TCPHealth []string // --tcp-health: iWARP TCP cases to write (craft_health.go)
	Snaplen   int      // --snaplen: cut every frame there
}

// Defaults of craft's flags.
const (
	defaultTCPSegment = 1448 // a full segment of a 1500-octet MTU
	defaultTransport  = craft.RoCEv2
	defaultMPARev     = 2    // RFC 6581
	defaultInlineSize = 4096 // each side's Send Size and Receive Size
	defaultSeed       = 1
	defaultFloodCount = 1000000
	// rpcMix is --rpc's value for NFSv3 and NFSv4.1 both.
	rpcMix = "mix"
	// maxInlineSize is the largest size RFC 8797's encoding holds:
	// (255 + 1) * 1024.
	maxInlineSize = 256 * layers.DefaultInline
)

func newCraftCmd(s *IOStreams) *cobra.Command {
	opts := &craftOptions{}
	c := &cobra.Command{
		Use:   "craft [flags] -w FILE",
		Short: "Write a capture of a connection setup with chosen RFC 8797 properties",
		Long: `Builds a complete connection setup (REQ, REP, RTU; or REQ, REJ with --reject)
whose frames carry RPC-over-RDMA version 1 private data with the properties
given, with correct ICRCs, and writes it as pcap (or pcapng, by the file's
extension). The initiator's REQ carries the IP CM header of an NFS/RDMA
connection (TCP port 20049), so its message sits at offset 36.

With --transport iwarp: the TCP handshake, an MPA Request and an MPA Reply
(revision 2 by default: the message sits at offset 4, after IRD/ORD).

With --ulp another upper layer's private data takes the place of the RFC 8797
messages, and the connection goes to that layer's service (Service ID or TCP
port): an NVMe-oF, iSER, SRP, RDS, rsockets, Lustre o2iblnd, SDP, IPoIB-CM or
SMB Direct setup. With --reject the responder rejects it with the layer's
reject data; iSER over iWARP logs in over TCP (streaming mode) first.

With --traffic, an NFS exchange follows the setup (RC traffic on the
InfiniBand family, FPDUs on iWARP): real NFSv3 and NFSv4.1 Calls and
Replies (--rpc nfs3 or nfs4 for one version only), with --callback the
server's CB_COMPOUND on the backchannel, and --finding CODE adds the traffic
that raises one data-path or RPC finding. On the InfiniBand family, --long
adds Long Calls (RPCSEC_GSS COMPOUNDs pulled by RDMA Read from a
position-zero read chunk) and a Long Reply (written into a reply chunk), and
--chunk-violation KIND each way to break a chunk (--finding chunk-violation:
all of them).

With --no-cm KIND, RoCEv2 traffic set up without CM instead: RC, UC, UD or
DC (Mellanox's Dynamically Connected transport, on the Reliable Datagram
opcodes); with --oob-port N a TCP exchange on port N comes first, as
perftest's on port 18515.`,
		Example: `  rdmacm-pd craft --send-size 4096 --receive-size 4096 --remote-invalidate -w nfs.pcap
  rdmacm-pd craft --transport ib --reject -w rejected.pcapng
  rdmacm-pd craft --transport iwarp --split 7,30 -w split.pcap   # MPA rev 2: a 32-octet Request
  rdmacm-pd craft --transport iwarp --mpa-rev 1 --split 7,20 -w split-rev1.pcap
  rdmacm-pd craft --send-size 8192 --hex
  rdmacm-pd craft --ulp nvme-rdma --reject -w nvme-rejected.pcap
  rdmacm-pd craft --ulp iser --transport iwarp -w iser.pcap
  rdmacm-pd craft --traffic --remote-invalidate --reply-remote-invalidate -w nfs-traffic.pcap
  rdmacm-pd craft --finding send-with-invalidate-not-allowed -w linux-swi.pcap
  rdmacm-pd craft --rpc nfs4 --callback --finding rpc-call-resent -w nfs4-resent.pcap
  rdmacm-pd craft --long --chunk-violation write-past-end -w chunks.pcap
  rdmacm-pd craft --finding inline-threshold-too-small -w long-calls.pcap   # Long Calls on a 1024 threshold
  rdmacm-pd craft --transport iwarp --finding mpa-crc-mismatch -w bad-crc.pcap
  rdmacm-pd craft --workload 64MiB -w workload.pcap
  rdmacm-pd craft --workload 64MiB --iwarp-conns 64 --iwarp-crc-every 2 -w iwarp.pcap
  rdmacm-pd craft --flood reqs --count 300 -w reqs.pcap
  rdmacm-pd craft --no-cm rc --oob-port 18515 -w perftest.pcap`,
		Args: noArgs("craft"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.MPARevSet = c.Flags().Changed("mpa-rev")
			return runCraft(s, opts)
		},
	}
	f := c.Flags()
	f.Var(oneOf(&opts.Transport, defaultTransport, "transport", craft.RoCEv2, craft.RoCEv1, craft.InfiniBand, craft.IWARP),
		"transport", "carrier: rocev2, rocev1, ib or iwarp")
	f.IntVar(&opts.MPARev, "mpa-rev", defaultMPARev, "iwarp: MPA revision, 1 (RFC 5044) or 2 (RFC 6581, IRD/ORD before the data)")
	f.IntSliceVar(&opts.SplitAt, "split", nil, "iwarp: split the MPA Request into TCP segments at these octet offsets (repeatable or comma-separated)")
	f.BoolVar(&opts.IPv6, "ipv6", false, "RoCEv2 or iWARP over IPv6 (and IPv6 GIDs)")
	f.IntVar(&opts.Initiator.SendSize, "send-size", defaultInlineSize, "initiator's Send Size in octets (multiple of 1024)")
	f.IntVar(&opts.Initiator.ReceiveSize, "receive-size", defaultInlineSize, "initiator's Receive Size in octets")
	f.BoolVar(&opts.Initiator.RemoteInvalidate, "remote-invalidate", false, "initiator sets R")
	f.BoolVar(&opts.Initiator.Absent, "no-rpcrdma", false, "initiator sends no RFC 8797 message")
	f.IntVar(&opts.Responder.SendSize, "reply-send-size", defaultInlineSize, "responder's Send Size in octets")
	f.IntVar(&opts.Responder.ReceiveSize, "reply-receive-size", defaultInlineSize, "responder's Receive Size in octets")
	f.BoolVar(&opts.Responder.RemoteInvalidate, "reply-remote-invalidate", false, "responder sets R")
	f.BoolVar(&opts.Responder.Absent, "reply-no-rpcrdma", false, "responder sends no RFC 8797 message")
	f.BoolVar(&opts.Reject, "reject", false, "the responder rejects the connection (REJ with consumer reject, or an MPA Reply with R set), still with its private data")
	f.StringVarP(&opts.Write, "write", "w", "", "capture file to write: pcap, or pcapng for a .pcapng name; - for standard output")
	f.BoolVar(&opts.HexOnly, "hex", false, "print only the initiator's 8 octets, in hex")
	f.StringVar(&opts.Workload, "workload", "", "write a mixed performance workload of this size instead (e.g. 64MiB, 1GiB): RoCEv2 data, TCP bulk, small UDP, with CM exchanges and iWARP connections in between")
	f.Uint64Var(&opts.Seed, "seed", defaultSeed, "workload: the random seed (the same seed writes the same file)")
	f.IntVar(&opts.TCPFlows, "tcp-flows", 0, "workload: all TCP instead, bulk segments of this many concurrent flows captured mid-stream, in turn, with iWARP connections hidden among them")
	f.IntVar(&opts.TCPSeg, "tcp-segment", defaultTCPSegment, "workload with --tcp-flows: octets of payload in a bulk segment")
	f.IntVar(&opts.IWARPConn, "iwarp-conns", 0, "workload: an NFS iWARP capture instead, this many connections (every 4th with markers, CRC as --iwarp-crc-every says): READ Calls, their data in RDMA Writes, Replies with Send with Invalidate")
	f.IntVar(&opts.IWARPCRC, "iwarp-crc-every", 1, "workload with --iwarp-conns: every this-many-th connection uses CRC (1: all; 0: none)")
	f.StringVar(&opts.Flood, "flood", "", "write a hostile capture instead, for robustness tests: "+strings.Join(craft.FloodKinds, ", "))
	f.IntVar(&opts.Count, "count", defaultFloodCount, "flood: how many streams, requests or retries")
	f.Var(oneOf(&opts.ULP, craft.ULPs[0], "upper layer", craft.ULPs...), "ulp",
		"the upper layer whose private data the messages carry: "+strings.Join(craft.ULPs, ", ")+" (not rpc-over-rdma: the RFC 8797 flags do not apply)")
	f.StringVar(&opts.NoCM, "no-cm", "", "write RoCEv2 traffic set up without CM instead, of this kind: "+strings.Join(craft.NoCMKinds, ", "))
	f.Uint16Var(&opts.OOBPort, "oob-port", 0, "with --no-cm: a TCP exchange on this port first, and its closing after (perftest's is 18515); 0: none")
	f.BoolVar(&opts.Traffic, "traffic", false, "an NFS exchange after the setup (NFSv3 and NFSv4.1 Calls and Replies with chunks, RDMA WRITEs and READs, Send With Invalidate when both sides set R; on the InfiniBand family then DREQ and DREP)")
	f.BoolVar(&opts.NFS, "nfs", false, "workload: the NFS/RDMA workload instead: RoCEv2 connections set up with RFC 8797 data, NFSv3 and NFSv4.1 Calls and Replies with chunks, Long Calls and Long Replies, RDMA WRITEs and READs, Send With Invalidate, TCP bulk, reconnections")
	f.StringSliceVar(&opts.Findings, "finding", nil, "with --traffic (implied): also produce this data-path or RPC finding (repeatable): "+
		strings.Join(craft.DatapathFindings, ", ")+", "+strings.Join(craft.RPCFindings, ", ")+"; on the InfiniBand family also "+
		strings.Join(craft.ChunkFindings, ", ")+"; with --transport iwarp also "+strings.Join(craft.IWARPFindings, ", "))
	f.BoolVar(&opts.Long, "long", false, "with --traffic (implied), InfiniBand family: also Long Calls (RPCSEC_GSS COMPOUNDs in position-zero read chunks, pulled by RDMA Read) and a Long Reply (an NFS directory listing RDMA-written into a reply chunk of two segments)")
	f.StringSliceVar(&opts.Violation, "chunk-violation", nil, "with --traffic (implied), InfiniBand family: also this chunk violation (repeatable): "+
		strings.Join(craft.ChunkViolations, ", ")+"; --finding chunk-violation alone gives them all")
	f.Var(oneOf(&opts.RPC, rpcMix, "NFS version", rpcMix, craft.NFSv3, craft.NFSv4), "rpc",
		"with --traffic (implied), or a --workload with --nfs or --iwarp-conns: the NFS version of the Calls: "+craft.NFSv3+", "+craft.NFSv4+" (4.1) or "+rpcMix+" (both)")
	f.BoolVar(&opts.Callback, "callback", false, "with --traffic (implied): the server also sends a CB_COMPOUND Call (CB_SEQUENCE, CB_RECALL) on the backchannel, and the client its Reply")
	completeCraft(c)
	healthFlags(f, opts)
	return c
}

// craftMode is what one craft invocation writes; the flags choose it
// (craftModeOf). Modes are bits so that a rule of craftRules can name the
// several modes it applies to.
type craftMode uint

const (
	modeExchange craftMode = 1 << iota // an InfiniBand-family setup: RoCEv2, RoCEv1 or native InfiniBand
	modeIWARP                          // an iWARP setup: TCP handshake, MPA Request and Reply
	modeULP                            // another upper layer's setup (--ulp)
	modeTraffic                        // an RFC 8797 setup and NFS traffic after it (--traffic, --finding, --rpc, --callback)
	modeHex                            // only the initiator's 8 octets, in hex (--hex)
	modeWorkload                       // a performance workload (--workload)
	modeFlood                          // a hostile capture (--flood)
	modeNoCM                           // traffic set up without CM (--no-cm)

	// modeSetups are the modes that write one connection setup to -w.
	modeSetups = modeExchange | modeIWARP | modeULP | modeTraffic
)

// craftRuns holds the one function that writes each mode. Each runs after
// checkCraft, so it only builds and writes.
var craftRuns = map[craftMode]func(*IOStreams, *craftOptions) error{
	modeExchange: runExchange,
	modeIWARP:    runIWARP,
	modeULP:      runULP,
	modeTraffic:  runTraffic,
	modeHex:      runHex,
	modeWorkload: runWorkload,
	modeFlood:    runFlood,
	modeNoCM:     runNoCM,
}

// runCraft writes what the flags ask for: it picks the mode, refuses the flag
// combinations that make no sense in it, and runs the mode's function.
func runCraft(s *IOStreams, opts *craftOptions) error {
	mode := craftModeOf(opts)
	if err := checkCraft(opts, mode); err != nil {
		return err
	}
	return craftRuns[mode](s, opts)
}

// craftModeOf picks the mode: a workload or a flood takes precedence over
// everything else given, then --hex, then the kind of setup.
func craftModeOf(opts *craftOptions) craftMode {
	switch {
	case opts.Workload != "":
		return modeWorkload
	case opts.Flood != "":
		return modeFlood
	case opts.NoCM != "":
		return modeNoCM
	case opts.HexOnly:
		return modeHex
	case opts.ULP != craft.ULPs[0]:
		return modeULP
	case opts.traffic():
		return modeTraffic
	case opts.Transport == craft.IWARP:
		return modeIWARP
	}
	return modeExchange
}

// traffic reports whether the setup is to be followed by traffic: --rpc
// implies it only outside a workload.
func (opts *craftOptions) traffic() bool {
	return opts.Traffic || len(opts.Findings) > 0 || len(opts.Health) > 0 || len(opts.TCPHealth) > 0 || opts.Callback || opts.Long || len(opts.Violation) > 0 ||
		opts.RPC != rpcMix && opts.Workload == ""
}

// nfsVersion is the craft.Traffic and workload NFS version --rpc gives.
func (opts *craftOptions) nfsVersion() string {
	if opts.RPC == rpcMix {
		return craft.NFSMix
	}
	return opts.RPC
}

// craftRule is one flag combination craft refuses, in the modes it names.
type craftRule struct {
	modes craftMode
	flagRule
}

// checkCraft is the one place that refuses flag combinations: the first
// rule of craftRules that applies to mode and is broken is the error
// (firstBroken: the order of the rules is kept).
func checkCraft(opts *craftOptions, mode craftMode) error {
	var rules []flagRule
	for _, r := range craftRules(opts) {
		if r.modes&mode != 0 {
			rules = append(rules, r.flagRule)
		}
	}
	return firstBroken(rules)
}

// craftRules lists the rules in the order they are checked.
func craftRules(opts *craftOptions) []craftRule {
	iwarp := opts.Transport == craft.IWARP
	split := len(opts.SplitAt) > 0
	var sizeErr error
	if opts.Workload != "" {
		_, sizeErr = parseSize(opts.Workload)
	}
	rules := []craftRule{
		{modeWorkload, flagRule{"--workload", sizeErr != nil, fmt.Sprintf("--workload: %v", sizeErr)}},
		{modeWorkload, flagRule{"-w", !namesFile(opts.Write), "--workload needs -w FILE"}},
		{modeWorkload, flagRule{"--tcp-flows", opts.TCPFlows < 0, fmt.Sprintf("--tcp-flows: %d is negative", opts.TCPFlows)}},
		{modeWorkload, flagRule{"--tcp-segment", !within(opts.TCPSeg, 1, 9000),
			fmt.Sprintf("--tcp-segment: %d (want 1 to 9000 octets)", opts.TCPSeg)}},
		{modeWorkload, flagRule{"--iwarp-conns", !within(opts.IWARPConn, 0, 10000),
			fmt.Sprintf("--iwarp-conns: %d (want 0 to 10000 connections)", opts.IWARPConn)}},
		{modeWorkload, flagRule{"--iwarp-crc-every", opts.IWARPCRC < 0,
			fmt.Sprintf("--iwarp-crc-every: %d is negative", opts.IWARPCRC)}},
		{modeWorkload, flagRule{"--nfs", opts.NFS && (opts.TCPFlows > 0 || opts.IWARPConn > 0),
			"--nfs is a workload of its own: give it without --tcp-flows and --iwarp-conns"}},
		{modeWorkload, flagRule{"--rpc", opts.RPC != rpcMix && !opts.NFS && opts.IWARPConn == 0,
			"--rpc applies to --traffic, and to the workloads --nfs and --iwarp-conns"}},
		{modeWorkload | modeFlood | modeNoCM | modeHex, flagRule{"--callback", opts.Callback, "--callback applies to --traffic only"}},
		{modeWorkload | modeFlood | modeNoCM | modeHex, flagRule{"--long", opts.Long, "--long applies to --traffic only"}},
		{modeWorkload | modeFlood | modeNoCM | modeHex, flagRule{"--chunk-violation", len(opts.Violation) > 0, "--chunk-violation applies to --traffic only"}},
		{modeFlood | modeNoCM | modeHex, flagRule{"--rpc", opts.RPC != rpcMix,
			"--rpc applies to --traffic, and to the workloads --nfs and --iwarp-conns"}},

		{modeFlood, flagRule{"-w", !namesFile(opts.Write), "--flood needs -w FILE"}},
		{modeFlood, flagRule{"--count", opts.Count < 1, fmt.Sprintf("--count: %d (want at least 1)", opts.Count)}},
		{modeFlood, flagRule{"--flood", !slices.Contains(craft.FloodKinds, opts.Flood),
			fmt.Sprintf("--flood: unknown kind %q (want %s)", opts.Flood, orList(craft.FloodKinds))}},

		{modeNoCM, flagRule{"--no-cm", !slices.Contains(craft.NoCMKinds, opts.NoCM),
			fmt.Sprintf("--no-cm: unknown kind %q (want %s)", opts.NoCM, orList(craft.NoCMKinds))}},
		{modeNoCM, flagRule{"-w", opts.Write == "", "--no-cm needs -w FILE"}},
		{modeNoCM, flagRule{"--transport", opts.Transport != craft.RoCEv2,
			fmt.Sprintf("--no-cm writes RoCEv2 traffic, not --transport %s", opts.Transport)}},
		{modeExchange | modeIWARP | modeULP | modeTraffic | modeHex | modeWorkload | modeFlood,
			flagRule{"--oob-port", opts.OOBPort != 0, "--oob-port applies to --no-cm only"}},
	}
	// The sizes must be given as sizes: 0 is not taken to mean the default.
	for _, sz := range []struct {
		flag string
		v    int
	}{{"send-size", opts.Initiator.SendSize}, {"receive-size", opts.Initiator.ReceiveSize},
		{"reply-send-size", opts.Responder.SendSize}, {"reply-receive-size", opts.Responder.ReceiveSize}} {
		rules = append(rules, craftRule{modeSetups | modeHex, flagRule{"--" + sz.flag, !inlineSize(sz.v),
			fmt.Sprintf("--%s: %d is not a multiple of 1024 from 1024 to %d", sz.flag, sz.v, maxInlineSize)}})
	}
	rules = append(rules, healthRules(opts)...)
	return append(rules, []craftRule{
		{modeHex, flagRule{"--hex", opts.Write != "",
			"--hex prints the initiator's 8 octets and writes no capture: give --hex or -w, not both"}},
		{modeHex, flagRule{"--no-rpcrdma", opts.Initiator.Absent,
			"--hex with --no-rpcrdma: the initiator sends no RFC 8797 message, so there is nothing to print"}},
		{modeHex, flagRule{"--ulp", opts.ULP != craft.ULPs[0],
			fmt.Sprintf("--hex prints the initiator's RFC 8797 message: not with --ulp %s", opts.ULP)}},

		{modeSetups, flagRule{"-w", opts.Write == "", "craft needs -w FILE (or --hex)"}},
		{modeULP, flagRule{"--traffic", opts.traffic(),
			fmt.Sprintf("--traffic, --finding, --rpc and --callback make RPC-over-RDMA traffic, not --ulp %s", opts.ULP)}},
		{modeULP, flagRule{"--split", split, fmt.Sprintf("--split applies to RFC 8797 setups only, not to --ulp %s", opts.ULP)}},
		{modeExchange | modeTraffic, flagRule{"--split", split && !iwarp, "--split applies to --transport iwarp only"}},
		{modeExchange | modeULP | modeTraffic, flagRule{"--mpa-rev", opts.MPARevSet && !iwarp,
			"--mpa-rev applies to --transport iwarp only"}},
		{modeTraffic, flagRule{"--reject", opts.Reject, "--traffic and --finding need an accepted connection, not --reject"}},
		{modeTraffic, flagRule{"--long", opts.Long && iwarp, "--long is built on the InfiniBand family only, not --transport iwarp"}},
		{modeTraffic, flagRule{"--chunk-violation", len(opts.Violation) > 0 && iwarp,
			"--chunk-violation is built on the InfiniBand family only, not --transport iwarp"}},
		// Only the RFC 8797 setups check the revision: --ulp hands it on.
		{modeIWARP | modeTraffic, flagRule{"--mpa-rev", iwarp && !within(opts.MPARev, 1, 2),
			fmt.Sprintf("--mpa-rev: %d (want 1 or 2)", opts.MPARev)}},
	}...)
}

// namesFile reports whether -w names a file (a workload or a flood is not
// written to standard output).
func namesFile(w string) bool { return w != "" && w != "-" }

// inlineSize reports whether v is a Send or Receive Size RFC 8797 can
// encode: a multiple of 1024 from 1024 to maxInlineSize.
func inlineSize(v int) bool {
	return within(v, layers.DefaultInline, maxInlineSize) && v%layers.DefaultInline == 0
}

func within(v, lo, hi int) bool { return v >= lo && v <= hi }

// runHex prints the initiator's RFC 8797 message.
func runHex(s *IOStreams, opts *craftOptions) error {
	b, err := opts.Initiator.Message()
	if err != nil {
		return usageError("%v", err)
	}
	fmt.Fprintln(s.Out, hex.EncodeToString(b))
	return nil
}

// exchange is the InfiniBand-family setup the flags describe.
func (opts *craftOptions) exchange() *craft.Exchange {
	return &craft.Exchange{Transport: opts.Transport, IPv6: opts.IPv6, Initiator: opts.Initiator, Responder: opts.Responder,
		Reject: opts.Reject}
}

// iwarpExchange is the iWARP setup the flags describe.
func (opts *craftOptions) iwarpExchange() *craft.IWARPExchange {
	return &craft.IWARPExchange{IPv6: opts.IPv6, Rev: uint8(opts.MPARev), Initiator: opts.Initiator, Responder: opts.Responder,
		Reject: opts.Reject, SplitAt: opts.SplitAt}
}

// runExchange writes an InfiniBand-family setup.
func runExchange(s *IOStreams, opts *craftOptions) error {
	frames, err := opts.exchange().Frames()
	if err != nil {
		return usageError("%v", err)
	}
	return writeCraft(s, opts, frames)
}

// runIWARP writes an iWARP setup.
func runIWARP(s *IOStreams, opts *craftOptions) error {
	frames, err := opts.iwarpExchange().Frames()
	if err != nil {
		return iwarpError(opts, err)
	}
	return writeFrames(s, opts.Write, frames)
}

// iwarpError is the usage error for what the iWARP builder refused: split
// offsets that do not fit the MPA Request are a mistake in --split, and
// say so.
func iwarpError(opts *craftOptions, err error) error {
	if len(opts.SplitAt) > 0 && strings.HasPrefix(err.Error(), "split offsets") {
		return usageError("--split: %v", err)
	}
	return usageError("%v", err)
}

// runTraffic writes an RFC 8797 setup and the NFS traffic after it,
// with the findings asked for, on either family.
func runTraffic(s *IOStreams, opts *craftOptions) error {
	if len(opts.Health) > 0 {
		return runHealth(s, opts)
	}
	t := craft.Traffic{Findings: opts.Findings, NFSVersion: opts.nfsVersion(), Callback: opts.Callback, Long: opts.Long,
		Violations: opts.Violation}
	if opts.Transport == craft.IWARP && len(opts.TCPHealth) > 0 {
		frames, err := opts.iwarpExchange().TCPHealthTraffic(opts.TCPHealth, t)
		if err != nil {
			return iwarpError(opts, err)
		}
		return writeFrames(s, opts.Write, frames)
	}
	if opts.Transport == craft.IWARP {
		frames, err := opts.iwarpExchange().NFSTraffic(t)
		if err != nil {
			return iwarpError(opts, err)
		}
		return writeFrames(s, opts.Write, frames)
	}
	frames, err := opts.exchange().NFSTraffic(t)
	if err != nil {
		return usageError("%v", err)
	}
	return writeCraft(s, opts, frames)
}

// runULP writes another upper layer's setup.
func runULP(s *IOStreams, opts *craftOptions) error {
	frames, err := craft.ULPExchange(opts.ULP, opts.Transport, opts.IPv6, opts.Reject, uint8(opts.MPARev))
	if err != nil {
		return usageError("--ulp %s: %v", opts.ULP, err)
	}
	return writeFrames(s, opts.Write, frames)
}

// writeFrames writes a setup's frames to the file name, or as pcap to
// standard output for "-".
func writeFrames(s *IOStreams, name string, frames []craft.Frame) error {
	if name == "-" {
		w := bufio.NewWriter(s.Out)
		if err := craft.Write(w, false, frames); err != nil {
			return failure(err)
		}
		return w.Flush()
	}
	if err := craft.WriteFile(name, frames); err != nil {
		return failure(err)
	}
	return nil
}

// runWorkload writes a performance workload and prints what it holds.
func runWorkload(s *IOStreams, opts *craftOptions) error {
	size, _ := parseSize(opts.Workload) // checkCraft refused a size that does not parse
	var counts fmt.Stringer
	err := createFile(opts.Write, func(f io.Writer) (err error) {
		switch {
		case opts.NFS:
			counts, err = craft.NFSWorkload{Size: size, Seed: opts.Seed, NFSVersion: opts.nfsVersion()}.Write(f)
		case opts.IWARPConn > 0:
			crc := opts.IWARPCRC
			if crc == 0 {
				crc = -1 // none
			}
			counts, err = craft.IWARPWorkload{Size: size, Seed: opts.Seed, Conns: opts.IWARPConn, CRCEvery: crc, NFSVersion: opts.nfsVersion()}.Write(f)
		default:
			counts, err = craft.Workload{Size: size, Seed: opts.Seed, TCPFlows: opts.TCPFlows, TCPSegment: opts.TCPSeg}.Write(f)
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "%s: %s\n", opts.Write, counts)
	return nil
}

// runNoCM writes traffic set up without CM.
func runNoCM(s *IOStreams, opts *craftOptions) error {
	frames, err := craft.NoCM{Kind: opts.NoCM, Port: opts.OOBPort, IPv6: opts.IPv6}.Frames()
	if err != nil {
		return usageError("%v", err)
	}
	return writeFrames(s, opts.Write, frames)
}

// parseSize reads 512, 64KiB, 256MiB, 1GiB, 4G...
func parseSize(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}, {"", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			var x int64
			if _, err := fmt.Sscan(n, &x); err != nil || x <= 0 || strconv.FormatInt(x, 10) != n {
				return 0, fmt.Errorf("%q is not a size (like 64MiB or 1GiB)", v)
			}
			return x * u.mult, nil
		}
	}
	return 0, fmt.Errorf("%q is not a size", v)
}

// runFlood writes a hostile capture.
func runFlood(s *IOStreams, opts *craftOptions) error {
	var n int
	err := createFile(opts.Write, func(f io.Writer) (err error) {
		n, err = craft.Flood(f, opts.Flood, opts.Count)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "%s: %d frames (%s, %d)\n", opts.Write, n, opts.Flood, opts.Count)
	return nil
}

// createFile creates the file name, has write fill it and closes it. The
// errors are failures; those after the file was created name it.
func createFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return failure(err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return failure(fmt.Errorf("%s: %w", name, err))
	}
	return nil
}
