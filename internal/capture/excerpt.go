package capture

// The excerpt writer (Excerpt) writes the frames a Plan chose to a
// capture file: the small attachment a bug report wants, cut from a large
// capture (rdmacm-pd dissect -w with file input). It is the second pass
// of -w (see Plan).
//
// An Excerpt is the run loop's FrameWriter, which sees every frame, the
// data path's Evidence, which names the connection of each frame of its
// traffic, and the record.Sink of the second pass, which sees every
// message. A frame of a record without a connection is planned by its
// number, and taken as it is read. A CM message, and an RC frame of the
// traffic, is emitted while its frame is the current one; an iWARP MPA
// frame, or an FPDU, may have begun in TCP segments long before the one
// that completes it, so the Excerpt keeps copies of the recent TCP
// segments, and writes the frames taken in capture order once no later
// one can reach back before them. Frames are written once, however many
// records they carried.

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/budget"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// DefaultExcerptWindow bounds the octets of frames an Excerpt holds at
// once: the recent TCP segments (in case an MPA frame they began completes
// later) and the frames waiting to be written in order.
const DefaultExcerptWindow = 16 << 20

// snapLen is the snap length written in the file header.
const snapLen = 262144

// ExcerptOptions tune an Excerpt.
type ExcerptOptions struct {
	// Probe tells the frames that may carry an earlier part of an MPA
	// frame that a later frame completes, which the Excerpt keeps copies
	// of: a *decode.Probe. It is required; the Excerpt cannot make one
	// itself, as the decoder imports this package for its Frame.
	Probe MPAProbe
	// Plan is what to write (required): the first pass made it.
	Plan *Plan
	// Name, when set, is the pcapng interface name of an input (the base
	// name, say); nil: the input as given.
	Name func(string) string
	// Window bounds the octets held (0: DefaultExcerptWindow).
	Window int
	// Budget, when set, is the run's memory budget: the frames held are
	// charged to it, and when it is full the oldest TCP segments kept go
	// as when the window is (a message's frames are kept whatever it
	// costs).
	Budget *budget.Budget
}

// MPAProbe looks at frames without decoding them (decode.Probe).
type MPAProbe interface {
	// MayContinueMPA reports whether a frame is a TCP segment the
	// reassembler would look at: the only kind of frame that can carry an
	// earlier part of an MPA frame completed by a later one.
	MayContinueMPA(linkType uint16, data []byte) bool
}

// ExcerptStats say what an Excerpt wrote.
type ExcerptStats struct {
	Frames int // frames written
	// Lost counts TCP segments taken after they had left the window (an
	// MPA frame or FPDU completed long after it began): they are not in
	// the file.
	Lost int
}

// held is a copy of a frame.
type held struct {
	index    int
	data     []byte
	wireLen  int
	ts       time.Time
	linkType uint16
	name     string // the input, for the pcapng interface
	// Where it is held: its octets count until it is in neither.
	inRing, inPending bool
}

// Excerpt writes the frames of chosen messages to a capture file.
type Excerpt struct {
	path   string
	pcapng bool
	opts   ExcerptOptions
	f      *os.File
	buf    *bufio.Writer
	ng     *pcapgo.NgWriter
	pc     *pcapgo.Writer
	ifaces map[ifaceKey]int
	link   int // the pcap file's link type, -1 before the first frame

	cur       *Frame // the frame being dissected (not copied)
	lastIndex int
	name      string     // the source's, for the pcapng interface
	own       *frameRuns // the frames of the source planned by number
	ring      []*held    // recent TCP segments, oldest first
	// pending are the frames of messages taken, waiting to be written, by
	// index (mostly taken in order: an insertion is an append but for
	// the earlier segments of an MPA frame), so that writing those below
	// a limit costs what is written, not what waits.
	pending []*held
	held    int // octets in ring and pending
	stats   ExcerptStats
	err     error
}

type ifaceKey struct {
	name string
	lt   uint16
}

