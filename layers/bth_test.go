package layers

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
)

// bthPackedA and bthPackedB are rocev2REQ with BTH octets 1, 4 and 8 holding
// distinctive bits:
//
//	A: 0xa5 = SE 1, M 0, PadCnt 2, TVer 5; 0xad = FECN 1, BECN 0, resv6 0x2d;
//	   0x59 = AckReq 0, resv7 0x59
//	B: 0x5a = SE 0, M 1, PadCnt 1, TVer 0xa; 0x52 = FECN 0, BECN 1, resv6 0x12;
//	   0xa6 = AckReq 1, resv7 0x26
//
// Cross-checked with tshark 4.0.17: fields infiniband.bth.{opcode,se,m,padcnt,
// tver,p_key,destqp,a,reserved7,psn} (tshark has no FECN/BECN fields in 4.0:
// its "Reserved" octet shows ad and 52): all agree. tshark ignores PadCnt for
// the MAD after the BTH, so its ip_cm.private is 2 (A) or 1 (B) octets longer
// than the private data these layers decode, which end where the pad starts.
var (
	bthPackedA = patch(rocev2REQ, at(43, 0xa5), at(46, 0xad), at(50, 0x59))
	bthPackedB = patch(rocev2REQ, at(43, 0x5a), at(46, 0x52), at(50, 0xa6))
)

