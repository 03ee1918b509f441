package layers

import "testing"

// rsockets connection data as librdmacm's rs_format_conn_data writes it on
// a little-endian host (tshark 4.0 decodes no rsocket data).
//
//	00  version 1, flags 0x02 (iomap), credits 384 (0x0180), 3 reserved, iomap size 0
//	08  target SGL: address 0x00007f0012340000, rkey 0x00001a2b, 2 entries
//	18  data buffer: address 0x00007f0056780000, rkey 0x00003c4d, 65536 octets
var rsocketREQ = hexOctets(`
	01 02 01 80 00 00 00 00  00 00 7f 00 12 34 00 00
	00 00 1a 2b 00 00 00 02  00 00 7f 00 56 78 00 00
	00 00 3c 4d 00 01 00 00`)

func TestRSocketDecode(t *testing.T) {
	m := &RSocketConnData{Version: 1, Flags: 2, Credits: 384, TargetSGLAddr: 0x00007f0012340000, TargetSGLKey: 0x1a2b,
		TargetSGLLength: 2, DataBufAddr: 0x00007f0056780000, DataBufKey: 0x3c4d, DataBufLength: 65536}
	m.Contents, m.Payload = rsocketREQ, rsocketREQ[40:]
	v2 := patch(rsocketREQ, at(0, 2))
	bad := *m
	bad.Version = 2
	bad.Contents, bad.Payload = v2, v2[40:]
	scaled := patch(rsocketREQ, at(7, 0x84))
	big := *m
	big.TargetIOMapSize = 0x84
	big.Contents, big.Payload = scaled, scaled[40:]
	runULPCases(t, []ulpCase{
		{name: "version 1", data: rsocketREQ, want: m, summary: "rsockets v1 credits=384 data_buf_length=65536",
			fields: map[string]string{"version": "1", "flags": "0x02", "credits": "384", "target_sgl_length": "2",
				"target_sgl_key": "0x00001a2b", "data_buf_addr": "0x00007f0056780000", "target_iomap_size": "0"}},
		{name: "version 2", data: v2, want: &bad, problem: "version 2 is not 1", summary: "rsockets v2 credits=384 data_buf_length=65536"},
		{name: "scaled iomap size", data: scaled, want: &big, summary: "rsockets v1 credits=384 data_buf_length=65536",
			fields: map[string]string{"target_iomap_size": "1024"}},
	})
	if RSocketScaleToValue(128) != 128 || RSocketScaleToValue(0x81) != 256 {
		t.Errorf("scale: %d %d", RSocketScaleToValue(128), RSocketScaleToValue(0x81))
	}
	var z RSocketConnData
	decodeOK(t, &z, make([]byte, 40))
	if z.Plausible() {
		t.Error("zeros are rsocket data")
	}
}
