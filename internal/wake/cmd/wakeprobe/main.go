// Command wakeprobe measures how late this machine wakes a sleeper, the
// figures package wake's doc and docs/workloads.md quote: Waker sleeps of
// random length alone, the same sleeps with their last 2 ms spun (as the
// open loop does), and the stops a busy-spinning thread sees (a VM's host
// taking its vCPU). Run it with nothing else on the machine:
//
//	go run ./internal/wake/cmd/wakeprobe -duration 90s
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/knee-dev/knee/internal/wake"
)

func main() {
	duration := flag.Duration("duration", 90*time.Second, "how long to measure sleeps (the spinning thread gets a third of it more)")
	flag.Parse()
	if *duration <= 0 {
		fmt.Fprintln(os.Stderr, "wakeprobe: -duration must be positive")
		os.Exit(2)
	}
	const spin = 2 * time.Millisecond
	w := wake.New()
	defer w.Close()
	var slept, spun []float64
	start := time.Now()
	for i := 0; time.Since(start) < *duration; i++ {
		at := time.Since(start) + time.Duration(20+rand.IntN(600))*time.Millisecond
		if i%2 == 0 {
			for d := at - time.Since(start); d > 0; d = at - time.Since(start) {
				w.Sleep(d)
			}
			slept = append(slept, ms(time.Since(start)-at))
			continue
		}
		for d := at - time.Since(start); d > 0; d = at - time.Since(start) {
			if d > spin {
				w.Sleep(d - spin)
			} else {
				w.Spin(d)
			}
		}
		spun = append(spun, ms(time.Since(start)-at))
	}
	show("sleep alone, lateness", slept)
	show("last 2 ms spun, lateness", spun)

	// A thread that never sleeps sees every stop of its vCPU as a jump of
	// its clock.
	var stops []float64
	var stopped time.Duration
	last := time.Now()
	for end := last.Add(*duration / 3); last.Before(end); {
		now := time.Now()
		if g := now.Sub(last); g > 500*time.Microsecond {
			stops = append(stops, ms(g))
			stopped += g
		}
		last = now
	}
	fmt.Printf("spinning %v: %d stops over 0.5 ms, %v in all\n", *duration/3, len(stops), stopped.Round(time.Microsecond))
	if len(stops) > 0 {
		slices.Sort(stops)
		fmt.Printf("  the largest: %.2f ms\n", stops[max(0, len(stops)-5):])
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func show(what string, v []float64) {
	if len(v) == 0 {
		return
	}
	slices.Sort(v)
	q := func(p float64) float64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	fmt.Printf("%s over %d sleeps: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", what, len(v), q(0.5), q(0.99), v[len(v)-1])
}
