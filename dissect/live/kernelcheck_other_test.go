//go:build !linux

package live

import "golang.org/x/net/bpf"

func checkInKernel(raw []bpf.RawInstruction) error { return nil }
