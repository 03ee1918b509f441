package craft

import (
	"encoding/binary"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft/internal/inet"
)

// Floods for the memory budget: what each holder of state is made to hold,
// alone and all at once.
const (
	// FloodREQREPs is N CM REQ and REP pairs (RoCEv2, RFC 8797 data) whose
	// RTU never comes: each attempt stays unfinished to the end.
	FloodREQREPs = "req-reps"
	// FloodBigRecords is N records of BigRecord octets (the largest a
	// record may be), each an Ethernet frame of zeros.
	FloodBigRecords = "big-records"
	// FloodLargePD is N iWARP connections whose MPA Request carries
	// 60000 octets of private data, answered by a Reply: the details a
	// Markdown report would keep.
	FloodLargePD = "large-pd"
	// FloodCombined is every other kind at once (Combined), each in an
	// address space of its own, at counts that reach each limit: all their
	// state is held together, and the data path meets every hostile
	// family of issue 26.
	FloodCombined = "combined"
)

// BigRecord is the size of a FloodBigRecords record: the hard cap on a
// record's captured length.
const BigRecord = 16 << 20

// Combined gives each kind's count in a FloodCombined capture of scale 1
// (a larger --count multiplies them), in the order they are written.
var Combined = []struct {
	Kind  string
	Count int
}{
	{FloodTCPStreams, 100000},
	{FloodHalfMPA, 32768},
	{FloodREQs, 70000},
	{FloodREQREPs, 30000},
	{FloodRetries, 1000},
	{FloodDescending, 1000},
	{FloodRCConns, 9000},
	{FloodRCDirections, 5000},
	{FloodIWARPConns, 5000},
	{FloodOrphanReplies, 1100},
	{FloodLargePD, 300},
	{FloodBigRecords, 3},
	// The data path's hostile kinds (issue 26): lying lengths, Reads
	// beyond any cap, orphan packets, records before traffic, holes and
	// lost directions in iWARP traffic, many short iWARP connections, and
	// ordinary TCP before RDMA traffic.
	{FloodRCOrphanPackets, 5000},
	{FloodRCLyingLengths, 1000},
	{FloodRCReads, 2000},
	{FloodRecordsFirst, 10000},
	{FloodIWARPHole, 2000},
	{FloodIWARPLostResponder, 2000},
	{FloodIWARPSequential, 20000},
	{FloodTCPThenRDMA, 20000},
}

// floodREQREPs writes n REQ and REP pairs through emit.
func floodREQREPs(n int, emit func([]byte) error) error {
	x := Exchange{Transport: RoCEv2, Initiator: Peer{SendSize: 4096, ReceiveSize: 4096}, Responder: Peer{SendSize: 4096, ReceiveSize: 4096}}
	fs, err := x.Frames()
	if err != nil {
		return err
	}
	req, rep := fs[0].Data, fs[1].Data
	const ip = 14 + 12                      // the IPv4 source address, then the destination
	const local = 14 + 20 + 8 + 12 + 8 + 24 // a CM message's Local Communication ID
	for i := 0; i < n; i++ {
		addr := 0x0a000000 | uint32(i/50000)&0xffffff
		binary.BigEndian.PutUint32(req[local:], uint32(i))
		binary.BigEndian.PutUint32(req[ip:], addr)
		binary.BigEndian.PutUint32(rep[local:], uint32(i)^0x5a5a5a5a)
		binary.BigEndian.PutUint32(rep[local+4:], uint32(i)) // the Remote Communication ID
		binary.BigEndian.PutUint32(rep[ip+4:], addr)
		for _, f := range [][]byte{req, rep} {
			resealIPv4(f)
			if err := emit(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// floodLargePD writes n iWARP connections through emit, each Request with
// 60000 octets of private data.
func floodLargePD(n int, emit func([]byte) error) error {
	pd := make([]byte, 60000)
	for i := range pd {
		pd[i] = byte(i * 7)
	}
	for i := 0; i < n; i++ {
		x := IWARPExchange{Rev: 1, Index: i & 0xffff, Attempt: i >> 16, Initiator: Peer{Data: pd}}
		frames, err := x.Frames()
		if err != nil {
			return err
		}
		if err := emitAll(frames, emit); err != nil {
			return err
		}
	}
	return nil
}

// floodBigRecords writes n records of BigRecord octets through emit.
func floodBigRecords(n int, emit func([]byte) error) error {
	b := make([]byte, BigRecord)
	copy(b, []byte{0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5}) // a local experimental EtherType
	for i := 0; i < n; i++ {
		if err := emit(b); err != nil {
			return err
		}
	}
	return nil
}

// floodCombined writes every kind of Combined, count times each, through
// emit, each kind's IPv4 addresses moved to a /8 of its own (kind k: 20+k)
// so that no two kinds share a flow or a connection.
func floodCombined(scale int, emit func([]byte) error) error {
	for k, c := range Combined {
		first := byte(20 + k)
		moved := func(f []byte) error {
			if len(f) >= 34 && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45 {
				f[14+12], f[14+16] = first, first
				resealIPv4(f)
			}
			return emit(f)
		}
		if err := floodKind(c.Kind, c.Count*scale, moved); err != nil {
			return err
		}
	}
	return nil
}

// resealIPv4 recomputes what the addresses of an Ethernet frame over an
// IPv4 header of 20 octets enter into: the header checksum, the UDP or TCP
// checksum and a RoCEv2 ICRC (inet.FixTransport).
func resealIPv4(f []byte) {
	f[24], f[25] = 0, 0
	binary.BigEndian.PutUint16(f[24:], inet.Checksum(f[14:34], 0))
	inet.FixTransport(f, 14, 34, f[23])
}
