//go:build !amd64

package hint

// Lines gives no hint on this architecture (see hint_amd64.go).
func Lines(*byte) {}

// Line gives no hint on this architecture (see hint_amd64.go).
func Line(*byte) {}
