//go:build linux && !race

package loadgen

func raceAcquireIO(uintptr) {}
