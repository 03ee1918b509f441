package output

import (
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"
)

// DefaultWidth is the width the text output is laid out for: lines of
// free text (findings, explanations) wrap there, and tables narrow or wrap
// to stay within it.
const DefaultWidth = 80

// width is the layout width of the options: 0 means DefaultWidth, a
// negative value no wrapping at all.
func (o *Options) width() int {
	switch {
	case o.Width == 0:
		return DefaultWidth
	case o.Width < 0:
		return 1 << 30
	}
	return o.Width
}

// span is a piece of text in one style (nil: plain). A kept span stays
// on one line when it fits on one.
type span struct {
	text  string
	style *color.Color
	keep  bool
}

func plain(s string) span { return span{text: s} }

// String is the span's text in its style.
func (sp span) String() string {
	if sp.style == nil {
		return sp.text
	}
	return sp.style.Sprint(sp.text)
}

// runes is the display width of s: one column a rune (the arrows and
// other symbols used are one column wide).
func runes(s string) int { return utf8.RuneCountInString(s) }

// wrapSpans lays out spans as words in lines of at most width columns. The
// first line starts at column start (after a prefix its caller wrote); the
// lines after it start with hang spaces. A word longer than a line is not
// broken. It returns the text, with each word in the style of its span.
func wrapSpans(width, start, hang int, spans ...span) string {
	var b strings.Builder
	col := start
	first := true // no word on the current line yet
	for _, sp := range spans {
		words := strings.Fields(sp.text)
		if sp.keep && runes(sp.text) <= width-hang {
			words = []string{sp.text}
		}
		for _, w := range words {
			n := runes(w)
			if !first && col+1+n > width {
				b.WriteByte('\n')
				b.WriteString(strings.Repeat(" ", hang))
				col, first = hang, true
			}
			if !first {
				b.WriteByte(' ')
				col++
			}
			b.WriteString(span{text: w, style: sp.style}.String())
			col += n
			first = false
		}
	}
	return b.String()
}
