package craft

import "strconv"

// NFS arguments and results for the crafted RPC messages: NFSv3 (RFC
// 1813), the NFSv4.1 COMPOUND (RFC 8881, section 16.2) and the callback
// CB_COMPOUND (RFC 8881, sections 19.2 and 20), each with the operations the crafted
// traffic uses, laid out as their XDR says. File handles, stateids,
// attributes and names are made-up values of the right shapes.

// NFS program numbers.
const (
	ProgNFS = uint32(100003)
	// ProgNFSCallback is the callback program the Linux NFSv4 client
	// registers (its choice: RFC 8881 lets the client pick).
	ProgNFSCallback = uint32(0x40000000)
)

// NFSv3 procedures (RFC 1813, section 3).
const (
	NFS3Null        uint32 = 0
	NFS3Getattr     uint32 = 1
	NFS3Lookup      uint32 = 3
	NFS3Access      uint32 = 4
	NFS3Read        uint32 = 6
	NFS3Write       uint32 = 7
	NFS3Readdir     uint32 = 16
	NFS3Readdirplus uint32 = 17
	NFS3Fsinfo      uint32 = 19
	NFS3Commit      uint32 = 21
)

// nfsstat3 and nfsstat4 values the crafted Replies use (the same numbers
// in both versions).
const (
	NFSOK         uint32 = 0
	NFSErrNoent   uint32 = 2
	NFSErrStale   uint32 = 70
	NFSErrJukebox uint32 = 10008 // NFS3ERR_JUKEBOX, NFS4ERR_DELAY
)

// NFSv4 operations (RFC 8881, section 18) and callback operations
// (section 20).
const (
	OpAccess    uint32 = 3
	OpClose     uint32 = 4
	OpCommit    uint32 = 5
	OpGetattr   uint32 = 9
	OpGetfh     uint32 = 10
	OpLookup    uint32 = 15
	OpOpen      uint32 = 18
	OpPutfh     uint32 = 22
	OpPutrootfh uint32 = 24
	OpRead      uint32 = 25
	OpReaddir   uint32 = 26
	OpWrite     uint32 = 38
	OpSequence  uint32 = 53

	CBOpRecall   uint32 = 4
	CBOpSequence uint32 = 11
)

// stable_how (RFC 1813, WRITE; stable_how4 has the same values).
const (
	Unstable uint32 = 0
	DataSync uint32 = 1
	FileSync uint32 = 2
)

// FileHandle is a made-up file handle of n octets for file id.
func FileHandle(id uint32, n int) []byte {
	fh := make([]byte, n)
	for i := range fh {
		fh[i] = byte(0x11*i) ^ byte(id>>(8*(i%4)))
	}
	if n >= 4 {
		fh[0], fh[1], fh[2], fh[3] = 0x01, 0x00, 0x07, 0x01 // Linux's fh_version 1, fsid type 7
	}
	return fh
}

// The crafted files: their handles and numbers.
var (
	fh3Default  = FileHandle(0x1234, 32)
	fh3Dir      = FileHandle(0x0002, 32)
	fh4Default  = FileHandle(0x5678, 40)
	fhVerifier  = []byte{0x5a, 0x3c, 0x00, 0x01, 0x6a, 0x3b, 0x5c, 0x01}
	openOwner   = []byte("open id:\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x01\x12\x34")
	stateOther  = []byte{0x6a, 0x3b, 0x5c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07}
	fileSize    = uint64(1 << 20)
	fileID      = uint64(0x1234)
	fileTime    = uint64(0x6a3b5c00_1dcd6500) // seconds, nanoseconds
	clientID    = uint64(0x6a3b5c0000000001)
	attrRequest = [2]uint32{1<<1 | 1<<3 | 1<<4 | 1<<20, 1 << (33 - 32)} // type, change, size, fileid; mode
)

