//go:build !amd64

package capture

// hintOnce gives no hint on this architecture (see hint_amd64.go).
func hintOnce(*byte) {}
