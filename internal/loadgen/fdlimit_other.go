//go:build !unix

package loadgen

// OpenFileLimit is unknown (0) off unix.
func OpenFileLimit() uint64 { return 0 }
