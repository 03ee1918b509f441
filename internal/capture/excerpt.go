package capture

// The excerpt writer (Excerpt) writes the frames that carried connection
// messages to a capture file: the small attachment a bug report wants,
// cut from a large capture (rdmacm-pd dissect -w with file input).
//
// An Excerpt is both the run loop's FrameWriter, which sees every frame,
// and a record.Sink in front of the renderer, which sees every message. A
// CM message is emitted while its frame is the current one; an iWARP MPA
// frame may have begun in TCP segments long before the one that completes
// it (record.Message.Frames lists them all), so the Excerpt keeps copies
// of the recent TCP segments, and writes each message's frames in capture
// order once no later message can reach back before them. Frames are
// written once, however many messages they carried.

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
	// Keep chooses the messages whose frames are written (nil: all).
	Keep func(*record.Message) bool
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
	Frames   int // frames written
	Messages int // messages whose frames were written
	// Lost counts frames of messages that had left the window before
	// the message was complete: they are not in the file.
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
	next   record.Sink
	f      *os.File
	buf    *bufio.Writer
	ng     *pcapgo.NgWriter
	pc     *pcapgo.Writer
	ifaces map[ifaceKey]int
	link   int // the pcap file's link type, -1 before the first frame

	cur       *Frame // the frame being dissected (not copied)
	lastIndex int
	ring      []*held // recent TCP segments, oldest first
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
// .pcap, pcapng otherwise. Records go on to next.
func CreateExcerpt(path string, opts ExcerptOptions, next record.Sink) (*Excerpt, error) {
	if opts.Probe == nil {
		return nil, errors.New("capture: an Excerpt needs ExcerptOptions.Probe")
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if opts.Window <= 0 {
		opts.Window = DefaultExcerptWindow
	}
	return &Excerpt{path: path, pcapng: !strings.HasSuffix(strings.ToLower(path), ".pcap"), opts: opts, next: next, f: f,
		buf: bufio.NewWriterSize(f, 1<<20), ifaces: map[ifaceKey]int{}, link: -1}, nil
}

// WriteFrame sees each frame the run loop reads, before it is dissected.
func (w *Excerpt) WriteFrame(f *Frame) error {
	if w.err != nil {
		return w.err
	}
	if f.Index <= w.lastIndex {
		// A new source: nothing of the last one is needed any more.
		w.writePending(-1)
		for _, h := range w.ring {
			w.drop(h)
		}
		w.ring = w.ring[:0]
	}
	w.lastIndex = f.Index
	w.cur = f
	if w.opts.Probe.MayContinueMPA(f.LinkType, f.Data) {
		h := w.copyOf(f, "")
		h.inRing = true
		w.ring = append(w.ring, h)
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

func (w *Excerpt) copyOf(f *Frame, name string) *held {
	w.held += len(f.Data) + heldCost
	w.opts.Budget.Force(budget.Excerpt, len(f.Data)+heldCost)
	return &held{index: f.Index, data: append([]byte(nil), f.Data...), wireLen: f.WireLen, ts: f.Time, linkType: f.LinkType, name: name}
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

// Message takes the frames of a chosen message, and passes it on.
func (w *Excerpt) Message(m *record.Message) error {
	if w.opts.Keep == nil || w.opts.Keep(m) {
		w.take(m)
	}
	return w.next.Message(m)
}

// RPC passes a data-path rpc record on (its frames are not taken).
func (w *Excerpt) RPC(rec *record.RPC) error {
	return w.next.RPC(rec)
}

func (w *Excerpt) take(m *record.Message) {
	frames := m.Frames
	if len(frames) == 0 {
		frames = []int{m.Frame}
	}
	w.stats.Messages++
	for _, idx := range frames {
		at, found := slices.BinarySearchFunc(w.pending, idx, func(h *held, idx int) int { return cmp.Compare(h.index, idx) })
		if found {
			continue
		}
		i := sort.Search(len(w.ring), func(i int) bool { return w.ring[i].index >= idx })
		var h *held
		switch {
		case i < len(w.ring) && w.ring[i].index == idx:
			h = w.ring[i]
			h.name = m.File
		case w.cur != nil && w.cur.Index == idx:
			h = w.copyOf(w.cur, m.File) // a CM message: its frame is the current one
		default:
			w.stats.Lost++
			continue
		}
		h.inPending = true
		w.pending = slices.Insert(w.pending, at, h)
	}
}

// Connection passes a connection on.
func (w *Excerpt) Connection(c *record.Connection) error { return w.next.Connection(c) }

// Update passes a connection's update on.
func (w *Excerpt) Update(u *record.ConnectionUpdate) error { return w.next.Update(u) }

// Summary passes the summary on.
func (w *Excerpt) Summary(s *record.Summary) error { return w.next.Summary(s) }

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
