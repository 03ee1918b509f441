package dissect_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/dissect"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestUpdatesIWARP: iWARP connections whose setups all come before their
// traffic, at --max-connections 1: every record but the last is handed on
// before its traffic is linked, and each connection's finding (two RDMA
// Reads outstanding where MPA revision 2's ORD and IRD allow one) comes in
// its update; none is lost, and the summary counts each once.
func TestUpdatesIWARP(t *testing.T) {
	const n = 5
	read := func(i uint32) craft.IWARPMessage {
		return craft.IWARPMessage{Opcode: layers.RDMAPOpReadRequest,
			Read: &layers.RDMAPReadRequest{SinkSTag: 0x100 + i, Size: 64, SourceSTag: 0x200 + i, SourceTO: 0x1000}}
	}
	var setups, traffic []craft.Frame
	for i := range n {
		x := craft.IWARPExchange{Rev: 2, Index: i, Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096},
			Responder: craft.Peer{SendSize: 4096, ReceiveSize: 4096}, RequestORD: 1, ReplyIRD: 1,
			Traffic: []craft.IWARPMessage{read(1), read(2)}}
		fs, err := x.Frames()
		if err != nil {
			t.Fatal(err)
		}
		setups = append(setups, fs[:5]...) // the handshake, the MPA Request and Reply
		traffic = append(traffic, fs[5:]...)
	}
	frames := append(setups, traffic...)
	for i := range frames {
		frames[i].Time = craft.DefaultStart.Add(time.Duration(i) * time.Millisecond)
	}
	path := filepath.Join(t.TempDir(), "iwarp-first.pcap")
	if err := craft.WriteFile(path, frames); err != nil {
		t.Fatal(err)
	}
	c := runFile(t, path, dissect.Config{MaxConnections: 1})
	inRecords := 0
	for _, x := range c.conns {
		if hasFinding(x.Findings, finding.RDMAReadLimitExceeded) {
			inRecords++
		}
	}
	inUpdates := map[int]bool{}
	for _, u := range c.updates {
		if hasFinding(u.Findings, finding.RDMAReadLimitExceeded) && u.Datapath != nil && u.Datapath.Frames > 0 {
			inUpdates[u.RequestFrame] = true
		}
	}
	if len(c.conns) != n || inRecords != 1 || len(inUpdates) != n-1 ||
		c.sum.Findings[finding.RDMAReadLimitExceeded] != n {
		t.Errorf("%d connections, %d findings on records, updates of %v, summary %v", len(c.conns), inRecords, inUpdates, c.sum.Findings)
	}
}
