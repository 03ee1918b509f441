package capture

// Sums computed on the read-ahead goroutine.
//
// The read-ahead goroutine copies every octet of a file read through it,
// and so holds each chunk in its core's cache just after reading it. A
// Summer given to the Reader (ReaderOptions.Summer) runs there, over each
// pcap record that lies whole in a chunk, and computes values over the
// record's octets that the run loop would otherwise compute on its own
// core: the FPDU CRCs of an iWARP segment (dissect/decode.FPDUSums). Each
// value travels with its frame (Frame.Sums), named by where the octets it
// covers lie in the frame. A stage that needs the value over some of the
// frame's octets takes it from there when one names exactly those octets,
// and computes it itself otherwise: a value is a function of the octets
// alone, so what the run decides does not depend on which core computed
// it, or whether one did.
//
// The goroutine follows the records by their headers as the chunks come,
// apart from the parser: a record cut by a chunk's end gets no sums, and a
// length it cannot follow (damage; the parser reports it) stops the sums
// for the rest of the file. pcapng files and mapped files get none.

// A Sum is a value computed over the octets Data[At:At+N] of a frame.
type Sum struct {
	At, N int32
	Value uint32
}

// A Summer appends to out the sums of a frame of link type link whose
// octets are data, and returns out. It runs on the read-ahead goroutine:
// it must not keep data or out, nor touch what the run loop does.
type Summer func(link uint16, data []byte, out []Sum) []Sum

// Summed is a Source whose frames can carry sums computed as it reads
// them ahead (Frame.Sums). Set before the first Next.
type Summed interface {
	SetSummer(fn Summer)
}

// Bounds on the sums kept: of one record, and of one chunk (the
// memory they take stays fixed whatever the input).
const (
	maxRecordSums = 8
	maxChunkSums  = 1 << 13
)

// sums are the sums of a chunk's records, each with the stream offset of
// its record's header (offs, in step with sums).
type sums struct {
	offs []int64
	sums []Sum
}

// sumScan follows the records of a pcap stream across the chunks read
// ahead, and sums those that lie whole in one.
type sumScan struct {
	fn    Summer
	be    bool
	link  uint16
	limit int
	off   int64 // stream offset of the next chunk's first octet
	next  int64 // stream offset of the next record's header
	// A header cut by the end of the last chunk: its first nhdr octets.
	hdr  [pcapRecordLen]byte
	nhdr int
	lost bool // a record length it could not follow: no more sums
}

// newSumScan starts following the records of r's pcap stream from the
// octets the read-ahead reads first: those after what r has buffered.
// The records that begin in the buffer are walked to find where the next
// one begins; they get no sums.
func newSumScan(r *Reader, fn Summer) *sumScan {
	s := &sumScan{fn: fn, be: r.be, link: r.link, limit: r.limit, off: r.base + int64(r.w)}
	b := r.buf[r.r:r.w]
	at := 0
	for at+pcapRecordLen <= len(b) {
		n := u32(b[at+8:], r.be)
		if uint64(n) > uint64(r.limit) {
			s.lost = true
			return s
		}
		at += pcapRecordLen + int(n)
	}
	s.next = r.offset() + int64(at)
	if at < len(b) {
		s.nhdr = copy(s.hdr[:], b[at:])
	}
	return s
}

// scan sums the records that lie whole in d, the next chunk, into out.
func (s *sumScan) scan(d []byte, out *sums) {
	start := s.off
	s.off += int64(len(d))
	for !s.lost {
		var h []byte
		var data int // where the record's octets start in d
		if s.nhdr > 0 {
			need := pcapRecordLen - s.nhdr
			if len(d) < need {
				s.nhdr += copy(s.hdr[s.nhdr:], d)
				return
			}
			copy(s.hdr[s.nhdr:], d[:need])
			h, data, s.nhdr = s.hdr[:], need, 0
		} else {
			at := s.next - start
			if at >= int64(len(d)) {
				return
			}
			if at+pcapRecordLen > int64(len(d)) {
				s.nhdr = copy(s.hdr[:], d[at:])
				return
			}
			h, data = d[at:at+pcapRecordLen], int(at)+pcapRecordLen
		}
		n := u32(h[8:], s.be)
		if uint64(n) > uint64(s.limit) {
			s.lost = true
			return
		}
		rec := s.next
		s.next += pcapRecordLen + int64(n)
		if end := data + int(n); end <= len(d) && len(out.sums) < maxChunkSums {
			k := len(out.sums)
			out.sums = s.fn(s.link, d[data:end], out.sums)
			out.sums = out.sums[:min(len(out.sums), k+maxRecordSums)]
			for range out.sums[k:] {
				out.offs = append(out.offs, rec)
			}
		}
	}
}

// takeSums adds the sums of a chunk the parser takes to those it has yet
// to hand out, after dropping those it has handed out.
func (r *Reader) takeSums(c *sums) {
	if len(c.sums) == 0 && r.sumAt == len(r.sumOffs) {
		r.sumOffs, r.sums, r.sumAt = r.sumOffs[:0], r.sums[:0], 0
		return
	}
	r.sumOffs = append(r.sumOffs[:0], r.sumOffs[r.sumAt:]...)
	r.sums = append(r.sums[:0], r.sums[r.sumAt:]...)
	r.sumAt = 0
	r.sumOffs = append(r.sumOffs, c.offs...)
	r.sums = append(r.sums, c.sums...)
}

// sumsFor hands out the sums of the record whose header is at stream
// offset off (nil: none), valid until the next call; those of records
// before it are dropped.
func (r *Reader) sumsFor(off int64) []Sum {
	i := r.sumAt
	if i == len(r.sumOffs) {
		return nil
	}
	for i < len(r.sumOffs) && r.sumOffs[i] < off {
		i++
	}
	j := i
	for j < len(r.sumOffs) && r.sumOffs[j] == off {
		j++
	}
	r.sumAt = j
	if i == j {
		return nil
	}
	return r.sums[i:j:j]
}
