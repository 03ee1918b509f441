//go:build unix

package cmd

import "golang.org/x/sys/unix"

// terminalColumns is the width of the terminal on fd, 0 when it has none.
func terminalColumns(fd uintptr) int {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
