package decode

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// recordLengths are the bits of capture.Frame.Issue about lengths. The
// reader (internal/capture) reads such a record as its captured length
// says and goes on with the next one; the decoder reports it, on the
// message the frame carries and, for every such frame, on the run.
const recordLengths = capture.OverSnap | capture.OverWire

// counted is a count of frames and the first one's number.
type counted struct{ n, first int }

func (c *counted) add(frame int) {
	c.n++
	if c.n == 1 {
		c.first = frame
	}
}

// recordProblem says how a frame's record disagrees with the file, or "".
func recordProblem(f *capture.Frame) string {
	var why []string
	if f.Issue&capture.OverSnap != 0 {
		why = append(why, fmt.Sprintf("the captured length %d exceeds the snap length %d", len(f.Data), f.SnapLen))
	}
	if f.Issue&capture.OverWire != 0 {
		why = append(why, fmt.Sprintf("the captured length %d exceeds the original length %d", len(f.Data), f.WireLen))
	}
	if len(why) == 0 {
		return ""
	}
	return "the capture record is inconsistent: " + strings.Join(why, " and ") + "; read as captured"
}

// oddNotes are the run-level findings of frames the classifier did not
// look into (nested too deep, an IPv6 chain too long) and of records whose
// lengths disagree with the file.
func (d *Decoder) oddNotes() []finding.Finding {
	var out []finding.Finding
	if c := d.odd[0]; c.n > 0 {
		out = append(out, finding.New(finding.StateLimitReached,
			"%s: %d %s nested more than %d encapsulations deep (first at frame %d): what %s was not looked at",
			d.file, c.n, plural(c.n, "frame is", "frames are"), MaxTunnelDepth, c.first, plural(c.n, "it carries", "they carry")))
	}
	if c := d.odd[1]; c.n > 0 {
		out = append(out, finding.New(finding.IPv6ChainTooLong,
			"%s: %d IPv6 %s more than %d extension headers (first at frame %d): what %s was not looked at",
			d.file, c.n, plural(c.n, "packet has", "packets have"), MaxIPv6ExtHeaders, c.first, plural(c.n, "it carries", "they carry")))
	}
	if c := d.badTimes; c.n > 0 {
		out = append(out, finding.New(finding.TimestampOutOfRange,
			"%s: %d capture %s a timestamp outside the years 1970 to 9999 (first at frame %d); %s shown without a time and left out of the first and last times",
			d.file, c.n, plural(c.n, "record has", "records have"), c.first, plural(c.n, "it is", "they are")))
	}
	if c := d.records; c.n > 0 {
		out = append(out, finding.New(finding.RecordLengthInconsistent,
			"%s: %d capture %s a captured length above the snap length or the original length (first at frame %d); each was read as captured",
			d.file, c.n, plural(c.n, "record has", "records have"), c.first))
	}
	return out
}

// countOdd counts what the classifier gave up on in a frame, and a frame
// whose record disagrees with the file.
func (d *Decoder) countOdd(f *capture.Frame, fi *frameInfo) {
	if f.Issue&recordLengths != 0 {
		d.records.add(f.Index)
	}
	if f.Issue&capture.TimeOutOfRange != 0 {
		d.badTimes.add(f.Index)
	}
	if fi.odd&oddTooDeep != 0 {
		d.odd[0].add(f.Index)
	}
	if fi.odd&oddLongChain != 0 {
		d.odd[1].add(f.Index)
	}
}
