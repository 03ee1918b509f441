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
// each operation's layout is written out below, from the XDR of RFC 7530
// (NFSv4.0), RFC 8881 (NFSv4.1), RFC 7862 (NFSv4.2) and RFC 8276
// (extended attributes). An opcode with no layout here ends the list.

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

// opArgs moves over the arguments of NFSv4 operation op; false when op has
// no layout here.
func opArgs(r *reader, op uint32) bool {
	switch op {
	case 3: // ACCESS: access
		r.skip(4)
	case 4: // CLOSE: seqid, open_stateid
		r.skip(4 + sizeStateid)
	case 5: // COMMIT: offset, count
		r.skip(hyper + 4)
	case 6: // CREATE: objtype (createtype4), objname, createattrs
		switch r.u32() {
		case 5: // NF4LNK: linkdata
			r.opaque()
		case 3, 4: // NF4BLK, NF4CHR: specdata4
			r.skip(8)
		} // the other types: void
		r.opaque()
		r.fattr()
	case 7, 30: // DELEGPURGE, RENEW: clientid
		r.skip(hyper)
	case 8, 45, 66, 67: // DELEGRETURN, FREE_STATEID, OFFLOAD_CANCEL, OFFLOAD_STATUS: a stateid
		r.skip(sizeStateid)
	case 9: // GETATTR: attr_request
		r.bitmap()
	case 10, 16, 23, 24, 27, 31, 32, OpIllegal:
		// GETFH, LOOKUPP, PUTPUBFH, PUTROOTFH, READLINK, RESTOREFH,
		// SAVEFH, ILLEGAL: no arguments
	case 11, 15, 28, 33, 72, 75: // LINK, LOOKUP, REMOVE, SECINFO, GETXATTR, REMOVEXATTR: a name
		r.opaque()
	case 12: // LOCK: locktype, reclaim, offset, length, locker4
		r.skip(4 + 4 + hyper + hyper)
		if r.boolean() { // new_lock_owner: open_seqid, open_stateid, lock_seqid, lock_owner
			r.skip(4 + sizeStateid + 4)
			r.owner()
		} else { // lock_stateid, lock_seqid
			r.skip(sizeStateid + 4)
		}
	case 13: // LOCKT: locktype, offset, length, owner
		r.skip(4 + hyper + hyper)
		r.owner()
	case 14: // LOCKU: locktype, seqid, lock_stateid, offset, length
		r.skip(4 + 4 + sizeStateid + hyper + hyper)
	case 17, 37: // NVERIFY, VERIFY: obj_attributes
		r.fattr()
	case 18: // OPEN
		openArgs(r)
	case 19, 52, 58: // OPENATTR (createdir), SECINFO_NO_NAME (style), RECLAIM_COMPLETE (rca_one_fs)
		r.skip(4)
	case 20: // OPEN_CONFIRM: open_stateid, seqid
		r.skip(sizeStateid + 4)
	case 21: // OPEN_DOWNGRADE: open_stateid, seqid, share_access, share_deny
		r.skip(sizeStateid + 4 + 4 + 4)
	case 22: // PUTFH: object
		r.fh()
	case 25, 68: // READ, READ_PLUS: stateid, offset, count
		r.skip(sizeStateid + hyper + 4)
	case 26: // READDIR: cookie, cookieverf, dircount, maxcount, attr_request
		r.skip(hyper + sizeVerifier + 4 + 4)
		r.bitmap()
	case 29: // RENAME: oldname, newname
		r.opaque()
		r.opaque()
	case 34: // SETATTR: stateid, obj_attributes
		r.skip(sizeStateid)
		r.fattr()
	case 35: // SETCLIENTID: client (verifier, id), callback (cb_program, cb_location), callback_ident
		r.skip(sizeVerifier)
		r.opaqueMax(opaqueMax)
		r.skip(4)
		r.netaddr()
		r.skip(4)
	case 36: // SETCLIENTID_CONFIRM: clientid, setclientid_confirm
		r.skip(hyper + sizeVerifier)
	case 38: // WRITE: stateid, offset, stable, data (perhaps in a read chunk)
		r.skip(sizeStateid + hyper + 4)
		r.opaque()
	case 39: // RELEASE_LOCKOWNER: lock_owner
		r.owner()
	case 40: // BACKCHANNEL_CTL: bca_cb_program, bca_sec_parms<>
		r.skip(4)
		cbSecParms(r)
	case 41: // BIND_CONN_TO_SESSION: sessid, dir, use_conn_in_rdma_mode
		r.skip(sizeSession + 4 + 4)
	case 42: // EXCHANGE_ID
		exchangeIDArgs(r)
	case 43: // CREATE_SESSION: clientid, sequence, flags, fore and back channel attrs, cb_program, sec_parms<>
		r.skip(hyper + 4 + 4)
		channelAttrs(r)
		channelAttrs(r)
		r.skip(4)
		cbSecParms(r)
	case 44: // DESTROY_SESSION: sessionid
		r.skip(sizeSession)
	case 46: // GET_DIR_DELEGATION: signal_deleg_avail, notification_types, child and dir attr_delay, child and dir attributes
		r.skip(4)
		r.bitmap()
		r.skip(2 * sizeTime)
		r.bitmap()
		r.bitmap()
	case 47: // GETDEVICEINFO: device_id, layout_type, maxcount, notify_types
		r.skip(sizeDeviceID + 4 + 4)
		r.bitmap()
	case 48: // GETDEVICELIST: layout_type, maxdevices, cookie, cookieverf
		r.skip(4 + 4 + hyper + sizeVerifier)
	case 49: // LAYOUTCOMMIT: offset, length, reclaim, stateid, last_write_offset, time_modify, layoutupdate
		r.skip(hyper + hyper + 4 + sizeStateid)
		if r.boolean() { // newoffset4
			r.skip(hyper)
		}
		if r.boolean() { // newtime4
			r.skip(sizeTime)
		}
		r.skip(4) // lou_type
		r.opaque()
	case 50: // LAYOUTGET: signal_layout_avail, layout_type, iomode, offset, length, minlength, stateid, maxcount
		r.skip(4 + 4 + 4 + hyper + hyper + hyper + sizeStateid + 4)
	case 51: // LAYOUTRETURN: reclaim, layout_type, iomode, layoutreturn4
		r.skip(4 + 4 + 4)
		if r.u32() == 1 { // LAYOUTRETURN4_FILE: offset, length, stateid, body; the others: void
			r.skip(hyper + hyper + sizeStateid)
			r.opaque()
		}
	case 53: // SEQUENCE: sessionid, sequenceid, slotid, highest_slotid, cachethis
		r.skip(sizeSession + 4 + 4 + 4 + 4)
	case 54: // SET_SSV: ssv, digest
		r.opaque()
		r.opaque()
	case 55: // TEST_STATEID: stateids<>
		r.fixedArray(sizeStateid)
	case 56: // WANT_DELEGATION: want, deleg_claim4
		r.skip(4)
		switch r.u32() {
		case 4, 6: // CLAIM_FH, CLAIM_DELEG_PREV_FH: void
		case 1: // CLAIM_PREVIOUS: delegate_type
			r.skip(4)
		default:
			r.bad = true
		}
	case 57: // DESTROY_CLIENTID: clientid
		r.skip(hyper)
	case 59, 62: // ALLOCATE, DEALLOCATE: stateid, offset, length
		r.skip(sizeStateid + hyper + hyper)
	case 60: // COPY: src and dst stateids, src and dst offsets, count, consecutive, synchronous, source_server<>
		r.skip(2*sizeStateid + 3*hyper + 4 + 4)
		for n := r.count(); n > 0 && r.ok(); n-- {
			netloc(r)
		}
	case 61: // COPY_NOTIFY: src_stateid, destination_server
		r.skip(sizeStateid)
		netloc(r)
	case 63: // IO_ADVISE: stateid, offset, count, hints
		r.skip(sizeStateid + hyper + hyper)
		r.bitmap()
	case 64: // LAYOUTERROR: offset, length, stateid, errors<> (deviceid, status, opnum)
		r.skip(hyper + hyper + sizeStateid)
		r.fixedArray(sizeDeviceID + 4 + 4)
	case 65: // LAYOUTSTATS: offset, length, stateid, read and write io_info4, deviceid, layoutupdate
		r.skip(hyper + hyper + sizeStateid + 2*(2*hyper) + sizeDeviceID + 4)
		r.opaque()
	case 69: // SEEK: stateid, offset, what
		r.skip(sizeStateid + hyper + 4)
	case 70: // WRITE_SAME: stateid, stable, app_data_block4 (offset, block_size, block_count, reloff_blocknum, block_num, reloff_pattern, pattern)
		r.skip(sizeStateid + 4 + 4*hyper + 4 + hyper)
		r.opaque()
	case 71: // CLONE: src and dst stateids, src and dst offsets, count
		r.skip(2*sizeStateid + 3*hyper)
	case 73: // SETXATTR: option, key, value
		r.skip(4)
		r.opaque()
		r.opaque()
	case 74: // LISTXATTRS: cookie, maxcount
		r.skip(hyper + 4)
	default:
		return false
	}
	return true
}

