//go:build !linux && !pcap

package live

import "errors"

// Backend names the capture mechanism of this build.
const Backend = "none"

var errNoBackend = errors.New("live capture needs Linux (AF_PACKET) or the libpcap build (go build -tags pcap)")

// Open always fails: this build has no capture backend.
func Open(name string, opts Options) (Handle, error) { return nil, errNoBackend }

// Interfaces lists the system's interfaces.
func Interfaces() ([]Interface, error) { return netInterfaces() }
