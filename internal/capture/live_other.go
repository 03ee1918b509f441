//go:build !linux && !pcap

package capture

import "errors"

// Backend names the capture mechanism of this build.
const Backend = "none"

var errNoBackend = errors.New("live capture needs Linux (AF_PACKET) or the libpcap build (go build -tags pcap)")

// OpenInterface always fails: this build has no capture backend.
func OpenInterface(name string, opts LiveOptions) (Handle, error) { return nil, errNoBackend }

// Interfaces lists the system's interfaces.
func Interfaces() ([]Interface, error) { return netInterfaces() }