func TestBTHDecode(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		noICRC  bool
		want    *BTH
		payload [2]int
	}{
		{
			// Cross-checked with tshark 4.0.17: infiniband.bth.{opcode,se,m,padcnt,tver,
			// p_key,destqp,a,psn}, infiniband.invariant.crc 0xd25f5932.
			name: "RoCEv2 REQ", data: rocev2REQ[42:], payload: [2]int{12, 276},
			want: &BTH{OpCode: OpUDSendOnly, PKey: 0xffff, DestQP: 1, ICRC: 0x32595fd2, HasICRC: true},
		},
		{
			// Cross-checked with tshark 4.0.17: as above, psn 256, invariant.crc 0x1fc49770.
			name: "RoCEv2 REJ", data: rocev2REJ[42:], payload: [2]int{12, 276},
			want: &BTH{OpCode: OpUDSendOnly, PKey: 0xffff, DestQP: 1, PSN: 256, ICRC: 0x7097c41f, HasICRC: true},
		},
		{
			// Cross-checked with tshark 4.0.17: psn 768, invariant.crc 0x90064818.
			name: "IB REQ (the LRH's payload)", data: ibREQ[8:288], payload: [2]int{12, 276},
			want: &BTH{OpCode: OpUDSendOnly, PKey: 0xffff, DestQP: 1, PSN: 768, ICRC: 0x18480690, HasICRC: true},
		},
		{
			name: "packed A, PadCnt 2", data: bthPackedA[42:], payload: [2]int{12, 274},
			want: &BTH{OpCode: OpUDSendOnly, SE: true, PadCnt: 2, TVer: 5, PKey: 0xffff, FECN: true, Reserved6: 0x2d,
				DestQP: 1, Reserved7: 0x59, ICRC: 0x32595fd2, HasICRC: true},
		},
		{
			name: "packed B, PadCnt 1", data: bthPackedB[42:], payload: [2]int{12, 275},
			want: &BTH{OpCode: OpUDSendOnly, M: true, PadCnt: 1, TVer: 0xa, PKey: 0xffff, BECN: true, Reserved6: 0x12,
				DestQP: 1, AckReq: true, Reserved7: 0x26, ICRC: 0x32595fd2, HasICRC: true},
		},
		{
			// Cross-checked with tshark 4.0.17: opcode 10, m 1, padcnt 3, destqp 0x00010a,
			// a 1, psn 10979516, invariant.crc 0xe3d856bb.
			name: "captured RoCEv1 RDMA WRITE, PadCnt 3", data: scapyRoCEv1Write[54:], payload: [2]int{12, 33},
			want: &BTH{OpCode: 0x0a, M: true, PadCnt: 3, PKey: 0xffff, DestQP: 0x10a, AckReq: true, PSN: 0xa788bc,
				ICRC: 0xbb56d8e3, HasICRC: true},
		},
		{
			// Cross-checked with tshark 4.0.17: opcode 129, destqp 0x000118, psn 0,
			// invariant.crc 0x82fd002a; octet 4 is 0x40 (BECN).
			name: "captured CNP", data: scapyCNP[42:], payload: [2]int{12, 28},
			want: &BTH{OpCode: 0x81, PKey: 0xffff, BECN: true, DestQP: 0x118, ICRC: 0x2a00fd82, HasICRC: true},
		},
		{
			// scapy: UC SEND Only, migreq 1, padcount 2, dqpn 211, psn 13571856.
			name: "UC SEND Only, PadCnt 2", data: scapyUCIPv4[42:], payload: [2]int{12, 30},
			want: &BTH{OpCode: 0x24, M: true, PadCnt: 2, PKey: 0xffff, DestQP: 211, PSN: 13571856,
				ICRC: 0xf353f378, HasICRC: true},
		},
		{
			name: "NoICRC: cut short", data: rocev2REQ[42:200], noICRC: true, payload: [2]int{12, 158},
			want: &BTH{OpCode: OpUDSendOnly, PKey: 0xffff, DestQP: 1, NoICRC: true},
		},
		{
			name: "NoICRC keeps the pad", data: bthPackedA[42:], noICRC: true, payload: [2]int{12, 280},
			want: &BTH{OpCode: OpUDSendOnly, SE: true, PadCnt: 2, TVer: 5, PKey: 0xffff, FECN: true, Reserved6: 0x2d,
				DestQP: 1, Reserved7: 0x59, NoICRC: true},
		},
		{
			name: "header only", data: rocev2REQ[42:54], payload: [2]int{12, 12},
			want: &BTH{OpCode: OpUDSendOnly, PKey: 0xffff, DestQP: 1},
		},
		{
			name: "three octets after the header: no ICRC", data: rocev2REQ[42:57], payload: [2]int{12, 15},
			want: &BTH{OpCode: OpUDSendOnly, PKey: 0xffff, DestQP: 1},
		},
		{
			name: "header and ICRC", data: cat(rocev2REQ[42:54], rocev2REQ[318:]), payload: [2]int{12, 12},
			want: &BTH{OpCode: OpUDSendOnly, PKey: 0xffff, DestQP: 1, ICRC: 0x32595fd2, HasICRC: true},
		},
		{
			// A pad count larger than what is between header and ICRC is
			// not applied.
			name: "PadCnt 3, two octets of payload", data: cat(patch(rocev2REQ[42:56], at(1, 0x30)), rocev2REQ[318:]),
			payload: [2]int{12, 14},
			want:    &BTH{OpCode: OpUDSendOnly, PadCnt: 3, PKey: 0xffff, DestQP: 1, ICRC: 0x32595fd2, HasICRC: true},
		},
		{
			name: "PadCnt 3, three octets of payload", data: cat(patch(rocev2REQ[42:57], at(1, 0x30)), rocev2REQ[318:]),
			payload: [2]int{12, 12},
			want:    &BTH{OpCode: OpUDSendOnly, PadCnt: 3, PKey: 0xffff, DestQP: 1, ICRC: 0x32595fd2, HasICRC: true},
		},
		{
			name: "all ones", data: cat(bytes.Repeat([]byte{0xff}, 12), rocev2REQ[318:]), payload: [2]int{12, 12},
			want: &BTH{OpCode: 0xff, SE: true, M: true, PadCnt: 3, TVer: 0xf, PKey: 0xffff, FECN: true, BECN: true,
				Reserved6: 0x3f, DestQP: 0xffffff, AckReq: true, Reserved7: 0x7f, PSN: 0xffffff,
				ICRC: 0x32595fd2, HasICRC: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Contents = tt.data[:12]
			tt.want.Payload = tt.data[tt.payload[0]:tt.payload[1]]
			got := &BTH{NoICRC: tt.noICRC, PSN: 99, HasICRC: !tt.want.HasICRC}
			if truncated := decodeOK(t, got, tt.data); truncated {
				t.Error("SetTruncated called")
			}
			checkLayer(t, got, tt.want)
		})
	}
}

