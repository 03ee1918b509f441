package oncrpc

// The layouts of the NFSv4 operations' arguments (RFC 8881, section 18;
// RFC 7862, section 15; RFC 8276, section 8), for the COMPOUND walker.

// opArgLayouts is each NFSv4 operation's arguments, indexed by opcode:
// the fixed fields, an XDR item, then what the walk moves over. Opcodes 0
// to 2 are unused; moveOp knows ILLEGAL (10044).
var opArgLayouts = [...]opLayout{
	// ACCESS: access
	3: {known: true, fixed: 4},
	// CLOSE: seqid, open_stateid
	4: {known: true, fixed: 4 + sizeStateid},
	// COMMIT: offset, count
	5: {known: true, fixed: hyper + 4},
	// CREATE: objtype (createtype4), objname, createattrs
	6: {known: true, walk: createArgs},
	// DELEGPURGE: clientid
	7: {known: true, fixed: hyper},
	// DELEGRETURN: deleg_stateid
	8: {known: true, fixed: sizeStateid},
	// GETATTR: attr_request
	9: {known: true, item: bitmapItem},
	// GETFH: no arguments
	10: {known: true},
	// LINK: newname
	11: {known: true, item: opaqueItem},
	// LOCK: locktype, reclaim, offset, length, locker4
	12: {known: true, fixed: 4 + 4 + hyper + hyper, walk: locker},
	// LOCKT: locktype, offset, length, owner
	13: {known: true, fixed: 4 + hyper + hyper, item: ownerItem},
	// LOCKU: locktype, seqid, lock_stateid, offset, length
	14: {known: true, fixed: 4 + 4 + sizeStateid + hyper + hyper},
	// LOOKUP: objname
	15: {known: true, item: opaqueItem},
	// LOOKUPP: no arguments
	16: {known: true},
	// NVERIFY: obj_attributes
	17: {known: true, item: fattrItem},
	// OPEN: seqid, share_access, share_deny, owner, openhow, claim
	18: {known: true, fixed: 4 + 4 + 4, item: ownerItem, walk: openArgs},
	// OPENATTR: createdir
	19: {known: true, fixed: 4},
	// OPEN_CONFIRM: open_stateid, seqid
	20: {known: true, fixed: sizeStateid + 4},
	// OPEN_DOWNGRADE: open_stateid, seqid, share_access, share_deny
	21: {known: true, fixed: sizeStateid + 4 + 4 + 4},
	// PUTFH: object
	22: {known: true, item: fhItem},
	// PUTPUBFH: no arguments
	23: {known: true},
	// PUTROOTFH: no arguments
	24: {known: true},
	// READ: stateid, offset, count
	25: {known: true, fixed: sizeStateid + hyper + 4},
	// READDIR: cookie, cookieverf, dircount, maxcount, attr_request
	26: {known: true, fixed: hyper + sizeVerifier + 4 + 4, item: bitmapItem},
	// READLINK: no arguments
	27: {known: true},
	// REMOVE: target
	28: {known: true, item: opaqueItem},
	// RENAME: oldname, newname
	29: {known: true, walk: twoOpaques},
	// RENEW: clientid
	30: {known: true, fixed: hyper},
	// RESTOREFH: no arguments
	31: {known: true},
	// SAVEFH: no arguments
	32: {known: true},
	// SECINFO: name
	33: {known: true, item: opaqueItem},
	// SETATTR: stateid, obj_attributes
	34: {known: true, fixed: sizeStateid, item: fattrItem},
	// SETCLIENTID: client (verifier, id), callback (cb_program,
	// cb_location), callback_ident
	35: {known: true, fixed: sizeVerifier, walk: setClientIDArgs},
	// SETCLIENTID_CONFIRM: clientid, setclientid_confirm
	36: {known: true, fixed: hyper + sizeVerifier},
	// VERIFY: obj_attributes
	37: {known: true, item: fattrItem},
	// WRITE: stateid, offset, stable, data (perhaps in a read chunk)
	38: {known: true, fixed: sizeStateid + hyper + 4, item: opaqueItem},
	// RELEASE_LOCKOWNER: lock_owner
	39: {known: true, item: ownerItem},
	// BACKCHANNEL_CTL: bca_cb_program, bca_sec_parms<>
	40: {known: true, fixed: 4, walk: cbSecParms},
	// BIND_CONN_TO_SESSION: sessid, dir, use_conn_in_rdma_mode
	41: {known: true, fixed: sizeSession + 4 + 4},
	// EXCHANGE_ID: clientowner (verifier, ownerid), flags,
	// state_protect4_a, client_impl_id<1>
	42: {known: true, fixed: sizeVerifier, walk: exchangeIDArgs},
	// CREATE_SESSION: clientid, sequence, flags, fore and back channel
	// attrs, cb_program, sec_parms<>
	43: {known: true, fixed: hyper + 4 + 4, walk: createSessionArgs},
	// DESTROY_SESSION: sessionid
	44: {known: true, fixed: sizeSession},
	// FREE_STATEID: stateid
	45: {known: true, fixed: sizeStateid},
	// GET_DIR_DELEGATION: signal_deleg_avail, notification_types, child
	// and dir attr_delay, child and dir attributes
	46: {known: true, fixed: 4, item: bitmapItem, walk: dirDelegArgs},
	// GETDEVICEINFO: device_id, layout_type, maxcount, notify_types
	47: {known: true, fixed: sizeDeviceID + 4 + 4, item: bitmapItem},
	// GETDEVICELIST: layout_type, maxdevices, cookie, cookieverf
	48: {known: true, fixed: 4 + 4 + hyper + sizeVerifier},
	// LAYOUTCOMMIT: offset, length, reclaim, stateid, last_write_offset,
	// time_modify, layoutupdate
	49: {known: true, fixed: hyper + hyper + 4 + sizeStateid, walk: layoutCommitArgs},
	// LAYOUTGET: signal_layout_avail, layout_type, iomode, offset, length,
	// minlength, stateid, maxcount
	50: {known: true, fixed: 4 + 4 + 4 + hyper + hyper + hyper + sizeStateid + 4},
	// LAYOUTRETURN: reclaim, layout_type, iomode, layoutreturn4
	51: {known: true, fixed: 4 + 4 + 4, walk: layoutReturnArgs},
	// SECINFO_NO_NAME: style
	52: {known: true, fixed: 4},
	// SEQUENCE: sessionid, sequenceid, slotid, highest_slotid, cachethis
	53: {known: true, fixed: sizeSession + 4 + 4 + 4 + 4},
	// SET_SSV: ssv, digest
	54: {known: true, walk: twoOpaques},
	// TEST_STATEID: stateids<>
	55: {known: true, walk: stateids},
	// WANT_DELEGATION: want, deleg_claim4
	56: {known: true, fixed: 4, walk: delegClaim},
	// DESTROY_CLIENTID: clientid
	57: {known: true, fixed: hyper},
	// RECLAIM_COMPLETE: rca_one_fs
	58: {known: true, fixed: 4},
	// ALLOCATE: stateid, offset, length
	59: {known: true, fixed: sizeStateid + hyper + hyper},
	// COPY: src and dst stateids, src and dst offsets, count, consecutive,
	// synchronous, source_server<>
	60: {known: true, fixed: 2*sizeStateid + 3*hyper + 4 + 4, walk: netlocs},
	// COPY_NOTIFY: src_stateid, destination_server
	61: {known: true, fixed: sizeStateid, walk: oneNetloc},
	// DEALLOCATE: stateid, offset, length
	62: {known: true, fixed: sizeStateid + hyper + hyper},
	// IO_ADVISE: stateid, offset, count, hints
	63: {known: true, fixed: sizeStateid + hyper + hyper, item: bitmapItem},
	// LAYOUTERROR: offset, length, stateid, errors<> (deviceid, status,
	// opnum)
	64: {known: true, fixed: hyper + hyper + sizeStateid, walk: deviceErrors},
	// LAYOUTSTATS: offset, length, stateid, read and write io_info4,
	// deviceid, layoutupdate (lou_type, lou_body)
	65: {known: true, fixed: hyper + hyper + sizeStateid + 2*(2*hyper) + sizeDeviceID + 4, item: opaqueItem},
	// OFFLOAD_CANCEL: stateid
	66: {known: true, fixed: sizeStateid},
	// OFFLOAD_STATUS: stateid
	67: {known: true, fixed: sizeStateid},
	// READ_PLUS: stateid, offset, count
	68: {known: true, fixed: sizeStateid + hyper + 4},
	// SEEK: stateid, offset, what
	69: {known: true, fixed: sizeStateid + hyper + 4},
	// WRITE_SAME: stateid, stable, app_data_block4 (offset, block_size,
	// block_count, reloff_blocknum, block_num, reloff_pattern, pattern)
	70: {known: true, fixed: sizeStateid + 4 + 4*hyper + 4 + hyper, item: opaqueItem},
	// CLONE: src and dst stateids, src and dst offsets, count
	71: {known: true, fixed: 2*sizeStateid + 3*hyper},
	// GETXATTR: name
	72: {known: true, item: opaqueItem},
	// SETXATTR: option, key, value
	73: {known: true, fixed: 4, walk: twoOpaques},
	// LISTXATTRS: cookie, maxcount
	74: {known: true, fixed: hyper + 4},
	// REMOVEXATTR: name
	75: {known: true, item: opaqueItem},
}