// NFS3 is one NFSv3 operation: what its Call's arguments and its Reply's
// results hold. A procedure ignores the fields it has no use for.
type NFS3 struct {
	Proc uint32
	// FH is the object's handle, or the directory's (LOOKUP, READDIR,
	// READDIRPLUS); nil: a file's (a directory's) default handle.
	FH     []byte
	Name   string // LOOKUP
	Offset uint64 // READ, WRITE, COMMIT; the cookie of READDIR(PLUS)
	// Count is the octets of data (READ, WRITE), the range (COMMIT), or
	// the most a READDIR(PLUS) Reply may hold.
	Count  uint32
	Access uint32 // ACCESS: the access asked for, and granted
	Stable uint32 // WRITE: Unstable, DataSync or FileSync
	// Chunk moves the data to a chunk: a WRITE's to a read chunk, a READ
	// Reply's to a write chunk (RFC 8267).
	Chunk bool
	// The Reply: its nfsstat3, whether a READ or READDIR reached the end,
	// and how many entries a READDIR(PLUS) Reply lists.
	Status  uint32
	EOF     bool
	Entries int
}

func (o *NFS3) fh() []byte {
	switch {
	case o.FH != nil:
		return o.FH
	case o.Proc == NFS3Lookup || o.Proc == NFS3Readdir || o.Proc == NFS3Readdirplus:
		return fh3Dir
	}
	return fh3Default
}

// NFS3Call is the Call of o with credential cred.
func NFS3Call(o NFS3, cred Cred) *Call {
	return &Call{Prog: ProgNFS, Vers: 3, Proc: o.Proc, Cred: cred, Args: BodyFunc(o.args)}
}

// NFS3Reply is the accepted Reply to the Call of o.
func NFS3Reply(o NFS3) *Reply {
	return &Reply{Results: BodyFunc(o.results)}
}

// args appends the procedure's arguments (RFC 1813, section 3.3). A
// procedure with no layout here takes a file handle.
func (o *NFS3) args(x *XDR) {
	if o.Proc == NFS3Null {
		return
	}
	x.Opaque(o.fh())
	switch o.Proc {
	case NFS3Lookup: // diropargs3: dir, name
		x.String(o.Name)
	case NFS3Access:
		x.U32(o.Access)
	case NFS3Read, NFS3Commit: // offset, count
		x.U64(o.Offset)
		x.U32(o.Count)
	case NFS3Write: // offset, count, stable, data
		n := x.grown(int(o.Count), o.Chunk)
		x.U64(o.Offset)
		x.U32(uint32(n), o.Stable)
		x.Data(n, o.Chunk)
	case NFS3Readdir: // cookie, cookieverf, count
		x.U64(o.Offset)
		x.Fixed(fhVerifier)
		x.U32(o.Count)
	case NFS3Readdirplus: // cookie, cookieverf, dircount, maxcount
		x.U64(o.Offset)
		x.Fixed(fhVerifier)
		x.U32(o.Count/4, o.Count)
	}
}

// results appends the procedure's results: nfsstat3, then the arm of
// that status (RFC 1813, section 3.3).
func (o *NFS3) results(x *XDR) {
	if o.Proc == NFS3Null {
		return
	}
	x.U32(o.Status)
	ok := o.Status == NFSOK
	switch o.Proc {
	case NFS3Getattr:
		if ok {
			fattr3(x, 1, fileSize)
		}
	case NFS3Lookup: // object, obj_attributes, dir_attributes; failed: dir_attributes
		if ok {
			x.Opaque(fh3Default)
			postOpAttr(x, 1, fileSize)
		}
		postOpAttr(x, 2, 4096)
	case NFS3Access: // obj_attributes, access
		postOpAttr(x, 1, fileSize)
		if ok {
			x.U32(o.Access)
		}
	case NFS3Read: // file_attributes, count, eof, data
		postOpAttr(x, 1, fileSize)
		if ok {
			n := x.grown(int(o.Count), o.Chunk)
			x.U32(uint32(n))
			x.Bool(o.EOF)
			x.Data(n, o.Chunk)
		}
	case NFS3Write: // file_wcc, count, committed, verf
		wccData(x)
		if ok {
			x.U32(o.Count, o.Stable)
			x.Fixed(fhVerifier)
		}
	case NFS3Commit: // file_wcc, verf
		wccData(x)
		if ok {
			x.Fixed(fhVerifier)
		}
	case NFS3Readdir, NFS3Readdirplus: // dir_attributes, cookieverf, dirlist
		postOpAttr(x, 2, 4096)
		if ok {
			x.Fixed(fhVerifier)
			plus := o.Proc == NFS3Readdirplus
			for i := range o.Entries {
				x.Bool(true) // value follows
				x.U64(fileID + uint64(i) + 1)
				x.String(entryName(i, o.Entries, x))
				x.U64(uint64(i) + 1) // cookie
				if plus {
					postOpAttr(x, 1, uint64(i)*512)
					x.Bool(true) // post_op_fh3
					x.Opaque(FileHandle(uint32(fileID)+uint32(i)+1, 32))
				}
			}
			x.Bool(false)
			x.Bool(o.EOF)
		}
	case NFS3Fsinfo: // obj_attributes, rtmax, rtpref, rtmult, wtmax, wtpref, wtmult, dtpref, maxfilesize, time_delta, properties
		postOpAttr(x, 2, 4096)
		if ok {
			x.U32(1<<20, 1<<20, 4096, 1<<20, 1<<20, 4096, 1<<20)
			x.U64(1<<63 - 1)
			x.U32(0, 1, 0x1b) // 1 ns; FSF3_LINK, FSF3_SYMLINK, FSF3_HOMOGENEOUS, FSF3_CANSETTIME
		}
	}
}

