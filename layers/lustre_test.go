package layers

import (
	"encoding/binary"
	"testing"
)

var (
	// A little-endian CONNREQ. tshark 4.0.17 (lnet.ib.*, lnet.connparam.*)
	// decodes it to version 0x0012, type 0xc0, credits 8, nob 56, source NID
	// 192.0.2.5@o2ib0, destination 192.0.2.6@o2ib1, queue depth 8, 256
	// fragments, messages of 4096 octets.
	//
	//	00  magic 0x0be91b91, version 0x0012, type 0xc0, credits 8, nob 56, checksum 0
	//	10  source NID 0x00050000c0000205, source stamp 1234567890123
	//	20  destination NID 0x00050001c0000206, destination stamp 0
	//	30  queue depth 8, max fragments 256, max message size 4096
	lustreConnReqLE = hexOctets(`
		91 1b e9 0b 12 00 c0 08  38 00 00 00 00 00 00 00
		05 02 00 c0 00 00 05 00  cb 04 fb 71 1f 01 00 00
		06 02 00 c0 01 00 05 00  00 00 00 00 00 00 00 00
		08 00 00 01 00 10 00 00`)
	// A big-endian CONNACK (a big-endian host answering); tshark 4.0 knows
	// only the little-endian magic and decodes nothing of it.
	lustreConnAckBE = hexOctets(`
		0b e9 1b 91 00 11 c1 07  00 00 00 38 00 00 00 00
		00 05 00 00 c0 00 02 06  00 00 00 00 00 00 00 2a
		00 05 00 00 c0 00 02 05  00 00 01 1f 71 fb 04 cb
		00 10 00 20 00 00 20 00`)
	// The little-endian reject: version 0x12, why 7 (queue size), incarnation
	// 99, and the rejecting side's parameters. tshark 4.0 takes it for a
	// kib_msg: its lnet.ib.type is this why (0x07) and lnet.ib.nob the
	// incarnation.
	lustreRejLE = hexOctets(`
		91 1b e9 0b 12 00 07 00  63 00 00 00 00 00 00 00
		08 00 00 01 00 10 00 00`)
)

func TestLustreDecode(t *testing.T) {
	le, be := binary.ByteOrder(binary.LittleEndian), binary.ByteOrder(binary.BigEndian)
	req := &LustreO2IBMsg{ByteOrder: le, Magic: LustreO2IBMagic, Version: 0x12, Type: 0xc0, Credits: 8, Nob: 56,
		SrcNID: 0x00050000c0000205, SrcStamp: 1234567890123, DstNID: 0x00050001c0000206, QueueDepth: 8, MaxFrags: 256, MaxMsgSize: 4096}
	req.Contents, req.Payload = lustreConnReqLE, lustreConnReqLE[56:]
	ack := &LustreO2IBMsg{ByteOrder: be, Magic: LustreO2IBMagic, Version: 0x11, Type: 0xc1, Credits: 7, Nob: 56,
		SrcNID: 0x00050000c0000206, SrcStamp: 42, DstNID: 0x00050000c0000205, DstStamp: 1234567890123, QueueDepth: 16, MaxFrags: 32,
		MaxMsgSize: 8192}
	ack.Contents, ack.Payload = lustreConnAckBE, lustreConnAckBE[56:]
	rej := &LustreO2IBRej{ByteOrder: le, Magic: LustreO2IBMagic, Version: 0x12, Why: 7, Incarnation: 99, HasParams: true,
		QueueDepth: 8, MaxFrags: 256, MaxMsgSize: 4096}
	rej.Contents, rej.Payload = lustreRejLE, lustreRejLE[24:]
	old := lustreRejLE[:7]
	oldRej := &LustreO2IBRej{ByteOrder: le, Magic: LustreO2IBMagic, Version: 0x12, Why: 7}
	oldRej.Contents, oldRej.Payload = old, old[7:]
	v13 := patch(lustreConnReqLE, at(4, 0x13))
	bad := *req
	bad.Version = 0x13
	bad.Contents, bad.Payload = v13, v13[56:]
	runULPCases(t, []ulpCase{
		{name: "CONNREQ, little-endian", data: lustreConnReqLE, want: req,
			summary: "Lustre o2iblnd CONNREQ v0x12 credits=8 queue_depth=8 max_frags=256 max_msg_size=4096",
			fields: map[string]string{"byte_order": "little-endian", "version": "0x0012", "type": "0xc0", "credits": "8", "nob": "56",
				"src_nid": "192.0.2.5@o2ib", "dst_nid": "192.0.2.6@o2ib1", "queue_depth": "8", "max_frags": "256",
				"max_msg_size": "4096", "src_stamp": "0x0000011f71fb04cb"}},
		{name: "CONNACK, big-endian", data: lustreConnAckBE, want: ack,
			summary: "Lustre o2iblnd CONNACK v0x11 credits=7 queue_depth=16 max_frags=32 max_msg_size=8192",
			fields:  map[string]string{"byte_order": "big-endian", "src_nid": "192.0.2.6@o2ib"}},
		{name: "reject", data: lustreRejLE, want: rej, summary: "Lustre o2iblnd reject why=7 (message queue size does not match)",
			fields: map[string]string{"why": "7", "queue_depth": "8", "incarnation": "0x0000000000000063"}},
		{name: "old reject", data: old, want: oldRej, summary: "Lustre o2iblnd reject why=7 (message queue size does not match)"},
		{name: "version 0x13", data: v13, want: &bad, problem: "version 0x13 is neither 0x11 nor 0x12",
			summary: "Lustre o2iblnd CONNREQ v0x13 credits=8 queue_depth=8 max_frags=256 max_msg_size=4096"},
	})
	if LustreO2IBOrder(lustreConnReqLE) != le || LustreO2IBOrder(lustreConnAckBE) != be || LustreO2IBOrder(nvmeREJ) != nil {
		t.Error("byte order of the magic")
	}
	for nid, want := range map[uint64]string{0x00050000c0000205: "192.0.2.5@o2ib", 0x00020003c0a80101: "192.168.1.1@tcp3",
		0x0009000000000000: "0@lo", 0x0063000000000007: "7@net99-"} {
		if got := LustreNIDString(nid); got != want {
			t.Errorf("NID 0x%016x: %q, want %q", nid, got, want)
		}
	}
}
