//go:build pcap

package live

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/gopacket/gopacket/pcap"
	"golang.org/x/net/bpf"
)

// Backend names the capture mechanism of this build.
const Backend = "libpcap"

// pcapHandle captures with libpcap: any device libpcap knows, including the
// RDMA sniffer devices (mlx5_0...) that see hardware RoCE traffic, with link
// type 247.
type pcapHandle struct {
	name string
	h    *pcap.Handle
}

// Open starts capturing on a device.
func Open(name string, opts Options) (Handle, error) {
	snap := opts.Snaplen
	if snap <= 0 {
		snap = accept
	}
	in, err := pcap.NewInactiveHandle(name)
	if err != nil {
		return nil, fmt.Errorf("capturing on %s: %v", name, err)
	}
	defer in.CleanUp()
	_ = in.SetSnapLen(snap)
	_ = in.SetPromisc(opts.Promisc)
	_ = in.SetTimeout(PollInterval)
	_ = in.SetImmediateMode(true)
	h, err := in.Activate()
	if err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "ermission") || strings.Contains(msg, "not permitted"):
			// libpcap words this differently from release to release
			// ("Permission Denied", "socket: Operation not permitted");
			// both backends report the same line.
			return nil, permissionError(name, syscall.EPERM)
		case strings.Contains(msg, "No such device") || strings.Contains(msg, "doesn't exist"):
			return nil, fmt.Errorf("no capture device named %q (rdmacm-pd dissect -D lists them)", name)
		}
		return nil, fmt.Errorf("capturing on %s: %v", name, err)
	}
	ph := &pcapHandle{name: name, h: h}
	switch {
	case opts.Expr != "":
		if err := h.SetBPFFilter(opts.Expr); err != nil {
			h.Close()
			return nil, fmt.Errorf("-f %q: %v", opts.Expr, err)
		}
	case h.LinkType() == 1: // Ethernet: the built-in candidate filter
		// libpcap does not pass the packet-type extension through, so the
		// outgoing copies on loopback are dropped by direction instead.
		f := opts.Filter
		f.Loopback = false
		prog, err := f.Program()
		if err != nil {
			h.Close()
			return nil, err
		}
		if name == "lo" || strings.HasPrefix(name, "lo:") {
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
			return nil, fmt.Errorf("attaching the filter on %s: %v", name, err)
		}
	}
	return ph, nil
}

func (p *pcapHandle) Name() string     { return p.name }
func (p *pcapHandle) LinkType() uint16 { return uint16(p.h.LinkType()) }

func (p *pcapHandle) Read() ([]byte, int, time.Time, error) {
	data, ci, err := p.h.ZeroCopyReadPacketData()
	if err != nil {
		if errors.Is(err, pcap.NextErrorTimeoutExpired) {
			return nil, 0, time.Time{}, ErrTimeout
		}
		return nil, 0, time.Time{}, err
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
