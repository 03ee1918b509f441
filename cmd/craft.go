package cmd

import (
	"bufio"
	"encoding/hex"
	"fmt"
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
	Traffic   bool     // an NFS-like exchange after the setup
	Findings  []string // data-path findings to produce in it
	NFS       bool     // --workload: the NFS/RDMA-like workload
}

// Defaults of craft's flags.
const (
	defaultTCPSegment = 1448 // a full segment of a 1500-octet MTU
	defaultTransport  = craft.RoCEv2
	defaultMPARev     = 2    // RFC 6581
	defaultInlineSize = 4096 // each side's Send Size and Receive Size
	defaultSeed       = 1
	defaultFloodCount = 1000000
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

With --traffic, an NFS-like exchange follows the setup (RC traffic on the
InfiniBand family, FPDUs on iWARP), and --finding CODE adds the traffic that
raises one data-path finding.`,
		Example: `  rdmacm-pd craft --send-size 4096 --receive-size 4096 --remote-invalidate -w nfs.pcap
  rdmacm-pd craft --transport ib --reject -w rejected.pcapng
  rdmacm-pd craft --transport iwarp --split 7,30 -w split.pcap   # MPA rev 2: a 32-octet Request
  rdmacm-pd craft --transport iwarp --mpa-rev 1 --split 7,20 -w split-rev1.pcap
  rdmacm-pd craft --send-size 8192 --hex
  rdmacm-pd craft --ulp nvme-rdma --reject -w nvme-rejected.pcap
  rdmacm-pd craft --ulp iser --transport iwarp -w iser.pcap
  rdmacm-pd craft --traffic --remote-invalidate --reply-remote-invalidate -w nfs-traffic.pcap
  rdmacm-pd craft --finding send-with-invalidate-not-allowed -w linux-swi.pcap
  rdmacm-pd craft --transport iwarp --finding mpa-crc-mismatch -w bad-crc.pcap
  rdmacm-pd craft --workload 64MiB -w workload.pcap
  rdmacm-pd craft --workload 64MiB --iwarp-conns 64 --iwarp-crc-every 2 -w iwarp.pcap
  rdmacm-pd craft --flood reqs --count 300 -w reqs.pcap`,
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
	f.IntVar(&opts.IWARPConn, "iwarp-conns", 0, "workload: an NFS-like iWARP capture instead, this many connections (every 4th with markers, CRC as --iwarp-crc-every says): READ Calls, their data in RDMA Writes, Replies with Send with Invalidate")
	f.IntVar(&opts.IWARPCRC, "iwarp-crc-every", 1, "workload with --iwarp-conns: every this-many-th connection uses CRC (1: all; 0: none)")
	f.StringVar(&opts.Flood, "flood", "", "write a hostile capture instead, for robustness tests: "+strings.Join(craft.FloodKinds, ", "))
	f.IntVar(&opts.Count, "count", defaultFloodCount, "flood: how many streams, requests or retries")
	f.Var(oneOf(&opts.ULP, craft.ULPs[0], "upper layer", craft.ULPs...), "ulp",
		"the upper layer whose private data the messages carry: "+strings.Join(craft.ULPs, ", ")+" (not rpc-over-rdma: the RFC 8797 flags do not apply)")
	completeCraft(c)
	f.BoolVar(&opts.Traffic, "traffic", false, "an NFS-like exchange after the setup (Calls and Replies with chunks, RDMA WRITEs and READs, Send With Invalidate when both sides set R; on the InfiniBand family then DREQ and DREP)")
	f.BoolVar(&opts.NFS, "nfs", false, "workload: the NFS/RDMA-like workload instead: RoCEv2 connections set up with RFC 8797 data, Calls and Replies with chunks, RDMA WRITEs and READs, Send With Invalidate, TCP bulk, reconnections")
	f.StringSliceVar(&opts.Findings, "finding", nil, "with --traffic (implied): also produce this data-path finding (repeatable): "+strings.Join(craft.DatapathFindings, ", ")+
		"; with --transport iwarp also "+strings.Join(craft.IWARPFindings, ", "))
	return c
}

func runCraft(s *IOStreams, opts *craftOptions) error {
	if opts.Workload != "" {
		return runWorkload(s, opts)
	}
	if opts.Flood != "" {
		return runFlood(s, opts)
	}
	// The sizes must be given as sizes: 0 is not taken to mean the default.
	for _, sz := range []struct {
		flag string
		v    int
	}{{"send-size", opts.Initiator.SendSize}, {"receive-size", opts.Initiator.ReceiveSize},
		{"reply-send-size", opts.Responder.SendSize}, {"reply-receive-size", opts.Responder.ReceiveSize}} {
		if sz.v < layers.DefaultInline || sz.v > maxInlineSize || sz.v%layers.DefaultInline != 0 {
			return usageError("--%s: %d is not a multiple of 1024 from 1024 to %d", sz.flag, sz.v, maxInlineSize)
		}
	}
	if opts.HexOnly {
		switch {
		case opts.Write != "":
			return usageError("--hex prints the initiator's 8 octets and writes no capture: give --hex or -w, not both")
		case opts.Initiator.Absent:
			return usageError("--hex with --no-rpcrdma: the initiator sends no RFC 8797 message, so there is nothing to print")
		case opts.ULP != craft.ULPs[0]:
			return usageError("--hex prints the initiator's RFC 8797 message: not with --ulp %s", opts.ULP)
		}
		b, err := opts.Initiator.Message()
		if err != nil {
			return usageError("%v", err)
		}
		fmt.Fprintln(s.Out, hex.EncodeToString(b))
		return nil
	}
	if opts.Write == "" {
		return usageError("craft needs -w FILE (or --hex)")
	}
	var frames []craft.Frame
	var err error
	switch tr := opts.Transport; {
	case opts.ULP != craft.ULPs[0]:
		if opts.Traffic || len(opts.Findings) > 0 {
			return usageError("--traffic and --finding make RPC-over-RDMA traffic, not --ulp %s", opts.ULP)
		}
		if len(opts.SplitAt) > 0 {
			return usageError("--split applies to RFC 8797 setups only, not to --ulp %s", opts.ULP)
		}
		if opts.MPARevSet && tr != craft.IWARP {
			return usageError("--mpa-rev applies to --transport iwarp only")
		}
		if frames, err = craft.ULPExchange(opts.ULP, tr, opts.IPv6, opts.Reject, uint8(opts.MPARev)); err != nil {
			return usageError("--ulp %s: %v", opts.ULP, err)
		}
	case tr == craft.RoCEv2 || tr == craft.RoCEv1 || tr == craft.InfiniBand:
		if len(opts.SplitAt) > 0 {
			return usageError("--split applies to --transport iwarp only")
		}
		if opts.MPARevSet {
			return usageError("--mpa-rev applies to --transport iwarp only")
		}
		x := craft.Exchange{Transport: tr, IPv6: opts.IPv6, Initiator: opts.Initiator, Responder: opts.Responder, Reject: opts.Reject}
		switch {
		case (opts.Traffic || len(opts.Findings) > 0) && opts.Reject:
			return usageError("--traffic and --finding need an accepted connection, not --reject")
		case opts.Traffic || len(opts.Findings) > 0:
			frames, err = x.NFSTraffic(craft.Traffic{Findings: opts.Findings})
		default:
			frames, err = x.Frames()
		}
	case tr == craft.IWARP:
		if (opts.Traffic || len(opts.Findings) > 0) && opts.Reject {
			return usageError("--traffic and --finding need an accepted connection, not --reject")
		}
		if opts.MPARev != 1 && opts.MPARev != 2 {
			return usageError("--mpa-rev: %d (want 1 or 2)", opts.MPARev)
		}
		x := craft.IWARPExchange{IPv6: opts.IPv6, Rev: uint8(opts.MPARev), Initiator: opts.Initiator, Responder: opts.Responder,
			Reject: opts.Reject, SplitAt: opts.SplitAt}
		if opts.Traffic || len(opts.Findings) > 0 {
			frames, err = x.NFSTraffic(craft.Traffic{Findings: opts.Findings})
		} else {
			frames, err = x.Frames()
		}
		if err != nil && len(opts.SplitAt) > 0 && strings.HasPrefix(err.Error(), "split offsets") {
			return usageError("--split: %v", err)
		}
	}
	if err != nil {
		return usageError("%v", err)
	}
	if opts.Write == "-" {
		w := bufio.NewWriter(s.Out)
		if err := craft.Write(w, false, frames); err != nil {
			return failure(err)
		}
		return w.Flush()
	}
	if err := craft.WriteFile(opts.Write, frames); err != nil {
		return failure(err)
	}
	return nil
}

// runWorkload writes a performance workload and prints what it holds.
func runWorkload(s *IOStreams, opts *craftOptions) error {
	size, err := parseSize(opts.Workload)
	if err != nil {
		return usageError("--workload: %v", err)
	}
	if opts.Write == "" || opts.Write == "-" {
		return usageError("--workload needs -w FILE")
	}
	switch {
	case opts.TCPFlows < 0:
		return usageError("--tcp-flows: %d is negative", opts.TCPFlows)
	case opts.TCPSeg < 1 || opts.TCPSeg > 9000:
		return usageError("--tcp-segment: %d (want 1 to 9000 octets)", opts.TCPSeg)
	case opts.IWARPConn < 0 || opts.IWARPConn > 10000:
		return usageError("--iwarp-conns: %d (want 0 to 10000 connections)", opts.IWARPConn)
	case opts.IWARPCRC < 0:
		return usageError("--iwarp-crc-every: %d is negative", opts.IWARPCRC)
	case opts.NFS && (opts.TCPFlows > 0 || opts.IWARPConn > 0):
		return usageError("--nfs is a workload of its own: give it without --tcp-flows and --iwarp-conns")
	}
	f, err := os.Create(opts.Write)
	if err != nil {
		return failure(err)
	}
	var counts fmt.Stringer
	switch {
	case opts.NFS:
		counts, err = craft.NFSWorkload{Size: size, Seed: opts.Seed}.Write(f)
	case opts.IWARPConn > 0:
		crc := opts.IWARPCRC
		if crc == 0 {
			crc = -1 // none
		}
		counts, err = craft.IWARPWorkload{Size: size, Seed: opts.Seed, Conns: opts.IWARPConn, CRCEvery: crc}.Write(f)
	default:
		counts, err = craft.Workload{Size: size, Seed: opts.Seed, TCPFlows: opts.TCPFlows, TCPSegment: opts.TCPSeg}.Write(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return failure(fmt.Errorf("%s: %w", opts.Write, err))
	}
	fmt.Fprintf(s.Out, "%s: %s\n", opts.Write, counts)
	return nil
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
	if opts.Write == "" || opts.Write == "-" {
		return usageError("--flood needs -w FILE")
	}
	if opts.Count < 1 {
		return usageError("--count: %d (want at least 1)", opts.Count)
	}
	if !slices.Contains(craft.FloodKinds, opts.Flood) {
		return usageError("--flood: unknown kind %q (want %s)", opts.Flood, orList(craft.FloodKinds))
	}
	f, err := os.Create(opts.Write)
	if err != nil {
		return failure(err)
	}
	n, err := craft.Flood(f, opts.Flood, opts.Count)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return failure(fmt.Errorf("%s: %w", opts.Write, err))
	}
	fmt.Fprintf(s.Out, "%s: %d frames (%s, %d)\n", opts.Write, n, opts.Flood, opts.Count)
	return nil
}
