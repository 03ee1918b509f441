package oncrpc

// The COMPOUND and CB_COMPOUND walkers. The arguments (RFC 8881, section
// 16.2; section 19.2 for CB_COMPOUND):
//
//	tag (utf8str_cs) | minorversion | [callback_ident] | count | op, its arguments | ...
//
// and the results (sections 16.2 and 19.2):
//
//	status | tag | count | op, status, its result when the status is NFS4_OK | ...
//
// To list an operation the walker must move over the one before it, so
// each operation's layout is written out, from the XDR of RFC 7530
// (NFSv4.0), RFC 8881 (NFSv4.1), RFC 7862 (NFSv4.2) and RFC 8276
// (extended attributes): the arguments' in opargs.go and the results' in
// opresults.go, as tables indexed by opcode; the callback operations' below.
// An opcode with no layout ends the list.

// walkCall lists the operations of a COMPOUND's arguments (cb: a
// CB_COMPOUND's).
func (m *Message) walkCall(r *reader, cb bool) {
	m.Compound = true
	r.opaque() // tag
	m.MinorVersion = r.u32()
	if cb {
		m.CallbackIdent = r.u32()
	}
	n := r.count()
	if !r.ok() {
		m.endOps(r)
		return
	}
	m.OpsTotal = n
	for i := uint32(0); i < n; i++ {
		if m.NOps == MaxOps {
			m.OpsEnd = OpsMaxOps
			return
		}
		op := r.u32()
		if r.short {
			m.endOps(r)
			return
		}
		m.Ops[m.NOps] = op
		m.NOps++
		var known bool
		if cb {
			known = cbArgs(r, op)
		} else {
			known = opArgs(r, op)
		}
		if !known {
			m.OpsEnd = OpsUnknownOp
			return
		}
		if !r.ok() {
			m.endOps(r)
			return
		}
	}
	m.OpsEnd = OpsComplete
}

// walkReply reads a COMPOUND's (cb: a CB_COMPOUND's) status and lists the
// operations of its results up to the first that failed.
func (m *Message) walkReply(r *reader, cb bool) {
	m.Compound = true
	m.status(r, StatusNFS4)
	r.opaque() // tag
	n := r.count()
	if !r.ok() {
		m.endOps(r)
		return
	}
	m.OpsTotal = n
	for i := uint32(0); i < n; i++ {
		if m.NOps == MaxOps {
			m.OpsEnd = OpsMaxOps
			return
		}
		op := r.u32()
		if r.short {
			m.endOps(r)
			return
		}
		m.Ops[m.NOps] = op
		m.NOps++
		m.OpStatus = r.u32()
		if r.short {
			m.endOps(r)
			return
		}
		if m.OpStatus != NFS4OK {
			break // the COMPOUND stopped here (RFC 8881, section 16.2.3)
		}
		var known bool
		if cb {
			known = cbResult(r, op)
		} else {
			known = opResult(r, op)
		}
		if !known {
			m.OpsEnd = OpsUnknownOp
			return
		}
		if !r.ok() {
			m.endOps(r)
			return
		}
	}
	m.OpsEnd = OpsComplete
}

// endOps marks a list that ended because r did.
func (m *Message) endOps(r *reader) {
	if !r.bad && r.short && r.cut {
		m.OpsEnd = OpsTruncated
		return
	}
	m.OpsEnd = OpsBadLayout
}

// looksCBCompound says whether the arguments at r have a CB_COMPOUND's
// shape: a tag, a minor version of 0 to 2, a callback_ident, and a count
// of 0 or a first opcode that is a callback operation's. Where the octets
// run out before the shape is told, they are taken for one (and the walk
// then says they ran out). r is a copy.
func looksCBCompound(r reader) bool {
	r.opaque() // tag
	minor := r.u32()
	if r.short {
		return true
	}
	if minor > 2 {
		return false
	}
	r.u32() // callback_ident
	n := r.count()
	if r.short || n == 0 {
		return true
	}
	op := r.u32()
	return r.short || CBOpName(op) != ""
}

// opLayout is how to move over one NFSv4 operation's arguments or result:
// fixed octets, then a common XDR item, then what walk moves over (each
// part may be absent). Fixed fields, and fixed fields ending in one common
// item, are data alone; a walk does the rest (union arms, arrays, several
// items in a row). The zero opLayout is an opcode with no layout.
//
// A walk takes the reader and returns it, rather than taking a pointer:
// the compiler cannot see what a function value does with a pointer, so
// the reader would be moved to the heap.
type opLayout struct {
	known bool
	fixed uint16
	item  xdrItem
	walk  func(reader) reader
}

// xdrItem is an XDR item that many layouts have after their fixed fields.
type xdrItem uint8

// The items.
const (
	noItem       xdrItem = iota // none
	opaqueItem                  // an opaque<> or a string<>
	bitmapItem                  // a bitmap4
	fattrItem                   // an fattr4
	fhItem                      // an nfs_fh4
	ownerItem                   // a state_owner4
	writableItem                // a result's opaque<> that a write chunk may carry
)

// item moves over one XDR item of kind k.
func (r *reader) item(k xdrItem) {
	switch k {
	case opaqueItem:
		r.opaque()
	case bitmapItem:
		r.bitmap()
	case fattrItem:
		r.fattr()
	case fhItem:
		r.fh()
	case ownerItem:
		r.owner()
	case writableItem:
		r.writable()
	}
}

