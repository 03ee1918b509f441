package craft

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	golayers "github.com/gopacket/gopacket/layers"

	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestNFSTrafficFrames decodes every frame of the NFS-like exchange on each
// transport with gopacket and checks what the data path relies on: correct
// ICRCs (and VCRCs), each side's request PSNs consecutive from the Starting
// PSN the other side's CM message gave (a READ Request taking one per path
// MTU), SEND and RDMA WRITE packets of exactly the path MTU but the last,
// and a pad only on the last.
func TestNFSTrafficFrames(t *testing.T) {
	for _, tr := range []Transport{RoCEv2, RoCEv1, InfiniBand} {
		t.Run(string(tr), func(t *testing.T) {
			x := Exchange{Transport: tr, Initiator: Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
				Responder: Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true}}
			frames, err := x.NFSTraffic(Traffic{})
			if err != nil {
				t.Fatal(err)
			}
			first := gopacket.Decoder(golayers.LayerTypeEthernet)
			if tr == InfiniBand {
				first = golayers.LinkType(layers.LinkTypeIB)
			}
			next := map[uint32]uint32{x.qpn(true): x.startPSN(true), x.qpn(false): x.startPSN(false)}
			mtu := 1024
			sends, writes, swi := 0, 0, 0
			for i, f := range frames {
				p := gopacket.NewPacket(f.Data, first, gopacket.Default)
				if el := p.ErrorLayer(); el != nil {
					t.Fatalf("frame %d: %v", i+1, el.Error())
				}
				bth := p.Layer(layers.LayerTypeBTH).(*layers.BTH)
				checkCRCs(t, i+1, tr, f.Data, bth)
				if bth.OpCode == layers.OpUDSendOnly {
					continue // the CM messages
				}
				op := bth.OpCode
				isRequest := op <= layers.OpReadRequest || op == layers.OpSendLastInvalidate || op == layers.OpSendOnlyInvalidate
				if !isRequest {
					continue
				}
				if want := next[bth.DestQP]; bth.PSN != want {
					t.Errorf("frame %d: PSN %#x to QP %#x, want %#x", i+1, bth.PSN, bth.DestQP, want)
				}
				n := uint32(1)
				if r, ok := p.Layer(layers.LayerTypeRETH).(*layers.RETH); ok && op == layers.OpReadRequest {
					n = (r.DMALength + uint32(mtu) - 1) / uint32(mtu)
				}
				next[bth.DestQP] = bth.PSN + n
				payload := len(bth.Payload)
				for _, l := range p.Layers() {
					switch l.LayerType() {
					case layers.LayerTypeRETH, layers.LayerTypeIETH, layers.LayerTypeImmDt:
						payload -= len(l.LayerContents())
					}
				}
				switch op {
				case layers.OpSendFirst, layers.OpSendMiddle, layers.OpWriteFirst, layers.OpWriteMiddle:
					if payload != mtu || bth.PadCnt != 0 {
						t.Errorf("frame %d: opcode %#x with %d octets and PadCnt %d, want the path MTU %d unpadded", i+1, op, payload, bth.PadCnt, mtu)
					}
				}
				switch op {
				case layers.OpSendFirst, layers.OpSendOnly, layers.OpSendOnlyInvalidate:
					sends++
				case layers.OpWriteFirst, layers.OpWriteOnly:
					writes++
				}
				if op == layers.OpSendOnlyInvalidate || op == layers.OpSendLastInvalidate {
					swi++
				}
			}
			// 5 Calls and 5 Replies; 2 RDMA WRITEs; the Replies to the three
			// Calls with chunks invalidate.
			if sends != 10 || writes != 2 || swi != 3 {
				t.Errorf("%d Sends, %d RDMA WRITEs, %d Sends With Invalidate", sends, writes, swi)
			}
		})
	}
}

func checkCRCs(t *testing.T, n int, tr Transport, b []byte, bth *layers.BTH) {
	t.Helper()
	end := len(b)
	if tr == InfiniBand {
		v := binary.LittleEndian.Uint16(b[end-2:])
		end -= 2
		if got := layers.VCRC(b[:end]); got != v {
			t.Errorf("frame %d: VCRC %#x, the packet gives %#x", n, v, got)
		}
	}
	stored := binary.LittleEndian.Uint32(b[end-4:])
	var crc uint32
	switch tr {
	case RoCEv2:
		crc = layers.ICRCRoCEv2(b[14:34], b[34:42], b[42:end-4])
	case RoCEv1:
		crc = layers.ICRCGRH(b[14:54], b[54:end-4])
	default:
		crc = layers.ICRCLRH(b[:8], b[8:end-4])
	}
	if crc != stored || crc != bth.ICRC {
		t.Errorf("frame %d: ICRC %#x, the packet gives %#x", n, stored, crc)
	}
}

func TestNFSTrafficRefuses(t *testing.T) {
	if _, err := (&Exchange{Transport: RoCEv2}).NFSTraffic(Traffic{Findings: []string{"icrc-mismatch"}}); err == nil {
		t.Error("a finding that is not the data path's was taken")
	}
	if _, err := (&Exchange{Transport: RoCEv2, Reject: true}).NFSTraffic(Traffic{}); err == nil {
		t.Error("traffic on a rejected connection")
	}
	if _, err := (&Exchange{Transport: IWARP}).NFSTraffic(Traffic{}); err == nil {
		t.Error("traffic over iWARP")
	}
}
