//go:build pcap

package capture

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	golayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"
	"golang.org/x/net/bpf"
)

// Backend names the capture mechanism of this build.
const Backend = "libpcap"

// pcapHandle captures with libpcap: any device libpcap knows, including the
// RDMA sniffer devices (mlx5_0...) that see hardware RoCE traffic, with link
// type 247.
type pcapHandle struct {
	name   string
	link   uint16
	h      *pcap.Handle
	netdev bool // a network interface (not an RDMA sniffer device)
}

// linkType turns libpcap's DLT_* value into the LINKTYPE_* value capture
// files carry, where they differ.
func linkType(dlt int) uint16 {
	switch dlt {
	case 11: // DLT_ATM_RFC1483
		return 100
	case 12, 14: // DLT_RAW (14 on OpenBSD)
		return uint16(golayers.LinkTypeRaw)
	case 15: // DLT_SLIP_BSDOS
		return 102
	case 16: // DLT_PPP_BSDOS
		return 103
	case 17: // DLT_PFLOG on OpenBSD
		return uint16(golayers.LinkTypePFLog)
	case 18: // DLT_PFSYNC on OpenBSD
		return 246
	case 19: // DLT_ATM_CLIP
		return 106
	}
	return uint16(dlt)
}

// checkDevice gives the same errors as the AF_PACKET build for a network
// interface that does not exist or is down; a device that is no network
// interface (an RDMA sniffer device such as mlx5_0) must be one libpcap
// lists.
func checkDevice(name string) (netdev, loopback bool, err error) {
	if _, err := net.InterfaceByName(name); err == nil {
		ifi, err := checkInterface(name)
		if err != nil {
			return true, false, err
		}
		return true, ifi.Flags&net.FlagLoopback != 0, nil
	}
	devs, err := pcap.FindAllDevs()
	if err == nil {
		for _, d := range devs {
			if d.Name == name {
				return false, false, nil
			}
		}
	}
	return false, false, noInterface(name)
}

// OpenInterface starts capturing on a device.
func OpenInterface(name string, opts LiveOptions) (Handle, error) {
	netdev, loopback, err := checkDevice(name)
	if err != nil {
		return nil, err
	}
	snap := opts.Snaplen
	if snap <= 0 {
		snap = accept
	}
	in, err := pcap.NewInactiveHandle(name)
	if err != nil {
		return nil, activateError(name, err)
	}
	defer in.CleanUp()
	_ = in.SetSnapLen(snap)
	_ = in.SetPromisc(opts.Promisc)
	_ = in.SetTimeout(PollInterval)
	_ = in.SetImmediateMode(true)
	h, err := in.Activate()
	if err != nil {
		return nil, activateError(name, err)
	}
	ph := &pcapHandle{name: name, link: linkType(int(h.LinkType())), h: h, netdev: netdev}
	if opts.Expr != "" {
		if err := h.SetBPFFilter(opts.Expr); err != nil {
			h.Close()
			return nil, fmt.Errorf("-f %q: %v", opts.Expr, err)
		}
		return ph, nil
	}
	// The built-in candidate filter, for the link types it knows
	// (Ethernet, Linux cooked, raw IP, BSD loopback); other links (the RDMA
	// sniffer's InfiniBand, 247) are not filtered. libpcap does not pass
	// the packet-type extension through, so the outgoing copies on loopback
	// are dropped by direction instead.
	f := opts.Filter
	f.Loopback = false
	prog, err := f.ProgramFor(ph.link)
	if err != nil {
		if f.Check() != nil {
			h.Close()
			return nil, err
		}
		return ph, nil // a link type the filter does not know
	}
	if loopback {
		_ = h.SetDirection(pcap.DirectionIn)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		h.Close()
		return nil, err
	}
	ins := make([]pcap.BPFInstruction, len(raw))
	for i, r := range raw {
		ins[i] = pcap.BPFInstruction{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	if err := h.SetBPFInstructionFilter(ins); err != nil {
		h.Close()
		return nil, attachError(name, len(raw), err)
	}
	return ph, nil
}

// activateError maps libpcap's messages, which vary from release to
// release, to the lines the AF_PACKET build gives.
func activateError(name string, err error) error {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "permission") || strings.Contains(msg, "not permitted"):
		return permissionError(name, syscall.EPERM)
	case strings.Contains(msg, "no such device") || strings.Contains(msg, "doesn't exist"):
		return noInterface(name)
	case strings.Contains(msg, "not up"):
		return downInterface(name)
	}
	return fmt.Errorf("capturing on %s: %v", name, err)
}

func (p *pcapHandle) Name() string     { return p.name }
func (p *pcapHandle) LinkType() uint16 { return p.link }

func (p *pcapHandle) Read() ([]byte, int, time.Time, error) {
	data, ci, err := p.h.ZeroCopyReadPacketData()
	if err != nil {
		if errors.Is(err, pcap.NextErrorTimeoutExpired) {
			// libpcap goes on waiting on an interface that went down.
			if p.netdev {
				if ifi, ierr := net.InterfaceByName(p.name); ierr != nil || ifi.Flags&net.FlagUp == 0 {
					return nil, 0, time.Time{}, readError(p.name, err)
				}
			}
			return nil, 0, time.Time{}, ErrTimeout
		}
		if !p.netdev {
			// An RDMA sniffer device (mlx5_0) is no network interface:
			// libpcap's own words are all there is.
			return nil, 0, time.Time{}, fmt.Errorf("reading %s: %v", p.name, err)
		}
		return nil, 0, time.Time{}, readError(p.name, err)
	}
	return data, ci.Length, ci.Timestamp, nil
}

func (p *pcapHandle) Close() error {
	p.h.Close()
	return nil
}

// Interfaces lists the devices libpcap can capture on, RDMA devices included.
func Interfaces() ([]Interface, error) {
	devs, err := pcap.FindAllDevs()
	if err != nil {
		return nil, err
	}
	var out []Interface
	for _, d := range devs {
		it := Interface{Name: d.Name, Description: d.Description, Up: d.Flags&0x2 != 0, Loopback: d.Flags&0x1 != 0}
		for _, a := range d.Addresses {
			it.Addresses = append(it.Addresses, a.IP.String())
		}
		out = append(out, it)
	}
	return out, nil
}
