package dissect_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// iWARP's RDMA Writes and Reads followed into the chunks: a Long Call
// (RDMA_NOMSG) pulled from its position-zero read chunk by a Read Request
// and its Read Response, a READ's data written into its write chunk, and
// the chunk violations of Writes outside every segment advertised.

// Handles and buffers of the chunk exchange.
const (
	iwLongHandle  = 0x00050001 // the Long Call's read chunk
	iwWriteHandle = 0x00060001 // the READ's write chunk
	iwSink        = 0x00a00001 // the responder's sink for the Read
	iwChunkVA     = 0x00007f0000200000
	iwReadCount   = 2048
)

// longCompound is an NFSv4.1 COMPOUND with RPCSEC_GSS whose path of
// long names makes the Call longer than a 1024-octet inline threshold
// (its Reply is short), and its encoding with xid.
func longCompound(xid uint32) (*craft.Call, *craft.Reply, []byte) {
	ops := []craft.NFS4Op{{Op: craft.OpSequence}, {Op: craft.OpPutfh}}
	for i := range 5 {
		ops = append(ops, craft.NFS4Op{Op: craft.OpLookup, Name: fmt.Sprintf("%d-%s", i, strings.Repeat("directory", 22))})
	}
	c := craft.Compound{Minor: 1, Seq: 1, Ops: append(ops, craft.NFS4Op{Op: craft.OpGetfh})}
	cred := craft.GSSCred(craft.GSSIntegrity, 9)
	call := craft.CompoundCall(c, cred)
	reply := craft.CompoundReply(c)
	reply.Cred = cred
	b, _ := call.Encode(xid)
	return call, reply, b
}

// iwChunkExchange is an MPA exchange with thresholds of 1024 each way,
// then a Long Call and its Reply, and a READ whose data the responder
// writes into its write chunk; bad adds, before the READ's Reply, a Write
// past the end of the write chunk (its two segments outside: one
// violation), one to an STag nobody advertised, one whose second
// segment goes past the end, and a Read of an STag nobody advertised.
func iwChunkExchange(bad bool) (craft.IWARPExchange, int) {
	p := craft.Peer{SendSize: 1024, ReceiveSize: 1024}
	x := craft.IWARPExchange{Rev: 2, Initiator: p, Responder: p}
	send := func(fromRes bool, m craft.RPCMessage) craft.IWARPMessage {
		m.Credits = 32
		return craft.IWARPMessage{FromResponder: fromRes, Opcode: layers.RDMAPOpSend, Payload: m.Bytes(), MaxSegment: 1400}
	}
	write := func(stag uint32, to uint64, n int) craft.IWARPMessage {
		return craft.IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpWrite, STag: stag, TO: to, Payload: make([]byte, n), MaxSegment: 1400}
	}
	// The Long Call.
	xid := uint32(0x71000000)
	_, reply, body := longCompound(xid)
	rc := layers.RPCRDMAReadSegment{RPCRDMASegment: layers.RPCRDMASegment{Handle: iwLongHandle, Length: uint32(len(body)), Offset: iwChunkVA}}
	x.Traffic = append(x.Traffic,
		send(false, craft.RPCMessage{XID: xid, Proc: layers.RPCRDMANoMsg, ReadList: []layers.RPCRDMAReadSegment{rc}}),
		craft.IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpReadRequest, Read: &layers.RDMAPReadRequest{
			SinkSTag: iwSink, SinkTO: 0x3000, Size: rc.Length, SourceSTag: rc.Handle, SourceTO: rc.Offset}},
		craft.IWARPMessage{Opcode: layers.RDMAPOpReadResponse, STag: iwSink, TO: 0x3000, Payload: body, MaxSegment: 1400},
		send(true, craft.RPCMessage{XID: xid, Reply: true, RPC: reply}))
	// The READ into its write chunk.
	o := craft.NFS3{Proc: craft.NFS3Read, Count: iwReadCount, Chunk: true, EOF: true}
	wc := layers.RPCRDMASegment{Handle: iwWriteHandle, Length: iwReadCount, Offset: iwChunkVA + 0x10000}
	x.Traffic = append(x.Traffic,
		send(false, craft.RPCMessage{XID: xid + 1, RPC: craft.NFS3Call(o, craft.SysCred()), WriteList: []layers.RPCRDMAChunk{{wc}}}),
		write(wc.Handle, wc.Offset, iwReadCount))
	if bad {
		x.Traffic = append(x.Traffic, write(wc.Handle, wc.Offset+1024, iwReadCount), write(0x00099999, 0, 100),
			write(wc.Handle, wc.Offset, 2*1400), // its second segment past the end
			craft.IWARPMessage{FromResponder: true, Opcode: layers.RDMAPOpReadRequest, Read: &layers.RDMAPReadRequest{
				SinkSTag: iwSink + 1, SinkTO: 0x3000, Size: 512, SourceSTag: 0x00088888, SourceTO: 0x4000}},
			craft.IWARPMessage{Opcode: layers.RDMAPOpReadResponse, STag: iwSink + 1, TO: 0x3000, Payload: make([]byte, 512)})
	}
	x.Traffic = append(x.Traffic, send(true, craft.RPCMessage{XID: xid + 1, Reply: true, RPC: craft.NFS3Reply(o), WriteList: []layers.RPCRDMAChunk{{wc}}}))
	return x, len(body)
}

