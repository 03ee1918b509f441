package capture

// An annotated capture (dissect --annotate -w out.pcapng) is every frame
// of the input, with a pcapng packet comment per finding on the frame the
// finding belongs to. Wireshark shows the comments in its Expert
// Information, and filters them with frame.comment.
//
// Connection records come at the end of their input, long after their
// frames went by, so it takes two passes, as for an Excerpt: the first
// pass collects the comments by frame (Notes, a record.Sink behind the
// display filter), the second reads the input again and writes every
// frame with its comments (Annotated, a FrameWriter).

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// MaxNoteOctets bounds the octets of the comments Notes keeps (with
// noteCost for each): beyond it the comments are counted in Dropped, and
// not written.
const MaxNoteOctets = 32 << 20

// noteCost is what keeping a comment costs besides its text (its string
// header, its place in a slice and the map's entry, about).
const noteCost = 64

// noteKey names a frame: its input and its number there.
type noteKey struct {
	file  string
	frame int
}

// Notes collects the comments of the findings of the records it sees, by
// frame. Put it behind the display filter: the findings of every record
// shown are annotated. It passes the records on to next.
type Notes struct {
	next   record.Sink
	notes  map[noteKey][]string
	octets int

	// Kept and Dropped count the comments kept, and those beyond
	// MaxNoteOctets.
	Kept, Dropped int
	// Limit bounds the octets kept (0: MaxNoteOctets).
	Limit int
	// Last is the run's summary, once it came.
	Last *record.Summary
}

// NewNotes makes a Notes that passes the records on to next.
func NewNotes(next record.Sink) *Notes {
	return &Notes{next: next, notes: map[noteKey][]string{}}
}

// Comment is the packet comment of a finding: "rdmacm-pd <severity>
// <code>: <message> [<reference>]".
func Comment(f finding.Finding) string {
	s := "rdmacm-pd " + f.Severity.String() + " " + f.Code.String() + ": " + f.Message
	if f.Reference != "" {
		s += " [" + f.Reference + "]"
	}
	return s
}

// add keeps the comments of fs for a frame.
func (n *Notes) add(file string, frame int, fs []finding.Finding) {
	limit := n.Limit
	if limit <= 0 {
		limit = MaxNoteOctets
	}
	for _, f := range fs {
		c := Comment(f)
		if n.octets+len(c)+noteCost > limit {
			n.Dropped++
			continue
		}
		n.octets += len(c) + noteCost
		k := noteKey{file, frame}
		n.notes[k] = append(n.notes[k], c)
		n.Kept++
	}
}

