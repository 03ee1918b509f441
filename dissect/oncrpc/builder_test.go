package oncrpc

import "encoding/binary"

// enc builds XDR for the tests, written from the RFCs' layouts. body
// marks where a decoder should say the arguments or results start
// (Message.BodyOffset).
type enc struct {
	b    []byte
	body int
}

func newEnc() *enc { return &enc{} }

func (e *enc) u32(vs ...uint32) *enc {
	for _, v := range vs {
		e.b = binary.BigEndian.AppendUint32(e.b, v)
	}
	return e
}

func (e *enc) u64(v uint64) *enc {
	e.b = binary.BigEndian.AppendUint64(e.b, v)
	return e
}

// fixed appends n octets of a pattern (a stateid's, a verifier's), never
// all zero, so that a decoder reading them as a word sees a large number.
func (e *enc) fixed(n int) *enc {
	for i := range n {
		e.b = append(e.b, byte(0xa0+i))
	}
	return e
}

func (e *enc) opaque(p []byte) *enc {
	e.u32(uint32(len(p)))
	e.b = append(e.b, p...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
	return e
}

func (e *enc) str(s string) *enc { return e.opaque([]byte(s)) }

// cat appends other encodings.
func (e *enc) cat(parts ...*enc) *enc {
	for _, p := range parts {
		e.b = append(e.b, p.b...)
	}
	return e
}

// mark records the current length as the body's start.
func (e *enc) mark() *enc {
	e.body = len(e.b)
	return e
}

func (e *enc) stateid() *enc { return e.fixed(16) }
func (e *enc) session() *enc { return e.fixed(16) }
func (e *enc) verf() *enc    { return e.fixed(8) }
func (e *enc) fh() *enc      { return e.opaque(octets(28)) }
func (e *enc) bitmap(w ...uint32) *enc {
	return e.u32(uint32(len(w))).u32(w...)
}

// fattr appends a fattr4 with the size and mode attributes.
func (e *enc) fattr() *enc {
	return e.bitmap(1<<4, 1<<1).opaque(octets(12))
}

func octets(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	return p
}

// Credentials and verifiers (RFC 5531, section 8.2; RFC 2203, section 5).

func (e *enc) authNone() *enc { return e.u32(AuthNone, 0) }

func (e *enc) authSys() *enc {
	body := newEnc().u32(0x5e0c1a2b).str("client.example.net").u32(1000, 1000).u32(3, 4, 24, 27)
	return e.u32(AuthSys).opaque(body.b)
}

func (e *enc) gssCred(proc, seq uint32, svc GSSService) *enc {
	body := newEnc().u32(1, proc, seq, uint32(svc)).opaque(octets(16))
	return e.u32(AuthGSS).opaque(body.b)
}

func (e *enc) gssVerf() *enc { return e.u32(AuthGSS).opaque(octets(28)) }

// integ appends an rpc_gss_integ_data around body (RFC 2203, section
// 5.3.2.2): databody_integ (seq_num, then body) and a checksum; the body
// mark goes after seq_num.
func (e *enc) integ(seq uint32, body *enc) *enc {
	e.u32(uint32(4 + len(body.b))).u32(seq)
	e.mark()
	e.b = append(e.b, body.b...)
	return e.opaque(octets(28))
}

// priv appends an rpc_gss_priv_data: an opaque of ciphertext.
func (e *enc) priv() *enc { return e.opaque(octets(52)) }

func callHead(xid, prog, vers, proc uint32) *enc {
	return newEnc().u32(xid, uint32(Call), 2, prog, vers, proc)
}

// acceptedHead is a Reply's header up to SUCCESS, with an AUTH_NONE
// verifier.
func acceptedHead(xid uint32) *enc {
	return newEnc().u32(xid, uint32(Reply), MsgAccepted).authNone().u32(Success)
}

// NFSv4 COMPOUND arguments and results (RFC 8881, section 16.2).

func compoundArgs(minor uint32, ops ...*enc) *enc {
	return newEnc().str("").u32(minor, uint32(len(ops))).cat(ops...)
}

func compoundRes(status uint32, ops ...*enc) *enc {
	return newEnc().u32(status).str("").u32(uint32(len(ops))).cat(ops...)
}

func cbCompoundArgs(minor, ident uint32, ops ...*enc) *enc {
	return newEnc().str("").u32(minor, ident, uint32(len(ops))).cat(ops...)
}

func seqArgs() *enc     { return newEnc().u32(OpSequence).session().u32(7, 0, 15, 0) }
func putfhArgs() *enc   { return newEnc().u32(OpPutfh).fh() }
func readArgs() *enc    { return newEnc().u32(OpRead).stateid().u64(8192).u32(4096) }
func getattrArgs() *enc { return newEnc().u32(OpGetattr).bitmap(0x0010011a, 0x00b0a23a) }
func writeArgs(data []byte) *enc {
	return newEnc().u32(OpWrite).stateid().u64(0).u32(2).opaque(data)
}

func seqRes() *enc            { return newEnc().u32(OpSequence, NFS4OK).session().u32(7, 0, 15, 15, 0) }
func putfhRes(st uint32) *enc { return newEnc().u32(OpPutfh, st) }
func readRes(data []byte) *enc {
	return newEnc().u32(OpRead, NFS4OK, 1).opaque(data)
}
func getattrRes() *enc { return newEnc().u32(OpGetattr, NFS4OK).fattr() }

// The callback operations (RFC 8881, section 20; CB_COMPOUND, section 19.2).

func cbSeqArgs() *enc {
	// sessionid, sequenceid, slotid, highest_slotid, cachethis, and one
	// referring_call_list4 with one referring call
	return newEnc().u32(CBOpSequence).session().u32(1, 0, 0, 0).
		u32(1).session().u32(1).u32(9, 3)
}
func cbRecallArgs() *enc { return newEnc().u32(CBOpRecall).stateid().u32(0).fh() }
func cbSeqRes() *enc     { return newEnc().u32(CBOpSequence, NFS4OK).session().u32(1, 0, 0, 0) }
func cbRecallRes() *enc  { return newEnc().u32(CBOpRecall, NFS4OK) }

// opsOf returns ops as a Message's Ops array.
func opsOf(ops ...uint32) (a [MaxOps]uint32) {
	copy(a[:], ops)
	return a
}
