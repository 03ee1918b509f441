package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/decode"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/internal/hexdump"
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
		Use:   "decode [flags] HEX... | -",
		Short: "Decode a private-data blob pasted from a log",
		Long: `Searches a private-data blob for the RPC-over-RDMA version 1 message of
RFC 8797, decodes it and checks it as dissect does. The hex may contain
spaces, colons, commas, dashes and 0x prefixes, and may be split over several
arguments; "-" reads it from standard input, where raw octets are taken as
they are (anything that is not printable text). Dumps are read too, their
offsets and ASCII columns skipped: xxd, hexdump -C (and rdmacm-pd -x),
tcpdump -x and -X, tshark -x. Without --expect-offset, the message is
expected at offset 36 when the blob starts with an IP CM header, else at 0.`,
		Example: `  rdmacm-pd decode f6ab0e18 01 01 03 03
  rdmacm-pd decode -T json 0xf6ab0e18,0x01,0x00,0x07,0x07
  printf '\xf6\xab\x0e\x18\x01\x01\x03\x03' | xxd | rdmacm-pd decode -
  printf '\xf6\xab\x0e\x18\x01\x01\x03\x03' | rdmacm-pd decode -`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("decode needs the hex octets as arguments, or - to read them from standard input")
			}
			return nil
		},
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
	completeDecode(c)
	return c
}

func runDecode(s *IOStreams, opts *decodeOptions) error {
	text, where := strings.Join(opts.Hex, " "), "decode"
	if len(opts.Hex) == 1 && opts.Hex[0] == "-" {
		b, err := io.ReadAll(io.LimitReader(s.In, maxDecodeInput+1))
		switch {
		case err != nil:
			return failure(fmt.Errorf("standard input: %w", err))
		case len(b) > maxDecodeInput:
			return usageError("standard input: more than %d octets of text: decode reads one private-data blob", maxDecodeInput)
		}
		text, where = string(b), "standard input"
	}
	if opts.ExpectOffset < guessExpectOffset {
		return usageError("--expect-offset: %d (want an offset of 0 or more, or -1 to guess)", opts.ExpectOffset)
	}
	var pd []byte
	if where == "standard input" && !isText(text) {
		pd = []byte(text) // raw octets (a blob saved from a log, a dd of a frame)
	} else {
		var err error
		if pd, err = hexdump.Parse(text); err != nil {
			return usageError("%s: %v", where, err)
		}
	}
	expect := opts.ExpectOffset
	if expect < 0 {
		expect = guessOffset(pd)
	}
	rp, fs := decode.CheckPrivateData(pd, expect)
	err := output.WriteDecode(s.Out, output.Options{Format: opts.Format,
		Color: opts.Format == output.Text && s.ColorOut(opts.Color)}, pd, rp, fs)
	if err != nil {
		return failure(err)
	}
	if opts.FailOn != 0 && finding.Max(fs) >= opts.FailOn {
		printError(s, fmt.Errorf("--fail-on %s: %s", opts.FailOn, tripped(fs, opts.FailOn)))
		return findingsReached()
	}
	return nil
}

// isText reports whether s is printable ASCII and white space: a hex dump,
// not raw octets.
func isText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7e) && (c < '\t' || c > '\r') {
			return false
		}
	}
	return true
}

// maxDecodeInput bounds the text decode reads from standard input: a dump
// of the largest private data (an MPA frame's 65535 octets) is about 5
// octets of text per octet.
const maxDecodeInput = 1 << 20

// tripped names the findings of fs at or above sev, as --fail-on reports
// them.
func tripped(fs []finding.Finding, sev finding.Severity) string {
	var names []string
	for _, f := range fs {
		if f.Severity >= sev {
			names = append(names, f.Code.String()+" ("+f.Severity.String()+")")
		}
	}
	return strings.Join(names, ", ")
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
