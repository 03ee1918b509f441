package layers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/gopacket/gopacket"
)

// hdrWant is what a decode of an RPC-over-RDMA header must give; the
// unexported arrays are not compared.
type hdrWant struct {
	XID, Vers, Credit, Proc uint32
	Align, Thresh           uint32
	ReadList                []RPCRDMAReadSegment
	WriteList               []RPCRDMAChunk
	ReplyChunk              RPCRDMAChunk
	HasReplyChunk           bool
	Err, VersLow, VersHigh  uint32
	HasBody                 bool
	NotKept                 int
	RPCXID, RPCMsgType      uint32
	HasRPCXID, HasRPCMsgTyp bool
	HeaderLen               int
}

func (w hdrWant) check(t *testing.T, h *RPCRDMAHeader, data []byte) {
	t.Helper()
	got := hdrWant{h.XID, h.Vers, h.Credit, h.Proc, h.Align, h.Thresh, h.ReadList, h.WriteList, h.ReplyChunk,
		h.HasReplyChunk, h.Err, h.VersLow, h.VersHigh, h.HasBody, h.NotKept, h.RPCXID, h.RPCMsgType, h.HasRPCXID,
		h.HasRPCMsgType, len(h.Contents)}
	// Empty lists compare equal to nil.
	for _, p := range []*hdrWant{&got, &w} {
		if len(p.ReadList) == 0 {
			p.ReadList = nil
		}
		if len(p.WriteList) == 0 {
			p.WriteList = nil
		}
		if len(p.ReplyChunk) == 0 {
			p.ReplyChunk = nil
		}
	}
	checkLayer(t, &got, &w)
	if !bytes.Equal(h.Contents, data[:w.HeaderLen]) || !bytes.Equal(h.Payload, data[w.HeaderLen:]) {
		t.Errorf("contents %d octets, payload %d octets; want %d and %d", len(h.Contents), len(h.Payload), w.HeaderLen, len(data)-w.HeaderLen)
	}
}

