package capture

import (
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// checkInKernel attaches a classic BPF program to a UDP socket, which needs
// no privilege: the kernel runs the same checks as on a packet socket.
func checkInKernel(raw []bpf.RawInstruction) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return nil // no sockets here: nothing to check with
	}
	defer unix.Close(fd)
	fp := unix.SockFprog{Len: uint16(len(raw)), Filter: (*unix.SockFilter)(unsafe.Pointer(&raw[0]))}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
		uintptr(unsafe.Pointer(&fp)), unsafe.Sizeof(fp), 0)
	if e != 0 {
		return e
	}
	return nil
}
