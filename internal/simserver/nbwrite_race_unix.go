//go:build unix && race

package simserver

import "syscall"

// raceReleaseIO gives a raw write the race detector's view of a write:
// syscall.Write orders it before the reads that get its bytes, a raw
// write(2) goes around that. A zero-length write sends nothing and carries
// the ordering. Race builds only.
func raceReleaseIO(fd int) { syscall.Write(fd, nil) }
