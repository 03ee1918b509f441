package oncrpc

import "encoding/binary"

// reader walks XDR (RFC 4506): big-endian 4-octet units, opaques and
// strings as a length, the octets and zeros up to a multiple of 4. Its
// errors stick: once short or bad, every read returns zero and moves
// nothing, and the walkers look at ok() after each operation. Nothing it
// does allocates or panics, and every array it walks costs at least 4
// octets an element, so a hostile count ends with the octets.
type reader struct {
	b   []byte
	off int // offsets are from the RPC message's first octet, b[0]

	short bool // the octets ran out
	bad   bool // a value no layout allows (an unknown union arm, a length over its bound)

	// cut says whether b ends where the octets ran out (the end of what
	// was captured) rather than where a length said the data ends (an
	// RPCSEC_GSS body): running short is then truncation, not an invalid
	// message.
	cut bool
	// integCut says an RPCSEC_GSS body goes on past the octets.
	integCut bool

	// readPos is, in a Call, the offset where the octets of a data item
	// moved to a read chunk would start (RFC 8166, section 3.4.5: the
	// read chunk's Position); -1 when none.
	readPos int
	// written has bit i set when the Reply's write chunk i holds the
	// i-th data item a write chunk can carry (RFC 8166, section 3.4.6);
	// nWritten counts those items seen.
	written  uint32
	nWritten int
}

func newReader(b []byte) reader {
	return reader{b: b, cut: true, readPos: -1}
}

func (r *reader) ok() bool { return !r.short && !r.bad }

// left returns how many octets remain.
func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) runOut() {
	r.short = true
	r.off = len(r.b)
}

func (r *reader) u32() uint32 {
	if r.bad {
		return 0
	}
	if r.left() < 4 {
		r.runOut()
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

// skip moves over n octets.
func (r *reader) skip(n uint64) {
	if r.bad {
		return
	}
	if uint64(r.left()) < n {
		r.runOut()
		return
	}
	r.off += int(n)
}

// padded returns n rounded up to a multiple of 4.
func padded(n uint32) uint64 { return (uint64(n) + 3) &^ 3 }

// opaque moves over an opaque<> or a string<>. In a Call, the octets of
// the one that starts at the read chunk's Position are not there: that
// data item went in the chunk, and its length stayed.
func (r *reader) opaque() {
	n := r.u32()
	if r.short {
		return
	}
	if r.off == r.readPos {
		r.readPos = -1
		return
	}
	r.skip(padded(n))
}

// opaqueMax moves over an opaque<max>, and a longer one is bad.
func (r *reader) opaqueMax(max uint32) {
	n := r.u32()
	if r.short {
		return
	}
	if n > max {
		r.bad = true
		return
	}
	r.skip(padded(n))
}

// writable moves over a result's opaque<> that a write chunk may carry (an
// NFSv4 READ's data, a READLINK's link): its octets are absent when the
// write chunk of its turn holds them.
func (r *reader) writable() {
	n := r.u32()
	if r.short {
		return
	}
	i := r.nWritten
	r.nWritten++
	if i < 32 && r.written&(1<<i) != 0 {
		return
	}
	r.skip(padded(n))
}

// fixedArray moves over an array<> of elements of size octets each.
func (r *reader) fixedArray(size uint64) {
	n := r.u32()
	if r.short {
		return
	}
	r.skip(uint64(n) * size)
}

// optional1 reads the count of an array<1> and says whether its one
// element follows; a count over 1 is bad.
func (r *reader) optional1() bool {
	n := r.u32()
	if n > 1 {
		r.bad = true
	}
	return n == 1 && r.ok()
}

// count reads an array's count; the caller loops while ok().
func (r *reader) count() uint32 { return r.u32() }

// boolean reads an XDR bool; a value other than 0 and 1 is bad.
func (r *reader) boolean() bool {
	v := r.u32()
	if v > 1 {
		r.bad = true
	}
	return v == 1
}

// Common NFSv4 types (RFC 8881, section 3).
const (
	sizeStateid  = 16 // stateid4: seqid, other[12]
	sizeVerifier = 8  // verifier4
	sizeSession  = 16 // sessionid4
	sizeDeviceID = 16 // deviceid4
	sizeTime     = 12 // nfstime4: seconds (int64), nseconds
	sizeChange   = 20 // change_info4: atomic, before, after
	hyper        = 8  // offset4, length4, clientid4, nfs_cookie4, ...

	fhMax     = 128  // NFS4_FHSIZE
	opaqueMax = 1024 // NFS4_OPAQUE_LIMIT
)

func (r *reader) fh()      { r.opaqueMax(fhMax) }
func (r *reader) bitmap()  { r.fixedArray(4) }
func (r *reader) fattr()   { r.bitmap(); r.opaque() }
func (r *reader) owner()   { r.skip(hyper); r.opaqueMax(opaqueMax) } // state_owner4
func (r *reader) netaddr() { r.opaque(); r.opaque() }                // netaddr4: r_netid, r_addr

// opaques moves over an array of opaque<> (sec_oid4<>, gsshandle4_t<>,
// xattrkey4<>).
func (r *reader) opaques() {
	for n := r.count(); n > 0 && r.ok(); n-- {
		r.opaque()
	}
}
