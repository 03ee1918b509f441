package layers

import "testing"

// softroce-demo-infiniband.pcap, frames 7 and 8 (tshark 4.0.17:
// infiniband.cm.req.private 000004050000fff4..., infiniband.cm.rep.private
// 000004040000fff4...): each side's UD QPN and its receive MTU, 65524.
var (
	ipoibREQReal = cat(hexOctets("0000 0405 0000 fff4"), make([]byte, 84))
	ipoibREPReal = cat(hexOctets("0000 0404 0000 fff4"), make([]byte, 188))
)

func TestIPoIBCMDecode(t *testing.T) {
	m := func(qpn, mtu uint32, data []byte) *IPoIBCMData {
		l := &IPoIBCMData{QPN: qpn, MTU: mtu}
		l.Contents, l.Payload = data[:8], data[8:]
		return l
	}
	wide := hexOctets("0100 0000 0000 0800")
	runULPCases(t, []ulpCase{
		{name: "REQ (real)", data: ipoibREQReal, want: m(0x405, 65524, ipoibREQReal), summary: "IPoIB-CM qpn=0x000405 mtu=65524",
			fields: map[string]string{"qpn": "0x000405", "mtu": "65524"}},
		{name: "REP (real)", data: ipoibREPReal, want: m(0x404, 65524, ipoibREPReal), summary: "IPoIB-CM qpn=0x000404 mtu=65524"},
		{name: "QPN over 24 bits", data: wide, want: m(0x01000000, 2048, wide), problem: "QPN 0x01000000 has more than 24 bits",
			summary: "IPoIB-CM qpn=0x1000000 mtu=2048"},
	})
	for _, tc := range []struct {
		sid  uint64
		want bool
	}{{0x1000000000000404, true}, {0x1000000000ffffff, true}, {0x1000000001000000, false}, {0x0000000001061144, false}} {
		if IsIPoIBCMServiceID(tc.sid) != tc.want {
			t.Errorf("IsIPoIBCMServiceID(0x%016x) = %v", tc.sid, !tc.want)
		}
	}
}