// moveOp moves r over operation op as layouts lay it out; false when op
// has no layout there. ILLEGAL has neither arguments nor a result past its
// status.
func moveOp(r *reader, layouts []opLayout, op uint32) bool {
	if op == OpIllegal {
		return true
	}
	if uint64(op) >= uint64(len(layouts)) || !layouts[op].known {
		return false
	}
	l := &layouts[op]
	r.skip(uint64(l.fixed))
	r.item(l.item)
	if l.walk != nil {
		*r = l.walk(*r)
	}
	return true
}

// cbArgs moves over the arguments of callback operation op (RFC 8881,
// section 20; RFC 7862 for CB_OFFLOAD); false when op has no layout here.
func cbArgs(r *reader, op uint32) bool {
	switch op {
	case 3: // CB_GETATTR: fh, attr_request
		r.fh()
		r.bitmap()
	case 4: // CB_RECALL: stateid, truncate, fh
		r.skip(sizeStateid + 4)
		r.fh()
	case 5: // CB_LAYOUTRECALL: type, iomode, changed, layoutrecall4
		r.skip(4 + 4 + 4)
		switch r.u32() {
		case 1: // LAYOUTRECALL4_FILE: fh, offset, length, stateid
			r.fh()
			r.skip(hyper + hyper + sizeStateid)
		case 2: // LAYOUTRECALL4_FSID: fsid4
			r.skip(2 * hyper)
		case 3: // LAYOUTRECALL4_ALL: void
		default:
			r.bad = true
		}
	case 6: // CB_NOTIFY: stateid, fh, changes<>
		r.skip(sizeStateid)
		r.fh()
		notifies(r)
	case 7: // CB_PUSH_DELEG: fh, delegation
		r.fh()
		openDelegation(r)
	case 8, 9: // CB_RECALL_ANY, CB_RECALLABLE_OBJ_AVAIL: objects_to_keep, type_mask
		r.skip(4)
		r.bitmap()
	case 10: // CB_RECALL_SLOT: target_highest_slotid
		r.skip(4)
	case 11: // CB_SEQUENCE: sessionid, sequenceid, slotid, highest_slotid, cachethis, referring_call_lists<>
		r.skip(sizeSession + 4 + 4 + 4 + 4)
		for n := r.count(); n > 0 && r.ok(); n-- { // sessionid, referring_calls<> (sequenceid, slotid)
			r.skip(sizeSession)
			r.fixedArray(4 + 4)
		}
	case 12: // CB_WANTS_CANCELLED: contended, resourced
		r.skip(4 + 4)
	case 13: // CB_NOTIFY_LOCK: fh, lock_owner
		r.fh()
		r.owner()
	case 14: // CB_NOTIFY_DEVICEID: changes<>
		notifies(r)
	case 15: // CB_OFFLOAD: fh, stateid, offload_info4
		r.fh()
		r.skip(sizeStateid)
		if r.u32() == NFS4OK {
			writeResponse(r)
		} else { // bytes_copied
			r.skip(hyper)
		}
	case OpIllegal: // CB_ILLEGAL: no arguments
	default:
		return false
	}
	return true
}

// cbResult moves over the result of callback operation op after its
// status NFS4_OK; false when op has no layout here.
func cbResult(r *reader, op uint32) bool {
	switch op {
	case 3: // CB_GETATTR: obj_attributes
		r.fattr()
	case 11: // CB_SEQUENCE: sessionid, sequenceid, slotid, highest_slotid, target_highest_slotid
		r.skip(sizeSession + 4*4)
	case 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, OpIllegal: // the status alone
	default:
		return false
	}
	return true
}

// openDelegation moves over an open_delegation4.
func openDelegation(r *reader) {
	switch r.u32() {
	case 0: // OPEN_DELEGATE_NONE
	case 1: // OPEN_DELEGATE_READ: stateid, recall, permissions
		r.skip(sizeStateid + 4)
		nfsace(r)
	case 2: // OPEN_DELEGATE_WRITE: stateid, recall, space_limit, permissions
		r.skip(sizeStateid + 4)
		switch r.u32() {
		case 1, 2: // NFS_LIMIT_SIZE: filesize; NFS_LIMIT_BLOCKS: num_blocks, bytes_per_block
			r.skip(8)
		default:
			r.bad = true
		}
		nfsace(r)
	case 3: // OPEN_DELEGATE_NONE_EXT: why_no_delegation4
		switch r.u32() {
		case 1, 2: // WND4_CONTENTION, WND4_RESOURCE: a bool
			r.skip(4)
		}
	default:
		r.bad = true
	}
}

// nfsace moves over an nfsace4: type, flag, access_mask, who.
func nfsace(r *reader) {
	r.skip(4 + 4 + 4)
	r.opaque()
}

// channelAttrs moves over a channel_attrs4: six count4s and rdma_ird<1>.
func channelAttrs(r *reader) {
	r.skip(6 * 4)
	if r.optional1() {
		r.skip(4)
	}
}

// implID moves over an nfs_impl_id4: domain, name, date.
func implID(r *reader) {
	r.opaque()
	r.opaque()
	r.skip(sizeTime)
}

// netloc moves over a netloc4.
func netloc(r *reader) {
	switch r.u32() {
	case 1, 2: // NL4_NAME, NL4_URL
		r.opaque()
	case 3: // NL4_NETADDR
		r.netaddr()
	default:
		r.bad = true
	}
}

// writeResponse moves over a write_response4: callback_id<1>, count,
// committed, writeverf.
func writeResponse(r *reader) {
	if r.optional1() {
		r.skip(sizeStateid)
	}
	r.skip(hyper + 4 + sizeVerifier)
}

// notifies moves over a notify4<>: each a mask and an opaque list.
func notifies(r *reader) {
	for n := r.count(); n > 0 && r.ok(); n-- {
		r.bitmap()
		r.opaque()
	}
}
