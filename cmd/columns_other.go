//go:build !unix

package cmd

// terminalColumns is the width of the terminal on fd: unknown here.
func terminalColumns(uintptr) int { return 0 }