// CreateExcerpt starts a capture file at path: pcap for a name ending in
// .pcap, pcapng otherwise.
func CreateExcerpt(path string, opts ExcerptOptions) (*Excerpt, error) {
	if opts.Probe == nil || opts.Plan == nil {
		return nil, errors.New("capture: an Excerpt needs ExcerptOptions.Probe and Plan")
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if opts.Window <= 0 {
		opts.Window = DefaultExcerptWindow
	}
	return &Excerpt{path: path, pcapng: !strings.HasSuffix(strings.ToLower(path), ".pcap"), opts: opts, f: f,
		buf: bufio.NewWriterSize(f, 1<<20), ifaces: map[ifaceKey]int{}, link: -1}, nil
}

// Source says that the frames that follow are those of the named
// source: nothing of the last one is needed any more.
func (w *Excerpt) Source(name string) {
	w.writePending(-1)
	for _, h := range w.ring {
		w.drop(h)
	}
	w.ring, w.cur, w.lastIndex = w.ring[:0], nil, 0
	w.name = name
	if w.opts.Name != nil {
		w.name = w.opts.Name(name)
	}
	w.own = w.opts.Plan.frames[name]
	if w.own != nil {
		w.own.at = 0
	}
}

// WriteFrame sees each frame the run loop reads, before it is dissected.
func (w *Excerpt) WriteFrame(f *Frame) error {
	if w.err != nil {
		return w.err
	}
	w.lastIndex = f.Index
	w.cur = f
	if w.opts.Probe.MayContinueMPA(f.LinkType, f.Data) {
		h := w.copyOf(f)
		h.inRing = true
		w.ring = append(w.ring, h)
	}
	if w.own != nil && w.own.has(f.Index) {
		w.take(f.Index)
	}
	// Stay within the window, and within the run's memory budget: the
	// oldest segments go first; then what is older than every segment
	// kept can be written.
	for (w.held > w.opts.Window || w.opts.Budget.Over()) && len(w.ring) > 0 {
		w.drop(w.ring[0])
		w.ring = w.ring[1:]
	}
	limit := -1
	if len(w.ring) > 0 {
		limit = w.ring[0].index
	}
	w.writePending(limit)
	return w.err
}

// heldCost is what holding a frame costs besides its octets (the copy's
// record, its place in the ring and pending): counted in the window, so
// that a flood of tiny segments stays bounded too.
const heldCost = 160

func (w *Excerpt) copyOf(f *Frame) *held {
	w.held += len(f.Data) + heldCost
	w.opts.Budget.Force(budget.Excerpt, len(f.Data)+heldCost)
	return &held{index: f.Index, data: append([]byte(nil), f.Data...), wireLen: f.WireLen, ts: f.Time, linkType: f.LinkType, name: w.name}
}

// let stops counting a frame no longer held.
func (w *Excerpt) let(h *held) {
	w.held -= len(h.data) + heldCost
	w.opts.Budget.Release(budget.Excerpt, len(h.data)+heldCost)
}

// drop forgets a segment of the ring (unless a message already wants it).
func (w *Excerpt) drop(h *held) {
	h.inRing = false
	if !h.inPending {
		w.let(h)
	}
}

// Flush writes out what is buffered of the frames already written.
func (w *Excerpt) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.flushWriters(); err != nil {
		w.err = err
	}
	return w.err
}

func (w *Excerpt) flushWriters() error {
	if w.ng != nil {
		if err := w.ng.Flush(); err != nil {
			return err
		}
	}
	return w.buf.Flush()
}

// Evidence takes a frame of the traffic of connection conn (by its
// Number), when the Plan wants it (datapath.Output.Evidence).
func (w *Excerpt) Evidence(conn, frame int) {
	if w.opts.Plan.wants(conn, frame) {
		w.take(frame)
	}
}

// Message takes the frames of a message the Plan wants: one of a
// connection wanted (its setup), up to the frame wanted.
func (w *Excerpt) Message(m *record.Message) error {
	if !w.opts.Plan.wants(m.Conn, m.Frame) {
		return nil
	}
	if len(m.Frames) == 0 {
		w.take(m.Frame)
	}
	for _, idx := range m.Frames {
		w.take(idx)
	}
	return nil
}