func TestDatapathIWARPChunks(t *testing.T) {
	for _, tc := range []struct {
		markers bool
		seg     int // TCPSegment
		reorder []int
	}{
		{false, 0, nil},
		{true, 0, nil},
		{false, 100, nil},      // every FPDU over several TCP segments
		{true, 700, nil},       // FPDUs split, and several in a segment, with markers
		{false, 500, []int{2}}, // a segment of the Read Response out of order
	} {
		for _, bad := range []bool{false, true} {
			name := fmt.Sprintf("markers %v segment %d reorder %v violations %v", tc.markers, tc.seg, tc.reorder, bad)
			t.Run(name, func(t *testing.T) {
				x, long := iwChunkExchange(bad)
				x.InitiatorMarkers, x.ResponderMarkers, x.TCPSegment, x.Reorder = tc.markers, tc.markers, tc.seg, tc.reorder
				frames, err := x.Frames()
				if err != nil {
					t.Fatal(err)
				}
				c := runDatapathFrames(t, datapath.ModeAll, frames)
				if len(c.conns) != 1 || c.conns[0].Datapath == nil {
					t.Fatalf("connections %+v", c.conns)
				}
				// The Long Call's RDMA_NOMSG carries its decode.
				var m *record.RPCMessage
				for _, r := range c.rpcs {
					if r.Header != nil && r.Header.XID == 0x71000000 && r.Direction == record.InitiatorToResponder {
						m = r.Message
					}
				}
				if m == nil || m.CarriedIn != "read_chunk" || m.ProcedureName != "COMPOUND" || m.AuthFlavor != "RPCSEC_GSS" ||
					!reflect.DeepEqual(m.Operations, []string{"SEQUENCE", "PUTFH", "LOOKUP", "LOOKUP", "LOOKUP", "LOOKUP", "LOOKUP", "GETFH"}) {
					t.Errorf("the Long Call: %+v", m)
				}
				if fs := rpcRecordCodes(c.rpcs); len(fs) != 0 || len(c.rpcs) != 4 {
					t.Errorf("%d rpc records, findings %v", len(c.rpcs), fs)
				}
				d := c.conns[0].Datapath
				need := (long + 28 + 1023) / 1024 * 1024
				violations, written := 0, int64(iwReadCount)
				if bad {
					violations, written = 4, iwReadCount+1400 // the first segment of the last Write is inside
				}
				if d.LongMessages != [2]int{1, 0} || d.InlineNeeded != [2]int{need, 0} ||
					d.ExplicitRDMAOctets != [2]int64{int64(long), written} || d.ChunkViolations != violations {
					t.Errorf("long %v, needed %v, octets %v, violations %d", d.LongMessages, d.InlineNeeded, d.ExplicitRDMAOctets, d.ChunkViolations)
				}
				var notes []string
				for _, f := range c.conns[0].Findings {
					switch f.Code.String() {
					case "chunk-violation":
						notes = append(notes, f.Message)
					case "inline-threshold-too-small":
					default:
						t.Errorf("finding %s: %s", f.Code, f.Message)
					}
				}
				if !bad {
					if len(notes) != 0 {
						t.Errorf("violations %q", notes)
					}
					return
				}
				if len(notes) != 4 || !strings.Contains(notes[3], "an RDMA Read Request from the responder to handle 0x00088888 (offset 0x0000000000004000, 512 octets), which no outstanding Call advertised") ||
					!strings.Contains(notes[2], "an RDMA Write from the responder of 1400 octets at offset 0x00007f0000210578, outside the write chunk segment") ||
					!strings.Contains(notes[0], "an RDMA Write from the responder of 1400 octets at offset 0x00007f0000210400, outside the write chunk segment the Call of XID 0x71000001 advertised for handle 0x00060001 (offset 0x00007f0000210000, 2048 octets)") ||
					!strings.Contains(notes[1], "an RDMA Write from the responder to handle 0x00099999 (offset 0x0000000000000000, 100 octets), which no outstanding Call advertised") {
					t.Errorf("violations %q", notes)
				}
			})
		}
	}
}

// The Long Call over iWARP, named as tshark names it after putting its
// read chunk together (compared by XID, not by frame).
func TestInteropIWARPLongCall(t *testing.T) {
	tshark, _ := oracleSetup(t)
	x, _ := iwChunkExchange(false)
	frames, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "o.pcap")
	if err := craft.WriteFile(file, frames); err != nil {
		t.Fatal(err)
	}
	rpcMessageOracle(t, tshark, file, frames)
}