// opArgs moves over the arguments of NFSv4 operation op; false when op has
// no layout here.
func opArgs(r *reader, op uint32) bool { return moveOp(r, opArgLayouts[:], op) }

// createArgs moves over CREATE4args: objtype (createtype4), objname,
// createattrs.
func createArgs(r reader) reader {
	switch r.u32() {
	case 5: // NF4LNK: linkdata
		r.opaque()
	case 3, 4: // NF4BLK, NF4CHR: specdata4
		r.skip(8)
	} // the other types: void
	r.opaque()
	r.fattr()
	return r
}

// locker moves over a LOCK's locker4.
func locker(r reader) reader {
	if r.boolean() { // new_lock_owner: open_seqid, open_stateid, lock_seqid, lock_owner
		r.skip(4 + sizeStateid + 4)
		r.owner()
	} else { // lock_stateid, lock_seqid
		r.skip(sizeStateid + 4)
	}
	return r
}

// openArgs moves over OPEN4args after seqid, share_access, share_deny and
// owner: openhow (openflag4) and claim (open_claim4).
func openArgs(r reader) reader {
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
	return r
}

// twoOpaques moves over two opaque<> or string<> in a row.
func twoOpaques(r reader) reader {
	r.opaque()
	r.opaque()
	return r
}

// setClientIDArgs moves over SETCLIENTID4args after the client's
// verifier: its id, the callback (cb_program, cb_location) and
// callback_ident.
func setClientIDArgs(r reader) reader {
	r.opaqueMax(opaqueMax)
	r.skip(4)
	r.netaddr()
	r.skip(4)
	return r
}

