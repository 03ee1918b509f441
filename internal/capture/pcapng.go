package capture

import (
	"io"
	"math/bits"
	"time"
)

// pcapng block types.
const (
	blockIDB = 0x00000001 // Interface Description Block
	blockPB  = 0x00000002 // Packet Block (obsolete)
	blockSPB = 0x00000003 // Simple Packet Block
	blockEPB = 0x00000006 // Enhanced Packet Block
	blockSHB = 0x0A0D0D0A // Section Header Block (the same in both byte orders)
)

// Minimum total lengths: block header and trailer (12 octets) plus the
// fixed part of the body.
const (
	minBlockLen = 12
	minIDBLen   = 20
	minEPBLen   = 32 // also the obsolete Packet Block
	minSPBLen   = 16
	epbDataOff  = 28 // where an EPB's (or PB's) packet data starts
	spbDataOff  = 12 // where an SPB's packet data starts
)

// Interface Description Block options used here.
const (
	optEnd      = 0
	optTSResol  = 9
	optTSOffset = 14
)

// iface is an interface described by an IDB of the current section.
type iface struct {
	link    uint16
	res     uint8 // if_tsresol: bit 7 clear 10^-n, set 2^-n seconds
	snaplen uint32
	offset  int64 // if_tsoffset, seconds added to every timestamp
}

// readSection reads a Section Header Block, which sets the byte order of
// the section and starts its interface numbering. first marks the one that
// opens the file.
func (r *Reader) readSection(first bool) error {
	off := r.offset()
	what := "section header block"
	if first {
		what = "file header"
	}
	// Type, length, byte-order magic, major and minor version.
	if err := r.fill(16); err != nil {
		return r.readError(err, off, 0, what, r.w-r.r, minSHBLen)
	}
	b := r.buf[r.r:r.w]
	switch {
	case b[8] == 0x4d && b[9] == 0x3c && b[10] == 0x2b && b[11] == 0x1a:
		r.be = false
	case b[8] == 0x1a && b[9] == 0x2b && b[10] == 0x3c && b[11] == 0x4d:
		r.be = true
	default:
		return newError(ErrMalformed, off, 0, "section header block: bad byte-order magic % x", b[8:12])
	}
	if major, minor := u16(b[12:], r.be), u16(b[14:], r.be); major != 1 {
		return newError(ErrMalformed, off, 0, "unknown pcapng version %d.%d", major, minor)
	}
	blen, err := checkLen(u32(b[4:], r.be), off, 0, "section header block", minSHBLen)
	if err != nil {
		return err
	}
	if err := r.fill(blen); err != nil {
		return r.readError(err, off, 0, what, r.w-r.r, blen)
	}
	if err := r.trailer(blen, off, 0); err != nil {
		return err
	}
	// The section length (which may be -1) and the options are not needed.
	r.secBase += len(r.ifaces)
	r.ifaces = r.ifaces[:0]
	r.r += blen
	return nil
}

// nextPcapng decodes blocks until a packet block fills r.frame.
func (r *Reader) nextPcapng() error {
	for {
		off := r.offset()
		if r.w-r.r < 8 {
			if err := r.fillSlow(8); err != nil {
				if r.w == r.r && err == io.EOF {
					return io.EOF
				}
				return r.readError(err, off, 0, "block header", r.w-r.r, 8)
			}
		}
		var err error
		switch u32(r.buf[r.r:], r.be) {
		case blockEPB:
			return r.packetBlock(true, off)
		case blockSPB:
			return r.simplePacketBlock(off)
		case blockPB:
			return r.packetBlock(false, off)
		case blockIDB:
			err = r.interfaceBlock(off)
		case blockSHB:
			err = r.readSection(false)
		default:
			err = r.skipBlock(off)
		}
		if err != nil {
			return err
		}
	}
}