func TestRPCRDMAHeaderDecode(t *testing.T) {
	const va = 0x00007f0000100000
	tests := []struct {
		name string
		data []byte
		want hdrWant
	}{
		// Cross-checked with tshark 4.0.17 (see vectors_rc_test.go): xid,
		// version, flow_control 32, msg_type 0, no chunks.
		{"NULL Call", rpcNullCall, hdrWant{XID: 0x5f000000, Vers: 1, Credit: 32, HasBody: true, RPCXID: 0x5f000000,
			HasRPCXID: true, HasRPCMsgTyp: true, HeaderLen: 28}},
		// tshark: writes_count 1, segment_count 2, handles 0x00010001,
		// 0x00010002, lengths 8192, 100, offsets 0x00007f0000100000, 7.
		{"a write chunk of two segments", rpcReadCall, hdrWant{XID: 0x5f000001, Vers: 1, Credit: 32, HasBody: true,
			WriteList: []RPCRDMAChunk{{{0x00010001, 8192, va}, {0x00010002, 100, 7}}}, RPCXID: 0x5f000001, HasRPCXID: true,
			HasRPCMsgTyp: true, HeaderLen: 28 + 8 + 32}},
		// tshark: reads_count 1, position 128, reply_count 1.
		{"a read list entry and a reply chunk", rpcWriteCall, hdrWant{XID: 0x5f000002, Vers: 1, Credit: 32, HasBody: true,
			ReadList:   []RPCRDMAReadSegment{{128, RPCRDMASegment{0x00020001, 4096, va + 0x10000}}},
			ReplyChunk: RPCRDMAChunk{{0x00030001, 16384, va + 0x20000}}, HasReplyChunk: true, RPCXID: 0x5f000002,
			HasRPCXID: true, HasRPCMsgTyp: true, HeaderLen: 28 + 24 + 20}},
		// tshark: msg_type 1, flow_control 64, reply_count 1.
		{"RDMA_NOMSG", rpcNoMsg, hdrWant{XID: 0x5f000004, Vers: 1, Credit: 64, Proc: RPCRDMANoMsg, HasBody: true,
			ReplyChunk: RPCRDMAChunk{{0x00030001, 16384, va + 0x20000}}, HasReplyChunk: true, HeaderLen: 48}},
		// tshark: msg_type 4, errcode 1, vers_low 1, vers_high 1.
		{"ERR_VERS", rpcErrVers, hdrWant{XID: 0x5f000005, Vers: 1, Credit: 1, Proc: RPCRDMAError, Err: RPCRDMAErrVers,
			VersLow: 1, VersHigh: 1, HasBody: true, HeaderLen: 28}},
		// tshark: errcode 2.
		{"ERR_CHUNK", rpcErrChunk, hdrWant{XID: 0x5f000006, Vers: 1, Credit: 1, Proc: RPCRDMAError, Err: RPCRDMAErrChunk,
			HasBody: true, HeaderLen: 20}},
		// tshark: msg_type 2, rdma_align 0, rdma_thresh 0.
		{"RDMA_MSGP", rpcMsgP, hdrWant{XID: 0x5f000007, Vers: 1, Credit: 8, Proc: RPCRDMAMsgP, HasBody: true,
			RPCXID: 0x5f000007, HasRPCXID: true, HasRPCMsgTyp: true, HeaderLen: 36}},
		{"the IETH's Send", rcSendOnlyInvalidate[58 : len(rcSendOnlyInvalidate)-4], hdrWant{XID: 0x5f000006, Vers: 1,
			Credit: 1, Proc: RPCRDMAError, Err: RPCRDMAErrChunk, HasBody: true, HeaderLen: 20}},
		{"version 2: the rest is not read", patch(rpcReadCall, at(7, 2)), hdrWant{XID: 0x5f000001, Vers: 2, Credit: 32,
			HeaderLen: 16}},
		{"an unknown procedure", patch(rpcReadCall, at(15, 9)), hdrWant{XID: 0x5f000001, Vers: 1, Credit: 32, Proc: 9,
			HeaderLen: 16}},
		{"ERR_VERS of version 2 is still read", patch(rpcErrVers, at(7, 2)), hdrWant{XID: 0x5f000005, Vers: 2, Credit: 1,
			Proc: RPCRDMAError, Err: RPCRDMAErrVers, VersLow: 1, VersHigh: 1, HasBody: true, HeaderLen: 28}},
		{"an unknown rdma_err", patch(rpcErrChunk, at(19, 7)), hdrWant{XID: 0x5f000006, Vers: 1, Credit: 1,
			Proc: RPCRDMAError, Err: 7, HasBody: true, HeaderLen: 20}},
		{"RDMA_DONE has no body", patch(rpcErrChunk, at(15, 3)), hdrWant{XID: 0x5f000006, Vers: 1, Credit: 1,
			Proc: RPCRDMADone, HasBody: true, HeaderLen: 16}},
		{"RDMA_MSG without its RPC message", rpcNullCall[:28], hdrWant{XID: 0x5f000000, Vers: 1, Credit: 32, HasBody: true,
			HeaderLen: 28}},
		{"only the RPC XID", rpcNullCall[:34], hdrWant{XID: 0x5f000000, Vers: 1, Credit: 32, HasBody: true,
			RPCXID: 0x5f000000, HasRPCXID: true, HeaderLen: 28}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h RPCRDMAHeader
			// A decode after another leaves nothing of it behind.
			decodeOK(t, &h, rpcWriteCall)
			if truncated := decodeOK(t, &h, tt.data); truncated {
				t.Error("SetTruncated called")
			}
			tt.want.check(t, &h, tt.data)
		})
	}
}

func TestRPCRDMAHeaderErrors(t *testing.T) {
	huge := binary.BigEndian.AppendUint32(append([]byte(nil), rpcNoMsg[:28]...), 0xffffffff)
	tests := []struct {
		name  string
		data  []byte
		layer string // a *TruncatedError of this layer, or "" for an *XDRBoolError
		need  int
		field string
	}{
		{"the fixed part cut", rpcNullCall[:15], "rpc-over-rdma", 16, ""},
		{"no read list", rpcNullCall[:16], "rpc-over-rdma read list", 20, ""},
		{"no write list", rpcNullCall[:20], "rpc-over-rdma write list", 24, ""},
		{"no reply chunk", rpcNullCall[:27], "rpc-over-rdma reply chunk", 28, ""},
		{"a read segment cut", rpcWriteCall[:30], "rpc-over-rdma read list", 40, ""},
		{"a write chunk's segments cut", rpcReadCall[:50], "rpc-over-rdma write list", 60, ""},
		{"no write list end", rpcReadCall[:60], "rpc-over-rdma write list", 64, ""},
		{"a count beyond the data", huge, "rpc-over-rdma reply chunk", 32 + 0xffffffff*16, ""},
		{"ERR_VERS cut", rpcErrVers[:24], "rpc-over-rdma error", 28, ""},
		{"no rdma_err", rpcErrVers[:16], "rpc-over-rdma error", 20, ""},
		{"RDMA_MSGP cut", rpcMsgP[:20], "rpc-over-rdma msgp", 24, ""},
		{"a read list discriminator of 7", patch(rpcNullCall, at(19, 7)), "", 16, "read list"},
		{"a write list discriminator of 2", patch(rpcNullCall, at(23, 2)), "", 20, "write list"},
		{"a reply chunk discriminator of 0x100", patch(rpcNullCall, at(26, 1)), "", 24, "reply chunk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h RPCRDMAHeader
			var df feedback
			err := h.DecodeFromBytes(tt.data, &df)
			if tt.layer == "" {
				var xe *XDRBoolError
				if !errors.As(err, &xe) || xe.Field != tt.field || xe.Offset != tt.need {
					t.Fatalf("error %v, want an XDRBoolError of the %s at %d", err, tt.field, tt.need)
				}
				if df.truncated {
					t.Error("SetTruncated called for a bad discriminator")
				}
				return
			}
			if tt.need > 1<<31 {
				tt.need = 32 + 1<<31 // the need a count beyond any data reports, capped
			}
			wantTruncated(t, err, tt.layer, tt.need, len(tt.data))
			if !df.truncated {
				t.Error("SetTruncated not called")
			}
			// The fixed part stays readable once it was there.
			if len(tt.data) >= 16 && h.XID != binary.BigEndian.Uint32(tt.data) {
				t.Errorf("XID %#x", h.XID)
			}
		})
	}
}