// cbSecParms moves over callback_sec_parms4<>.
func cbSecParms(r reader) reader {
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
	return r
}

// exchangeIDArgs moves over EXCHANGE_ID4args after the clientowner's
// verifier: its ownerid, flags, state_protect4_a, client_impl_id<1>.
func exchangeIDArgs(r reader) reader {
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
		implID(&r)
	}
	return r
}

// createSessionArgs moves over CREATE_SESSION4args after clientid,
// sequence and flags: the fore and back channel attrs, cb_program and
// sec_parms<>.
func createSessionArgs(r reader) reader {
	r = channels(r)
	r.skip(4)
	return cbSecParms(r)
}

// dirDelegArgs moves over GET_DIR_DELEGATION4args after
// signal_deleg_avail and notification_types: child and dir attr_delay,
// child and dir attributes.
func dirDelegArgs(r reader) reader {
	r.skip(2 * sizeTime)
	r.bitmap()
	r.bitmap()
	return r
}

// layoutCommitArgs moves over LAYOUTCOMMIT4args after the stateid:
// last_write_offset (newoffset4), time_modify (newtime4), layoutupdate
// (lou_type, lou_body).
func layoutCommitArgs(r reader) reader {
	if r.boolean() { // newoffset4
		r.skip(hyper)
	}
	if r.boolean() { // newtime4
		r.skip(sizeTime)
	}
	r.skip(4) // lou_type
	r.opaque()
	return r
}

// layoutReturnArgs moves over a layoutreturn4: LAYOUTRETURN4_FILE has an
// offset, a length, a stateid and a body; the others are void.
func layoutReturnArgs(r reader) reader {
	if r.u32() == 1 {
		r.skip(hyper + hyper + sizeStateid)
		r.opaque()
	}
	return r
}

// stateids moves over a stateid4<>.
func stateids(r reader) reader {
	r.fixedArray(sizeStateid)
	return r
}

// delegClaim moves over a WANT_DELEGATION's deleg_claim4.
func delegClaim(r reader) reader {
	switch r.u32() {
	case 4, 6: // CLAIM_FH, CLAIM_DELEG_PREV_FH: void
	case 1: // CLAIM_PREVIOUS: delegate_type
		r.skip(4)
	default:
		r.bad = true
	}
	return r
}

// netlocs moves over a netloc4<>.
func netlocs(r reader) reader {
	for n := r.count(); n > 0 && r.ok(); n-- {
		netloc(&r)
	}
	return r
}

// oneNetloc moves over a netloc4.
func oneNetloc(r reader) reader {
	netloc(&r)
	return r
}

// deviceErrors moves over a LAYOUTERROR's device_error4<>: each a
// deviceid, a status and an opnum.
func deviceErrors(r reader) reader {
	r.fixedArray(sizeDeviceID + 4 + 4)
	return r
}
