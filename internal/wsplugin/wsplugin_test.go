package wsplugin

import (
	"strings"
	"testing"
)

// TestFieldNames: the dissector declares the fields the issue names, with
// the JSON's keys, and the CM messages' private data places.
func TestFieldNames(t *testing.T) {
	lua := Lua("rdmacm-pd test")
	for _, f := range []string{"format_identifier", "version", "reserved", "remote_invalidate", "send_size", "receive_size",
		"send_size_encoded", "receive_size_encoded"} {
		if !strings.Contains(lua, `"rpcrdma_cm.`+f+`"`) {
			t.Errorf("no field rpcrdma_cm.%s", f)
		}
	}
	for _, s := range []string{`Proto("rpcrdma_cm"`, `[0x0010] = { name = "REQ", offset = 140, size = 92 }`,
		`[0x0013] = { name = "REP", offset = 36, size = 196 }`, `[0x0012] = { name = "REJ", offset = 84, size = 148 }`,
		`local ID = "\xf6\xab\x0e\x18"`, "SIZE_BASE, SIZE_STEP = 1024, 1024", `"rpcrdma_cm.reserved", "Reserved", base.HEX, nil, 0xfe`,
		`"rpcrdma_cm.remote_invalidate", "R", 8, nil, 0x01`, "register_postdissector(proto)"} {
		if !strings.Contains(lua, s) {
			t.Errorf("the dissector lacks %s", s)
		}
	}
}
