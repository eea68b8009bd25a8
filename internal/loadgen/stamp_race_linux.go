//go:build linux && race

package loadgen

import "syscall"

// raceAcquireIO gives a recvmsg the race detector's view of a read:
// syscall.Read and syscall.Write order every read after earlier writes
// (a program that hands data over a socket is not racy), but a raw
// recvmsg goes around them. A zero-length read returns at once without
// touching the socket, and carries that ordering. Race builds only.
func raceAcquireIO(fd uintptr) { syscall.Read(int(fd), nil) }
