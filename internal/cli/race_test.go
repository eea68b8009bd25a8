//go:build race

package cli

// raceEnabled: the race detector slows the client and the embedded server
// 5-20x, unevenly, so ratios of measured times are asserted only in normal
// builds; the race pass still runs the same goroutine paths.
const raceEnabled = true
