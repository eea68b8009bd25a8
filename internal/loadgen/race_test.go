//go:build race

package loadgen

// raceEnabled: the race detector slows code 5-20x, so timing bounds are
// checked only in normal builds.
const raceEnabled = true
