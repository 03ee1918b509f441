package output

import (
	"github.com/fatih/color"
)

// ColorMode is the --color setting.
type ColorMode string

// Colour modes.
const (
	ColorAuto   ColorMode = "auto"
	ColorAlways ColorMode = "always"
	ColorNever  ColorMode = "never"
)

// UseColor is the one place that decides whether output is coloured.
// always colours even when NO_COLOR is set; never does not colour. auto
// colours only a terminal, and honours, in this order: NO_COLOR (set and not
// empty: no colour), CLICOLOR_FORCE (set and not "0": colour even when not a
// terminal), CLICOLOR=0 (no colour) and TERM=dumb (no colour). getenv is
// os.Getenv in the program and a map in tests.
func UseColor(mode ColorMode, terminal bool, getenv func(string) string) bool {
	switch mode {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	}
	if getenv("NO_COLOR") != "" {
		return false
	}
	if f := getenv("CLICOLOR_FORCE"); f != "" && f != "0" {
		return true
	}
	if getenv("CLICOLOR") == "0" || getenv("TERM") == "dumb" {
		return false
	}
	return terminal
}

// palette holds the colours of the text renderers. Each colour is switched
// on or off explicitly: fatih/color's global NoColor is read once at start-up
// from NO_COLOR and the terminal, and must not decide for us.
type palette struct {
	bold, dim, name, info, warning, error, good, bad, mark *color.Color
}

func newPalette(on bool) *palette {
	p := &palette{
		bold:    color.New(color.Bold),
		dim:     color.New(color.Faint),
		name:    color.New(color.Bold, color.FgCyan),
		info:    color.New(color.FgBlue),
		warning: color.New(color.FgYellow),
		error:   color.New(color.FgRed, color.Bold),
		good:    color.New(color.FgGreen),
		bad:     color.New(color.FgRed),
		mark:    color.New(color.Bold, color.FgBlack, color.BgYellow),
	}
	for _, c := range []*color.Color{p.bold, p.dim, p.name, p.info, p.warning, p.error, p.good, p.bad, p.mark} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}