// connFrame is the frame a connection finding belongs to: the frame its
// message names first ("frame N: ..."), else the request's.
func connFrame(f finding.Finding, request int) int {
	rest, ok := strings.CutPrefix(f.Message, "frame ")
	if !ok {
		return request
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end <= 0 {
		return request
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil || n <= 0 {
		return request
	}
	return n
}

// Message keeps a message's findings, on the frame that completes it.
func (n *Notes) Message(m *record.Message) error {
	n.add(m.File, m.Frame, m.Findings)
	return n.next.Message(m)
}

// RPC keeps an rpc record's findings, on the frame that completes its Send.
func (n *Notes) RPC(r *record.RPC) error {
	n.add(r.File, r.Frame, r.Findings)
	return n.next.RPC(r)
}

// Connection keeps a connection's findings: on the frame each names, or
// on the request.
func (n *Notes) Connection(c *record.Connection) error {
	n.conn(c.File, c.RequestFrame, c.Findings)
	return n.next.Connection(c)
}

// Update keeps the findings an update adds to its connection.
func (n *Notes) Update(u *record.ConnectionUpdate) error {
	n.conn(u.File, u.RequestFrame, u.Findings)
	return n.next.Update(u)
}

func (n *Notes) conn(file string, request int, fs []finding.Finding) {
	for i := range fs {
		n.add(file, connFrame(fs[i], request), fs[i:i+1])
	}
}

// Summary keeps the summary, and passes it on.
func (n *Notes) Summary(s *record.Summary) error {
	n.Last = s
	return n.next.Summary(s)
}

// Of returns the comments of a frame of an input.
func (n *Notes) Of(file string, frame int) []string { return n.notes[noteKey{file, frame}] }

// Annotated writes every frame it is given to a pcapng file, each with
// the comments Notes has for it.
type Annotated struct {
	path    string
	f       *os.File
	buf     *bufio.Writer
	ng      *pcapgo.NgWriter
	ifaces  map[ifaceKey]int
	notes   *Notes
	name    string // the source's, as the records name it
	iface   string // the source's pcapng interface name
	rename  func(string) string
	comment string
	lastLT  uint16

	// Frames, Annotated and Comments count the frames written, those with
	// a comment, and the comments.
	Frames, Annotated, Comments int
	err                         error
}

// CreateAnnotated creates the pcapng file at path for the frames, with
// the comments of notes; rename, when set, is the interface name of an
// input (its base name, say).
func CreateAnnotated(path string, notes *Notes, rename func(string) string) (*Annotated, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &Annotated{path: path, f: f, buf: bufio.NewWriterSize(f, 1<<20), ifaces: map[ifaceKey]int{}, notes: notes,
		rename: rename, lastLT: uint16(golayers.LinkTypeEthernet)}, nil
}

// SetComment sets the section header's comment: call it before the first
// frame.
func (w *Annotated) SetComment(c string) { w.comment = c }

// Source says that the frames that follow are those of the named source.
func (w *Annotated) Source(name string) {
	w.name, w.iface = name, name
	if w.rename != nil {
		w.iface = w.rename(name)
	}
}

// WriteFrame writes a frame with its comments.
func (w *Annotated) WriteFrame(f *Frame) error {
	if w.err != nil {
		return w.err
	}
	id, err := w.ifaceFor(f.LinkType)
	if err != nil {
		w.err = err
		return err
	}
	ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: max(f.WireLen, len(f.Data)),
		InterfaceIndex: id}
	cs := w.notes.Of(w.name, f.Index)
	w.Frames++
	w.Comments += len(cs)
	if len(cs) > 0 {
		w.Annotated++
	}
	if len(cs) == 0 {
		w.err = w.ng.WritePacket(ci, f.Data)
	} else {
		w.err = w.ng.WritePacketWithOptions(ci, f.Data, pcapgo.NgPacketOptions{Comments: cs})
	}
	return w.err
}

// ifaceFor is the interface of the current source and a link type, added at
// its first frame (the file started at the first of all).
func (w *Annotated) ifaceFor(lt uint16) (int, error) {
	k := ifaceKey{w.iface, lt}
	if id, ok := w.ifaces[k]; ok {
		return id, nil
	}
	intf := pcapgo.NgInterface{Name: w.iface, LinkType: golayers.LinkType(lt), SnapLength: snapLen, TimestampResolution: 9}
	var id int
	var err error
	if w.ng == nil {
		w.ng, err = pcapgo.NewNgWriterInterface(w.buf, intf, w.options())
	} else {
		id, err = w.ng.AddInterface(intf)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.path, err)
	}
	w.ifaces[k] = id
	w.lastLT = lt
	return id, nil
}

func (w *Annotated) options() pcapgo.NgWriterOptions {
	return pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "rdmacm-pd", Comment: w.comment}}
}

// Flush writes out what is buffered.
func (w *Annotated) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.ng != nil {
		w.err = w.ng.Flush()
	}
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	return w.err
}

// Close finishes the file (a valid empty capture when no frame came) and
// closes it.
func (w *Annotated) Close() error {
	err := w.err
	if err == nil && w.ng == nil {
		w.ng, err = pcapgo.NewNgWriterInterface(w.buf, pcapgo.NgInterface{LinkType: golayers.LinkType(w.lastLT),
			SnapLength: snapLen, TimestampResolution: 9}, w.options())
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
