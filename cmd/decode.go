package cmd

import (
	"encoding/hex"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

type decodeOptions struct {
	Hex          []string
	Format       string
	Color        string
	ExpectOffset int
	FailOn       string
}

func newDecodeCmd(s *IOStreams) *cobra.Command {
	opts := &decodeOptions{}
	c := &cobra.Command{
		Use:   "decode [flags] HEX...",
		Short: "Decode a private-data blob pasted from a log",
		Long: `Searches a private-data blob for the RPC-over-RDMA version 1 message of
RFC 8797, decodes it and checks it as dissect does. The hex may contain
spaces, colons, commas, dashes and 0x prefixes, and may be split over several
arguments. Without --expect-offset, the message is expected at offset 36
when the blob starts with an IP CM header, else at 0.`,
		Example: `  rdmacm-pd decode f6ab0e18 01 01 03 03
  rdmacm-pd decode -T json 0xf6ab0e18,0x01,0x00,0x07,0x07`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Hex = args
			return runDecode(s, opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.Format, "format", "T", "text", "output format: text or json")
	f.StringVar(&opts.Color, "color", "auto", "colour the text output: auto, always or never")
	f.IntVar(&opts.ExpectOffset, "expect-offset", -1, "where the carrier puts the message (0 CM, 36 after an IP CM header, 4 after MPA v2 IRD/ORD); -1 guesses")
	f.StringVar(&opts.FailOn, "fail-on", "never", "exit 1 when a finding reaches this severity: never, info, warning or error")
	return c
}

func runDecode(s *IOStreams, opts *decodeOptions) error {
	pd, err := parseHex(strings.Join(opts.Hex, " "))
	if err != nil {
		return usageError("%v", err)
	}
	format, err := output.ParseFormat(opts.Format)
	if err != nil || format == output.Markdown {
		return usageError("--format: want text or json, not %q", opts.Format)
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
	expect := opts.ExpectOffset
	if expect < 0 {
		expect = guessOffset(pd)
	}
	rp, fs := decode.CheckPrivateData(pd, expect)
	err = output.WriteDecode(s.Out, output.Options{Format: format,
		Color: format == output.Text && output.UseColor(mode, s.OutTerminal, s.Getenv)}, pd, rp, fs)
	if err != nil {
		return failure(err)
	}
	if failOn != 0 && finding.Max(fs) >= failOn {
		return &exitError{code: ExitFindings}
	}
	return nil
}

// guessOffset expects the message after an IP CM header when the blob starts
// with one (version 0, IP version 4 or 6), else at 0.
func guessOffset(pd []byte) int {
	if !layers.IsRPCRDMAAt(pd, 0) && len(pd) >= layers.IPCMHeaderLen+layers.RPCRDMALen &&
		pd[0] == 0 && (pd[1]>>4 == 4 || pd[1]>>4 == 6) {
		return layers.IPCMHeaderLen
	}
	return 0
}

// parseHex reads hex digits, ignoring white space, colons, dashes, commas
// and 0x prefixes.
func parseHex(s string) ([]byte, error) {
	var digits strings.Builder
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ':' || r == '-' || r == ','
	}) {
		tok = strings.TrimPrefix(strings.TrimPrefix(tok, "0x"), "0X")
		digits.WriteString(tok)
	}
	d := digits.String()
	if d == "" {
		return nil, errorf("no hex digits given")
	}
	if len(d)%2 != 0 {
		return nil, errorf("odd number of hex digits (%d)", len(d))
	}
	b, err := hex.DecodeString(d)
	if err != nil {
		return nil, errorf("not hex: %v", err)
	}
	return b, nil
}
