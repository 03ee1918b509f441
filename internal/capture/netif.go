//go:build !pcap

package capture

import "net"

// netInterfaces lists the interfaces the system knows.
func netInterfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []Interface
	for _, ifi := range ifs {
		it := Interface{Name: ifi.Name, Up: ifi.Flags&net.FlagUp != 0, Loopback: ifi.Flags&net.FlagLoopback != 0}
		if addrs, err := ifi.Addrs(); err == nil {
			for _, a := range addrs {
				it.Addresses = append(it.Addresses, a.String())
			}
		}
		out = append(out, it)
	}
	return out, nil
}
