package cmd

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
	"github.com/rdmacm-pd/rdmacm-pd/output"
)

// The flag values of this file check what they are given as it is parsed:
// a bad value is a usage error "--flag: what is wrong with the value".

// Defaults and bounds of the flags that are not another package's.
const (
	defaultFormat = output.Text
	defaultColor  = output.ColorAuto
	failNever     = "never" // --fail-on: exit 1 on no finding
	// minStreamBytes holds an MPA frame's header.
	minStreamBytes = layers.MPAHeaderLen
)

// badValue is what a flag value says is wrong with the value given; the
// flag error handler puts the flag's name in front.
type badValue struct{ msg string }

func (b *badValue) Error() string { return b.msg }

func bad(format string, args ...any) error { return &badValue{fmt.Sprintf(format, args...)} }

// flagError turns a flag's parse error into the usage error to print,
// naming the flag: a value of this file's says what is wrong with it; a
// value of pflag's own types gets the same kind of sentence (no Go
// package in it); an unknown flag gets the nearest flag name.
func flagError(c *cobra.Command, err error, args []string) error {
	var iv *pflag.InvalidValueError
	var bv *badValue
	switch {
	case errors.As(err, &iv) && errors.As(err, &bv):
		return usageError("%s: %s", flagName(iv.GetFlag()), bv.msg)
	case errors.As(err, &iv):
		return usageError("%s: %s", flagName(iv.GetFlag()), wantOfType(iv.GetFlag().Value.Type(), iv.GetValue()))
	}
	msg := err.Error()
	if name, ok := unknownFlag(msg); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, "--"+f.Name)
			}
		})
		hint := ""
		if s := suggest(name, names); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", s)
		}
		if name == "-d" || name == "--decode-as" {
			hint = decodeAsHint(args)
		}
		return usageError("unknown flag %s%s; see %s --help", name, hint, c.CommandPath())
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		if strings.HasPrefix(name, "'") { // -x: 'x' in -x
			name = "-" + strings.Trim(strings.Fields(name)[0], "'")
		}
		return usageError("%s needs a value; see %s --help", name, c.CommandPath())
	}
	return usageError("%v (see %s --help)", err, c.CommandPath())
}

// decodeAsHint answers tshark's -d (decode as): RoCEv2 on another UDP port
// is --roce-port, named with the port the -d gave ("udp.port==4792,...").
func decodeAsHint(args []string) string {
	port := "PORT"
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "-d")
		if !ok {
			v, ok = strings.CutPrefix(a, "--decode-as")
		}
		if !ok {
			continue
		}
		v = strings.TrimPrefix(v, "=")
		if v == "" && i+1 < len(args) {
			v = args[i+1]
		}
		if rest, ok := strings.CutPrefix(v, "udp.port=="); ok {
			if p, _, _ := strings.Cut(rest, ","); p != "" {
				port = p
			}
		}
		break
	}
	return fmt.Sprintf(" (tshark's decode-as: RoCEv2 on another UDP port is --roce-port %s; CM and MPA are found on any port)", port)
}

// flagName is how errors name a flag: --name.
func flagName(f *pflag.Flag) string { return "--" + f.Name }

// wantOfType says what a value of one of pflag's types should have been.
func wantOfType(typ, v string) string {
	switch typ {
	case "int", "int64", "int32":
		return fmt.Sprintf("%q is not a whole number", v)
	case "uint", "uint64", "uint32", "uint16", "uint8":
		return fmt.Sprintf("%q is not a whole number of 0 or more", v)
	case "bool":
		return fmt.Sprintf("%q is not true or false", v)
	case "duration":
		return fmt.Sprintf("%q is not a duration (like 30s, 5m or 1h30m)", v)
	case "intSlice", "uintSlice":
		return fmt.Sprintf("%q is not a list of whole numbers (like 7,30)", v)
	}
	return fmt.Sprintf("%q is not a valid %s", v, typ)
}

// unknownFlag reads the flag named by pflag's "unknown flag: --x" and
// "unknown shorthand flag: 'x' in -xyz".
func unknownFlag(msg string) (string, bool) {
	if name, ok := strings.CutPrefix(msg, "unknown flag: "); ok {
		return name, true
	}
	if rest, ok := strings.CutPrefix(msg, "unknown shorthand flag: '"); ok && len(rest) > 1 {
		return "-" + rest[:strings.IndexByte(rest, '\'')], true
	}
	return "", false
}

