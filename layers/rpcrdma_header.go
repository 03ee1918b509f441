package layers

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"
)

// RPCRDMAHeader is the RPC-over-RDMA version 1 transport header of RFC
// 8166, section 4 (the XDR of section 4.1): the first octets of every RDMA
// Send on an RPC-over-RDMA connection. All fields are 32-bit XDR words,
// big-endian.
//
//	+---------------------------------------------------------------+
//	|                           rdma_xid                            |
//	+---------------------------------------------------------------+
//	|                      rdma_vers (1)                            |
//	+---------------------------------------------------------------+
//	|                          rdma_credit                          |
//	+---------------------------------------------------------------+
//	|  rdma_proc: 0 RDMA_MSG, 1 RDMA_NOMSG, 2 RDMA_MSGP, 3 RDMA_DONE, |
//	|             4 RDMA_ERROR                                       |
//	+---------------------------------------------------------------+
//	|  RDMA_MSGP only: rdma_align, rdma_thresh                      |
//	+---------------------------------------------------------------+
//	|  RDMA_MSG, RDMA_NOMSG, RDMA_MSGP:                              |
//	|   read list:   { 1, position, handle, length, offset (64) } 0 |
//	|   write list:  { 1, count, count x {handle, length, offset} } 0|
//	|   reply chunk: 0 or { 1, count, count x segment }             |
//	|   then (RDMA_MSG, RDMA_MSGP) the RPC message, its XID first   |
//	+---------------------------------------------------------------+
//	|  RDMA_ERROR: rdma_err: 1 ERR_VERS, then rdma_vers_low and     |
//	|              rdma_vers_high; 2 ERR_CHUNK                       |
//	+---------------------------------------------------------------+
//
// Structural problems are errors: fewer octets than a part needs
// (*TruncatedError), an XDR boolean that is neither 0 nor 1
// (*XDRBoolError). A version other than 1 or an unknown procedure is not:
// the fixed part is decoded and the rest left as payload (HasBody false),
// for the caller to judge. An RDMA_ERROR body is decoded whatever the
// version, since a responder echoes the version of the failing request.
//
// At most MaxRPCRDMASegments segments are kept, over the three lists, and
// at most MaxRPCRDMAWriteChunks write chunks; the others are parsed (the
// header's extent is still found) and counted in NotKept. The lists are
// slices of arrays inside the struct, reused by the next decode: decoding
// allocates nothing, and a caller that keeps them copies them.
type RPCRDMAHeader struct {
	golayers.BaseLayer
	XID    uint32 // rdma_xid: the XID of the RPC message
	Vers   uint32 // rdma_vers: 1
	Credit uint32 // rdma_credit: credits requested (Call) or granted (Reply)
	Proc   uint32 // rdma_proc

	Align, Thresh uint32 // RDMA_MSGP: rdma_align and rdma_thresh

	ReadList      []RPCRDMAReadSegment // the read list's segments, in order
	WriteList     []RPCRDMAChunk       // the write list's chunks
	ReplyChunk    RPCRDMAChunk         // the reply chunk, when HasReplyChunk
	HasReplyChunk bool

	Err               uint32 // RDMA_ERROR: rdma_err
	VersLow, VersHigh uint32 // ERR_VERS: the versions the responder supports

	// HasBody is set when the procedure's body was decoded: rdma_vers 1
	// and a known procedure, or an RDMA_ERROR.
	HasBody bool
	// NotKept counts the segments parsed but not kept: beyond
	// MaxRPCRDMASegments, or in write chunks beyond MaxRPCRDMAWriteChunks.
	NotKept int
	// CutCount is the segment count of the counted chunk (a write chunk or
	// the reply chunk) whose segments run past the end of the data, when a
	// decode stopped there (HasCutCount).
	CutCount    uint32
	HasCutCount bool

	// The RPC message that follows an RDMA_MSG or RDMA_MSGP header: its XID
	// and message type (0 CALL, 1 REPLY), when the data holds them.
	RPCXID, RPCMsgType       uint32
	HasRPCXID, HasRPCMsgType bool

	reads  [MaxRPCRDMASegments]RPCRDMAReadSegment
	segs   [MaxRPCRDMASegments]RPCRDMASegment
	chunks [MaxRPCRDMAWriteChunks]RPCRDMAChunk
}

// RPCRDMASegment is an RDMA segment (RFC 8166, section 3.4.3): a registered
// memory region of the requester.
type RPCRDMASegment struct {
	Handle uint32 // the R_Key or STag
	Length uint32 // octets
	Offset uint64 // its offset or virtual address
}

// RPCRDMAReadSegment is a segment of the read list with its XDR position.
type RPCRDMAReadSegment struct {
	Position uint32
	RPCRDMASegment
}

