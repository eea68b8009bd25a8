//go:build !race

package scrape

const raceOn = false