// suggest is the word of names nearest to w, or "".
func suggest(w string, names []string) string { return output.Closest(w, names) }

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// choice is a flag taking one of a few words; noun is what its error calls
// a value ("unknown format").
type choice[T any] struct {
	v     *T
	word  string
	noun  string
	words []string
	parse func(string) (T, bool)
}

func (c *choice[T]) String() string { return c.word }
func (c *choice[T]) Type() string   { return "string" }

func (c *choice[T]) Set(s string) error {
	v, ok := c.parse(s)
	if !ok {
		return bad("unknown %s %q (want %s)", c.noun, s, orList(c.words))
	}
	*c.v, c.word = v, s
	return nil
}

// oneOf is a choice among the values of a string type, spelled as they
// are; v starts at def.
func oneOf[T ~string](v *T, def T, noun string, values ...T) *choice[T] {
	*v = def
	words := make([]string, len(values))
	for i, a := range values {
		words[i] = string(a)
	}
	return &choice[T]{v: v, word: string(def), noun: noun, words: words,
		parse: func(s string) (T, bool) { return T(s), slices.Contains(values, T(s)) }}
}

// formatFlag is --format, with these formats.
func formatFlag(v *output.Format, formats ...output.Format) *choice[output.Format] {
	return oneOf(v, defaultFormat, "format", formats...)
}

// colorFlag is --color.
func colorFlag(v *output.ColorMode) *choice[output.ColorMode] {
	return oneOf(v, defaultColor, "mode", output.ColorAuto, output.ColorAlways, output.ColorNever)
}

// failOnFlag is --fail-on: the lowest severity that makes the exit code 1,
// 0 for never.
func failOnFlag(v *finding.Severity) *choice[finding.Severity] {
	*v = 0
	return &choice[finding.Severity]{v: v, word: failNever, noun: "value", words: []string{failNever, "info", "warning", "error"},
		parse: func(s string) (finding.Severity, bool) {
			if s == failNever {
				return 0, true
			}
			sev, err := finding.ParseSeverity(s)
			return sev, err == nil
		}}
}

// portsFlag is a repeatable port flag (--roce-port, --port), also taking
// comma-separated ports; each port is kept once. proto names the ports in
// errors.
type portsFlag struct {
	v     *[]uint16
	proto string
}

func (p *portsFlag) Type() string { return "uintSlice" }

func (p *portsFlag) String() string {
	s := make([]string, len(*p.v))
	for i, v := range *p.v {
		s[i] = strconv.Itoa(int(v))
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (p *portsFlag) Set(s string) error {
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		switch {
		case err != nil:
			return bad("%q is not a %s port", f, p.proto)
		case n == 0 || n > math.MaxUint16:
			return bad("%d is not a %s port", n, p.proto)
		}
		if !slices.Contains(*p.v, uint16(n)) {
			*p.v = append(*p.v, uint16(n))
		}
	}
	return nil
}

// sizeFlag is a limit: a count of octets, flows or connections. Its bounds
// are checked together, once every flag is parsed (tcpLimitRules).
type sizeFlag struct{ v *int }

func (z sizeFlag) String() string { return strconv.Itoa(*z.v) }
func (z sizeFlag) Type() string   { return "int" }

func (z sizeFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return bad("%q is not a whole number", s)
	}
	*z.v = int(n)
	return nil
}

// sizeVar registers a size flag with its default.
func sizeVar(f *pflag.FlagSet, v *int, name string, def int, usage string) {
	sizeVarP(f, v, name, "", def, usage)
}

// sizeVarP is sizeVar with a shorthand.
func sizeVarP(f *pflag.FlagSet, v *int, name, short string, def int, usage string) {
	*v = def
	f.VarP(sizeFlag{v}, name, short, usage)
}

// hostsFlag is --host: repeatable IP addresses, kept in their unmapped form.
type hostsFlag struct{ v *[]netip.Addr }

func (h hostsFlag) Type() string { return "stringArray" }

func (h hostsFlag) String() string {
	if len(*h.v) == 0 {
		return "" // no "(default [])" in the help
	}
	s := make([]string, len(*h.v))
	for i, a := range *h.v {
		s[i] = a.String()
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (h hostsFlag) Set(s string) error {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return bad("%q is not an IP address", s)
	}
	*h.v = append(*h.v, a.Unmap())
	return nil
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
