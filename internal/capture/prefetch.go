package capture

import (
	"io"
)

// Read-ahead: a goroutine reads (and for gzip, decompresses) the next chunks
// of the source while Next parses the current one, so that reading and
// parsing use two cores. Chunks are handed over without copying: each chunk
// buffer has headroom in front, into which the few unread octets of the
// previous chunk (a record cut by the chunk boundary) are copied, and the
// parser then goes on in the new buffer. A record longer than the headroom
// is gathered in a buffer of its own, grown geometrically.

const (
	prefetchDepth = 3       // chunk buffers in flight
	prefetchFirst = 1 << 16 // the first chunks' size; it doubles up to the largest
	prefetchMax   = 1 << 20 // the largest chunk
)

// keepGather is the largest gathering buffer kept for good; a larger one
// is let go dropGatherAfter octets after the last record gathered in it.
const (
	keepGather      = 4 << 20
	dropGatherAfter = 8 << 20
)

// headroomFor is the room kept in front of a chunk: a quarter of it (a
// record longer than that is joined instead).
func headroomFor(size int) int { return max(size/4, 16) }

type chunk struct {
	buf  []byte // headroom, then n octets of data
	head int
	n    int
	err  error
	sums sums // of the records that lie whole in it (sums.go)
}

type prefetcher struct {
	full chan chunk
	free chan []byte
	stop chan struct{}
	done chan struct{}
	err  error // the source's error, once a chunk carried it
	most int   // the largest chunk
	// scan sums the records of each chunk (sums.go), when asked; the
	// chunks' sums come back to sumFree once the parser took them.
	scan    *sumScan
	wanted  func() bool
	sumFree chan sums
}

// startPrefetch starts reading src in chunks of first octets, doubling
// while chunks come back full, up to max: a small input costs little memory,
// a large one is read in large chunks. With stream, a chunk is what one
// read returns (a pipe's data so far), never waiting for more.
func startPrefetch(src io.Reader, first, max int, stream bool, scan *sumScan, wanted func() bool) *prefetcher {
	p := &prefetcher{full: make(chan chunk, prefetchDepth),
		free: make(chan []byte, prefetchDepth), stop: make(chan struct{}), done: make(chan struct{}), most: max,
		scan: scan, wanted: wanted, sumFree: make(chan sums, prefetchDepth+1)}
	size := first
	for range prefetchDepth {
		p.free <- nil // allocated on first use, at the size of the time
	}
	go func() {
		defer close(p.done)
		for {
			var b []byte
			select {
			case b = <-p.free:
			case <-p.stop:
				return
			}
			head := headroomFor(size)
			if len(b) != head+size {
				b = make([]byte, head+size)
			}
			var n int
			var err error
			if stream {
				n, err = readSome(src, b[head:])
			} else {
				n, err = readHead(src, b[head:])
			}
			if n == size && size < max {
				size *= 2
			}
			var sm sums
			switch {
			case p.scan == nil || n == 0:
			case p.wanted != nil && !p.wanted():
				p.scan.scan(b[head:head+n], nil) // the records followed, none summed
			default:
				select {
				case sm = <-p.sumFree:
				default:
				}
				p.scan.scan(b[head:head+n], &sm)
			}
			select {
			case p.full <- chunk{buf: b, head: head, n: n, err: err, sums: sm}:
			case <-p.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// close stops the goroutine and waits for it.
func (p *prefetcher) close() {
	close(p.stop)
	<-p.done
}

// fillPrefetch is fillSlow with read-ahead: it takes chunks until n unread
// octets are available.
func (r *Reader) fillPrefetch(n int) error {
	p := r.pf
	for r.w-r.r < n {
		if p.err != nil {
			r.rerr = p.err
			return p.err
		}
		c := <-p.full
		if p.scan != nil {
			r.takeSums(&c.sums)
			select {
			case p.sumFree <- sums{offs: c.sums.offs[:0], sums: c.sums.sums[:0]}:
			default:
			}
		}
		left := r.buf[r.r:r.w]
		old := r.buf
		if len(left) <= c.head {
			// The usual case: the unread tail goes into the headroom.
			at := c.head - len(left)
			copy(c.buf[at:], left)
			r.base += int64(r.r - at)
			r.buf, r.r, r.w = c.buf, at, c.head+c.n
			p.recycle(old, r.pfOwned)
			r.pfOwned = true
			if cap(r.gather) > keepGather {
				// Far past the last long record, its buffer goes back to
				// the collector rather than wait for the next (the
				// budget's charge for it stays, the same for every kind
				// of source).
				if r.sinceGather += c.n; r.sinceGather > dropGatherAfter {
					r.gather = nil
				}
			}
		} else if !r.pfOwned && r.r == 0 && len(r.buf)-r.w >= c.n {
			// Gathering a long record: the chunk fits in the gathering
			// buffer after what it holds.
			r.w += copy(r.buf[r.w:], c.buf[c.head:c.head+c.n])
			p.recycle(c.buf, true)
		} else {
			// A record longer than the headroom: gather it in a buffer of
			// its own, made once for the n octets wanted and the chunk
			// that completes them (the caller checked n against the record
			// limit, 16 MiB at most), so that a 16 MiB record read in small
			// chunks (a pipe's) is copied once, not once per chunk. The
			// buffer is kept for the next long record while records run
			// long, and up to keepGather after. (Growing it by doubling
			// instead would leave twice as much garbage behind for the
			// first record.)
			data := len(left) + c.n
			nb := r.gather[:cap(r.gather)]
			if size := max(data, n+p.most); len(nb) < size {
				r.collect(size)
				nb = make([]byte, size)
			}
			r.gather, r.sinceGather = nb, 0
			copy(nb, left) // left may be in nb already: copy moves it
			copy(nb[len(left):], c.buf[c.head:c.head+c.n])
			r.base += int64(r.r)
			r.buf, r.r, r.w = nb, 0, data
			p.recycle(c.buf, true)
			p.recycle(old, r.pfOwned)
			r.pfOwned = false
		}
		if c.err != nil {
			p.err = c.err
		}
	}
	return nil
}

// recycle hands a chunk buffer back to the reading goroutine; other
// buffers (the first one, joined ones) are left to the collector.
func (p *prefetcher) recycle(b []byte, chunkBuf bool) {
	if !chunkBuf {
		return
	}
	select {
	case p.free <- b:
	default:
	}
}