// packetBlock decodes an Enhanced Packet Block (enhanced) or an obsolete
// Packet Block; they differ only in the width of the interface number.
func (r *Reader) packetBlock(enhanced bool, off int64) error {
	name := "enhanced packet block"
	if !enhanced {
		name = "packet block"
	}
	fn := r.n + 1
	be := r.be
	blen, err := checkLen(u32(r.buf[r.r+4:], be), off, fn, name, minEPBLen)
	if err != nil {
		return err
	}
	// Check the fixed part before buffering the block, so that an absurd
	// length is reported as such.
	if r.w-r.r < epbDataOff {
		if err := r.fillSlow(epbDataOff); err != nil {
			return r.readError(err, off, fn, name, r.w-r.r, blen)
		}
	}
	b := r.buf[r.r:r.w]
	var id uint32
	if enhanced {
		id = u32(b[8:], be)
	} else {
		id = uint32(u16(b[8:], be))
	}
	if id >= uint32(len(r.ifaces)) {
		return r.noInterface(off, fn, id)
	}
	caplen, wirelen := u32(b[20:], be), u32(b[24:], be)
	if caplen > uint32(r.limit) {
		return newError(ErrTooLarge, off, fn, "captured length %d exceeds limit %d", caplen, r.limit)
	}
	// Over the original or the snap length: read as captured, flagged.
	var issue RecordIssue
	if caplen > wirelen {
		issue |= OverWire
	}
	snap := r.ifaces[id].snaplen
	if snap != 0 && caplen > snap {
		issue |= OverSnap
	}
	if int(caplen) > blen-minEPBLen {
		return newError(ErrMalformed, off, fn, "captured length %d does not fit in a block of %d octets", caplen, blen)
	}
	r.account(blen)
	if r.w-r.r < blen {
		if err := r.fillSlow(blen); err != nil {
			return r.readError(err, off, fn, name, r.w-r.r, blen)
		}
	}
	b = r.buf[r.r : r.r+blen]
	if t := u32(b[blen-4:], be); t != uint32(blen) {
		return trailerError(t, blen, off, fn)
	}
	ifc := &r.ifaces[id]
	ts := uint64(u32(b[12:], be))<<32 | uint64(u32(b[16:], be))
	r.r += blen
	r.n++
	r.hintNext(blen)

	end := epbDataOff + int(caplen)
	f := &r.frame
	f.Data = b[epbDataOff:end:end]
	f.WireLen = int(wirelen)
	t, outOfRange := ifc.time(ts)
	if outOfRange {
		issue |= TimeOutOfRange
	}
	f.Time = t
	f.LinkType = ifc.link
	f.Interface = r.secBase + int(id)
	f.Index = r.n
	f.Offset = off
	f.Issue, f.SnapLen = issue, snap
	f.Sums = r.sumsFor(off)
	return nil
}

// simplePacketBlock decodes a Simple Packet Block, which belongs to
// interface 0 of the section and has no timestamp.
func (r *Reader) simplePacketBlock(off int64) error {
	const name = "simple packet block"
	fn := r.n + 1
	be := r.be
	blen, err := checkLen(u32(r.buf[r.r+4:], be), off, fn, name, minSPBLen)
	if err != nil {
		return err
	}
	if len(r.ifaces) == 0 {
		return r.noInterface(off, fn, 0)
	}
	if err := r.fill(spbDataOff); err != nil {
		return r.readError(err, off, fn, name, r.w-r.r, blen)
	}
	// The captured length is implied: the original length, cut to the snap
	// length and to the room in the block.
	wirelen := u32(r.buf[r.r+8:], be)
	caplen := wirelen
	if snap := r.ifaces[0].snaplen; snap != 0 && snap < caplen {
		caplen = snap
	}
	if room := uint32(blen - minSPBLen); caplen > room {
		caplen = room
	}
	if caplen > uint32(r.limit) {
		return newError(ErrTooLarge, off, fn, "captured length %d exceeds limit %d", caplen, r.limit)
	}
	if err := r.fill(blen); err != nil {
		return r.readError(err, off, fn, name, r.w-r.r, blen)
	}
	b := r.buf[r.r : r.r+blen]
	if t := u32(b[blen-4:], be); t != uint32(blen) {
		return trailerError(t, blen, off, fn)
	}
	r.r += blen
	r.n++

	end := spbDataOff + int(caplen)
	f := &r.frame
	f.Data = b[spbDataOff:end:end]
	f.WireLen = int(wirelen)
	f.Time = time.Time{}
	f.LinkType = r.ifaces[0].link
	f.Interface = r.secBase
	f.Index = r.n
	f.Offset = off
	f.Issue, f.SnapLen = 0, r.ifaces[0].snaplen
	f.Sums = r.sumsFor(off) // none: only EPBs are summed
	return nil
}

// interfaceBlock reads an Interface Description Block.
func (r *Reader) interfaceBlock(off int64) error {
	const name = "interface description block"
	blen, err := checkLen(u32(r.buf[r.r+4:], r.be), off, 0, name, minIDBLen)
	if err != nil {
		return err
	}
	if err := r.fill(blen); err != nil {
		return r.readError(err, off, 0, name, r.w-r.r, blen)
	}
	if err := r.trailer(blen, off, 0); err != nil {
		return err
	}
	if len(r.ifaces) >= maxIfaces {
		return newError(ErrTooLarge, off, 0, "more than %d interfaces in one section", maxIfaces)
	}
	b := r.buf[r.r : r.r+blen]
	ifc := iface{link: u16(b[8:], r.be), snaplen: u32(b[12:], r.be), res: 6}
	ifc.options(b[minIDBLen-4:blen-4], r.be)
	r.ifaces = append(r.ifaces, ifc)
	r.addLink(ifc.link)
	r.raiseLimit(ifc.snaplen)
	r.r += blen
	return nil
}

