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
	Format       output.Format
	Color        output.ColorMode
	ExpectOffset int
	FailOn       finding.Severity // 0: never
}

// guessExpectOffset is --expect-offset's default: guess from the blob.
const guessExpectOffset = -1

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
	f.VarP(formatFlag(&opts.Format, output.Text, output.JSON), "format", "T", "output format: text or json")
	f.Var(colorFlag(&opts.Color), "color", "colour the text output: auto, always or never")
	f.IntVar(&opts.ExpectOffset, "expect-offset", guessExpectOffset, "where the carrier puts the message (0 CM, 36 after an IP CM header, 4 after MPA v2 IRD/ORD); -1 guesses")
	f.Var(failOnFlag(&opts.FailOn), "fail-on", "exit 1 when a finding reaches this severity: never, info, warning or error")
	return c
}

func runDecode(s *IOStreams, opts *decodeOptions) error {
	pd, err := parseHex(strings.Join(opts.Hex, " "))
	if err != nil {
		return usageError("%v", err)
	}
	expect := opts.ExpectOffset
	if expect < 0 {
		expect = guessOffset(pd)
	}
	rp, fs := decode.CheckPrivateData(pd, expect)
	err = output.WriteDecode(s.Out, output.Options{Format: opts.Format,
		Color: opts.Format == output.Text && output.UseColor(opts.Color, s.OutTerminal, s.Getenv)}, pd, rp, fs)
	if err != nil {
		return failure(err)
	}
	if opts.FailOn != 0 && finding.Max(fs) >= opts.FailOn {
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
