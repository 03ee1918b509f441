package cmd

import (
	"os"
	"testing"
)

// The binary the live tests build (once) and its folder.
var builtBinary, builtDir string

// TestMain removes the binary the live tests build.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}
