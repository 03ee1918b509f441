//go:build linux && !pcap

package live

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Backend names the capture mechanism of this build.
const Backend = "AF_PACKET"

// afHandle captures with a TPACKET_V3 ring on an AF_PACKET socket.
type afHandle struct {
	name string
	tp   *afpacket.TPacket
	buf  []byte
}

// Open starts capturing on an interface.
func Open(name string, opts Options) (Handle, error) {
	if opts.Expr != "" {
		return nil, errors.New("-f needs the libpcap build (go build -tags pcap); this pure-Go build filters with --port and --host")
	}
	ifi, err := checkInterface(name)
	if err != nil {
		return nil, err
	}
	snap := opts.Snaplen
	if snap <= 0 {
		snap = accept
	}
	// Blocks of 2 MiB hold the largest frame (snap length 262144) many
	// times over; 16 of them make a 32 MiB ring.
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(name),
		afpacket.OptFrameSize(1<<18),
		afpacket.OptBlockSize(1<<21),
		afpacket.OptNumBlocks(16),
		afpacket.OptPollTimeout(PollInterval),
		afpacket.OptAddVLANHeader(true),
		afpacket.OptTPacketVersion(afpacket.TPacketVersion3),
	)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, os.ErrPermission) {
			return nil, permissionError(name, err)
		}
		return nil, fmt.Errorf("capturing on %s: %v", name, err)
	}
	h := &afHandle{name: name, tp: tp}
	f := opts.Filter
	f.Loopback = ifi.Flags&net.FlagLoopback != 0
	prog, err := f.Program()
	if err != nil {
		h.Close()
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("filter: %v", err)
	}
	if err := tp.SetBPF(raw); err != nil {
		h.Close()
		return nil, fmt.Errorf("attaching the filter on %s: %v", name, err)
	}
	if opts.Promisc && ifi.Flags&net.FlagLoopback == 0 {
		if err := tp.SetPromiscuous(true); err != nil {
			h.Close()
			return nil, fmt.Errorf("promiscuous mode on %s: %v", name, err)
		}
	}
	return h, nil
}

func (h *afHandle) Name() string     { return h.name }
func (h *afHandle) LinkType() uint16 { return 1 } // AF_PACKET raw sockets deliver Ethernet frames

func (h *afHandle) Read() ([]byte, int, time.Time, error) {
	data, ci, err := h.tp.ZeroCopyReadPacketData()
	if err != nil {
		if errors.Is(err, afpacket.ErrTimeout) {
			return nil, 0, time.Time{}, ErrTimeout
		}
		return nil, 0, time.Time{}, err
	}
	return data, ci.Length, ci.Timestamp, nil
}

func (h *afHandle) Close() error {
	h.tp.Close()
	return nil
}

// Interfaces lists the interfaces AF_PACKET can capture on.
func Interfaces() ([]Interface, error) { return netInterfaces() }
