//go:build !unix

package cli

func openFileLimit() uint64 { return 0 }