// RPCRDMAChunk is a write chunk or the reply chunk: a counted array of
// segments.
type RPCRDMAChunk []RPCRDMASegment

// RPC-over-RDMA version 1 constants (RFC 8166, section 4.1).
const (
	RPCRDMAMsg   = 0 // RDMA_MSG: the RPC message follows the chunk lists
	RPCRDMANoMsg = 1 // RDMA_NOMSG: the RPC message travels in a chunk
	RPCRDMAMsgP  = 2 // RDMA_MSGP: no longer supported (section 4.6.1)
	RPCRDMADone  = 3 // RDMA_DONE: no longer supported (section 4.6.2)
	RPCRDMAError = 4 // RDMA_ERROR

	RPCRDMAErrVers  = 1 // ERR_VERS
	RPCRDMAErrChunk = 2 // ERR_CHUNK

	// RPCRDMAFixedLen is the fixed part: xid, vers, credit, proc.
	RPCRDMAFixedLen = 16
	// RPCRDMAMinMsgLen is the smallest RDMA_MSG or RDMA_NOMSG header: the
	// fixed part and three empty lists (section 4.5).
	RPCRDMAMinMsgLen = 28

	// MaxRPCRDMASegments bounds the segments a decode keeps, over the
	// three lists; MaxRPCRDMAWriteChunks the write chunks.
	MaxRPCRDMASegments    = 64
	MaxRPCRDMAWriteChunks = 16

	readSegmentLen = 4 + 4 + 4 + 8 // position, handle, length, offset
	segmentLen     = 4 + 4 + 8
)

// RPCRDMAProcName is the name RFC 8166 gives a procedure, or "" for an
// unknown one.
func RPCRDMAProcName(p uint32) string {
	if p < uint32(len(rpcrdmaProcNames)) {
		return rpcrdmaProcNames[p]
	}
	return ""
}

var rpcrdmaProcNames = [...]string{
	RPCRDMAMsg:   "RDMA_MSG",
	RPCRDMANoMsg: "RDMA_NOMSG",
	RPCRDMAMsgP:  "RDMA_MSGP",
	RPCRDMADone:  "RDMA_DONE",
	RPCRDMAError: "RDMA_ERROR",
}

// RPCRDMAErrName is the name of an rdma_err value, or "".
func RPCRDMAErrName(e uint32) string {
	if e < uint32(len(rpcrdmaErrNames)) {
		return rpcrdmaErrNames[e]
	}
	return ""
}

var rpcrdmaErrNames = [...]string{
	RPCRDMAErrVers:  "ERR_VERS",
	RPCRDMAErrChunk: "ERR_CHUNK",
}

// XDRBoolError reports an XDR boolean (the "value follows" word of a list
// or optional chunk) that is neither 0 nor 1.
type XDRBoolError struct {
	Field  string // "read list", "write list", "reply chunk"
	Offset int    // octets from the start of the header
	Value  uint32
}

func (e *XDRBoolError) Error() string {
	return fmt.Sprintf("rpc-over-rdma: the %s's discriminator at octet %d is %d, not 0 or 1", e.Field, e.Offset, e.Value)
}

func (h *RPCRDMAHeader) LayerType() gopacket.LayerType  { return LayerTypeRPCRDMAHeader }
func (h *RPCRDMAHeader) CanDecode() gopacket.LayerClass { return LayerTypeRPCRDMAHeader }

