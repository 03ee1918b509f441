package capture

import (
	"io"
	"time"
)

// readPcapHeader reads the 24-octet pcap file header; the magic has been
// recognised and r.be and r.nano set from it.
func (r *Reader) readPcapHeader() error {
	if err := r.fill(pcapHeaderLen); err != nil {
		return r.readError(err, 0, 0, "file header", r.w-r.r, pcapHeaderLen)
	}
	h := r.buf[r.r : r.r+pcapHeaderLen]
	major, minor := u16(h[4:], r.be), u16(h[6:], r.be)
	if major != 2 {
		return newError(ErrMalformed, 0, 0, "unknown pcap version %d.%d", major, minor)
	}
	// The link type is the low 16 bits of the last field; the high bits
	// may hold FCS information.
	r.link = uint16(u32(h[20:], r.be))
	r.addLink(r.link)
	r.snaplen = u32(h[16:], r.be)
	r.raiseLimit(r.snaplen)
	r.r += pcapHeaderLen
	return nil
}

// nextPcap decodes the next pcap record into r.frame.
func (r *Reader) nextPcap() error {
	off := r.offset()
	if r.w-r.r < pcapRecordLen {
		if err := r.fillSlow(pcapRecordLen); err != nil {
			if r.w == r.r && err == io.EOF {
				return io.EOF
			}
			fn := r.n + 1
			if r.w == r.r {
				fn = 0 // nothing of a record
			}
			return r.readError(err, off, fn, "record header", r.w-r.r, pcapRecordLen)
		}
	}
	be := r.be
	h := r.buf[r.r : r.r+pcapRecordLen]
	sec, frac := u32(h[0:], be), u32(h[4:], be)
	caplen, wirelen := u32(h[8:], be), u32(h[12:], be)
	if caplen > uint32(r.limit) {
		return newError(ErrTooLarge, off, r.n+1, "captured length %d exceeds limit %d", caplen, r.limit)
	}
	// A captured length over the original or the snap length is odd, not
	// damage: the record's extent is known, so it is read as captured and
	// flagged (tshark and tcpdump read it too).
	var issue RecordIssue
	if caplen > wirelen {
		issue |= OverWire
	}
	if r.snaplen != 0 && caplen > r.snaplen {
		issue |= OverSnap
	}
	need := pcapRecordLen + int(caplen)
	r.account(need)
	if r.w-r.r < need {
		if err := r.fillSlow(need); err != nil {
			return r.readError(err, off, r.n+1, "record", r.w-r.r-pcapRecordLen, int(caplen))
		}
	}
	p := r.r + pcapRecordLen
	r.r += need
	r.n++
	r.hintNext(need)

	ns := int64(frac)
	if !r.nano {
		ns *= 1000
	}
	f := &r.frame
	f.Data = r.buf[p : p+int(caplen) : p+int(caplen)]
	f.WireLen = int(wirelen)
	f.Time = time.Unix(int64(sec), ns).UTC()
	f.LinkType = r.link
	f.Interface = 0
	f.Index = r.n
	f.Offset = off
	f.Issue, f.SnapLen = issue, r.snaplen
	f.Sums = r.sumsFor(off)
	return nil
}
