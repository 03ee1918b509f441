//go:build !amd64

package pcapfile

// hintOnce gives no hint on this architecture (see hint_amd64.go).
func hintOnce(*byte) {}
