package pcapfile

import (
	"io"
)

// Read-ahead: a goroutine reads (and for gzip, decompresses) the next chunks
// of the source while Next parses the current one, so that reading and
// parsing use two cores. Chunks are handed over without copying: each chunk
// buffer has headroom in front, into which the few unread octets of the
// previous chunk (a record cut by the chunk boundary) are copied, and the
// parser then goes on in the new buffer. A record longer than the headroom
// falls back to joining buffers.

const (
	prefetchDepth    = 3       // chunk buffers in flight
	prefetchHeadroom = 1 << 18 // octets of room before a chunk
)

type chunk struct {
	buf []byte // headroom, then n octets of data
	n   int
	err error
}

type prefetcher struct {
	size, head int
	full       chan chunk
	free       chan []byte
	stop       chan struct{}
	done       chan struct{}
	err        error // the source's error, once a chunk carried it
}

func startPrefetch(src io.Reader, size, head int) *prefetcher {
	p := &prefetcher{size: size, head: head, full: make(chan chunk, prefetchDepth),
		free: make(chan []byte, prefetchDepth), stop: make(chan struct{}), done: make(chan struct{})}
	for range prefetchDepth {
		p.free <- make([]byte, head+size)
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
			n, err := readChunk(src, b[head:])
			select {
			case p.full <- chunk{buf: b, n: n, err: err}:
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

// readChunk fills b from src, stopping at the first error (returned with
// the count); a source that keeps returning nothing is an error.
func readChunk(src io.Reader, b []byte) (int, error) {
	n, stalls := 0, 0
	for n < len(b) {
		m, err := src.Read(b[n:])
		if m < 0 || m > len(b)-n {
			return n, errBadCount
		}
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			if stalls++; stalls >= maxStalls {
				return n, io.ErrNoProgress
			}
		} else {
			stalls = 0
		}
	}
	return n, nil
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
		left := r.buf[r.r:r.w]
		old := r.buf
		if len(left) <= p.head {
			// The usual case: the unread tail goes into the headroom.
			at := p.head - len(left)
			copy(c.buf[at:], left)
			r.base += int64(r.r - at)
			r.buf, r.r, r.w = c.buf, at, p.head+c.n
		} else {
			// A record longer than the headroom: join the buffers.
			nb := make([]byte, len(left)+c.n)
			copy(nb, left)
			copy(nb[len(left):], c.buf[p.head:p.head+c.n])
			r.base += int64(r.r)
			r.buf, r.r, r.w = nb, 0, len(nb)
			p.recycle(c.buf)
		}
		p.recycle(old)
		if c.err != nil {
			p.err = c.err
		}
	}
	return nil
}

// recycle hands a chunk buffer back, and drops any other buffer.
func (p *prefetcher) recycle(b []byte) {
	if len(b) != p.head+p.size {
		return
	}
	select {
	case p.free <- b:
	default:
	}
}