// A header with more segments than are kept: the first are kept, the rest
// counted, and the header's extent still found.
func TestRPCRDMAHeaderBounds(t *testing.T) {
	b := binary.BigEndian.AppendUint32(nil, 1)
	for _, v := range []uint32{1, 1, 0} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = b[:12]
	b = binary.BigEndian.AppendUint32(b, RPCRDMANoMsg)
	for i := 0; i < 70; i++ { // 70 read segments
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint32(b, 0)
		b = append(b, make([]byte, 16)...)
		binary.BigEndian.PutUint32(b[len(b)-16:], uint32(i))
	}
	b = binary.BigEndian.AppendUint32(b, 0)
	for i := 0; i < 20; i++ { // 20 write chunks of one segment
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint32(b, 1)
		b = append(b, make([]byte, 16)...)
	}
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	var h RPCRDMAHeader
	decodeOK(t, &h, b)
	if len(h.ReadList) != MaxRPCRDMASegments || h.ReadList[63].Handle != 63 || len(h.WriteList) != MaxRPCRDMAWriteChunks {
		t.Errorf("kept %d read segments (last %#x), %d write chunks", len(h.ReadList), h.ReadList[len(h.ReadList)-1].Handle, len(h.WriteList))
	}
	for i, c := range h.WriteList {
		if len(c) != 0 {
			t.Errorf("write chunk %d kept %d segments past the bound", i, len(c))
		}
	}
	if h.NotKept != 6+20 || len(h.Contents) != len(b) || h.Segments() != 64 {
		t.Errorf("not kept %d, header %d of %d octets, %d segments", h.NotKept, len(h.Contents), len(b), h.Segments())
	}
}

func TestRPCRDMAHeaderRoundTrip(t *testing.T) {
	for i, data := range [][]byte{rpcNullCall, rpcReadCall, rpcWriteCall, rpcNoMsg, rpcErrVers, rpcErrChunk, rpcMsgP} {
		var h RPCRDMAHeader
		decodeOK(t, &h, data)
		if out := roundTrip(t, &h, h.Payload); !bytes.Equal(out, data) {
			t.Errorf("vector %d: serialized\n%x, want\n%x", i, out, data)
		}
	}
}

func TestRPCRDMAHeaderNewPacket(t *testing.T) {
	p := gopacket.NewPacket(rpcWriteCall, LayerTypeRPCRDMAHeader, gopacket.Default)
	h, ok := p.Layer(LayerTypeRPCRDMAHeader).(*RPCRDMAHeader)
	if !ok || p.ErrorLayer() != nil {
		t.Fatalf("layers %s, error %v", typesString(layerTypes(p)), p.ErrorLayer())
	}
	if len(h.ReadList) != 1 || h.ReadList[0].Position != 128 || !h.HasReplyChunk || h.ReplyChunk[0].Handle != 0x00030001 {
		t.Errorf("%+v", h)
	}
	if got := typesString(layerTypes(p)); got != typesString([]gopacket.LayerType{LayerTypeRPCRDMAHeader, ltPayload}) {
		t.Errorf("layers %s", got)
	}
	if RPCRDMAProcName(4) != "RDMA_ERROR" || RPCRDMAProcName(5) != "" || RPCRDMAErrName(2) != "ERR_CHUNK" || RPCRDMAErrName(0) != "" {
		t.Error("names")
	}
	fs := h.Fields()
	if fmt.Sprintf("%s %s", fs[0].Text(), fs[3].Note) != "0x5f000002 RDMA_MSG" {
		t.Errorf("fields %+v", fs)
	}
}
