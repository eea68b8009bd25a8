package scrape

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// series is a scraper's growing series as the watcher reads it.
type series struct {
	mu sync.Mutex
	s  Series
}

func (g *series) add(waiting float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.s.Samples = append(g.s.Samples, Sample{Values: map[Metric]float64{Waiting: waiting}})
}

func (g *series) snapshot() Series {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Series{Samples: append([]Sample(nil), g.s.Samples...)}
}

// A queue that only grows stops the step at the first tick with enough
// readings, and says so; one that drains never stops it.
func TestWatchSaturation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g series
		stopped := 0
		done := make(chan struct{})
		why := WatchSaturation(context.Background(), g.snapshot, func() { stopped++ }, time.Second, done)
		for i := range 10 {
			g.add(float64(10 * i * i))
			time.Sleep(time.Second)
			synctest.Wait()
			if stopped > 0 {
				break
			}
		}
		got := <-why
		if stopped != 1 || got != "step stopped early after 6 scrapes: the server's waiting queue grew without bound (0 → 250 requests), saturation seen directly" {
			t.Errorf("growing queue: stopped %d times, %q", stopped, got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var g series
		stopped := 0
		done := make(chan struct{})
		why := WatchSaturation(context.Background(), g.snapshot, func() { stopped++ }, time.Second, done)
		for i := range 20 {
			g.add(float64(i % 3 * 20)) // back at zero every third reading
			time.Sleep(time.Second)
		}
		close(done)
		if got := <-why; stopped != 0 || got != "" {
			t.Errorf("draining queue: stopped %d times, %q", stopped, got)
		}
	})
}
