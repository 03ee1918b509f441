package dissect_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// The third-party captures (see SOURCES.md beside them) are read in place
// from interopRealDir, never copied into this repository, and the tests
// skip without them.
func realCapture(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(interopRealDir(), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real capture %s not present: %v", name, err)
	}
	return p
}

// TestRealCaptures checks what the dissector finds in each real capture:
// the CM messages in order (frame and name), that every CRC verifies, and
// that captures without CM traffic give nothing.
func TestRealCaptures(t *testing.T) {
	type msg struct {
		Frame int
		Name  string
	}
	lab := []msg{{1, "REQ"}, {2, "REP"}, {3, "RTU"}, {11, "DREQ"}, {12, "DREP"}}
	cases := map[string][]msg{
		"roce-lab-roce_capture_read-write-ecn.pcap": lab,
		"roce-lab-test.pcap":                        {{1, "REQ"}, {2, "REP"}, {3, "RTU"}, {11, "DREQ"}, {16, "DREP"}},
		"softroce-demo-infiniband.pcap": {{7, "REQ"}, {8, "REP"}, {9, "RTU"}, {27, "REQ"}, {28, "REP"}, {29, "RTU"},
			{34, "REQ"}, {35, "REP"}, {37, "RTU"}},
		"softroce-demo-demo_capture.pcap":         nil,
		"softroce-demo-rdma_traffic_capture.pcap": nil,
		"proxy-roce.pcap":                         nil,
		"rocev1.pcap":                             nil,
		"rocev1_test.pcap":                        nil,
		"rocev2_test.pcap":                        nil,
		"rocev2-2_test.pcap":                      nil,
		"ib_send_bw_over_roce.pcap":               nil,
		"dc_dc-small.pcap":                        nil,
		"dc_rc-small.pcap":                        nil,
		"uc_uc_sg_send_uc-sg.pcap":                nil,
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			p := realCapture(t, name)
			var c collect
			sum, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c)
			if err != nil {
				t.Fatal(err)
			}
			inputs := sum.Inputs
			var got []msg
			for _, m := range c.msgs {
				got = append(got, msg{m.Frame, m.Name()})
				if m.IB.ICRC == nil || !m.IB.ICRC.Valid {
					t.Errorf("frame %d: ICRC %+v", m.Frame, m.IB.ICRC)
				}
				if m.Transport == record.InfiniBand && (m.IB.VCRC == nil || !m.IB.VCRC.Valid) {
					t.Errorf("frame %d: VCRC %+v", m.Frame, m.IB.VCRC)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("messages %v, want %v", got, want)
			}
			if inputs[0].Frames == 0 || inputs[0].Err != nil {
				t.Errorf("input %+v", inputs[0])
			}
		})
	}
}

// TestRealIPCM: the Soft-RoCE REQ carries an IP CM header for RDMA_PS_TCP
// port 7471 and no RFC 8797 message; its REP carries application bytes.
func TestRealIPCM(t *testing.T) {
	p := realCapture(t, "roce-lab-roce_capture_read-write-ecn.pcap")
	var c collect
	if _, err := dissect.Run(context.Background(), []string{p}, nil, dissect.Config{}, &c); err != nil {
		t.Fatal(err)
	}
	req := c.msgs[0]
	if req.ServiceID != 0x0000000001061d2f || req.ExpectedOffset != 36 || req.Layers().IPCM == nil || req.RPCRDMA != nil {
		t.Fatalf("REQ: sid %x, expected offset %d, ip cm %v", req.ServiceID, req.ExpectedOffset, req.Layers().IPCM != nil)
	}
	if got := codes(req.Findings); !reflect.DeepEqual(got, []string{"rpcrdma-absent"}) {
		t.Errorf("REQ findings %v", req.Findings)
	}
	fields := map[string]string{}
	for _, f := range req.Layers().IPCM {
		fields[f.Key] = f.Text()
	}
	if fields["ip_version"] != "4" || fields["src"] != req.Src.String() || fields["dst"] != req.Dst.String() {
		t.Errorf("IP CM header %v, addresses %s → %s", fields, req.Src, req.Dst)
	}
}