// take takes a frame: the current one, or a TCP segment kept.
func (w *Excerpt) take(idx int) {
	at, found := slices.BinarySearchFunc(w.pending, idx, func(h *held, idx int) int { return cmp.Compare(h.index, idx) })
	if found {
		return
	}
	i := sort.Search(len(w.ring), func(i int) bool { return w.ring[i].index >= idx })
	var h *held
	switch {
	case i < len(w.ring) && w.ring[i].index == idx:
		h = w.ring[i]
	case w.cur != nil && w.cur.Index == idx:
		h = w.copyOf(w.cur)
	default:
		w.stats.Lost++
		return
	}
	h.inPending = true
	w.pending = slices.Insert(w.pending, at, h)
}

// The second pass's other records are not needed: they were shown in the
// first.

// Connection ignores a connection.
func (w *Excerpt) Connection(*record.Connection) error { return nil }

// Update ignores a connection's update.
func (w *Excerpt) Update(*record.ConnectionUpdate) error { return nil }

// RPC ignores an rpc record: its frames are the traffic's.
func (w *Excerpt) RPC(*record.RPC) error { return nil }

// Summary ignores the summary.
func (w *Excerpt) Summary(*record.Summary) error { return nil }

// writePending writes the frames waiting with an index below limit (all,
// for -1), in order.
func (w *Excerpt) writePending(limit int) {
	n := 0
	for n < len(w.pending) && (limit < 0 || w.pending[n].index < limit) {
		h := w.pending[n]
		h.inPending = false
		if !h.inRing {
			w.let(h)
		}
		if w.err == nil {
			w.err = w.write(h)
		}
		n++
	}
	if n > 0 {
		clear(w.pending[:n])
		w.pending = w.pending[n:]
	}
}

// write writes one frame, starting the file at the first.
func (w *Excerpt) write(h *held) error {
	ci := gopacket.CaptureInfo{Timestamp: h.ts, CaptureLength: len(h.data), Length: max(h.wireLen, len(h.data))}
	if !w.pcapng {
		if w.link < 0 {
			w.pc = pcapgo.NewWriterNanos(w.buf)
			if err := w.pc.WriteFileHeader(snapLen, golayers.LinkType(h.linkType)); err != nil {
				return err
			}
			w.link = int(h.linkType)
		}
		if int(h.linkType) != w.link {
			return fmt.Errorf("%s: a pcap file holds one link type, and frame %d of %s has link type %d, not %d: name the file .pcapng",
				w.path, h.index, h.name, h.linkType, w.link)
		}
		w.stats.Frames++
		return w.pc.WritePacket(ci, h.data)
	}
	k := ifaceKey{h.name, h.linkType}
	id, ok := w.ifaces[k]
	if !ok {
		intf := pcapgo.NgInterface{Name: h.name, LinkType: golayers.LinkType(h.linkType), SnapLength: snapLen,
			TimestampResolution: 9}
		var err error
		if w.ng == nil {
			w.ng, err = pcapgo.NewNgWriterInterface(w.buf, intf, pcapgo.NgWriterOptions{
				SectionInfo: pcapgo.NgSectionInfo{Application: "rdmacm-pd"}})
		} else {
			id, err = w.ng.AddInterface(intf)
		}
		if err != nil {
			return err
		}
		w.ifaces[k] = id
	}
	ci.InterfaceIndex = id
	w.stats.Frames++
	return w.ng.WritePacket(ci, h.data)
}

// Close writes what is left and closes the file; a file without frames is
// a valid empty capture.
func (w *Excerpt) Close() (ExcerptStats, error) {
	w.writePending(-1)
	err := w.err
	if err == nil && w.stats.Frames == 0 {
		err = w.empty()
	}
	if err == nil {
		err = w.flushWriters()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return w.stats, err
}

// empty writes the header of a capture without frames.
func (w *Excerpt) empty() error {
	lt := golayers.LinkTypeEthernet
	if w.cur != nil {
		lt = golayers.LinkType(w.cur.LinkType)
	}
	if !w.pcapng {
		return pcapgo.NewWriterNanos(w.buf).WriteFileHeader(snapLen, lt)
	}
	var err error
	w.ng, err = pcapgo.NewNgWriterInterface(w.buf, pcapgo.NgInterface{LinkType: lt, SnapLength: snapLen, TimestampResolution: 9},
		pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "rdmacm-pd"}})
	return err
}
