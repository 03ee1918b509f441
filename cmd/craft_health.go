package cmd

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// craft's transport-health flags: --health writes the RC transport cases
// (NAKs, RNR NAKs, retransmissions, congestion, a packet the capture
// missed), --tcp-health the iWARP TCP cases (a segment sent again, one the
// capture lost, a zero window, a reset), --snaplen cuts every frame as
// tcpdump -s does.

func healthFlags(f *pflag.FlagSet, opts *craftOptions) {
	f.StringSliceVar(&opts.Health, "health", nil, "an RFC 8797 setup and NFS-like traffic with these RC transport cases (repeatable): "+
		strings.Join(craft.HealthCases, ", "))
	f.StringSliceVar(&opts.TCPHealth, "tcp-health", nil, "with --transport iwarp: an RFC 8797 setup and NFS traffic with these TCP cases (repeatable): "+
		strings.Join(craft.TCPHealthCases, ", "))
	f.IntVar(&opts.Snaplen, "snaplen", 0, "cut every frame at this many octets, as tcpdump -s does (a pcap file); 0: none")
}

// healthRules are the flag combinations --health and --snaplen refuse.
func healthRules(opts *craftOptions) []craftRule {
	var unknown, unknownTCP []string
	for _, k := range opts.Health {
		if !slices.Contains(craft.HealthCases, k) {
			unknown = append(unknown, k)
		}
	}
	for _, k := range opts.TCPHealth {
		if !slices.Contains(craft.TCPHealthCases, k) {
			unknownTCP = append(unknownTCP, k)
		}
	}
	return []craftRule{
		{modeTraffic, flagRule{"--health", len(unknown) > 0,
			fmt.Sprintf("--health: unknown case %q (want %s)", strings.Join(unknown, ","), orList(craft.HealthCases))}},
		{modeTraffic, flagRule{"--health", len(opts.Health) > 0 && opts.Transport == craft.IWARP,
			"--health writes RC traffic: not with --transport iwarp"}},
		{modeTraffic, flagRule{"--health", len(opts.Health) > 0 && len(opts.Findings) > 0,
			"--health and --finding write different traffic: give one of them"}},
		{modeTraffic, flagRule{"--tcp-health", len(unknownTCP) > 0,
			fmt.Sprintf("--tcp-health: unknown case %q (want %s)", strings.Join(unknownTCP, ","), orList(craft.TCPHealthCases))}},
		{modeTraffic, flagRule{"--tcp-health", len(opts.TCPHealth) > 0 && opts.Transport != craft.IWARP,
			"--tcp-health writes iWARP traffic: give --transport iwarp"}},
		{modeExchange | modeTraffic, flagRule{"--snaplen", opts.Snaplen < 0 || opts.Snaplen > 0 && opts.Snaplen < 64,
			fmt.Sprintf("--snaplen: %d (want 0, or 64 octets and more)", opts.Snaplen)}},
		{modeExchange | modeTraffic, flagRule{"--snaplen", opts.Snaplen > 0 && (opts.Transport == craft.IWARP || craft.IsPcapng(opts.Write)),
			"--snaplen writes a pcap file of the InfiniBand family: not with --transport iwarp or a .pcapng name"}},
		{modeIWARP | modeULP | modeHex | modeWorkload | modeFlood | modeNoCM, flagRule{"--snaplen", opts.Snaplen != 0,
			"--snaplen applies to a setup of the InfiniBand family, with or without --traffic or --health"}},
	}
}

// runHealth writes an RFC 8797 setup with the transport cases asked for.
func runHealth(s *IOStreams, opts *craftOptions) error {
	frames, err := opts.exchange().HealthTraffic(opts.Health)
	if err != nil {
		return usageError("%v", err)
	}
	return writeCraft(s, opts, frames)
}

// writeCraft writes frames as the flags ask: cut at --snaplen, or whole.
func writeCraft(s *IOStreams, opts *craftOptions, frames []craft.Frame) error {
	if opts.Snaplen == 0 {
		return writeFrames(s, opts.Write, frames)
	}
	if opts.Write == "-" {
		w := bufio.NewWriter(s.Out)
		if err := craft.WriteCut(w, frames, opts.Snaplen); err != nil {
			return failure(err)
		}
		return w.Flush()
	}
	return createFile(opts.Write, func(w io.Writer) error { return craft.WriteCut(w, frames, opts.Snaplen) })
}
