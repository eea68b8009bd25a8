package scrape

import (
	"context"
	"fmt"
	"time"
)

// MinSaturationScrapes: readings of the waiting queue before a step may be
// cut short (at 1 s, six seconds of growth).
const MinSaturationScrapes = 6

// WatchSaturation stops an automatic sweep's step early (calls stop) once
// the server's waiting queue, read from snapshot every interval, has grown
// through the step without draining: more load cannot tell anything new.
// The channel yields why ("" when it did not, once ctx ends or done
// closes).
func WatchSaturation(ctx context.Context, snapshot func() Series, stop func(), every time.Duration, done <-chan struct{}) <-chan string {
	out := make(chan string, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				out <- ""
				return
			case <-done:
				out <- ""
				return
			case <-t.C:
				var waiting []float64
				for _, s := range snapshot().Samples {
					if v, ok := s.Values[Waiting]; ok {
						waiting = append(waiting, v)
					}
				}
				if len(waiting) >= MinSaturationScrapes && WaitingGrows(waiting) {
					stop()
					out <- fmt.Sprintf("step stopped early after %d scrapes: the server's waiting queue grew without bound (%.0f → %.0f requests), saturation seen directly",
						len(waiting), waiting[0], waiting[len(waiting)-1])
					return
				}
			}
		}
	}()
	return out
}