// NextLayerType is the payload: the RPC message of an RDMA_MSG or
// RDMA_MSGP, or whatever an undecoded body holds.
func (h *RPCRDMAHeader) NextLayerType() gopacket.LayerType {
	if len(h.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// reset clears what a decode sets, keeping the arrays.
func (h *RPCRDMAHeader) reset() {
	h.BaseLayer = golayers.BaseLayer{}
	h.XID, h.Vers, h.Credit, h.Proc = 0, 0, 0, 0
	h.Align, h.Thresh = 0, 0
	h.ReadList, h.WriteList, h.ReplyChunk, h.HasReplyChunk = h.reads[:0], h.chunks[:0], nil, false
	h.Err, h.VersLow, h.VersHigh = 0, 0, 0
	h.HasBody, h.NotKept, h.CutCount, h.HasCutCount = false, 0, 0, false
	h.RPCXID, h.RPCMsgType, h.HasRPCXID, h.HasRPCMsgType = 0, 0, false, false
}

// DecodeFromBytes decodes the header at the start of data (a whole Send,
// or its first octets).
func (h *RPCRDMAHeader) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	h.reset()
	if err := need("rpc-over-rdma", data, RPCRDMAFixedLen); err != nil {
		df.SetTruncated()
		return err
	}
	be := binary.BigEndian
	h.XID, h.Vers, h.Credit, h.Proc = be.Uint32(data[0:]), be.Uint32(data[4:]), be.Uint32(data[8:]), be.Uint32(data[12:])
	off := RPCRDMAFixedLen
	var err error
	switch {
	case h.Proc == RPCRDMAError:
		off, err = h.errorBody(data, off)
	case h.Vers != RPCRDMAVersion || h.Proc > RPCRDMAError:
		// Another version's layout, or an unknown procedure: nothing more
		// can be read.
	case h.Proc == RPCRDMADone:
		h.HasBody = true
	default:
		if h.Proc == RPCRDMAMsgP {
			if err := need("rpc-over-rdma msgp", data, off+8); err != nil {
				df.SetTruncated()
				return err
			}
			h.Align, h.Thresh = be.Uint32(data[off:]), be.Uint32(data[off+4:])
			off += 8
		}
		off, err = h.lists(data, off)
		if err == nil {
			h.HasBody = true
			if h.Proc != RPCRDMANoMsg {
				if rest := data[off:]; len(rest) >= 4 {
					h.RPCXID, h.HasRPCXID = be.Uint32(rest), true
					if len(rest) >= 8 {
						h.RPCMsgType, h.HasRPCMsgType = be.Uint32(rest[4:]), true
					}
				}
			}
		}
	}
	if err != nil {
		if _, ok := err.(*TruncatedError); ok {
			df.SetTruncated()
		}
		return err
	}
	h.Contents = data[:off]
	h.Payload = data[off:]
	return nil
}

func (h *RPCRDMAHeader) errorBody(data []byte, off int) (int, error) {
	if err := need("rpc-over-rdma error", data, off+4); err != nil {
		return off, err
	}
	h.Err = binary.BigEndian.Uint32(data[off:])
	off += 4
	if h.Err == RPCRDMAErrVers {
		if err := need("rpc-over-rdma error", data, off+8); err != nil {
			return off, err
		}
		h.VersLow, h.VersHigh = binary.BigEndian.Uint32(data[off:]), binary.BigEndian.Uint32(data[off+4:])
		off += 8
	}
	h.HasBody = true
	return off, nil
}

// discriminator reads the XDR boolean of a list at off.
func discriminator(data []byte, off int, field string) (bool, error) {
	if len(data) < off+4 { // the name is built only on failure: this runs for every Send
		return false, truncated("rpc-over-rdma "+field, off+4, len(data))
	}
	switch v := binary.BigEndian.Uint32(data[off:]); v {
	case 0:
		return false, nil
	case 1:
		return true, nil
	default:
		return false, &XDRBoolError{Field: field, Offset: off, Value: v}
	}
}

// lists decodes the read list, the write list and the reply chunk from off.
func (h *RPCRDMAHeader) lists(data []byte, off int) (int, error) {
	be := binary.BigEndian
	nsegs := 0 // segments kept, over the three lists
	for {
		more, err := discriminator(data, off, "read list")
		if err != nil {
			return off, err
		}
		off += 4
		if !more {
			break
		}
		if err := need("rpc-over-rdma read list", data, off+readSegmentLen); err != nil {
			return off, err
		}
		if nsegs < MaxRPCRDMASegments {
			h.ReadList = append(h.ReadList, RPCRDMAReadSegment{Position: be.Uint32(data[off:]), RPCRDMASegment: segment(data[off+4:])})
			nsegs++
		} else {
			h.NotKept++
		}
		off += readSegmentLen
	}
	for {
		more, err := discriminator(data, off, "write list")
		if err != nil {
			return off, err
		}
		off += 4
		if !more {
			break
		}
		var c RPCRDMAChunk
		if off, c, err = h.chunk(data, off, "write list", &nsegs, len(h.WriteList) < MaxRPCRDMAWriteChunks); err != nil {
			return off, err
		}
		if len(h.WriteList) < MaxRPCRDMAWriteChunks {
			h.WriteList = append(h.WriteList, c)
		}
	}
	more, err := discriminator(data, off, "reply chunk")
	if err != nil {
		return off, err
	}
	off += 4
	if more {
		if off, h.ReplyChunk, err = h.chunk(data, off, "reply chunk", &nsegs, true); err != nil {
			return off, err
		}
		h.HasReplyChunk = true
	}
	return off, nil
}

// chunk decodes a counted array of segments at off, keeping them (when
// keep, and within the bound) in the segment array after the nsegs kept so
// far.
func (h *RPCRDMAHeader) chunk(data []byte, off int, field string, nsegs *int, keep bool) (int, RPCRDMAChunk, error) {
	if len(data) < off+4 {
		return off, nil, truncated("rpc-over-rdma "+field, off+4, len(data))
	}
	count := binary.BigEndian.Uint32(data[off:])
	off += 4
	// Check the extent before looking at any segment: a count can be up
	// to 2^32 - 1.
	if left := uint64(len(data) - off); uint64(count)*segmentLen > left {
		h.CutCount, h.HasCutCount = count, true
		return off, nil, truncated("rpc-over-rdma "+field, off+int(min(uint64(count)*segmentLen, 1<<31)), len(data))
	}
	start := *nsegs - len(h.ReadList) // where this chunk's kept segments start in segs
	for i := uint32(0); i < count; i++ {
		if keep && *nsegs < MaxRPCRDMASegments {
			h.segs[*nsegs-len(h.ReadList)] = segment(data[off:])
			*nsegs++
		} else {
			h.NotKept++
		}
		off += segmentLen
	}
	return off, RPCRDMAChunk(h.segs[start : *nsegs-len(h.ReadList) : *nsegs-len(h.ReadList)]), nil
}

func segment(b []byte) RPCRDMASegment {
	return RPCRDMASegment{Handle: binary.BigEndian.Uint32(b), Length: binary.BigEndian.Uint32(b[4:]), Offset: binary.BigEndian.Uint64(b[8:])}
}

// SerializeTo writes the header: the fixed part, then the RDMA_MSGP words,
// the three lists (for RDMA_MSG, RDMA_NOMSG, RDMA_MSGP with version 1) or
// the error body (RDMA_ERROR). The RPC message is the payload that follows.
func (h *RPCRDMAHeader) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	n := h.encodedLen()
	d, err := b.PrependBytes(n)
	if err != nil {
		return err
	}
	be := binary.BigEndian
	w := func(v uint32) { be.PutUint32(d, v); d = d[4:] }
	seg := func(s RPCRDMASegment) { w(s.Handle); w(s.Length); be.PutUint64(d, s.Offset); d = d[8:] }
	w(h.XID)
	w(h.Vers)
	w(h.Credit)
	w(h.Proc)
	switch {
	case h.Proc == RPCRDMAError:
		w(h.Err)
		if h.Err == RPCRDMAErrVers {
			w(h.VersLow)
			w(h.VersHigh)
		}
	case h.Vers != RPCRDMAVersion || h.Proc == RPCRDMADone || h.Proc > RPCRDMAError:
	default:
		if h.Proc == RPCRDMAMsgP {
			w(h.Align)
			w(h.Thresh)
		}
		for _, r := range h.ReadList {
			w(1)
			w(r.Position)
			seg(r.RPCRDMASegment)
		}
		w(0)
		for _, c := range h.WriteList {
			w(1)
			w(uint32(len(c)))
			for _, s := range c {
				seg(s)
			}
		}
		w(0)
		if h.HasReplyChunk {
			w(1)
			w(uint32(len(h.ReplyChunk)))
			for _, s := range h.ReplyChunk {
				seg(s)
			}
		} else {
			w(0)
		}
	}
	return nil
}

