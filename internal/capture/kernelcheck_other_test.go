//go:build !linux

package capture

import "golang.org/x/net/bpf"

func checkInKernel(raw []bpf.RawInstruction) error { return nil }
