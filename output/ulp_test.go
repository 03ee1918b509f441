package output_test

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestULPDocumented: docs/json.md names every key of every upper layer's
// "ulp" object, and of each coded value with a name its "_name" key.
func TestULPDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	a := netip.MustParseAddr("192.0.2.1")
	for _, l := range []layers.ULPPrivateData{&layers.NVMeRDMACMReq{}, &layers.NVMeRDMACMRep{}, &layers.NVMeRDMACMRej{Status: 6},
		&layers.ISERCMHeader{}, &layers.SRPLoginReq{}, &layers.SRPLoginReqRDMA{}, &layers.SRPLoginRsp{Opcode: layers.SRPLoginRspOp, BufFmt: 6},
		&layers.SRPLoginRej{Opcode: layers.SRPLoginRejOp, Reason: 0x00010001, BufFmt: 6}, &layers.RDSConnect{SrcAddr: a, DstAddr: a},
		&layers.RSocketConnData{Flags: 3}, &layers.LustreO2IBMsg{Type: layers.LustreO2IBConnReq},
		&layers.LustreO2IBRej{HasParams: true, Why: 1}, &layers.SDPHello{IPVersion: 4, SrcAddr: a, DstAddr: a, Capabilities: 1},
		&layers.SDPHelloAck{SDPBSDH: layers.SDPBSDH{MID: 1}, Capabilities: 1}, &layers.IPoIBCMData{}} {
		for _, f := range l.Fields() {
			if !strings.Contains(doc, "| `"+f.Key+"` | "+f.Name+" |") {
				t.Errorf("docs/json.md does not list the %s key %q (%s)", l.LayerType(), f.Key, f.Name)
			}
			if f.Note != "" && !strings.Contains(doc, "`"+f.Key+"_name`") {
				t.Errorf("docs/json.md does not name the %s key %q", l.LayerType(), f.Key+"_name")
			}
		}
	}
}