// encodedLen is the size SerializeTo writes.
func (h *RPCRDMAHeader) encodedLen() int {
	n := RPCRDMAFixedLen
	switch {
	case h.Proc == RPCRDMAError:
		n += 4
		if h.Err == RPCRDMAErrVers {
			n += 8
		}
	case h.Vers != RPCRDMAVersion || h.Proc == RPCRDMADone || h.Proc > RPCRDMAError:
	default:
		if h.Proc == RPCRDMAMsgP {
			n += 8
		}
		n += len(h.ReadList)*(4+readSegmentLen) + 4
		for _, c := range h.WriteList {
			n += 8 + len(c)*segmentLen
		}
		n += 4 + 4 // the write list's end, the reply chunk's discriminator
		if h.HasReplyChunk {
			n += 4 + len(h.ReplyChunk)*segmentLen
		}
	}
	return n
}

// Segments counts the segments kept in the three lists.
func (h *RPCRDMAHeader) Segments() int {
	n := len(h.ReadList) + len(h.ReplyChunk)
	for _, c := range h.WriteList {
		n += len(c)
	}
	return n
}

// Fields lists the fixed part for display.
func (h *RPCRDMAHeader) Fields() []Field {
	f := make(fieldList, 0, 4)
	f.hex("Transaction ID", "xid", 32, uint64(h.XID))
	f.dec("Version", "vers", uint64(h.Vers))
	f.dec("Credits", "credits", uint64(h.Credit))
	f.dec("Procedure", "proc", uint64(h.Proc))
	f.note(RPCRDMAProcName(h.Proc))
	return f
}

func decodeRPCRDMAHeader(data []byte, p gopacket.PacketBuilder) error {
	h := &RPCRDMAHeader{}
	if err := h.DecodeFromBytes(data, p); err != nil {
		return err
	}
	// The lists alias the arrays of h, which lives as long as the packet.
	p.AddLayer(h)
	return p.NextDecoder(h.NextLayerType())
}