// entryName is the name of directory entry i of n: the last one takes the
// XDR's Grow, so a listing can be made as long as a Reply must be.
func entryName(i, n int, x *XDR) string {
	name := "file" + strconv.Itoa(1000+i)
	if i == n-1 {
		if l := x.grown(len(name), false); l > len(name) {
			b := []byte(name)
			for len(b) < l {
				b = append(b, 'a'+byte(len(b)%26))
			}
			name = string(b)
		}
	}
	return name
}

// fattr3 appends a file's (typ 1) or a directory's (2) attributes.
func fattr3(x *XDR, typ uint32, size uint64) {
	mode := uint32(0o644)
	if typ == 2 {
		mode = 0o755
	}
	x.U32(typ, mode, 1, 0, 0) // type, mode, nlink, uid, gid
	x.U64(size)               // size
	x.U64(size)               // used
	x.U32(0, 0)               // rdev
	x.U64(0x6a3b)             // fsid
	x.U64(fileID + uint64(typ))
	for range 3 { // atime, mtime, ctime
		x.U64(fileTime)
	}
}

// postOpAttr appends a post_op_attr that holds the attributes.
func postOpAttr(x *XDR, typ uint32, size uint64) {
	x.Bool(true)
	fattr3(x, typ, size)
}

// wccData appends a wcc_data: the attributes before (size, mtime, ctime)
// and after.
func wccData(x *XDR) {
	x.Bool(true)
	x.U64(fileSize)
	x.U64(fileTime)
	x.U64(fileTime)
	postOpAttr(x, 1, fileSize)
}

// NFS4Op is one operation of a COMPOUND: what its arguments and its
// result hold. An operation ignores the fields it has no use for.
type NFS4Op struct {
	Op     uint32
	Status uint32 // the result's nfsstat4
	FH     []byte // PUTFH, and GETFH's result; nil: a default file's
	Name   string // LOOKUP, OPEN
	Offset uint64 // READ, WRITE, COMMIT, the cookie of READDIR
	// Count is the octets of data (READ, WRITE), the range (COMMIT), or
	// the most a READDIR result may hold.
	Count  uint32
	Stable uint32 // WRITE
	Access uint32 // ACCESS
	// Chunk moves the data to a chunk: a WRITE's to a read chunk, a READ
	// result's to a write chunk (RFC 8267).
	Chunk   bool
	EOF     bool // READ, READDIR
	Entries int  // READDIR: entries listed
}

// Compound is an NFSv4 COMPOUND: its tag, minor version and operations,
// with the session and slot a SEQUENCE among them names.
type Compound struct {
	Tag       string
	Minor     uint32
	Session   [16]byte
	Seq, Slot uint32
	Ops       []NFS4Op
}

