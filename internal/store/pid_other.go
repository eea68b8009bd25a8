//go:build !unix

package store

// processAlive cannot tell on this platform; the heartbeat decides.
func processAlive(pid int) bool { return true }

// addressSpaceLimited: no such limit is read on this platform.
func addressSpaceLimited() bool { return false }
