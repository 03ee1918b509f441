//go:build linux && !pcap

package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	golayers "github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Backend names the capture mechanism of this build.
const Backend = "AF_PACKET"

// afHandle captures with a TPACKET_V3 ring on an AF_PACKET socket.
type afHandle struct {
	name string
	link uint16
	tp   *afpacket.TPacket
}

// linkOf gives the LINKTYPE_* of the frames AF_PACKET delivers for an
// interface, or an error for the interfaces this backend cannot filter.
func linkOf(name string) (uint16, error) {
	b, err := os.ReadFile("/sys/class/net/" + name + "/type")
	if err != nil {
		return uint16(golayers.LinkTypeEthernet), nil // no sysfs: assume Ethernet, as most are
	}
	t, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return uint16(golayers.LinkTypeEthernet), nil
	}
	// The ARPHRD_* interface type (/sys/class/net/IFACE/type).
	switch t {
	case unix.ARPHRD_ETHER, unix.ARPHRD_LOOPBACK:
		return uint16(golayers.LinkTypeEthernet), nil
	case unix.ARPHRD_NONE, unix.ARPHRD_RAWIP, unix.ARPHRD_TUNNEL, unix.ARPHRD_TUNNEL6, unix.ARPHRD_SIT: // tun, WireGuard, IP tunnels: IP packets, no link header
		return uint16(golayers.LinkTypeRaw), nil
	case unix.ARPHRD_INFINIBAND:
		return 0, fmt.Errorf("%s is an IPoIB interface, which AF_PACKET shows without the InfiniBand headers: capture on the HCA (mlx5_0...) with the libpcap build (go build -tags pcap) or ibdump", name)
	}
	return 0, fmt.Errorf("%s has link type ARPHRD %d, which this build cannot capture (Ethernet and raw IP interfaces only); try the libpcap build (go build -tags pcap) or tcpdump", name, t)
}

// OpenInterface starts capturing on an interface.
//
// The socket is made for no protocol at all, so that it receives nothing
// until the filter is attached; only then is it bound to every protocol on
// the interface. Nothing the filter would drop (nor the outgoing copies on
// loopback) reaches the ring, not even while the capture starts.
func OpenInterface(name string, opts LiveOptions) (Handle, error) {
	if opts.Expr != "" {
		return nil, errors.New("-f needs the libpcap build (go build -tags pcap); this pure-Go build filters with --port and --host")
	}
	ifi, err := checkInterface(name)
	if err != nil {
		return nil, err
	}
	link, err := linkOf(name)
	if err != nil {
		return nil, err
	}
	f := opts.Filter
	f.Loopback = ifi.Flags&net.FlagLoopback != 0
	prog, err := f.ProgramFor(link)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("filter: %v", err)
	}
	// Blocks of 2 MiB hold the largest frame (snap length 262144) many
	// times over; 16 of them make a 32 MiB ring.
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(name),
		afpacket.OptProtocol(0),
		afpacket.OptFrameSize(1<<18),
		afpacket.OptBlockSize(1<<21),
		afpacket.OptNumBlocks(16),
		afpacket.OptPollTimeout(PollInterval),
		afpacket.OptAddVLANHeader(true),
		afpacket.OptTPacketVersion(afpacket.TPacketVersion3),
	)
	if err != nil {
		if isPermission(err) {
			return nil, permissionError(name, err)
		}
		return nil, fmt.Errorf("capturing on %s: %v", name, err)
	}
	h := &afHandle{name: name, link: link, tp: tp}
	if err := tp.SetBPF(raw); err != nil {
		h.Close()
		return nil, attachError(name, len(raw), err)
	}
	fd, err := tpacketFD(tp)
	if err != nil {
		h.Close()
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		h.Close()
		if isPermission(err) {
			return nil, permissionError(name, err)
		}
		return nil, fmt.Errorf("capturing on %s: %v", name, err)
	}
	if opts.Promisc && ifi.Flags&net.FlagLoopback == 0 {
		if err := tp.SetPromiscuous(true); err != nil {
			h.Close()
			return nil, fmt.Errorf("promiscuous mode on %s: %v", name, err)
		}
	}
	return h, nil
}

func isPermission(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, os.ErrPermission)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// tpacketFD is the TPacket's socket, which gopacket keeps to itself.
func tpacketFD(tp *afpacket.TPacket) (int, error) {
	v := reflect.ValueOf(tp).Elem().FieldByName("fd")
	if !v.IsValid() || !v.CanInt() || v.Int() < 0 {
		return 0, errors.New("capturing: this gopacket/afpacket version hides its socket differently (rdmacm-pd needs an update)")
	}
	return int(v.Int()), nil
}

func (h *afHandle) Name() string     { return h.name }
func (h *afHandle) LinkType() uint16 { return h.link }

func (h *afHandle) Read() ([]byte, int, time.Time, error) {
	data, ci, err := h.tp.ZeroCopyReadPacketData()
	if err != nil {
		if errors.Is(err, afpacket.ErrTimeout) {
			return nil, 0, time.Time{}, ErrTimeout
		}
		return nil, 0, time.Time{}, readError(h.name, err)
	}
	return data, ci.Length, ci.Timestamp, nil
}

func (h *afHandle) Close() error {
	h.tp.Close()
	return nil
}

// Interfaces lists the interfaces AF_PACKET can capture on.
func Interfaces() ([]Interface, error) { return netInterfaces() }