// CompoundCall is the Call of c (NFSv4 procedure 1) with credential cred.
func CompoundCall(c Compound, cred Cred) *Call {
	return &Call{Prog: ProgNFS, Vers: 4, Proc: 1, Cred: cred, Args: BodyFunc(c.args)}
}

// CompoundReply is the accepted Reply to the Call of c: its status is
// that of the first operation that failed, and its results stop there
// (RFC 8881, section 16.2.3).
func CompoundReply(c Compound) *Reply {
	return &Reply{Results: BodyFunc(c.results)}
}

// args appends COMPOUND4args: tag, minorversion, argarray.
func (c *Compound) args(x *XDR) {
	x.String(c.Tag)
	x.U32(c.Minor, uint32(len(c.Ops)))
	for i := range c.Ops {
		o := &c.Ops[i]
		x.U32(o.Op)
		switch o.Op {
		case OpSequence: // sessionid, sequenceid, slotid, highest_slotid, cachethis
			x.Fixed(c.Session[:])
			x.U32(c.Seq, c.Slot, c.Slot)
			x.Bool(false)
		case OpPutfh:
			x.Opaque(o.fh())
		case OpLookup:
			x.String(o.Name)
		case OpAccess:
			x.U32(o.Access)
		case OpGetattr:
			x.U32(2, attrRequest[0], attrRequest[1])
		case OpRead: // stateid, offset, count
			stateid(x)
			x.U64(o.Offset)
			x.U32(o.Count)
		case OpWrite: // stateid, offset, stable, data
			n := x.grown(int(o.Count), o.Chunk)
			stateid(x)
			x.U64(o.Offset)
			x.U32(o.Stable)
			x.Data(n, o.Chunk)
		case OpCommit: // offset, count
			x.U64(o.Offset)
			x.U32(o.Count)
		case OpOpen: // seqid, share_access, share_deny, owner, openhow, claim
			x.U32(0, 1, 0) // OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE
			x.U64(clientID)
			x.Opaque(openOwner)
			x.U32(0) // OPEN4_NOCREATE
			x.U32(0) // CLAIM_NULL
			x.String(o.Name)
		case OpClose: // seqid, open_stateid
			x.U32(0)
			stateid(x)
		case OpReaddir: // cookie, cookieverf, dircount, maxcount, attr_request
			x.U64(o.Offset)
			x.Fixed(fhVerifier)
			x.U32(o.Count/4, o.Count)
			x.U32(2, attrRequest[0], attrRequest[1])
		} // GETFH, PUTROOTFH: no arguments
	}
}

func (o *NFS4Op) fh() []byte {
	if o.FH != nil {
		return o.FH
	}
	return fh4Default
}

// results appends COMPOUND4res: status, tag, resarray up to the first
// operation that failed.
func (c *Compound) results(x *XDR) {
	status, n := NFSOK, len(c.Ops)
	for i, o := range c.Ops {
		if o.Status != NFSOK {
			status, n = o.Status, i+1
			break
		}
	}
	x.U32(status)
	x.String(c.Tag)
	x.U32(uint32(n))
	for i := range c.Ops[:n] {
		o := &c.Ops[i]
		x.U32(o.Op, o.Status)
		if o.Status != NFSOK {
			break
		}
		switch o.Op {
		case OpSequence: // sessionid, sequenceid, slotid, highest_slotid, target_highest_slotid, status_flags
			x.Fixed(c.Session[:])
			x.U32(c.Seq, c.Slot, 63, 63, 0)
		case OpGetfh:
			x.Opaque(o.fh())
		case OpGetattr:
			fattr4(x)
		case OpAccess: // supported, access
			x.U32(o.Access, o.Access)
		case OpRead: // eof, data
			n := x.grown(int(o.Count), o.Chunk)
			x.Bool(o.EOF)
			x.Data(n, o.Chunk)
		case OpWrite: // count, committed, writeverf
			x.U32(o.Count, o.Stable)
			x.Fixed(fhVerifier)
		case OpCommit:
			x.Fixed(fhVerifier)
		case OpOpen: // stateid, cinfo, rflags, attrset, delegation
			stateid(x)
			x.Bool(true) // cinfo: atomic, before, after
			x.U64(fileTime)
			x.U64(fileTime)
			x.U32(4) // OPEN4_RESULT_LOCKTYPE_POSIX
			x.U32(0) // attrset: no word
			x.U32(0) // OPEN_DELEGATE_NONE
		case OpClose: // the invalid special stateid: NFSv4.1 deprecates this result
			x.U32(0xffffffff, 0, 0, 0)
		case OpReaddir: // cookieverf, entries, eof
			x.Fixed(fhVerifier)
			for i := range o.Entries {
				x.Bool(true)
				x.U64(uint64(i) + 3) // cookie
				x.String(entryName(i, o.Entries, x))
				fattr4(x)
			}
			x.Bool(false)
			x.Bool(o.EOF)
		} // PUTFH, PUTROOTFH, LOOKUP: the status alone
	}
}

