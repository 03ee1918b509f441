package layers

import "testing"

// The NVMe-oF vectors. nvme-discover2.pcap (../shared/captures/real): the
// REQ's consumer data after the IP CM header (tshark 4.0.17:
// infiniband.cm.req.ip_cm.private) and the REP's private data (tshark:
// nvme-rdma.cm.rsp.recfmt 0, crqsize 33).
var (
	// recfmt 0, qid 0, hrqsize 32, hsqsize 31, cntlid 0, then reserved.
	nvmeREQReal = cat(hexOctets("0000 0000 2000 1f00 0000"), make([]byte, 46))
	// recfmt 0, crqsize 33, then 192 zero octets of the IB CM REP's area.
	nvmeREPReal = cat(hexOctets("0000 2100"), make([]byte, 192))
	// An I/O queue: qid 3, hrqsize 128, hsqsize 127, cntlid 0x0a01.
	nvmeREQIO = hexOctets("0000 0300 8000 7f00 010a 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000")
	// Linux's REP (8 octets) with stack garbage where the reserved octets are.
	nvmeREPGarbage = hexOctets("0000 2000 a5ff 1c88")
	// RDMA No Resources (tshark: nvme-rdma.cm.rej.status 0x0006).
	nvmeREJ = hexOctets("0000 0600")
)

func TestNVMeRDMADecode(t *testing.T) {
	withBase := func(l ULPPrivateData, data []byte, n int) ULPPrivateData {
		switch m := l.(type) {
		case *NVMeRDMACMReq:
			m.Contents, m.Payload = data[:n], data[n:]
		case *NVMeRDMACMRep:
			m.Contents, m.Payload = data[:n], data[n:]
		case *NVMeRDMACMRej:
			m.Contents, m.Payload = data[:n], data[n:]
		}
		return l
	}
	recfmt1 := patch(nvmeREQIO, at(0, 1))
	noRQ := patch(nvmeREQIO, at(4, 0, 0))
	shortREQ := nvmeREQIO[:10]
	runULPCases(t, []ulpCase{
		{name: "admin REQ (real)", data: nvmeREQReal,
			want:    withBase(&NVMeRDMACMReq{HRQSize: 32, HSQSize: 31}, nvmeREQReal, 32),
			summary: "NVMe-oF qid=0 hrqsize=32 hsqsize=31",
			fields:  map[string]string{"recfmt": "0", "qid": "0", "hrqsize": "32", "hsqsize": "31", "cntlid": "0"}},
		{name: "I/O queue REQ", data: nvmeREQIO,
			want:    withBase(&NVMeRDMACMReq{QID: 3, HRQSize: 128, HSQSize: 127, CntlID: 0x0a01}, nvmeREQIO, 32),
			summary: "NVMe-oF qid=3 hrqsize=128 hsqsize=127 cntlid=2561"},
		{name: "REQ through CNTLID only", data: shortREQ,
			want:    withBase(&NVMeRDMACMReq{QID: 3, HRQSize: 128, HSQSize: 127, CntlID: 0x0a01}, shortREQ, 10),
			summary: "NVMe-oF qid=3 hrqsize=128 hsqsize=127 cntlid=2561"},
		{name: "REQ record format 1", data: recfmt1,
			want:    withBase(&NVMeRDMACMReq{RecFmt: 1, QID: 3, HRQSize: 128, HSQSize: 127, CntlID: 0x0a01}, recfmt1, 32),
			problem: "RECFMT is 1, not 0", summary: "NVMe-oF qid=3 hrqsize=128 hsqsize=127 cntlid=2561"},
		{name: "REQ without receive queue", data: noRQ,
			want:    withBase(&NVMeRDMACMReq{QID: 3, HSQSize: 127, CntlID: 0x0a01}, noRQ, 32),
			problem: "HRQSIZE is 0", summary: "NVMe-oF qid=3 hrqsize=0 hsqsize=127 cntlid=2561"},
		{name: "REP (real)", data: nvmeREPReal, want: withBase(&NVMeRDMACMRep{CRQSize: 33}, nvmeREPReal, 32),
			summary: "NVMe-oF crqsize=33", fields: map[string]string{"recfmt": "0", "crqsize": "33"}},
		// Reserved octets are not judged: Linux leaves garbage there.
		{name: "REP with garbage in reserved", data: nvmeREPGarbage, want: withBase(&NVMeRDMACMRep{CRQSize: 32}, nvmeREPGarbage, 8),
			summary: "NVMe-oF crqsize=32"},
		{name: "REJ no resources", data: nvmeREJ, want: withBase(&NVMeRDMACMRej{Status: 6}, nvmeREJ, 4),
			summary: "NVMe-oF status=6 (RDMA No Resources)", fields: map[string]string{"status": "6"}},
		{name: "REJ reserved status", data: hexOctets("0000 2000"), want: withBase(&NVMeRDMACMRej{Status: 32}, hexOctets("0000 2000"), 4),
			problem: "STS 32 is reserved", summary: "NVMe-oF status=32"},
	})
}

func TestNVMeRDMAPlausible(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		want bool
	}{
		{nvmeREQReal, true},
		{nvmeREQIO, true},
		{make([]byte, 56), false},                           // zero: no receive queue
		{patch(nvmeREQIO, at(6, 0x80, 0)), false},           // send queue deeper than the receive queue
		{patch(nvmeREQIO, at(0, 0, 1)), false},              // recfmt 0x0100
		{hexOctets("0000 0405 0000 fff4 0000 0000"), false}, // IPoIB-CM's private data
	} {
		var m NVMeRDMACMReq
		decodeOK(t, &m, tc.data)
		if m.Plausible() != tc.want {
			t.Errorf("%x: Plausible %v, want %v", tc.data[:12], m.Plausible(), tc.want)
		}
	}
	for s := uint16(0); s < 12; s++ {
		if (NVMeRDMAStatusName(s) != "") != (s >= 1 && s <= 9) {
			t.Errorf("status %d named %q", s, NVMeRDMAStatusName(s))
		}
	}
}