// skipBlock steps over a block that carries no packet.
func (r *Reader) skipBlock(off int64) error {
	blen, err := checkLen(u32(r.buf[r.r+4:], r.be), off, 0, "block", minBlockLen)
	if err != nil {
		return err
	}
	if err := r.fill(blen); err != nil {
		return r.readError(err, off, 0, "block", r.w-r.r, blen)
	}
	if err := r.trailer(blen, off, 0); err != nil {
		return err
	}
	r.r += blen
	return nil
}

// checkLen validates a block's total length against the format and the
// minimum min of its type, and returns it as an int.
func checkLen(blen uint32, off int64, fn int, name string, min int) (int, error) {
	switch {
	case blen < minBlockLen:
		return 0, newError(ErrMalformed, off, fn, "block total length %d too small (minimum %d)", blen, minBlockLen)
	case blen%4 != 0:
		return 0, newError(ErrMalformed, off, fn, "block total length %d not a multiple of 4", blen)
	case blen > maxBlock:
		return 0, newError(ErrTooLarge, off, fn, "block total length %d exceeds limit %d", blen, maxBlock)
	case int(blen) < min:
		return 0, newError(ErrMalformed, off, fn, "%s too short: %d octets (minimum %d)", name, blen, min)
	}
	return int(blen), nil
}

// trailer checks the trailing length of the buffered block of blen octets.
func (r *Reader) trailer(blen int, off int64, fn int) error {
	if t := u32(r.buf[r.r+blen-4:], r.be); t != uint32(blen) {
		return trailerError(t, blen, off, fn)
	}
	return nil
}

func trailerError(t uint32, blen int, off int64, fn int) error {
	return newError(ErrMalformed, off, fn, "block trailing length %d does not match leading length %d", t, blen)
}

// noInterface reports a packet block naming an interface the section has
// not described.
func (r *Reader) noInterface(off int64, fn int, id uint32) error {
	if len(r.ifaces) == 0 {
		return newError(ErrMalformed, off, fn, "packet block before any interface description block")
	}
	return newError(ErrMalformed, off, fn, "interface %d not defined in section (%d defined)", id, len(r.ifaces))
}

// options reads the IDB options that matter here. Options out of bounds
// end the list; their content never causes an error.
func (f *iface) options(b []byte, be bool) {
	for len(b) >= 4 {
		code, n := u16(b, be), int(u16(b[2:], be))
		b = b[4:]
		if code == optEnd || n > len(b) {
			return
		}
		switch v := b[:n]; code {
		case optTSResol:
			if n >= 1 {
				f.res = v[0]
			}
		case optTSOffset:
			if n >= 8 {
				f.offset = int64(u64(v, be))
			}
		}
		b = b[min((n+3)&^3, len(b)):] // value and padding
	}
}

// maxUnixTime is the last second of the year 9999 (UTC), the last that
// RFC 3339 can write.
const maxUnixTime = 253402300799

// time converts a timestamp in the interface's units to UTC time; out is
// true, and the time zero, when with the interface's offset it falls
// outside the years 1970 to 9999 (the draft counts time since 1970).
func (f *iface) time(ts uint64) (t time.Time, out bool) {
	var sec, ns uint64
	switch f.res {
	case 6: // the default: microseconds
		sec, ns = ts/1e6, ts%1e6*1e3
	case 9:
		sec, ns = ts/1e9, ts%1e9
	default:
		sec, ns = scaleTime(ts, f.res)
	}
	// sec + offset, without overflow, within [0, maxUnixTime].
	if f.offset >= 0 {
		if sec > maxUnixTime || uint64(f.offset) > maxUnixTime-sec {
			return time.Time{}, true
		}
		sec += uint64(f.offset)
	} else {
		back := uint64(-(f.offset + 1)) + 1 // |offset|, also for the smallest int64
		if sec < back || sec-back > maxUnixTime {
			return time.Time{}, true
		}
		sec -= back
	}
	return time.Unix(int64(sec), int64(ns)).UTC(), false
}

var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// scaleTime splits ts, counted in units of if_tsresol res, into seconds and
// nanoseconds (truncated), for any res without overflow.
func scaleTime(ts uint64, res uint8) (sec, ns uint64) {
	n := uint(res & 0x7f)
	if res&0x80 != 0 { // units of 2^-n seconds
		switch {
		case n == 0:
			return ts, 0
		case n < 64:
			hi, lo := bits.Mul64(ts&(1<<n-1), 1e9)
			return ts >> n, hi<<(64-n) | lo>>n
		default: // less than a second in all
			hi, _ := bits.Mul64(ts, 1e9)
			return 0, hi >> (n - 64)
		}
	}
	switch { // units of 10^-n seconds
	case n <= 9:
		return ts / pow10[n], ts % pow10[n] * pow10[9-n]
	case n < 20:
		return ts / pow10[n], ts % pow10[n] / pow10[n-9]
	case n-9 < 20: // less than a second in all
		return 0, ts / pow10[n-9]
	default:
		return 0, 0
	}
}
