package capture

// Sums computed on the read-ahead goroutine.
//
// The read-ahead goroutine copies every octet of a file read through it,
// and so holds each chunk in its core's cache just after reading it. A
// Summer given to the Reader (ReaderOptions.Summer) runs there, over each
// record (pcap) or packet block (pcapng) that lies whole in a chunk, and
// computes values over the record's octets that the run loop would
// otherwise compute on its own core: the FPDU CRCs of an iWARP segment
// (dissect/decode.FPDUSums). Each
// value travels with its frame (Frame.Sums), named by where the octets it
// covers lie in the frame. A stage that needs the value over some of the
// frame's octets takes it from there when one names exactly those octets,
// and computes it itself otherwise: a value is a function of the octets
// alone, so what the run decides does not depend on which core computed
// it, or whether one did.
//
// The goroutine follows the records (pcapng: the blocks, and the
// interfaces they name) by their headers as the chunks come, apart from
// the parser: a record cut by a chunk's end gets no sums, and a length it
// cannot follow (damage; the parser reports it) stops the sums for the
// rest of the file. Mapped files get none.

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
// them ahead (Frame.Sums): by fn, over the records of each chunk read
// while wanted reports true (nil: always). wanted is called on the
// read-ahead goroutine, once a chunk. Set before the first Next.
type Summed interface {
	SetSummer(fn Summer, wanted func() bool)
}

// Bounds on the sums kept: of one record, and of one chunk (the
// memory they take stays fixed whatever the input).
const (
	maxRecordSums = 8
	maxChunkSums  = 1 << 13
)

// sums are the sums of a chunk's records, each with the stream offset of
// its record's header (offs, in step with sums). With count, the sums are
// only counted (sumScan.summed), not kept.
type sums struct {
	offs  []int64
	sums  []Sum
	count bool
}

// sumScan follows the records of a pcap stream, or the blocks of a pcapng
// one, across the chunks read ahead, and sums the records that lie whole
// in one.
type sumScan struct {
	fn    Summer
	ng    bool // pcapng
	be    bool // byte order (pcapng: of the current section)
	link  uint16
	links []uint16 // pcapng: the link types of the section's interfaces
	limit int
	off   int64 // stream offset of the next chunk's first octet
	next  int64 // stream offset of the next record's header (block)
	// The head of a record (block) cut by the end of the last chunk: its
	// first nhdr octets. What is followed needs no more of it than that.
	hdr  [scanHead]byte
	nhdr int
	lost bool // a record (block) it could not follow: no more sums
	// What was found whole (worthMapping's sample): the packet records
	// (pcap records; pcapng Enhanced and Simple Packet Blocks), those that
	// got sums, and the stream offset where the last record or block
	// that lay whole ends.
	packets, summed int
	wholeEnd        int64
}

// scanHead is the head of a record followed across chunks: a pcap record
// header, or the type, length and first field of a pcapng block (a
// section's byte-order magic, an interface's link type).
const scanHead = 16

// newSumScan starts following the records of r's stream from the octets
// the read-ahead reads first: those after what r has buffered. The records
// that begin in the buffer are walked to find where the next one begins
// (and, in pcapng, the interfaces); they get no sums.
func newSumScan(r *Reader, fn Summer) *sumScan {
	s := &sumScan{fn: fn, ng: r.format == formatPcapng, be: r.be, link: r.link, limit: r.limit, off: r.offset(), next: r.offset()}
	s.scan(r.buf[r.r:r.w], nil)
	return s
}

// scan follows the records of d, the next octets of the stream, and sums
// those that lie whole in it into out (none when out is nil).
func (s *sumScan) scan(d []byte, out *sums) {
	start := s.off
	s.off += int64(len(d))
	for !s.lost {
		// h is the head of the next record; whole, the record when it lies
		// whole in d.
		var h, whole []byte
		if s.nhdr > 0 {
			need := scanHead - s.nhdr
			if len(d) < need {
				s.nhdr += copy(s.hdr[s.nhdr:], d)
				return
			}
			copy(s.hdr[s.nhdr:], d[:need])
			h, s.nhdr = s.hdr[:], 0
		} else {
			at := s.next - start
			if at >= int64(len(d)) {
				return
			}
			if at+scanHead > int64(len(d)) {
				s.nhdr = copy(s.hdr[:], d[at:])
				return
			}
			h, whole = d[at:], d[at:]
		}
		n, data, link, packet := s.record(h, whole)
		if s.lost {
			return
		}
		rec := s.next
		s.next += n
		if int64(len(whole)) >= n {
			s.wholeEnd = s.next
			if packet {
				s.packets++
			}
		}
		if data != nil && out != nil && len(out.sums) < maxChunkSums {
			k := len(out.sums)
			out.sums = s.fn(link, data, out.sums)
			if len(out.sums) > k {
				s.summed++
			}
			if out.count {
				out.sums = out.sums[:k]
				continue
			}
			out.sums = out.sums[:min(len(out.sums), k+maxRecordSums)]
			for range out.sums[k:] {
				out.offs = append(out.offs, rec)
			}
		}
	}
}

// record reads the head h of the next record: its length in the stream,
// its octets and link type when it is a packet that lies whole in b
// (which starts with it; nil: it does not lie whole in one chunk), and
// whether it is a packet. It sets lost when the record cannot be followed.
func (s *sumScan) record(h, b []byte) (n int64, data []byte, link uint16, packet bool) {
	if !s.ng {
		c := u32(h[8:], s.be)
		if uint64(c) > uint64(s.limit) {
			s.lost = true
			return 0, nil, 0, false
		}
		n = pcapRecordLen + int64(c)
		if int64(len(b)) >= n {
			data = b[pcapRecordLen:n]
		}
		return n, data, s.link, true
	}
	typ := u32(h, s.be)
	if typ == blockSHB {
		switch u32(h[8:], false) {
		case 0x1a2b3c4d:
			s.be = false
		case 0x4d3c2b1a:
			s.be = true
		default:
			s.lost = true
			return 0, nil, 0, false
		}
		s.links = s.links[:0]
	}
	l := u32(h[4:], s.be)
	if l < minBlockLen || l%4 != 0 || l > maxBlock {
		s.lost = true
		return 0, nil, 0, false
	}
	n = int64(l)
	switch {
	case typ == blockIDB:
		if len(s.links) >= maxIfaces {
			s.lost = true
			return 0, nil, 0, false
		}
		s.links = append(s.links, u16(h[8:], s.be))
	case typ == blockEPB && int64(len(b)) >= n && n >= epbDataOff:
		id, c := u32(b[8:], s.be), u32(b[20:], s.be)
		if id < uint32(len(s.links)) && uint64(c) <= uint64(n)-epbDataOff {
			data, link = b[epbDataOff:epbDataOff+int(c)], s.links[id]
		}
	}
	return n, data, link, typ == blockEPB || typ == blockSPB
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
