//go:build linux && !pcap

package capture

import (
	"bytes"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFilterOptmem attaches the largest filter (32 IPv4 and 32 IPv6 hosts,
// 32 TCP ports, 32 RoCE ports) on lo in a network namespace whose
// net.core.optmem_max is 20480, as on older kernels: the kernel charges the
// program against it, and the filter used to need far more. Root only.
func TestFilterOptmem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace, AF_PACKET)")
	}
	const path = "/proc/sys/net/core/optmem_max"
	before, err := os.ReadFile(path)
	if err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	skip := make(chan string, 1)
	go func() {
		// This thread enters a namespace of its own and is never given
		// back: it ends with the goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			skip <- "no network namespaces: " + err.Error()
			return
		}
		if err := os.WriteFile(path, []byte("20480"), 0); err != nil {
			skip <- err.Error()
			return
		}
		after := make(chan []byte)
		go func() { b, _ := os.ReadFile(path); after <- b }() // another thread, the first namespace
		if b := <-after; !bytes.Equal(b, before) {
			os.WriteFile(path, before, 0)
			skip <- "net.core.optmem_max is not per namespace on this kernel"
			return
		}
		// lo up in the new namespace
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			done <- err
			return
		}
		ifr, _ := unix.NewIfreq("lo")
		ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
		err = unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
		unix.Close(fd)
		if err != nil {
			done <- err
			return
		}
		h, err := OpenInterface("lo", LiveOptions{Filter: *maxFilterSet()})
		if err == nil {
			h.Close()
		}
		done <- err
	}()
	select {
	case msg := <-skip:
		t.Skip(msg)
	case err := <-done:
		if err != nil {
			t.Fatalf("the largest filter with optmem_max 20480: %v", err)
		}
	}
}
