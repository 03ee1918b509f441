package oncrpc

// The layouts of the NFSv4 operations' results after a status of NFS4_OK
// (RFC 8881, section 18; RFC 7862, section 15; RFC 8276, section 8), for
// the COMPOUND walker.

// opResultLayouts is each NFSv4 operation's result after its status
// NFS4_OK, indexed by opcode: the fixed fields, an XDR item, then what the
// walk moves over. Opcodes 0 to 2 are unused; moveOp knows ILLEGAL
// (10044).
var opResultLayouts = [...]opLayout{
	// ACCESS: supported, access
	3: {known: true, fixed: 4 + 4},
	// CLOSE: open_stateid
	4: {known: true, fixed: sizeStateid},
	// COMMIT: writeverf
	5: {known: true, fixed: sizeVerifier},
	// CREATE: cinfo, attrset
	6: {known: true, fixed: sizeChange, item: bitmapItem},
	// DELEGPURGE: the status alone
	7: {known: true},
	// DELEGRETURN: the status alone
	8: {known: true},
	// GETATTR: obj_attributes
	9: {known: true, item: fattrItem},
	// GETFH: object
	10: {known: true, item: fhItem},
	// LINK: cinfo
	11: {known: true, fixed: sizeChange},
	// LOCK: lock_stateid
	12: {known: true, fixed: sizeStateid},
	// LOCKT: void when NFS4_OK
	13: {known: true},
	// LOCKU: lock_stateid
	14: {known: true, fixed: sizeStateid},
	// LOOKUP: the status alone
	15: {known: true},
	// LOOKUPP: the status alone
	16: {known: true},
	// NVERIFY: the status alone
	17: {known: true},
	// OPEN: stateid, cinfo, rflags, attrset, delegation
	18: {known: true, fixed: sizeStateid + sizeChange + 4, item: bitmapItem, walk: delegation},
	// OPENATTR: the status alone
	19: {known: true},
	// OPEN_CONFIRM: open_stateid
	20: {known: true, fixed: sizeStateid},
	// OPEN_DOWNGRADE: open_stateid
	21: {known: true, fixed: sizeStateid},
	// PUTFH: the status alone
	22: {known: true},
	// PUTPUBFH: the status alone
	23: {known: true},
	// PUTROOTFH: the status alone
	24: {known: true},
	// READ: eof, data (perhaps in a write chunk)
	25: {known: true, fixed: 4, item: writableItem},
	// READDIR: cookieverf, entries (cookie, name, attrs, a bool before
	// each), eof
	26: {known: true, fixed: sizeVerifier, walk: dirList},
	// READLINK: link (perhaps in a write chunk)
	27: {known: true, item: writableItem},
	// REMOVE: cinfo
	28: {known: true, fixed: sizeChange},
	// RENAME: source_cinfo, target_cinfo
	29: {known: true, fixed: 2 * sizeChange},
	// RENEW: the status alone
	30: {known: true},
	// RESTOREFH: the status alone
	31: {known: true},
	// SAVEFH: the status alone
	32: {known: true},
	// SECINFO: secinfo4<>
	33: {known: true, walk: secinfos},
	// SETATTR: attrsset
	34: {known: true, item: bitmapItem},
	// SETCLIENTID: clientid, setclientid_confirm
	35: {known: true, fixed: hyper + sizeVerifier},
	// SETCLIENTID_CONFIRM: the status alone
	36: {known: true},
	// VERIFY: the status alone
	37: {known: true},
	// WRITE: count, committed, writeverf
	38: {known: true, fixed: 4 + 4 + sizeVerifier},
	// RELEASE_LOCKOWNER: the status alone
	39: {known: true},
	// BACKCHANNEL_CTL: the status alone
	40: {known: true},
	// BIND_CONN_TO_SESSION: sessid, dir, use_conn_in_rdma_mode
	41: {known: true, fixed: sizeSession + 4 + 4},
	// EXCHANGE_ID: clientid, sequenceid, flags, state_protect4_r,
	// server_owner, server_scope, server_impl_id<1>
	42: {known: true, fixed: hyper + 4 + 4, walk: exchangeIDResult},
	// CREATE_SESSION: sessionid, sequence, flags, fore and back channel
	// attrs
	43: {known: true, fixed: sizeSession + 4 + 4, walk: channels},
	// DESTROY_SESSION: the status alone
	44: {known: true},
	// FREE_STATEID: the status alone
	45: {known: true},
	// GET_DIR_DELEGATION: GET_DIR_DELEGATION4res_non_fatal
	46: {known: true, walk: dirDelegResult},
	// GETDEVICEINFO: device_addr (layout_type, addr_body), notification
	47: {known: true, fixed: 4, item: opaqueItem, walk: notification},
	// GETDEVICELIST: cookie, cookieverf, deviceid_list<>, eof
	48: {known: true, fixed: hyper + sizeVerifier, walk: deviceList},
	// LAYOUTCOMMIT: newsize4
	49: {known: true, walk: optionalOf(hyper)}, // newsize4
	// LAYOUTGET: return_on_close, stateid, layout4<> (offset, length,
	// iomode, type, body)
	50: {known: true, fixed: 4 + sizeStateid, walk: layouts},
	// LAYOUTRETURN: layoutreturn_stateid
	51: {known: true, walk: optionalOf(sizeStateid)}, // layoutreturn_stateid
	// SECINFO_NO_NAME: secinfo4<>
	52: {known: true, walk: secinfos},
	// SEQUENCE: sessionid, sequenceid, slotid, highest_slotid,
	// target_highest_slotid, status_flags
	53: {known: true, fixed: sizeSession + 5*4},
	// SET_SSV: digest
	54: {known: true, item: opaqueItem},
	// TEST_STATEID: status_codes<>
	55: {known: true, walk: statusCodes},
	// WANT_DELEGATION: open_delegation4
	56: {known: true, walk: delegation},
	// DESTROY_CLIENTID: the status alone
	57: {known: true},
	// RECLAIM_COMPLETE: the status alone
	58: {known: true},
	// ALLOCATE: the status alone
	59: {known: true},
	// COPY: write_response4, copy_requirements4
	60: {known: true, walk: copyResult},
	// COPY_NOTIFY: lease_time, stateid, source_server<>
	61: {known: true, fixed: sizeTime + sizeStateid, walk: netlocs},
	// DEALLOCATE: the status alone
	62: {known: true},
	// IO_ADVISE: hints
	63: {known: true, item: bitmapItem},
	// LAYOUTERROR: the status alone
	64: {known: true},
	// LAYOUTSTATS: the status alone
	65: {known: true},
	// OFFLOAD_CANCEL: the status alone
	66: {known: true},
	// OFFLOAD_STATUS: count, complete<1>
	67: {known: true, fixed: hyper, walk: offloadComplete},
	// READ_PLUS: eof, contents<> (read_plus_content)
	68: {known: true, fixed: 4, walk: readPlusContents},
	// SEEK: eof, offset
	69: {known: true, fixed: 4 + hyper},
	// WRITE_SAME: write_response4
	70: {known: true, walk: writeSameResult},
	// CLONE: the status alone
	71: {known: true},
	// GETXATTR: value
	72: {known: true, item: opaqueItem},
	// SETXATTR: cinfo
	73: {known: true, fixed: sizeChange},
	// LISTXATTRS: cookie, names<>, eof
	74: {known: true, fixed: hyper, walk: xattrNames},
	// REMOVEXATTR: cinfo
	75: {known: true, fixed: sizeChange},
}

