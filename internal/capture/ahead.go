package capture

import "github.com/rdmacm-pd/rdmacm-pd/internal/hint"

// The records to come: hints to the processor for those of a mapped file
// (hintNext), and a look at them without handing them out (Ahead).

// hintNext hints the next records of a mapped file to the processor
// (internal/hint), the one just handed out being size octets long: the
// parser reads little of each, and those lines once. The next record's
// place is known. The one after it is guessed: as long as one of the
// lengths handed out lately (a capture's frames come in a few sizes: an
// RDMA Write's, a bulk TCP segment's, an ACK's), the latest at once and
// the others when they were seen within the last recentSize records; the
// one after that as long as this one twice. Finding a record's header is a
// chain the parser follows one wait for memory at a time; the guesses put
// the lines of the records after it on their way meanwhile, and a wrong
// guess costs a line read for nothing. In the workloads of
// docs/performance.md: mixed 182 to 150 ms with the latest length only;
// then, in another run, 184 to 164 ms with the recent ones (its frames
// take three sizes in random order); 100 000 TCP flows 157 to 127,
// NFS-like 113 to 106.
func (r *Reader) hintNext(size int) {
	if r.mp == nil || r.r >= r.w {
		return
	}
	hint.Lines(&r.buf[r.r])
	r.sawSize(size)
	// The lengths are in the order last seen: the first one not seen
	// lately ends the guesses.
	for i, n := range r.sizes {
		if i > 0 && r.n-r.sizeAt[i] > recentSize {
			break
		}
		if a := r.r + n; a < r.w {
			hint.Lines(&r.buf[a])
		}
	}
	if a := r.r + 2*size; a < r.w {
		hint.Lines(&r.buf[a])
	}
}

// Ahead returns the captured octets of the i-th record after the one
// handed out last (i is 1 or more), as far as they are in the buffer
// already, or nil: a pcap file's records only, never read, waited for or
// copied. They are for hints (Looker): cut where the buffer ends, valid
// until the next call of Next, and not checked as Next checks a record.
func (r *Reader) Ahead(i int) []byte {
	if r.format != formatPcap || i < 1 {
		return nil
	}
	p := r.r
	for {
		if r.w-p < pcapRecordLen {
			return nil
		}
		// Compared unconverted: a captured length of 2 GiB or more is no
		// int on a 32-bit machine.
		n, rest := u32(r.buf[p+8:], r.be), r.w-p-pcapRecordLen
		if i--; i == 0 {
			return r.buf[p+pcapRecordLen : p+pcapRecordLen+int(min(n, uint32(rest)))]
		}
		if n > uint32(rest) {
			return nil
		}
		p += pcapRecordLen + int(n)
	}
}

// recentSize is how many records ago a length must have been handed out
// for hintNext to guess it.
const recentSize = 16

// sawSize moves size to the front of the recent lengths (the last one
// drops out when it is new).
func (r *Reader) sawSize(size int) {
	z, at := &r.sizes, &r.sizeAt
	if z[0] != size {
		i := 1
		for i < len(z)-1 && z[i] != size {
			i++
		}
		copy(z[1:i+1], z[:i])
		copy(at[1:i+1], at[:i])
		z[0] = size
	}
	at[0] = r.n
}