// opResult moves over the result of NFSv4 operation op after its status
// NFS4_OK; false when op has no layout here.
func opResult(r *reader, op uint32) bool {
	switch op {
	case 7, 8, 15, 16, 17, 19, 22, 23, 24, 30, 31, 32, 36, 37, 39,
		40, 44, 45, 57, 58, 59, 62, 64, 65, 66, 71, 13, OpIllegal:
		// the status alone: DELEGPURGE, DELEGRETURN, LOOKUP, LOOKUPP,
		// NVERIFY, OPENATTR, PUTFH, PUTPUBFH, PUTROOTFH, RENEW,
		// RESTOREFH, SAVEFH, SETCLIENTID_CONFIRM, VERIFY,
		// RELEASE_LOCKOWNER, BACKCHANNEL_CTL, DESTROY_SESSION,
		// FREE_STATEID, DESTROY_CLIENTID, RECLAIM_COMPLETE, ALLOCATE,
		// DEALLOCATE, LAYOUTERROR, LAYOUTSTATS, OFFLOAD_CANCEL, CLONE,
		// LOCKT (void when NFS4_OK), ILLEGAL
	case 3: // ACCESS: supported, access
		r.skip(8)
	case 4, 12, 14, 20, 21: // CLOSE, LOCK, LOCKU, OPEN_CONFIRM, OPEN_DOWNGRADE: a stateid
		r.skip(sizeStateid)
	case 5: // COMMIT: writeverf
		r.skip(sizeVerifier)
	case 6: // CREATE: cinfo, attrset
		r.skip(sizeChange)
		r.bitmap()
	case 9: // GETATTR: obj_attributes
		r.fattr()
	case 10: // GETFH: object
		r.fh()
	case 11, 28, 73, 75: // LINK, REMOVE, SETXATTR, REMOVEXATTR: cinfo
		r.skip(sizeChange)
	case 18: // OPEN: stateid, cinfo, rflags, attrset, delegation
		r.skip(sizeStateid + sizeChange + 4)
		r.bitmap()
		openDelegation(r)
	case 25: // READ: eof, data (perhaps in a write chunk)
		r.skip(4)
		r.writable()
	case 26: // READDIR: cookieverf, entries (cookie, name, attrs, a bool before each), eof
		r.skip(sizeVerifier)
		for r.boolean() && r.ok() {
			r.skip(hyper)
			r.opaque()
			r.fattr()
		}
		r.skip(4)
	case 27: // READLINK: link (perhaps in a write chunk)
		r.writable()
	case 29: // RENAME: source_cinfo, target_cinfo
		r.skip(2 * sizeChange)
	case 33, 52: // SECINFO, SECINFO_NO_NAME: secinfo4<>
		for n := r.count(); n > 0 && r.ok(); n-- {
			if r.u32() == AuthGSS { // rpcsec_gss_info: oid, qop, service
				r.opaque()
				r.skip(8)
			}
		}
	case 34: // SETATTR: attrsset
		r.bitmap()
	case 35: // SETCLIENTID: clientid, setclientid_confirm
		r.skip(hyper + sizeVerifier)
	case 38: // WRITE: count, committed, writeverf
		r.skip(4 + 4 + sizeVerifier)
	case 41: // BIND_CONN_TO_SESSION: sessid, dir, use_conn_in_rdma_mode
		r.skip(sizeSession + 4 + 4)
	case 42: // EXCHANGE_ID
		exchangeIDResult(r)
	case 43: // CREATE_SESSION: sessionid, sequence, flags, fore and back channel attrs
		r.skip(sizeSession + 4 + 4)
		channelAttrs(r)
		channelAttrs(r)
	case 46: // GET_DIR_DELEGATION: GET_DIR_DELEGATION4res_non_fatal
		switch r.u32() {
		case 0: // GDD4_OK: cookieverf, stateid, notification, child and dir attributes
			r.skip(sizeVerifier + sizeStateid)
			r.bitmap()
			r.bitmap()
			r.bitmap()
		case 1: // GDD4_UNAVAIL: will_signal_deleg_avail
			r.skip(4)
		default:
			r.bad = true
		}
	case 47: // GETDEVICEINFO: device_addr (layout_type, addr_body), notification
		r.skip(4)
		r.opaque()
		r.bitmap()
	case 48: // GETDEVICELIST: cookie, cookieverf, deviceid_list<>, eof
		r.skip(hyper + sizeVerifier)
		r.fixedArray(sizeDeviceID)
		r.skip(4)
	case 49: // LAYOUTCOMMIT: newsize4
		if r.boolean() {
			r.skip(hyper)
		}
	case 50: // LAYOUTGET: return_on_close, stateid, layout4<> (offset, length, iomode, type, body)
		r.skip(4 + sizeStateid)
		for n := r.count(); n > 0 && r.ok(); n-- {
			r.skip(hyper + hyper + 4 + 4)
			r.opaque()
		}
	case 51: // LAYOUTRETURN: layoutreturn_stateid
		if r.boolean() {
			r.skip(sizeStateid)
		}
	case 53: // SEQUENCE: sessionid, sequenceid, slotid, highest_slotid, target_highest_slotid, status_flags
		r.skip(sizeSession + 5*4)
	case 54: // SET_SSV: digest
		r.opaque()
	case 55: // TEST_STATEID: status_codes<>
		r.fixedArray(4)
	case 56: // WANT_DELEGATION: open_delegation4
		openDelegation(r)
	case 60: // COPY: write_response4, copy_requirements4
		writeResponse(r)
		r.skip(4 + 4)
	case 61: // COPY_NOTIFY: lease_time, stateid, source_server<>
		r.skip(sizeTime + sizeStateid)
		for n := r.count(); n > 0 && r.ok(); n-- {
			netloc(r)
		}
	case 63: // IO_ADVISE: hints
		r.bitmap()
	case 67: // OFFLOAD_STATUS: count, complete<1>
		r.skip(hyper)
		if r.optional1() {
			r.skip(4)
		}
	case 68: // READ_PLUS: eof, contents<> (read_plus_content)
		r.skip(4)
		for n := r.count(); n > 0 && r.ok(); n-- {
			switch r.u32() {
			case 0: // NFS4_CONTENT_DATA: offset, data
				r.skip(hyper)
				r.opaque()
			case 1: // NFS4_CONTENT_HOLE: offset, length
				r.skip(hyper + hyper)
			} // default: void
		}
	case 69: // SEEK: eof, offset
		r.skip(4 + hyper)
	case 70: // WRITE_SAME: write_response4
		writeResponse(r)
	case 72: // GETXATTR: value
		r.opaque()
	case 74: // LISTXATTRS: cookie, names<>, eof
		r.skip(hyper)
		r.opaques()
		r.skip(4)
	default:
		return false
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

// openArgs moves over OPEN4args: seqid, share_access, share_deny, owner,
// openhow (openflag4), claim (open_claim4).
func openArgs(r *reader) {
	r.skip(4 + 4 + 4)
	r.owner()
	if r.u32() == 1 { // OPEN4_CREATE: createhow4; the others: void
		switch r.u32() {
		case 0, 1: // UNCHECKED4, GUARDED4: createattrs
			r.fattr()
		case 2: // EXCLUSIVE4: createverf
			r.skip(sizeVerifier)
		case 3: // EXCLUSIVE4_1: verifier, attrs
			r.skip(sizeVerifier)
			r.fattr()
		default:
			r.bad = true
		}
	}
	switch r.u32() {
	case 0, 3: // CLAIM_NULL, CLAIM_DELEGATE_PREV: file
		r.opaque()
	case 1: // CLAIM_PREVIOUS: delegate_type
		r.skip(4)
	case 2: // CLAIM_DELEGATE_CUR: delegate_stateid, file
		r.skip(sizeStateid)
		r.opaque()
	case 4, 6: // CLAIM_FH, CLAIM_DELEG_PREV_FH: void
	case 5: // CLAIM_DELEG_CUR_FH: stateid
		r.skip(sizeStateid)
	default:
		r.bad = true
	}
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

// cbSecParms moves over callback_sec_parms4<>.
func cbSecParms(r *reader) {
	for n := r.count(); n > 0 && r.ok(); n-- {
		switch r.u32() {
		case AuthNone:
		case AuthSys: // authsys_parms: stamp, machinename<255>, uid, gid, gids<16>
			r.skip(4)
			r.opaqueMax(255)
			r.skip(4 + 4)
			if g := r.count(); g > 16 {
				r.bad = true
			} else {
				r.skip(4 * uint64(g))
			}
		case AuthGSS: // gss_cb_handles4: service, handle_from_server, handle_from_client
			r.skip(4)
			r.opaque()
			r.opaque()
		default:
			r.bad = true
		}
	}
}

// channelAttrs moves over a channel_attrs4: six count4s and rdma_ird<1>.
func channelAttrs(r *reader) {
	r.skip(6 * 4)
	if r.optional1() {
		r.skip(4)
	}
}

// exchangeIDArgs moves over EXCHANGE_ID4args: clientowner (verifier,
// ownerid), flags, state_protect4_a, client_impl_id<1>.
func exchangeIDArgs(r *reader) {
	r.skip(sizeVerifier)
	r.opaqueMax(opaqueMax)
	r.skip(4)
	switch r.u32() {
	case 0: // SP4_NONE
	case 1: // SP4_MACH_CRED: state_protect_ops4
		r.bitmap()
		r.bitmap()
	case 2: // SP4_SSV: ops, hash_algs<>, encr_algs<>, window, num_gss_handles
		r.bitmap()
		r.bitmap()
		r.opaques()
		r.opaques()
		r.skip(4 + 4)
	default:
		r.bad = true
	}
	if r.optional1() {
		implID(r)
	}
}

// exchangeIDResult moves over EXCHANGE_ID4resok: clientid, sequenceid,
// flags, state_protect4_r, server_owner, server_scope, server_impl_id<1>.
func exchangeIDResult(r *reader) {
	r.skip(hyper + 4 + 4)
	switch r.u32() {
	case 0: // SP4_NONE
	case 1: // SP4_MACH_CRED: state_protect_ops4
		r.bitmap()
		r.bitmap()
	case 2: // SP4_SSV: ops, hash_alg, encr_alg, ssv_len, window, handles<>
		r.bitmap()
		r.bitmap()
		r.skip(4 * 4)
		r.opaques()
	default:
		r.bad = true
	}
	r.skip(hyper) // so_minor_id
	r.opaqueMax(opaqueMax)
	r.opaqueMax(opaqueMax)
	if r.optional1() {
		implID(r)
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