// opResult moves over the result of NFSv4 operation op after its status
// NFS4_OK; false when op has no layout here.
func opResult(r *reader, op uint32) bool { return moveOp(r, opResultLayouts[:], op) }

// delegation moves over an open_delegation4.
func delegation(r reader) reader {
	openDelegation(&r)
	return r
}

// dirList moves over a dirlist4: entries (cookie, name, attrs, a bool
// before each) and eof.
func dirList(r reader) reader {
	for r.boolean() && r.ok() {
		r.skip(hyper)
		r.opaque()
		r.fattr()
	}
	r.skip(4)
	return r
}

// secinfos moves over a secinfo4<>: each a flavor, and for RPCSEC_GSS an
// rpcsec_gss_info (oid, qop, service).
func secinfos(r reader) reader {
	for n := r.count(); n > 0 && r.ok(); n-- {
		if r.u32() == AuthGSS {
			r.opaque()
			r.skip(8)
		}
	}
	return r
}

// exchangeIDResult moves over EXCHANGE_ID4resok after clientid,
// sequenceid and flags: state_protect4_r, server_owner, server_scope,
// server_impl_id<1>.
func exchangeIDResult(r reader) reader {
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
		implID(&r)
	}
	return r
}

// channels moves over the fore and back channel attrs.
func channels(r reader) reader {
	channelAttrs(&r)
	channelAttrs(&r)
	return r
}

// dirDelegResult moves over a GET_DIR_DELEGATION4res_non_fatal.
func dirDelegResult(r reader) reader {
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
	return r
}

// notification moves over a GETDEVICEINFO's notification (a bitmap4).
func notification(r reader) reader {
	r.bitmap()
	return r
}

// deviceList moves over GETDEVICELIST4resok after cookie and cookieverf:
// deviceid_list<> and eof.
func deviceList(r reader) reader {
	r.fixedArray(sizeDeviceID)
	r.skip(4)
	return r
}

// optionalOf is the walk of a union on a bool whose true arm is n octets
// (newsize4, layoutreturn_stateid).
func optionalOf(n uint64) func(reader) reader {
	return func(r reader) reader {
		if r.boolean() {
			r.skip(n)
		}
		return r
	}
}

// layouts moves over a layout4<>: each an offset, a length, an iomode and
// a layout_content4 (type, body).
func layouts(r reader) reader {
	for n := r.count(); n > 0 && r.ok(); n-- {
		r.skip(hyper + hyper + 4 + 4)
		r.opaque()
	}
	return r
}

// statusCodes moves over an nfsstat4<>.
func statusCodes(r reader) reader {
	r.fixedArray(4)
	return r
}

// copyResult moves over COPY4resok: write_response4, copy_requirements4
// (consecutive, synchronous).
func copyResult(r reader) reader {
	writeResponse(&r)
	r.skip(4 + 4)
	return r
}

// offloadComplete moves over OFFLOAD_STATUS4resok's complete<1>.
func offloadComplete(r reader) reader {
	if r.optional1() {
		r.skip(4)
	}
	return r
}

// readPlusContents moves over a read_plus_content<>.
func readPlusContents(r reader) reader {
	for n := r.count(); n > 0 && r.ok(); n-- {
		switch r.u32() {
		case 0: // NFS4_CONTENT_DATA: offset, data
			r.skip(hyper)
			r.opaque()
		case 1: // NFS4_CONTENT_HOLE: offset, length
			r.skip(hyper + hyper)
		} // default: void
	}
	return r
}

// writeSameResult moves over WRITE_SAME4resok: a write_response4.
func writeSameResult(r reader) reader {
	writeResponse(&r)
	return r
}

// xattrNames moves over LISTXATTRS4resok after the cookie: names<> and
// eof.
func xattrNames(r reader) reader {
	r.opaques()
	r.skip(4)
	return r
}
