package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// progressSnapshot is what the live view shows; any load source can fill it.
type progressSnapshot struct {
	Elapsed         time.Duration
	Sent, Completed int64
	Errors          int64
	InFlight        int
	OutputTokens    int64
	Target          int64 // requests planned (0: bounded by time)
	Duration        time.Duration
}

// progress prints a live view until ctx ends: a redrawn dashboard on a
// terminal, plain periodic lines otherwise (as in CI logs).
func progress(ctx context.Context, w io.Writer, terminal bool, snap func() progressSnapshot) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	interval := 5 * time.Second
	if terminal {
		interval = 250 * time.Millisecond
	}
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		var last progressSnapshot
		drawn := 0
		for {
			select {
			case <-ctx.Done():
				if terminal && drawn > 0 {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-t.C:
			}
			s := snap()
			if terminal {
				fmt.Fprint(w, "\r\033[K"+dashboardLine(s, last, interval))
				drawn++
			} else {
				fmt.Fprintln(w, plainLine(s, last, interval))
			}
			last = s
		}
	}()
	return func() { cancel(); <-done }
}

func rateSince(now, before int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(now-before) / d.Seconds()
}

func completion(s progressSnapshot) string {
	switch {
	case s.Target > 0:
		return fmt.Sprintf("%d/%d", s.Completed+s.Errors, s.Target)
	case s.Duration > 0:
		return fmt.Sprintf("%.0f%% of %v", 100*min(1, s.Elapsed.Seconds()/s.Duration.Seconds()), s.Duration)
	}
	return fmt.Sprint(s.Completed + s.Errors)
}

func dashboardLine(s, last progressSnapshot, d time.Duration) string {
	bar := ""
	if s.Target > 0 {
		const width = 20
		n := int(float64(width) * float64(s.Completed+s.Errors) / float64(s.Target))
		n = max(0, min(width, n))
		bar = "[" + strings.Repeat("█", n) + strings.Repeat("·", width-n) + "] "
	}
	return fmt.Sprintf("%s%s  %5.1fs  in-flight %4d  done %d  err %d  %7.0f tok/s",
		bar, completion(s), s.Elapsed.Seconds(), s.InFlight, s.Completed, s.Errors,
		rateSince(s.OutputTokens, last.OutputTokens, d))
}

func plainLine(s, last progressSnapshot, d time.Duration) string {
	return fmt.Sprintf("progress: t=%.0fs %s in_flight=%d completed=%d errors=%d output_tps=%.0f",
		s.Elapsed.Seconds(), completion(s), s.InFlight, s.Completed, s.Errors,
		rateSince(s.OutputTokens, last.OutputTokens, d))
}
