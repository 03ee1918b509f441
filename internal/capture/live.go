package capture

// Live capture takes frames from network interfaces for the dissector:
// with Linux AF_PACKET in pure Go by default, or with libpcap in a build with
// the "pcap" tag (for RDMA sniffer devices such as mlx5_0, which AF_PACKET
// cannot see, and for tcpdump filter expressions). A kernel filter lets
// through only the candidates for RDMA connection setup.

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// LiveOptions configure a live capture.
type LiveOptions struct {
	Promisc bool   // promiscuous mode
	Snaplen int    // octets kept of each frame; 0: 262144
	Filter  Filter // the built-in candidate filter
	// Expr is a tcpdump filter expression, used instead of Filter; only the
	// libpcap build compiles it.
	Expr string
}

// Handle is an open capture on one interface.
type Handle interface {
	// Name is the interface name.
	Name() string
	// LinkType is the LINKTYPE_* of the frames (1 for Ethernet).
	LinkType() uint16
	// Read waits for the next frame, for at most about the poll interval;
	// it returns ErrTimeout when none came. The data is valid until the
	// next call.
	Read() (data []byte, wireLen int, ts time.Time, err error)
	// Close ends the capture.
	Close() error
}

// ErrTimeout: no frame arrived within the poll interval.
var ErrTimeout = errors.New("capture: no frame from the interface within the poll interval")

// PollInterval bounds how long a Read waits, so that a stop request is
// noticed promptly.
const PollInterval = 100 * time.Millisecond

// Interface describes a capturable interface.
type Interface struct {
	Name        string
	Description string
	Up          bool
	Loopback    bool
	Addresses   []string
}

// checkInterface gives a clear error for an interface that does not exist or
// is down, before any socket is opened.
func checkInterface(name string) (*net.Interface, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, noInterface(name)
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, downInterface(name)
	}
	return ifi, nil
}

func noInterface(name string) error {
	return fmt.Errorf("no interface named %q (rdmacm-pd dissect -D lists them)", name)
}

func downInterface(name string) error {
	return fmt.Errorf("interface %s is down (ip link set %s up)", name, name)
}

// permissionError turns EPERM/EACCES into the one-line explanation users
// need.
func permissionError(iface string, err error) error {
	return fmt.Errorf("capturing on %s needs the CAP_NET_RAW capability (root has it; or sudo setcap cap_net_raw=eip rdmacm-pd): %v", iface, err)
}

// attachError explains a filter the kernel refused: too long (more than
// 4096 instructions, EINVAL) or too large for net.core.optmem_max (ENOMEM).
func attachError(iface string, n int, err error) error {
	return fmt.Errorf("attaching the filter on %s: %v (a program of %d instructions; give fewer --host or --port, or raise sysctl net.core.optmem_max)", iface, err, n)
}

// readError says when a capture failed because its interface went down or
// went away.
func readError(iface string, err error) error {
	ifi, ierr := net.InterfaceByName(iface)
	switch {
	case ierr != nil:
		return fmt.Errorf("interface %s went away", iface)
	case ifi.Flags&net.FlagUp == 0:
		return fmt.Errorf("interface %s went down", iface)
	}
	return err
}