// stateid appends a stateid4: seqid, other.
func stateid(x *XDR) {
	x.U32(1)
	x.Fixed(stateOther)
}

// fattr4 appends the attributes attrRequest asks for: the bitmap, then
// type, change, size, fileid and mode in the attrlist4.
func fattr4(x *XDR) {
	x.U32(2, attrRequest[0], attrRequest[1])
	x.U32(4 + 8 + 8 + 8 + 4)
	x.U32(1) // NF4REG
	x.U64(fileTime)
	x.U64(fileSize)
	x.U64(fileID)
	x.U32(0o644)
}

// CBOp is one operation of a CB_COMPOUND: CB_SEQUENCE or CB_RECALL.
type CBOp struct {
	Op     uint32
	Status uint32 // the result's nfsstat4
	FH     []byte // CB_RECALL: the file; nil: a default file's
}

// CBCompound is a CB_COMPOUND (RFC 8881, section 19.2): the server's
// Call on the backchannel, with the session and slot its CB_SEQUENCE
// names.
type CBCompound struct {
	Tag       string
	Minor     uint32
	Ident     uint32 // callback_ident
	Session   [16]byte
	Seq, Slot uint32
	Ops       []CBOp
}

// CBCompoundCall is the Call of c: procedure 1 of the callback program
// ProgNFSCallback, version 1, with credential cred.
func CBCompoundCall(c CBCompound, cred Cred) *Call {
	return &Call{Prog: ProgNFSCallback, Vers: 1, Proc: 1, Cred: cred, Args: BodyFunc(c.args)}
}

// CBCompoundReply is the client's accepted Reply to the Call of c.
func CBCompoundReply(c CBCompound) *Reply {
	return &Reply{Results: BodyFunc(c.results)}
}

// args appends CB_COMPOUND4args: tag, minorversion, callback_ident,
// argarray.
func (c *CBCompound) args(x *XDR) {
	x.String(c.Tag)
	x.U32(c.Minor, c.Ident, uint32(len(c.Ops)))
	for _, o := range c.Ops {
		x.U32(o.Op)
		switch o.Op {
		case CBOpSequence: // sessionid, sequenceid, slotid, highest_slotid, cachethis, referring_call_lists
			x.Fixed(c.Session[:])
			x.U32(c.Seq, c.Slot, c.Slot)
			x.Bool(false)
			x.U32(0)
		case CBOpRecall: // stateid, truncate, fh
			stateid(x)
			x.Bool(false)
			if o.FH != nil {
				x.Opaque(o.FH)
			} else {
				x.Opaque(fh4Default)
			}
		}
	}
}

// results appends CB_COMPOUND4res: status, tag, resarray up to the first
// operation that failed.
func (c *CBCompound) results(x *XDR) {
	status, n := NFSOK, len(c.Ops)
	for i, o := range c.Ops {
		if o.Status != NFSOK {
			status, n = o.Status, i+1
			break
		}
	}
	x.U32(status)
	x.String(c.Tag)
	x.U32(uint32(n))
	for _, o := range c.Ops[:n] {
		x.U32(o.Op, o.Status)
		if o.Status == NFSOK && o.Op == CBOpSequence { // sessionid, sequenceid, slotid, highest_slotid, target_highest_slotid
			x.Fixed(c.Session[:])
			x.U32(c.Seq, c.Slot, 0, 0)
		}
	}
}
