package dissect_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/datapath"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// TestNFSWorkload is the NFS/RDMA-like performance workload at a small
// size, with reconnections: every connection and RPC-over-RDMA message the
// generator put in is found, every RC frame belongs to its connection, and
// its traffic, which keeps to what was negotiated, raises no finding but
// the advice its Long Calls and Long Replies call for
// (inline-threshold-too-small), which they all count in.
// docs/performance.sh checks the same at 1 GiB.
func TestNFSWorkload(t *testing.T) {
	var buf bytes.Buffer
	counts, err := (craft.NFSWorkload{Size: 24 << 20, Seed: 5, Connections: 4, ReconnectEvery: 60}).Write(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Disconnects < 4 || counts.Reads == 0 || counts.Writes == 0 || counts.Small == 0 || counts.TCPBulk == 0 ||
		counts.LongCalls == 0 || counts.LongReplies == 0 {
		t.Fatalf("workload %v", counts)
	}
	path := filepath.Join(t.TempDir(), "nfs.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c := runDatapathFile(t, datapath.ModeFindings, path)
	s := c.sum
	if s.Frames != counts.Frames || s.Messages != counts.Messages() || s.Connections[record.Established] != counts.Setups ||
		s.RPCMessages != counts.RPCMessages || s.DatapathOrphanFrames != 0 || len(s.Findings) != 1 || s.Findings[finding.InlineThresholdTooSmall] == 0 ||
		len(c.rpcs) != 0 || s.StateDrops != 0 {
		t.Errorf("summary: %d frames, %d messages, %v, %d rpc messages, %d orphan frames, findings %v; workload %v",
			s.Frames, s.Messages, s.Connections, s.RPCMessages, s.DatapathOrphanFrames, s.Findings, counts)
	}
	invalidating, frames := 0, 0
	var long [2]int
	for _, conn := range c.conns {
		if conn.Datapath == nil {
			t.Fatalf("connection of frame %d: no data path", conn.RequestFrame)
		}
		invalidating += conn.Datapath.SendWithInvalidate
		frames += conn.Datapath.Frames
		long[0] += conn.Datapath.LongMessages[0]
		long[1] += conn.Datapath.LongMessages[1]
		if conn.Datapath.ChunkViolations != 0 {
			t.Errorf("connection %d: %d chunk violations", conn.Number, conn.Datapath.ChunkViolations)
		}
	}
	if invalidating != counts.Invalidating || frames != counts.RCFrames || long != [2]int{counts.LongCalls, counts.LongReplies} {
		t.Errorf("%d Sends With Invalidate, %d RC frames, long messages %v; workload %v", invalidating, frames, long, counts)
	}
}

// The same seed writes the same octets; another seed, others.
func TestNFSWorkloadReproducible(t *testing.T) {
	var a, b, c bytes.Buffer
	for _, w := range []struct {
		buf  *bytes.Buffer
		seed uint64
	}{{&a, 9}, {&b, 9}, {&c, 10}} {
		if _, err := (craft.NFSWorkload{Size: 1 << 20, Seed: w.seed}).Write(w.buf); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) || bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Error("the workload is not reproducible from its seed")
	}
}

// TestIWARPWorkload is the iWARP NFS-like performance workload at a small
// size: every connection is followed, with markers on every fourth and CRC
// on every second (a wrong or missing CRC would be flagged); every Call and Reply is found, every Reply's Send with
// Invalidate names its Call's STag, and nothing is flagged.
// docs/performance.sh checks the same at 1 GiB.
func TestIWARPWorkload(t *testing.T) {
	var buf bytes.Buffer
	counts, err := (craft.IWARPWorkload{Size: 8 << 20, Seed: 3, Conns: 16, CRCEvery: 2}).Write(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if counts.MarkedConns != 4 || counts.CRCConns != 8 || counts.Calls == 0 || counts.Replies != counts.Calls {
		t.Fatalf("workload %v", counts)
	}
	path := filepath.Join(t.TempDir(), "iwarp.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c := runDatapathFile(t, datapath.ModeFindings, path)
	s := c.sum
	if s.Frames != counts.Frames || s.Connections[record.Established] != counts.Conns || s.RPCMessages != counts.Calls+counts.Replies ||
		s.DatapathOrphanFrames != 0 || len(s.Findings) != 0 || len(c.rpcs) != 0 || s.StateDrops != 0 {
		t.Errorf("summary: %d frames, %v, %d rpc messages, %d orphan frames, findings %v, %d drops; workload %v",
			s.Frames, s.Connections, s.RPCMessages, s.DatapathOrphanFrames, s.Findings, s.StateDrops, counts)
	}
	invalidating := 0
	var written int64 // into the write chunks, by RDMA Write
	for _, conn := range c.conns {
		if conn.Datapath == nil {
			t.Fatalf("connection of frame %d: no data path", conn.RequestFrame)
		}
		invalidating += conn.Datapath.SendWithInvalidate
		written += conn.Datapath.ExplicitRDMAOctets[1]
	}
	if invalidating != counts.SendWithInvalidates {
		t.Errorf("%d Sends with Invalidate; workload %v", invalidating, counts)
	}
	if want := int64(counts.Calls) * 32 << 10; written != want { // every READ's 32 KiB
		t.Errorf("%d octets written into chunks, want %d", written, want)
	}
}