func TestBTHNoICRCKept(t *testing.T) {
	b := BTH{NoICRC: true}
	decodeOK(t, &b, rocev2REQ[42:])
	decodeOK(t, &b, rocev2REP[42:])
	if !b.NoICRC || b.HasICRC || len(b.Payload) != 268 {
		t.Errorf("after two decodes: NoICRC %v, HasICRC %v, payload %d octets", b.NoICRC, b.HasICRC, len(b.Payload))
	}
	b.NoICRC = false
	decodeOK(t, &b, rocev2REP[42:])
	if b.NoICRC || !b.HasICRC || b.ICRC != 0x264101fd || len(b.Payload) != 264 {
		t.Errorf("NoICRC cleared: NoICRC %v, HasICRC %v, ICRC %08x, payload %d octets", b.NoICRC, b.HasICRC, b.ICRC, len(b.Payload))
	}
}

func TestBTHTooShort(t *testing.T) {
	for n := 0; n < BTHLen; n++ {
		var df feedback
		var b BTH
		wantTruncated(t, b.DecodeFromBytes(rocev2REQ[42:42+n], &df), "bth", 12, n)
		if !df.truncated {
			t.Errorf("%d octets: SetTruncated not called", n)
		}
	}
}

func TestBTHNextLayer(t *testing.T) {
	for op, want := range map[uint8]gopacket.LayerType{
		OpUDSendOnly: LayerTypeDETH, OpUDSendOnlyImm: LayerTypeDETH,
		0x04: gopacket.LayerTypePayload, 0x24: gopacket.LayerTypePayload, 0x44: gopacket.LayerTypePayload,
		0x81: gopacket.LayerTypePayload, 0x66: gopacket.LayerTypePayload,
	} {
		b := BTH{OpCode: op}
		if got := b.NextLayerType(); got != want {
			t.Errorf("opcode %#02x: next %v, want %v", op, got, want)
		}
	}
	var b BTH
	decodeOK(t, &b, scapyRoCEv1Write[54:])
	f := b.TransportFlow()
	if f.EndpointType() != EndpointQP || len(f.Src().Raw()) != 0 || f.Dst().String() != "QP 0x00010a" {
		t.Errorf("transport flow %v, want to QP 0x00010a", f)
	}
}

func TestOpCodeName(t *testing.T) {
	for op, want := range map[uint8]string{
		0x00: "RC SEND First", 0x04: "RC SEND Only", 0x0a: "RC RDMA WRITE Only", 0x11: "RC Acknowledge",
		0x24: "UC SEND Only", 0x64: "UD SEND Only", 0x65: "UD SEND Only with Immediate",
		0x81: "CNP", 0x15: "", 0x18: "", 0x80: "", 0xe4: "",
	} {
		if got := OpCodeName(op); got != want {
			t.Errorf("OpCodeName(%#02x) = %q, want %q", op, got, want)
		}
	}
}

func TestBTHRoundTrip(t *testing.T) {
	for _, data := range [][]byte{rocev2REQ[42:], bthPackedA[42:], bthPackedB[42:], scapyRoCEv1Write[54:], scapyCNP[42:]} {
		var b BTH
		decodeOK(t, &b, data)
		// The BTH writes its 12 octets; the pad and the ICRC belong to
		// whoever builds the packet.
		out := roundTrip(t, &b, b.Payload)
		out = append(out, data[len(out):]...)
		if !bytes.Equal(out, data) {
			t.Errorf("serialized %x, want %x", out[:12], data[:12])
		}
		var again BTH
		decodeOK(t, &again, out)
		checkLayer(t, &again, &b)
	}
}

// TestOpCodeNameNotDefined checks opcodes that IBTA Vol 1 table 38 does not
// define for their transport: UD has only SEND Only (0x64) and SEND Only with
// Immediate (0x65); UC has no RDMA READ, Acknowledge, atomics or Send with
// Invalidate. OpCodeName promises "" for them.
func TestOpCodeNameNotDefined(t *testing.T) {
	for _, op := range []uint8{
		0x60, 0x62, 0x66, 0x6a, 0x71, 0x77, // UD: SEND First, Last, RDMA WRITE First/Only, Acknowledge, SEND with Invalidate
		0x2c, 0x30, 0x31, 0x33, 0x37, // UC: RDMA READ Request/Response Only, Acknowledge, CmpSwap, SEND with Invalidate
	} {
		if got := OpCodeName(op); got != "" {
			t.Errorf("OpCodeName(%#02x) = %q, want \"\" (no such opcode)", op, got)
		}
	}
}
