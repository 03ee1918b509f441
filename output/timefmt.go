package output

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TimeMode is how the text output shows a message's capture time: the
// letters tshark's -t takes.
type TimeMode string

// Time formats.
const (
	TimeRelative     TimeMode = "r"  // seconds since the first frame of the input (the text default)
	TimeDelta        TimeMode = "d"  // seconds since the message line before
	TimeDeltaShown   TimeMode = "dd" // the same: tshark's "since the previous displayed packet"
	TimeAbsolute     TimeMode = "a"  // time of day, local time zone
	TimeAbsoluteDate TimeMode = "ad" // date and time of day, local time zone
	TimeUTC          TimeMode = "u"  // time of day, UTC
	TimeUTCDate      TimeMode = "ud" // date and time of day, UTC (the Markdown details)
	TimeEpoch        TimeMode = "e"  // seconds since 1970-01-01 UTC
)

// TimeModes lists the formats -t takes, in the order help shows them.
var TimeModes = []TimeMode{TimeAbsolute, TimeAbsoluteDate, TimeRelative, TimeDelta, TimeDeltaShown, TimeUTC,
	TimeUTCDate, TimeEpoch}

// clock formats capture times in one format and remembers the last one
// shown, for deltas.
type clock struct {
	format TimeMode
	loc    *time.Location
	prev   time.Time
}

func newClock(f TimeMode, loc *time.Location, def TimeMode) *clock {
	if f == "" {
		f = def
	}
	if loc == nil {
		loc = time.Local
	}
	return &clock{format: f, loc: loc}
}

// width is the columns a time takes in this format (seconds-based formats
// are right-aligned in it and may grow past it).
func (c *clock) width() int {
	switch c.format {
	case TimeAbsolute, TimeUTC:
		return len("15:04:05.000000")
	case TimeAbsoluteDate, TimeUTCDate:
		return len("2006-01-02 15:04:05.000000")
	case TimeEpoch:
		return len("1767225600.000000")
	}
	return len("00.000000")
}

// show formats t, the time of a message of an input whose first frame was
// at start; "-" when the frame has no timestamp.
func (c *clock) show(t, start time.Time) string {
	if t.IsZero() {
		return pad("-", c.width())
	}
	var s string
	switch c.format {
	case TimeAbsolute:
		s = t.In(c.loc).Format("15:04:05.000000")
	case TimeAbsoluteDate:
		s = t.In(c.loc).Format("2006-01-02 15:04:05.000000")
	case TimeUTC:
		s = t.UTC().Format("15:04:05.000000")
	case TimeUTCDate:
		s = t.UTC().Format("2006-01-02 15:04:05.000000")
	case TimeEpoch:
		s = fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
	case TimeDelta, TimeDeltaShown:
		if c.prev.IsZero() {
			s = seconds(0)
		} else {
			s = seconds(t.Sub(c.prev))
		}
	default: // relative
		if start.IsZero() {
			start = t
		}
		s = seconds(t.Sub(start))
	}
	c.prev = t
	return pad(s, c.width())
}

// append appends what show shows. The relative and delta times, which
// the text output shows by default, are appended without a string.
func (c *clock) append(b []byte, t, start time.Time) []byte {
	if t.IsZero() || c.format != TimeRelative && c.format != TimeDelta && c.format != TimeDeltaShown && c.format != "" {
		return append(b, c.show(t, start)...)
	}
	var d time.Duration
	switch {
	case c.format == TimeDelta || c.format == TimeDeltaShown:
		if !c.prev.IsZero() {
			d = t.Sub(c.prev)
		}
	case start.IsZero():
	default:
		d = t.Sub(start)
	}
	c.prev = t
	var n [32]byte
	return appendPadded(b, appendSeconds(n[:0], d), c.width(), true)
}

// appendSeconds appends a duration as seconds with microseconds, as
// seconds shows it.
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		b, d = append(b, '-'), -d
	}
	us := d.Microseconds()
	b = strconv.AppendInt(b, us/1e6, 10)
	frac := us % 1e6
	b = append(b, '.')
	for div := int64(100000); div > 0; div /= 10 {
		b = append(b, byte('0'+frac/div%10))
	}
	return b
}

// seconds shows a duration as seconds with microseconds.
func seconds(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	us := d.Microseconds()
	return fmt.Sprintf("%s%d.%06d", sign, us/1e6, us%1e6)
}

// pad right-aligns s in w columns.
func pad(s string, w int) string {
	if n := runes(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}
