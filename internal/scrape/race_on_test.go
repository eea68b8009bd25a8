//go:build race

package scrape

// raceOn: the race detector changes what allocations cost.
const raceOn = true
